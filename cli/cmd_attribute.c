/* cmd_attribute.c — `ramtrace attribute`: which earlier tokens' writes make
 * up a token's read, after PDMA decay and normalisation
 * (analysis/an_attribute.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_attribute.h"
#include "an_load.h"
#include "an_stats.h"
#include "cli.h"
#include "rn_atomic.h"

const char cmd_attribute_summary[] = "attribute a head's read to earlier tokens' writes";

static const char usage[] =
    "usage: ramtrace attribute TRACE.db --layer L --head H (--pos T | --matrix) [options]\n"
    "\n"
    "From the trace alone (slots, weights, gamma, eps), split the read of\n"
    "head (L, H) at position T into the earlier tokens whose writes it\n"
    "returns: o_T = sum over t' of c(T,t') * v(t'), where c sums\n"
    "r * w * decay / (z + eps) over the slots t' wrote and T read.\n"
    "\n"
    "options:\n"
    "      --layer L         layer (required)\n"
    "      --head H          head (required)\n"
    "      --pos T           the reading position\n"
    "      --top N           print the N largest contributions (default 20; 0 = all)\n"
    "      --detail          one row per (write, read slot) term instead of per token\n"
    "                        (CSV: pos,slot,read_rank,w,r,decay,z,coef)\n"
    "      --matrix          the token x token matrix of the whole head as CSV\n"
    "                        (row = reading position, column = writing position)\n"
    "      --max-tokens N    matrix size limit (default 4096)\n"
    "  -o, --output FILE     write to FILE instead of stdout (atomically; - is stdout)\n"
    "  -f, --format F        table (default), csv or json (per-token output)\n"
    "      --run R           run id (default: the latest)\n"
    "  -j, --threads N       accepted, as on every command that computes; attribute runs\n"
    "                        on one thread for now\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace attribute trace.db --layer 0 --head 1 --pos 200 --top 10\n";

int cmd_attribute(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    enum { O_RUN = 256, O_LAYER, O_HEAD, O_POS, O_TOP, O_DETAIL, O_MATRIX, O_MAXTOK };
    static const struct option opts[] = {
        { "run", required_argument, 0, O_RUN }, { "layer", required_argument, 0, O_LAYER },
        { "head", required_argument, 0, O_HEAD }, { "pos", required_argument, 0, O_POS },
        { "top", required_argument, 0, O_TOP }, { "detail", no_argument, 0, O_DETAIL },
        { "matrix", no_argument, 0, O_MATRIX }, { "max-tokens", required_argument, 0, O_MAXTOK },
        { "output", required_argument, 0, 'o' }, { "format", required_argument, 0, 'f' },
        { "threads", required_argument, 0, 'j' }, { 0, 0, 0, 0 } };
    long run = 0, layer = -1, head = -1, pos = -1, top = 20, maxtok = 4096, threads = 0;
    int detail = 0, matrix = 0, fmt = RN_FMT_TABLE, c;
    const char *outp = NULL;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:f:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_RUN: rc = cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err); break;
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_POS: rc = cli_parse_long("--pos", optarg, 0, INT32_MAX, &pos, &err); break;
        case O_TOP: rc = cli_parse_long("--top", optarg, 0, INT32_MAX, &top, &err); break;
        case O_DETAIL: detail = 1; break;
        case O_MATRIX: matrix = 1; break;
        case O_MAXTOK: rc = cli_parse_long("--max-tokens", optarg, 1, 65536, &maxtok, &err); break;
        case 'o': outp = optarg; break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break; /* one thread for now */
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (optind != argc - 1) return cli_usage_error(argv[0], "expected one trace database");
    if (layer < 0 || head < 0) return cli_usage_error(argv[0], "--layer and --head are required");
    if ((pos < 0) == !matrix) return cli_usage_error(argv[0], "give exactly one of --pos T and --matrix");
    const char *path = argv[optind];
    an_run r;
    tr_event *ev = NULL;
    size_t n = 0;
    tr_token *toks = NULL;
    int64_t nt = 0;
    an_attribution a = { 0 };
    an_matrix m = { 0 };
    rn_atomic_file af;
    int have_af = 0;
    FILE *f = stdout;
    int rc = an_run_open(path, run, &r, &err);
    if (rc) return cli_fail(&err);
    if ((rc = an_run_check_head(&r, (int)layer, (int)head, &err))) goto out;
    if ((rc = an_run_load(&r, (int)layer, (int)head, RN_OPS_BOTH, &ev, &n, &err))) goto out;
    if ((rc = tr_load_tokens(r.db, r.run.run_id, &toks, &nt, &err))) goto out;
    const rn_config *cfg = &r.run.cfg;
    if (matrix) rc = an_attribute_matrix(ev, n, r.M, cfg->gamma, cfg->eps, maxtok, &m, &err);
    else {
        int32_t lo = n ? ev[0].pos : 0, hi = n ? ev[n - 1].pos : -1;
        if (pos < lo || pos > hi) {
            rc = rn_seterr(&err, RN_EINPUT, "--pos: %ld is outside the traced positions [%d, %d]", pos, lo, hi);
            goto out;
        }
        rc = an_attribute_read(ev, n, r.M, cfg->gamma, cfg->eps, (int32_t)pos, &a, &err);
    }
    if (!rc && cli_stop_flag) rc = rn_seterr(&err, RN_EINTR, "attribute: interrupted; nothing written");
    if (rc) goto out;
    if (outp) {
        if ((rc = rn_atomic_check_not_input(path, outp, &err)) || (rc = rn_atomic_open_text(&af, outp, &err))) goto out;
        have_af = 1;
        f = af.f;
    }
    if (matrix) rc = an_matrix_print_csv(f, &m, &err);
    else if (detail) rc = an_attribution_print_terms(f, &a, &err);
    else rc = an_attribution_print(f, fmt, &a, (int)layer, (int)head, toks, nt, top, &err);
    if (rc) goto out;
    if (have_af && cli_stop_flag) { rc = rn_seterr(&err, RN_EINTR, "attribute: interrupted; %s not written", outp); goto out; }
    if (have_af) { have_af = 0; rc = rn_atomic_commit(&af, &err); }
out:
    if (have_af) rn_atomic_abort(&af);
    free(ev);
    free(toks);
    an_attribution_free(&a);
    an_matrix_free(&m);
    an_run_close(&r);
    return rc ? cli_fail(&err) : 0;
}
