/* cmd_eval.c — `ramtrace eval MODEL --task mqar|text`: score a saved model
 * (MQAR: accuracy over the test ladder, or with --by-pair by the place of
 * the queried pair in the context; text: held-out loss and bits per
 * byte).  The evaluations live in core/train/rn_train_loop.c. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rn_device.h"
#include "rn_modelfile.h"
#include "rn_rows.h"
#include "rn_train_loop.h"

const char cmd_eval_summary[] = "evaluate a trained model on MQAR or held-out text";

static const char usage[] =
    "usage: ramtrace eval MODEL --task mqar|text [options]\n"
    "\n"
    "mqar: accuracy on the test ladder (L, N) = (64,4) (64,8) (64,16) (128,32)\n"
    "      (256,64) (512,128) (1024,256): per segment and averaged; an example's\n"
    "      accuracy is the fraction of its queries answered correctly.\n"
    "text: loss and bits per byte on the held-out split of the corpus (with\n"
    "      --whole, of all of it): the summed loss over ln 2 and over the bytes\n"
    "      of text the scored tokens stand for, whatever the tokenizer.\n"
    "\n"
    "options:\n"
    "  --task mqar|text   the task (required)\n"
    "  --examples N       mqar: examples per segment (default 1000)\n"
    "  --seed N           mqar: seed of the test examples (default 4242)\n"
    "  --segments LIST    mqar: other settings than the ladder, L:N,L:N,... (up\n"
    "                     to 16; e.g. 512:64,1024:64 to tell length from capacity)\n"
    "  --by-pair B        mqar: accuracy by the queried pair's place in the\n"
    "                     context: each segment's pairs 0..N-1 (in the order\n"
    "                     written) in B equal bins, 1 <= B <= every segment's N;\n"
    "                     rows segment,L,N,bin,pair_from,pair_to,queries,accuracy\n"
    "  --data FILE        text: corpus (required; scripts/setup writes\n"
    "                     data/kjv.txt in a source checkout)\n"
    "  --val-frac X       text: held-out fraction at the end (default 0.05)\n"
    "  --whole            text: score all of FILE (a held-out file such as a\n"
    "                     test split), not its last --val-frac\n"
    "  --seq-len N        text: window length (default 256)\n"
    "  --windows N        text: number of held-out windows, spread evenly over the\n"
    "                     split; 0 = all (default 0)\n"
    "  --top-k K          read and write K slots per token instead of the\n"
    "                     model's top_k (1..min(M, 1024)): accuracy against K\n"
    "  -j, --threads N    OpenMP/BLAS threads (default: the free cores)\n"
    "  --device DEV       cpu (default) or cuda (a CUDA build and a GPU): the\n"
    "                     forward passes on the GPU (docs/cuda.md)\n"
    "  --precision P      fp32 (default) or bf16: the weight matrices rounded\n"
    "                     to bf16, FP32 arithmetic (docs/inference.md); with\n"
    "                     --device cuda bf16 products too, or tf32 (docs/cuda.md)\n"
    "  -f, --format F     table (default), csv or json; mqar rows\n"
    "                     segment,L,N,accuracy (and a mean row), text one row\n"
    "                     loss_nats_per_byte,bits_per_byte,loss_nats_per_token\n"
    "  -h, --help         this text\n";

/* The MQAR ladder as rows: the table keeps "(L,N)  accuracy" (and the
 * state size as a last line), CSV and JSON add L and N and print the
 * accuracies in full. */
