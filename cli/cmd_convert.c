/* cmd_convert.c — `ramtrace convert IN OUT [--storage S]`: model.bin <->
 * safetensors, float32 <-> bf16/fp16 storage, and a training checkpoint ->
 * a model (so an interrupted run is usable). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_checkpoint.h"
#include "rn_modelfile.h"
#include "rn_storage.h"

const char cmd_convert_summary[] = "convert a model between model.bin and safetensors";

static const char usage_text[] =
    "usage: ramtrace convert IN OUT [--storage fp32|bf16|fp16]\n"
    "\n"
    "Convert a model losslessly; each file's format is chosen by its extension\n"
    "(.safetensors, anything else is model.bin).  IN may also be a training\n"
    "checkpoint (MODEL.ckpt): OUT is then the model it holds, at the step it\n"
    "reached, so an interrupted run is usable.  IN is fully validated first;\n"
    "OUT is written atomically.\n"
    "\n"
    "options:\n"
    "  --storage S           store OUT's parameters as fp32, bf16 or fp16\n"
    "                        (default: as IN stores them; a checkpoint: fp32).\n"
    "                        bf16/fp16 round each weight to nearest even and\n"
    "                        load back exactly as those float32 values\n"
    "  -h, --help            this text\n"
    "\n"
    "examples: ramtrace convert model.bin model.safetensors\n"
    "          ramtrace convert model.bin half.bin --storage bf16\n"
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
    const char *files[2];
    int nf = 0, storage = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--storage") || !strncmp(argv[i], "--storage=", 10)) {
            const char *v = argv[i][9] == '=' ? argv[i] + 10 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return cli_usage_error("convert", "option '--storage' needs a value");
            if ((storage = rn_storage_parse(v)) < 0)
                return cli_usage_error("convert", "--storage: '%s' is not fp32, bf16 or fp16", v);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("convert", "unknown option '%s'", argv[i]);
        } else if (nf < 2) {
            files[nf++] = argv[i];
        } else {
            return cli_usage_error("convert", "expected IN and OUT");
        }
    }
    if (nf != 2) return cli_usage_error("convert", "expected IN and OUT");
    rn_error err = {0};
    if (is_checkpoint(files[0])) {
        rn_model m;
        int64_t step = 0;
        if (rn_checkpoint_read_model(files[0], &m, &step, &err)) return cli_fail(&err);
        if (storage >= 0) m.storage = storage;
        int rc = rn_model_save(&m, files[1], &err);
        rn_model_free(&m);
        if (rc) return cli_fail(&err);
        cli_info("ramtrace convert: %s (checkpoint at step %lld) -> %s (%s)\n", files[0], (long long)step,
                files[1], rn_path_is_safetensors(files[1]) ? "safetensors" : "model.bin");
        return 0;
    }
    if (rn_model_convert_as(files[0], files[1], storage, &err)) return cli_fail(&err);
    cli_info("ramtrace convert: %s (%s) -> %s (%s)\n", files[0],
            rn_path_is_safetensors(files[0]) ? "safetensors" : "model.bin", files[1],
            rn_path_is_safetensors(files[1]) ? "safetensors" : "model.bin");
    return 0;
}
