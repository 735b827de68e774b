/* cmd_repair.c — `ramtrace repair TRACE.db [--run N]`: make runs whose
 * writer never finished analysable (the work is tr_repair, trace/tr_repair.h). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tr_repair.h"

const char cmd_repair_summary[] = "make a run whose writer died (still `running`) analysable";

static void usage(void)
{
    printf("usage: ramtrace repair TRACE.db [--run N]\n\n"
           "A run whose writer was killed (SIGKILL, a second Ctrl-C, a crash) or failed\n"
           "(disk full) stays `running`, and stats, simulate and export refuse it.\n"
           "repair keeps the run's longest prefix of complete positions (a tokens row\n"
           "and all K ranks of every traced layer, head and op), drops everything\n"
           "after it, recounts tokens and events and marks the run `interrupted`, in\n"
           "one transaction.  Running it again changes nothing.  A complete run given\n"
           "with --run whose rows disagree with its counts (a lost event block or\n"
           "tokens row: the analyses refuse it as corrupt) is cut the same way.\n"
           "A file a ramtrace process is still writing to is refused.\n\n"
           "options:\n"
           "      --run N           repair run N (default: every `running` run)\n"
           "  -h, --help            this text\n");
}

int cmd_repair(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    static const struct option opts[] = { { "run", required_argument, 0, 'r' }, { 0, 0, 0, 0 } };
    long run = 0;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err))
                return cli_usage_error("repair", "%s", err.msg);
            break;
        case ':': return cli_usage_error("repair", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("repair", "unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind != 1) return cli_usage_error("repair", "expected TRACE.db");
    const char *path = argv[optind];
    tr_repair_result *res;
    int n;
    int rc = tr_repair(path, run, &res, &n, &err);
    if (rc) return cli_fail(&err);
    if (n == 0) cli_report("repair: %s: no run is `running`; nothing to repair\n", path);
    for (int i = 0; i < n; i++) {
        const tr_repair_result *r = &res[i];
        if (!r->changed)
            cli_report("repair: %s: run %lld is %s and consistent (%lld tokens, %lld events); nothing to repair\n",
                   path, (long long)r->run_id, r->status, (long long)r->tokens, (long long)r->events);
        else
            cli_report("repair: %s: run %lld was %s; dropped %lld tokens and %lld events of incomplete "
                   "positions%s; now %s with %lld tokens, %lld events\n", path,
                   (long long)r->run_id, r->status, (long long)r->dropped_tokens,
                   (long long)r->dropped_events, r->dropped_blocks && !r->dropped_tokens &&
                   !strcmp(r->status_after, "complete") ? " or blocks stored twice" : "", r->status_after,
                   (long long)r->tokens, (long long)r->events);
    }
    free(res);
    return 0;
}