static int print_mqar(int fmt, const rn_mqar_seg *segs, int n_segs, const double *acc, double mean,
                      const rn_config *cfg, rn_error *err)
{
    static const char *const tcols[2] = { "segment", "accuracy" };
    static const char *const cols[4] = { "segment", "L", "N", "accuracy" };
    int table = fmt == RN_FMT_TABLE;
    rn_rows w;
    int rc = rn_rows_begin(&w, stdout, fmt, table ? 2 : 4, table ? tcols : cols, NULL, err);
    if (rc) return rc;
    char seg[32];
    for (int i = 0; i <= n_segs; i++) {
        int last = i == n_segs;
        if (last) snprintf(seg, sizeof seg, "mean");
        else snprintf(seg, sizeof seg, "(%d,%d)", segs[i].L, segs[i].N);
        rn_cell a = rn_cell_real(last ? mean : acc[i], table ? "%.4f" : NULL);
        const rn_cell c[4] = { rn_cell_text(seg), last ? rn_cell_null(NULL) : rn_cell_int(segs[i].L),
                               last ? rn_cell_null(NULL) : rn_cell_int(segs[i].N), a };
        const rn_cell t[2] = { c[0], a };
        rn_rows_add(&w, table ? t : c);
    }
    if ((rc = rn_rows_end(&w, err))) return rc;
    if (table)
        printf("state size %lld bytes (4 x sum of M*d_v + M), active %lld floats per token\n",
               (long long)(4 * rn_config_total_state(cfg)), (long long)rn_config_active_state(cfg));
    return RN_OK;
}

/* --by-pair: for each segment, B rows of its per-pair tallies binned by
 * pair index (rn_mqar_pair_bin); accuracy is correct / queries of the bin. */
static int print_pairs(int fmt, const rn_mqar_seg *segs, int n_segs, int B,
                       const rn_mqar_tally *pairs, rn_error *err)
{
    static const char *const cols[8] = { "segment", "L", "N", "bin", "pair_from", "pair_to",
                                         "queries", "accuracy" };
    rn_rows w;
    int rc = rn_rows_begin(&w, stdout, fmt, 8, cols, NULL, err);
    if (rc) return rc;
    char seg[32];
    for (int s = 0; s < n_segs; s++) {
        int N = segs[s].N;
        snprintf(seg, sizeof seg, "(%d,%d)", segs[s].L, N);
        for (int b = 0; b < B; b++) {
            int from, to;
            rn_mqar_pair_bin(N, B, b, &from, &to);
            int64_t q = 0, c = 0;
            for (int i = from; i <= to; i++) { q += pairs[i].queries; c += pairs[i].correct; }
            const rn_cell row[8] = { rn_cell_text(seg), rn_cell_int(segs[s].L), rn_cell_int(N),
                                     rn_cell_int(b), rn_cell_int(from), rn_cell_int(to), rn_cell_int(q),
                                     q ? rn_cell_real((double)c / (double)q, fmt == RN_FMT_TABLE ? "%.4f" : NULL)
                                       : rn_cell_null(NULL) };
            rn_rows_add(&w, row);
        }
        pairs += N;
    }
    return rn_rows_end(&w, err);
}

/* Held-out loss per byte, bits per byte and loss per token as one row (4
 * decimals in the table); for a byte corpus the two losses are one. */
static int print_text(int fmt, int bytes, double loss, double bpb, rn_error *err)
{
    static const char *const cols[3] = { "loss_nats_per_byte", "bits_per_byte", "loss_nats_per_token" };
    const char *nf = fmt == RN_FMT_TABLE ? "%.4f" : NULL;
    rn_rows w;
    int rc = rn_rows_begin(&w, stdout, fmt, 3, cols, NULL, err);
    if (rc) return rc;
    const rn_cell c[3] = { rn_cell_real(bytes ? loss : bpb * log(2.0), nf), rn_cell_real(bpb, nf),
                           rn_cell_real(loss, nf) };
    rn_rows_add(&w, c);
    return rn_rows_end(&w, err);
}

/* Progress on stderr once the evaluation has run a second: done/total
 * and an ETA, redrawn in place on a terminal, else a line every 10%. */
typedef struct { double t0; int tty, last_decile, shown; const char *unit; } eval_progress;

static void progress(void *user, int64_t done, int64_t total)
{
    eval_progress *p = user;
    double el = cli_now() - p->t0;
    if (el < 1.0 || total <= 0 || cli_quiet) return;
    int dec = (int)(10 * done / total);
    if (!p->tty && dec == p->last_decile && done < total) return;
    p->last_decile = dec;
    int eta = done > 0 ? (int)(el * (double)(total - done) / (double)done + 0.5) : 0;
    fprintf(stderr, "%seval: %lld/%lld %s (%.0f%%), ETA %d:%02d:%02d%s", p->tty ? "\r" : "",
            (long long)done, (long long)total, p->unit, 100.0 * (double)done / (double)total, eta / 3600,
            eta / 60 % 60, eta % 60, p->tty ? "" : "\n");
    if (p->tty && done == total) fputc('\n', stderr);
    p->shown = 1;
    fflush(stderr);
}

