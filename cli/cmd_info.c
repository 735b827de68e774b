/* cmd_info.c — `ramtrace info MODEL`: describe a model file. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_modelfile.h"
#include "rn_modelinfo.h"
#include "rn_rows.h"

const char cmd_info_summary[] = "describe a model file (config, sizes, state, checksum)";

static const char usage_text[] =
    "usage: ramtrace info MODEL [-f table|csv|json]\n"
    "\n"
    "Validate MODEL (model.bin or .safetensors) and print its config, d_k, M,\n"
    "parameter count (with and without embeddings), total and active state per\n"
    "token (floats and bytes), CAPE heads per layer, checksum and file size.\n"
    "\n"
    "options:\n"
    "  -f, --format F        table (default: the description), csv or json:\n"
    "                        rows section,key,value (sections file, config,\n"
    "                        derived, cape_heads; numbers as numbers)\n"
    "  -h, --help            this text\n";

int cmd_info(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    static const struct option opts[] = { { "format", required_argument, 0, 'f' }, { 0, 0, 0, 0 } };
    int fmt = RN_FMT_TABLE, c;
    rn_error err = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (rn_format_parse(optarg, &fmt, &err)) return cli_usage_error("info", "%s", err.msg);
            break;
        case ':': return cli_usage_error("info", "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error("info", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1) return cli_usage_error("info", "expected exactly one MODEL argument");
    const char *path = argv[optind];
    rn_model m;
    if (rn_model_load(&m, path, &err)) return cli_fail(&err);
    int rc = RN_OK;
    if (fmt == RN_FMT_TABLE) rn_model_describe(stdout, &m, path);
    else rc = rn_model_info_rows(stdout, fmt, &m, path, &err);
    rn_model_free(&m);
    return rc ? cli_fail(&err) : 0;
}
