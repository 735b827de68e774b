/* cmd_overlap.c — `ramtrace overlap TRACE.db --pairs FILE`: per head, slot
 * usage and whether each pair's write and its query's read share slots
 * (analysis/an_overlap.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_overlap.h"
#include "cli.h"
#include "rn_atomic.h"
#include "rn_rows.h"

const char cmd_overlap_summary[] = "per head: slot usage, and whether a pair's write and its query's read share slots";

static const char usage[] =
    "usage: ramtrace overlap TRACE.db --pairs FILE [options]\n"
    "\n"
    "FILE lists position pairs, one 'RUN WPOS RPOS' a line (RUN a run's name, or\n"
    "#ID): WPOS where a pair is written, RPOS where it is read back (MQAR: the\n"
    "value's position and the query's).  Over the runs it names, per layer and\n"
    "head: slots written / read, entropy (bits) of the weight per slot, mean\n"
    "entropy of a position's normalised top-K weights, mean rank-0 weight and\n"
    "top-K sum (w_ writes, r_ reads); spread, distinct slots among a run's pair\n"
    "writes over their total; and for the right pair and for every other pair\n"
    "of the run: the mean number of slots both written at WPOS and read at RPOS\n"
    "(overlap), the fraction of pairs with at least one (hit), and the share of\n"
    "the read's weight on the written slots (share).\n"
    "\n"
    "options:\n"
    "      --pairs FILE      the position pairs (required)\n"
    "  -f, --format F        table (default), csv or json\n"
    "  -o, --output FILE     write to FILE instead of stdout (atomically; - is stdout)\n"
    "  -j, --threads N       threads (default: the free cores)\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace overlap trace.db --pairs pairs.txt -f csv\n";

int cmd_overlap(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    enum { O_PAIRS = 256 };
    static const struct option opts[] = {
        { "pairs", required_argument, 0, O_PAIRS }, { "format", required_argument, 0, 'f' },
        { "output", required_argument, 0, 'o' }, { "threads", required_argument, 0, 'j' }, { 0, 0, 0, 0 } };
    int fmt = RN_FMT_TABLE, c;
    const char *outp = NULL, *pairs = NULL;
    long threads = 0;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_PAIRS: pairs = optarg; break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'o': outp = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (argc - optind != 1) return cli_usage_error(argv[0], "expected TRACE.db");
    if (!pairs) return cli_usage_error(argv[0], "--pairs is required");
    cli_threads(threads);
    an_overlap_row *rows = NULL;
    int n = 0, have_af = 0;
    rn_atomic_file af;
    FILE *f = stdout;
    int rc = an_overlap_file(argv[optind], pairs, &rows, &n, &err);
    if (rc) goto out;
    if (outp && !(outp[0] == '-' && !outp[1])) {
        if ((rc = rn_atomic_open_text(&af, outp, &err))) goto out;
        have_af = 1;
        f = af.f;
    }
    if ((rc = an_overlap_print(f, fmt, rows, n, &err))) goto out;
    if (have_af) { have_af = 0; rc = rn_atomic_commit(&af, &err); }
out:
    if (have_af) rn_atomic_abort(&af);
    free(rows);
    return rc ? cli_fail(&err) : 0;
}
