/* cmd_convert.c — `ramtrace convert IN OUT`: model.bin <-> safetensors, and
 * a training checkpoint -> a model (so an interrupted run is usable). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_checkpoint.h"
#include "rn_modelfile.h"

const char cmd_convert_summary[] = "convert a model between model.bin and safetensors";

static const char usage_text[] =
    "usage: ramtrace convert IN OUT\n"
    "\n"
    "Convert a model losslessly; each file's format is chosen by its extension\n"
    "(.safetensors, anything else is model.bin).  IN may also be a training\n"
    "checkpoint (MODEL.ckpt): OUT is then the model it holds, at the step it\n"
    "reached, so an interrupted run is usable.  IN is fully validated first;\n"
    "OUT is written atomically.\n"
    "\n"
    "options:\n"
    "  -h, --help            this text\n"
    "\n"
    "examples: ramtrace convert model.bin model.safetensors\n"
    "          ramtrace convert model.bin.ckpt partial.bin\n";

/* Whether path starts with the checkpoint magic. */
static int is_checkpoint(const char *path)
{
    char magic[8] = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == sizeof magic && !memcmp(magic, "RNCKPT01", 8);
}

int cmd_convert(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc != 3) return cli_usage_error("convert", "expected IN and OUT");
    for (int i = 1; i < 3; i++)
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("convert", "unknown option '%s'", argv[i]);
    rn_error err = {0};
    if (is_checkpoint(argv[1])) {
        rn_model m;
        int64_t step = 0;
        if (rn_checkpoint_read_model(argv[1], &m, &step, &err)) return cli_fail(&err);
        int rc = rn_model_save(&m, argv[2], &err);
        rn_model_free(&m);
        if (rc) return cli_fail(&err);
        cli_info("ramtrace convert: %s (checkpoint at step %lld) -> %s (%s)\n", argv[1], (long long)step,
                argv[2], rn_path_is_safetensors(argv[2]) ? "safetensors" : "model.bin");
        return 0;
    }
    if (rn_model_convert(argv[1], argv[2], &err)) return cli_fail(&err);
    cli_info("ramtrace convert: %s (%s) -> %s (%s)\n", argv[1],
            rn_path_is_safetensors(argv[1]) ? "safetensors" : "model.bin", argv[2],
            rn_path_is_safetensors(argv[2]) ? "safetensors" : "model.bin");
    return 0;
}
