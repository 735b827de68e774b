/* cmd_stats.c — `ramtrace stats`: per-head memory-use statistics of a
 * trace run (analysis/an_stats.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_load.h"
#include "an_runset.h"
#include "an_stats.h"
#include "cli.h"

const char cmd_stats_summary[] = "per-head memory use of a trace run (slots, entropy, reuse, locality)";

static const char usage[] =
    "usage: ramtrace stats TRACE.db... [--run R | --all-runs] [options]\n"
    "\n"
    "Per head: events, distinct slots and share of M used, access entropy,\n"
    "share of accesses to the hottest 1% of slots, warm vs cold reads (slot\n"
    "written before or not), reuse time and LRU stack distance percentiles,\n"
    "the dominant slot shift between consecutive tokens (-1: a CAPE\n"
    "diagonal) and the working set per window; then CAPE and non-CAPE heads\n"
    "summarised apart.  docs/analysis.md defines each column.\n"
    "Several runs (several files, or --all-runs) of one model are pooled per\n"
    "head: counts summed, each run a sequence of its own (docs/analysis.md).\n"
    "\n"
    "options:\n"
    "      --run R           run id in each file (default: the latest)\n"
    "      --all-runs        every run of every file\n"
    "      --layer L         only layer L (default all)\n"
    "      --head H          only head H (default all)\n"
    "      --window W        working-set window in tokens (default 64)\n"
    "  -f, --format F        table (default), csv or json\n"
    "  -j, --threads N       summarise N heads at once (default: the free cores;\n"
    "                        the output is the same)\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace stats trace.db --format csv > heads.csv\n";

/* Progress on stderr once the run has taken a second: heads done of those
 * selected and an ETA (in place on a terminal, else a line per tenth). */
typedef struct { double t0; int tty, last_decile, shown; } stats_progress;

static void progress(void *user, int done, int total)
{
    stats_progress *p = user;
    double el = cli_now() - p->t0;
    if (el < 1.0 || total <= 0 || cli_quiet) return;
    int dec = 10 * done / total;
    if (!p->tty && dec == p->last_decile && done < total) return;
    p->last_decile = dec;
    int eta = done > 0 ? (int)(el * (total - done) / done + 0.5) : 0;
    fprintf(stderr, "%sstats: %d/%d heads (%.0f%%), ETA %d:%02d:%02d%s", p->tty ? "\r" : "", done, total,
            100.0 * done / total, eta / 3600, eta / 60 % 60, eta % 60, p->tty ? "" : "\n");
    if (p->tty && done == total) fputc('\n', stderr);
    p->shown = 1;
    fflush(stderr);
}

int cmd_stats(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    enum { O_RUN = 256, O_LAYER, O_HEAD, O_WINDOW, O_ALL };
    static const struct option opts[] = {
        { "run", required_argument, 0, O_RUN }, { "layer", required_argument, 0, O_LAYER },
        { "head", required_argument, 0, O_HEAD }, { "window", required_argument, 0, O_WINDOW },
        { "format", required_argument, 0, 'f' }, { "threads", required_argument, 0, 'j' },
        { "all-runs", no_argument, 0, O_ALL }, { 0, 0, 0, 0 } };
    long run = 0, layer = -1, head = -1, window = 64, threads = 0;
    int fmt = RN_FMT_TABLE, c, all = 0;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_RUN: rc = cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err); break;
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_ALL: all = 1; break;
        case O_WINDOW: rc = cli_parse_long("--window", optarg, 1, INT32_MAX, &window, &err); break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (optind >= argc) return cli_usage_error(argv[0], "expected one or more trace databases");
    if (all && run) return cli_usage_error(argv[0], "--run and --all-runs exclude each other");
    an_runset rs;
    an_head_stats *hs = NULL;
    int nh = 0;
    uint64_t total = 0;
    cli_threads(threads);
    double t0 = cli_now();
    an_runsel sel = { run, all };
    int rc = an_runset_open((const char *const *)argv + optind, argc - optind, sel, 1, &rs, &err);
    if (rc) return cli_fail(&err);
    if ((rc = an_runset_check_head(&rs, (int)layer, (int)head, &err))) goto out;
    stats_progress pg = { t0, cli_stderr_tty(), -1, 0 };
    an_stats_ctl ctl = { &cli_stop_flag, progress, &pg };
    rc = an_stats_runs(rs.r, rs.n, (int)layer, (int)head, (int)window, &ctl, &hs, &nh, &total, &err);
    if (pg.shown && pg.tty && rc) fputc('\n', stderr);
    if (rc) goto out;
    char what[64];
    cli_info("stats: %s, %llu events, %d heads in %.2f s\n", an_runset_describe(&rs, what, sizeof what),
             (unsigned long long)total, nh, cli_now() - t0);
    rc = an_stats_print(stdout, fmt, hs, nh, rs.r[0].M, (int)window, &err);
out:
    free(hs);
    an_runset_close(&rs);
    return rc ? cli_fail(&err) : 0;
}
