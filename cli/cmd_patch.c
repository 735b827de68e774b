/* cmd_patch.c — `ramtrace patch MODEL CLEAN CORRUPT --answer TOKEN`: the
 * activation-patching sweep over every head (analysis/an_patch.h); its
 * command line, run and figure are the patching plot kind's
 * (figure/fig_patching.h), to which this adds the table. */
#include <stdio.h>

#include "an_patch.h"
#include "cli.h"
#include "fig_patching.h"
#include "rn_atomic.h"

const char cmd_patch_summary[] = "activation patching: how much of a clean-vs-corrupted difference each head carries";

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
    FIG_PATCHING_SWEEP_HELP
    "  -f, --format F        table (default), csv or json\n"
    "      --plot FILE       also draw the result (.png, .svg or .pdf): recovered\n"
    "                        per layer x head, and per restored slot\n"
    "  -o, --output FILE     write to FILE instead of stdout (atomically; - is stdout)\n"
    "  -j, --threads N       threads (default: the free cores)\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace patch samples/kjv.bin clean.txt corrupt.txt --answer o\n";

extern const fig_front cmd_plot_front; /* cmd_plot.c: the cli helpers, for figure/ */

int cmd_patch(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    fig_patching_args a;
    int rc = fig_patching_parse(argc, argv, "patch", &cmd_plot_front, &a);
    if (rc) return rc;
    cli_threads(a.threads);
    fig_patching_sweep s;
    rn_error err = { 0 };
    rn_atomic_file af;
    int have_af = 0;
    FILE *f = stdout;
    if ((rc = fig_patching_run(&a, a.plot, &s, &err))) goto out;
    if (a.out) {
        if ((rc = rn_atomic_open_text(&af, a.out, &err))) goto out;
        have_af = 1;
        f = af.f;
    }
    if ((rc = an_patch_print(f, a.format, &s.r, &s.model.cfg, &err))) goto out;
    if (have_af) { have_af = 0; rc = rn_atomic_commit(&af, &err); }
    /* the figure of `ramtrace plot patching` */
    if (!rc && a.plot) rc = fig_patching(&s.r, &s.model.cfg, a.plot, &err);
out:
    if (have_af) rn_atomic_abort(&af);
    fig_patching_sweep_free(&s);
    return rc ? cli_fail(&err) : 0;
}
