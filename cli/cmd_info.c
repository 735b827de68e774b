/* cmd_info.c — `ramtrace info MODEL`: describe a model file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_modelfile.h"
#include "rn_modelinfo.h"

const char cmd_info_summary[] = "describe a model file (config, sizes, state, checksum)";

static const char usage_text[] =
    "usage: ramtrace info MODEL\n"
    "\n"
    "Validate MODEL (model.bin or .safetensors) and print its config, d_k, M,\n"
    "parameter count (with and without embeddings), total and active state per\n"
    "token (floats and bytes), CAPE heads per layer, checksum and file size.\n";

int cmd_info(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc != 2) return cli_usage_error("info", "expected exactly one MODEL argument");
    if (argv[1][0] == '-') return cli_usage_error("info", "unknown option '%s'", argv[1]);
    rn_model m;
    rn_error err = {0};
    if (rn_model_load(&m, argv[1], &err)) return cli_fail(&err);
    rn_model_describe(stdout, &m, argv[1]);
    rn_model_free(&m);
    return 0;
}
