/* cmd_patch.c — `ramtrace patch MODEL CLEAN CORRUPT --answer TOKEN`: the
 * activation-patching sweep over every head (analysis/an_patch.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_patch.h"
#include "fig_patching.h"
#include "cli.h"
#include "rn_atomic.h"
#include "rn_modelfile.h"
#include "rn_rows.h"
#include "rn_tokenizer.h"
#include "viz_surface.h"

const char cmd_patch_summary[] = "activation patching: how much of a clean-vs-corrupted difference each head carries";

/* The options of the sweep, shared by patch and plot patching. */
#define SWEEP_OPTS \
    "      --answer TOKEN    the clean input's answer (bytes: one byte, \\n, \\t,\n" \
    "                        \\\\ or <bos>; ids: the id; #N: the id N) (required)\n" \
    "      --wrong TOKEN     the other side of logit-diff (default: the corrupted\n" \
    "                        run's most likely token other than the answer)\n" \
    "      --metric M        logit-diff (default), prob or loss\n" \
    "      --slot-heads N    then restore, one at a time, each slot read at the last\n" \
    "                        position in the N heads that recover most (default 3;\n" \
    "                        0 = heads only): 2 + N*K more forward passes\n"

static const char usage[] =
    "usage: ramtrace patch MODEL CLEAN CORRUPT --answer TOKEN [options]\n"
    "\n"
    "Run MODEL on CLEAN and on CORRUPT (inputs of the same token count), then\n"
    "once more on CORRUPT per head with that head's read output replaced at\n"
    "every position by its value on CLEAN (patch-head), and report how much of\n"
    "the clean-vs-corrupted metric at the last position each head recovers:\n"
    "(patched - corrupted) / (clean - corrupted).  L*H + 2 forward passes.\n"
    "Rows with a slot restore only that slot's state (S, z) from the clean run\n"
    "at the last position's read (the corrupted query's read weight r).\n"
    "\n"
    "options:\n"
    SWEEP_OPTS
    "  -f, --format F        table (default), csv or json\n"
    "      --plot FILE       also draw the result (.png, .svg or .pdf): recovered\n"
    "                        per layer x head, and per restored slot\n"
    "  -o, --output FILE     write to FILE instead of stdout (atomically; - is stdout)\n"
    "  -j, --threads N       threads (default: the free cores)\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace patch samples/kjv.bin clean.txt corrupt.txt --answer o\n";

static const char plot_usage[] =
    "usage: ramtrace plot patching MODEL CLEAN CORRUPT --answer TOKEN -o FILE [options]\n"
    "\n"
    "The figure of `ramtrace patch` (recovered per layer x head, and per restored\n"
    "slot) without the table: -o names the figure (.png, .svg or .pdf); the other\n"
    "options are patch's (ramtrace patch --help).\n"
    "\n"
    "options:\n"
    SWEEP_OPTS
    "  -o, --output FILE     the figure: .png, .svg or .pdf (required)\n"
    "  -j, --threads N       threads (default: the free cores)\n"
    "  -h, --help            this text\n";

/* patch, or with as_plot `plot patching`: the same sweep, where -o names
 * the figure and no table is printed. */
static int run_patch(int argc, char **argv, int as_plot)
{
    if (cli_wants_help(argc, argv)) { fputs(as_plot ? plot_usage : usage, stdout); return 0; }
    const char *name = as_plot ? "plot patching" : "patch";
    enum { O_ANSWER = 256, O_WRONG, O_METRIC, O_SLOTHEADS, O_PLOT };
    static const struct option opts[] = {
        { "answer", required_argument, 0, O_ANSWER }, { "wrong", required_argument, 0, O_WRONG },
        { "metric", required_argument, 0, O_METRIC }, { "format", required_argument, 0, 'f' },
        { "slot-heads", required_argument, 0, O_SLOTHEADS }, { "plot", required_argument, 0, O_PLOT },
        { "output", required_argument, 0, 'o' }, { "threads", required_argument, 0, 'j' },
        { 0, 0, 0, 0 } };
    const char *answer_s = NULL, *wrong_s = NULL, *outp = NULL, *plot = NULL;
    int fmt = RN_FMT_TABLE, metric = AN_METRIC_LOGIT_DIFF, c;
    long threads = 0, slot_heads = 3;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_ANSWER: answer_s = optarg; break;
        case O_WRONG: wrong_s = optarg; break;
        case O_PLOT: plot = optarg; break;
        case O_METRIC: rc = an_metric_parse(optarg, &metric, &err); break;
        case O_SLOTHEADS: rc = cli_parse_long("--slot-heads", optarg, 0, 1 << 20, &slot_heads, &err); break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'o': outp = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error(name, "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(name, "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(name, "%s", err.msg);
    }
    if (argc - optind != 3) return cli_usage_error(name, "expected MODEL, CLEAN and CORRUPT");
    if (!answer_s) return cli_usage_error(name, "--answer is required");
    if (as_plot) {
        if (plot) return cli_usage_error(name, "--plot: use -o FILE for the figure");
        if (!outp) return cli_usage_error(name, "-o FILE (the figure) is required");
        plot = outp;
        outp = NULL;
    }
    cli_threads(threads);
    rn_model model;
    int rc = rn_model_load(&model, argv[optind], &err);
    if (rc) return cli_fail(&err);
    int *clean = NULL, *corrupt = NULL, nc = 0, nx = 0, answer, wrong = -1;
    an_patch_result r = { 0 };
    rn_atomic_file af;
    int have_af = 0;
    FILE *f = stdout;
    if ((rc = an_token_parse(&model.cfg, "--answer", answer_s, &answer, &err))) goto out;
    if (wrong_s && (rc = an_token_parse(&model.cfg, "--wrong", wrong_s, &wrong, &err))) goto out;
    if (wrong_s && wrong == answer) { rc = rn_seterr(&err, RN_EINPUT, "--wrong: the same token as --answer"); goto out; }
    if ((rc = rn_tokenize_file(&model.cfg, argv[optind + 1], &clean, &nc, &err)) ||
        (rc = rn_tokenize_file(&model.cfg, argv[optind + 2], &corrupt, &nx, &err)))
        goto out;
    if (plot) {
        viz_format vf;
        if ((rc = viz_format_from_path(plot, &vf, &err))) goto out;
    }
    if ((rc = an_patch_heads(&model, clean, nc, corrupt, nx, answer, wrong, metric, (int)slot_heads, &r, &err))) goto out;
    if (outp) {
        if ((rc = rn_atomic_open_text(&af, outp, &err))) goto out;
        have_af = 1;
        f = af.f;
    }
    if (!as_plot && (rc = an_patch_print(f, fmt, &r, &model.cfg, &err))) goto out;
    if (have_af) { have_af = 0; rc = rn_atomic_commit(&af, &err); }
    if (!rc && plot) rc = fig_patching(&r, &model.cfg, plot, &err);
out:
    if (have_af) rn_atomic_abort(&af);
    an_patch_free(&r);
    free(clean);
    free(corrupt);
    rn_model_free(&model);
    return rc ? cli_fail(&err) : 0;
}

int cmd_patch(int argc, char **argv) { return run_patch(argc, argv, 0); }

/* `ramtrace plot patching ...` (cmd_plot.c hands the kind's arguments here). */
int cmd_patch_plot(int argc, char **argv) { return run_patch(argc, argv, 1); }