int cmd_eval(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    static const struct option lo[] = {
        { "task", 1, 0, 't' }, { "examples", 1, 0, 'e' }, { "seed", 1, 0, 's' }, { "data", 1, 0, 'd' },
        { "val-frac", 1, 0, 'v' }, { "seq-len", 1, 0, 'L' }, { "windows", 1, 0, 'w' },
        { "threads", 1, 0, 'T' }, { "top-k", 1, 0, 'k' }, { "format", 1, 0, 'f' }, { "device", 1, 0, 'D' },
        { "precision", 1, 0, 'R' },
        { "segments", 1, 0, 'S' }, { "by-pair", 1, 0, 'P' }, { "whole", 0, 0, 'W' }, { 0, 0, 0, 0 } };
    const char *task = NULL, *data = NULL;
    long examples = 1000, seq = 256, windows = 0, threads = 0, top_k = 0, by_pair = 0;
    uint64_t seed = 4242;
    double vf = 0.05;
    int fmt = RN_FMT_TABLE, whole = 0;
    const char *device_arg = NULL, *precision_arg = "fp32";
    rn_device device;
    rn_precision precision;
    rn_error err = { 0, "" };
    rn_train_opts segopt; /* --segments parses as the training key mqar_eval */
    rn_train_opts_default(&segopt, RN_TASK_MQAR);
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":f:j:", lo, NULL)) != -1) {
        switch (ch) {
        case 't': task = optarg; break;
        case 'd': data = optarg; break;
        case 'D': device_arg = optarg; break;
        case 'R': precision_arg = optarg; break;
        case 'W': whole = 1; break;
        case 'e': if (cli_parse_long("--examples", optarg, 1, 1000000, &examples, &err)) return cli_fail(&err); break;
        case 's': if (cli_parse_u64("--seed", optarg, &seed, &err)) return cli_fail(&err); break;
        case 'v': if (cli_parse_double("--val-frac", optarg, 0.001, 0.5, &vf, &err)) return cli_fail(&err); break;
        case 'L': if (cli_parse_long("--seq-len", optarg, 1, 1 << 20, &seq, &err)) return cli_fail(&err); break;
        case 'w': if (cli_parse_long("--windows", optarg, 0, 1L << 30, &windows, &err)) return cli_fail(&err); break;
        case 'T':
        case 'j': if (cli_parse_long("--threads", optarg, 1, 1024, &threads, &err)) return cli_fail(&err); break;
        case 'S':
            if (rn_train_opts_set(&segopt, "mqar_eval", optarg, &err))
                return cli_usage_error("eval", "--segments: '%s' is not a list of up to 16 L:N pairs", optarg);
            break;
        case 'f': if (rn_format_parse(optarg, &fmt, &err)) return cli_usage_error("eval", "%s", err.msg); break;
        case 'k': if (cli_parse_long("--top-k", optarg, 1, RN_MAX_TOPK, &top_k, &err)) return cli_fail(&err); break;
        case 'P': if (cli_parse_long("--by-pair", optarg, 1, 1 << 20, &by_pair, &err)) return cli_fail(&err); break;
        case ':': return cli_usage_error("eval", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("eval", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return cli_usage_error("eval", "no model given");
    if (optind + 1 < argc) return cli_usage_error("eval", "unexpected argument '%s'", argv[optind + 1]);
    if (!task) return cli_usage_error("eval", "no task (--task mqar|text)");
    if (rn_device_select(device_arg, &device, &err)) return cli_fail(&err);
    if (rn_precision_parse(precision_arg, &precision, &err) || rn_device_check_train_precision(device, precision, &err))
        return cli_usage_error("eval", "%s", err.msg);
    int is_mqar = !strcmp(task, "mqar");
    if (!is_mqar && strcmp(task, "text")) return cli_usage_error("eval", "unknown task '%s' (expected mqar or text)", task);
    if (by_pair && !is_mqar) return cli_usage_error("eval", "--by-pair: only for --task mqar");
    if (whole && is_mqar) return cli_usage_error("eval", "--whole: only for --task text");
    if (!is_mqar && !data)
        return cli_usage_error("eval", "--task text needs a corpus: --data FILE (none is installed; "
                                       "scripts/setup writes data/kjv.txt in a source checkout)");
    int total_pairs = 0; /* Σ N over the segments: the per-pair tallies */
    for (int i = 0; by_pair && i < segopt.n_eval_segs; i++) {
        const rn_mqar_seg *sg = &segopt.eval_segs[i];
        if (by_pair > sg->N)
            return cli_usage_error("eval", "--by-pair: %ld bins exceed the %d pairs of segment (%d,%d)", by_pair,
                                   sg->N, sg->L, sg->N);
        total_pairs += sg->N;
    }
    cli_threads(threads);
    cli_install_signals();
    rn_model m;
    if (rn_model_load(&m, argv[optind], &err)) return cli_fail(&err);
    if (precision == RN_PREC_BF16) { /* evaluate the model whose matrices are rounded to bf16 */
        rn_model mb;
        int brc = rn_model_copy_bf16(&mb, &m, &err);
        rn_model_free(&m);
        if (brc) return cli_fail(&err);
        m = mb;
    }
    if (top_k) {
        if (top_k > rn_config_slots(&m.cfg)) {
            rn_seterr(&err, RN_EINPUT, "--top-k: %ld exceeds the %lld memory slots of %s", top_k,
                      (long long)rn_config_slots(&m.cfg), argv[optind]);
            rn_model_free(&m);
            return cli_fail(&err);
        }
        m.cfg.top_k = (int)top_k; /* only the forward's K; the parameters do not depend on it */
    }
    int rc;
    if (is_mqar) {
        double acc[16], mean;
        if (m.cfg.tokenizer != RN_TOK_IDS || m.cfg.vocab_size < 16) {
            rn_model_free(&m);
            rn_seterr(&err, RN_EINPUT, "%s: not an MQAR model (needs tokenizer ids)", argv[optind]);
            return cli_fail(&err);
        }
        for (int i = 0; i < segopt.n_eval_segs; i++)
            if (rn_mqar_check(m.cfg.vocab_size, segopt.eval_segs[i].L, segopt.eval_segs[i].N, &err)) {
                rn_model_free(&m);
                return cli_usage_error("eval", "--segments: %s", err.msg);
            }
        cli_info("evaluating %ld examples per segment...\n", examples);
        eval_progress pg = { cli_now(), cli_stderr_tty(), -1, 0, "examples" };
        rn_eval_ctl ctl = { &cli_stop_flag, progress, &pg, (int)precision };
        rn_mqar_tally *pairs = NULL;
        if (by_pair && !(pairs = malloc(sizeof *pairs * (size_t)total_pairs)))
            rc = rn_seterr(&err, RN_ENOMEM, "out of memory");
        else
            rc = rn_eval_mqar_pairs(&m, device, segopt.eval_segs, segopt.n_eval_segs, (int)examples, seed,
                                    8192, acc, &mean, pairs, &ctl, &err);
        if (pg.shown && pg.tty && rc) fputc('\n', stderr);
        if (!rc && by_pair) rc = print_pairs(fmt, segopt.eval_segs, segopt.n_eval_segs, (int)by_pair, pairs, &err);
        else if (!rc) rc = print_mqar(fmt, segopt.eval_segs, segopt.n_eval_segs, acc, mean, &m.cfg, &err);
        free(pairs);
    } else {
        rn_text t;
        rc = rn_text_load_for(&t, &m.cfg, data, whole ? 1.0 : vf, (int)seq, &err);
        if (!rc) {
            double loss, bpb;
            eval_progress pg = { cli_now(), cli_stderr_tty(), -1, 0, "windows" };
            rn_eval_ctl ctl = { &cli_stop_flag, progress, &pg, (int)precision };
            rc = rn_eval_text(&m, device, &t, (int)seq, (int)windows, 16, &loss, &bpb, &ctl, &err);
            if (pg.shown && pg.tty && rc) fputc('\n', stderr);
            if (!rc) rc = print_text(fmt, t.data != NULL, loss, bpb, &err);
            rn_text_free(&t);
        }
    }
    rn_model_free(&m);
    return rc ? cli_fail(&err) : 0;
}
