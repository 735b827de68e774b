/* cmd_runs.c — `ramtrace runs TRACE.db`: list the runs of a trace database. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "tr_query.h"

const char cmd_runs_summary[] = "list the runs recorded in a trace database";

static void usage(void)
{
    printf("usage: ramtrace runs TRACE.db [options]\n\n"
           "List the runs of a trace: id, name, status (running, complete,\n"
           "interrupted), command, traced tokens and events, model hash, start time\n"
           "(UTC), duration, selection and model path.\n\n"
           "options:\n"
           "  -f, -F, --format FMT  table (default), csv or json\n"
           "  -h, --help            this text\n");
}

int cmd_runs(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    static const struct option opts[] = { { "format", required_argument, 0, 'F' }, { 0, 0, 0, 0 } };
    const char *fmt = "table";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":F:f:", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
        case 'F': fmt = optarg; break;
        case ':': return cli_usage_error("runs", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("runs", "unknown option %s", argv[optind - 1]);
        }
    }
    int format;
    rn_error ferr = { 0 };
    if (rn_format_parse(fmt, &format, &ferr)) return cli_usage_error("runs", "%s", ferr.msg);
    if (argc - optind != 1) return cli_usage_error("runs", "expected TRACE.db");
    rn_error err = { 0 };
    int rc = tr_runs_print(argv[optind], format, stdout, &err);
    fflush(stdout);
    return rc ? cli_fail(&err) : 0;
}
