/* cmd_convert.c — `ramtrace convert IN OUT`: model.bin <-> safetensors. */
#include <stdio.h>

#include "cli.h"
#include "rn_modelfile.h"

const char cmd_convert_summary[] = "convert a model between model.bin and safetensors";

static const char usage_text[] =
    "usage: ramtrace convert IN OUT\n"
    "\n"
    "Convert a model losslessly; each file's format is chosen by its extension\n"
    "(.safetensors, anything else is model.bin).  IN is fully validated first;\n"
    "OUT is written atomically.\n"
    "\n"
    "example: ramtrace convert model.bin model.safetensors\n";

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
    if (rn_model_convert(argv[1], argv[2], &err)) return cli_fail(&err);
    fprintf(stderr, "ramtrace convert: %s (%s) -> %s (%s)\n", argv[1],
            rn_path_is_safetensors(argv[1]) ? "safetensors" : "model.bin", argv[2],
            rn_path_is_safetensors(argv[2]) ? "safetensors" : "model.bin");
    return 0;
}
