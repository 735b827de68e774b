/* fig_patching.c — `ramtrace plot patching` (and `ramtrace patch --plot`):
 * the recovered fraction per (layer, head) as a matrix (viz/
 * viz_attribution.h's labelled matrix), and per restored slot as a
 * one-column matrix beside it.  The fraction is signed (a patch can make
 * the metric worse), so both are drawn with the diverging RdBu map centred
 * on 0: red below, white at 0, blue above.  Before it, the sweep's command
 * line and run, shared with `ramtrace patch` (fig_patching.h). */
#include "fig_patching.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_modelfile.h"
#include "rn_rows.h"
#include "rn_tokenizer.h"
#include "viz_attribution.h"
#include "viz_surface.h"

static int run(int argc, char **argv, const fig_front *fe);

const fig_kind_def fig_kind_patching = {
    .name = "patching", .order = 70, .input = FIG_INPUT_ARGS, .run = run,
    .help = "a patching sweep: ramtrace plot patching MODEL CLEAN CORRUPT\n"
            "--answer TOKEN -o FILE (the figure of ramtrace patch)",
    .usage = "usage: ramtrace plot patching MODEL CLEAN CORRUPT --answer TOKEN -o FILE [options]\n"
             "\n"
             "The figure of `ramtrace patch` (recovered per layer x head, and per restored\n"
             "slot) without the table: -o names the figure (.png, .svg or .pdf); the other\n"
             "options are patch's (ramtrace patch --help).\n"
             "\n"
             "options:\n"
             FIG_PATCHING_SWEEP_HELP
             "  -o, --output FILE     the figure: .png, .svg or .pdf (required)\n"
             "  -j, --threads N       threads (default: the free cores)\n"
             "  -h, --help            this text\n",
};

int fig_patching_parse(int argc, char **argv, const char *cmd, const fig_front *fe, fig_patching_args *a)
{
    enum { O_ANSWER = 256, O_WRONG, O_METRIC, O_SLOTHEADS, O_PLOT };
    static const struct option opts[] = {
        { "answer", required_argument, 0, O_ANSWER }, { "wrong", required_argument, 0, O_WRONG },
        { "metric", required_argument, 0, O_METRIC }, { "format", required_argument, 0, 'f' },
        { "slot-heads", required_argument, 0, O_SLOTHEADS }, { "plot", required_argument, 0, O_PLOT },
        { "output", required_argument, 0, 'o' }, { "threads", required_argument, 0, 'j' },
        { 0, 0, 0, 0 } };
    memset(a, 0, sizeof *a);
    a->format = RN_FMT_TABLE;
    a->metric = AN_METRIC_LOGIT_DIFF;
    a->slot_heads = 3;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_ANSWER: a->answer = optarg; break;
        case O_WRONG: a->wrong = optarg; break;
        case O_PLOT: a->plot = optarg; break;
        case O_METRIC: rc = an_metric_parse(optarg, &a->metric, &err); break;
        case O_SLOTHEADS: rc = fe->parse_long("--slot-heads", optarg, 0, 1 << 20, &a->slot_heads, &err); break;
        case 'f': rc = rn_format_parse(optarg, &a->format, &err); break;
        case 'o': a->out = optarg; break;
        case 'j': rc = fe->parse_long("--threads", optarg, 1, 1024, &a->threads, &err); break;
        case ':': return fe->usage_error(cmd, "%s needs a value", argv[optind - 1]);
        default: return fe->usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return fe->usage_error(cmd, "%s", err.msg);
    }
    if (argc - optind != 3) return fe->usage_error(cmd, "expected MODEL, CLEAN and CORRUPT");
    if (!a->answer) return fe->usage_error(cmd, "--answer is required");
    a->model = argv[optind];
    a->clean = argv[optind + 1];
    a->corrupt = argv[optind + 2];
    return 0;
}

int fig_patching_run(const fig_patching_args *a, const char *figure, fig_patching_sweep *s, rn_error *err)
{
    memset(s, 0, sizeof *s);
    int rc = rn_model_load(&s->model, a->model, err);
    if (rc) return rc;
    s->loaded = 1;
    const rn_config *c = &s->model.cfg;
    int nc = 0, nx = 0, answer, wrong = -1;
    if ((rc = an_token_parse(c, "--answer", a->answer, &answer, err))) return rc;
    if (a->wrong && (rc = an_token_parse(c, "--wrong", a->wrong, &wrong, err))) return rc;
    if (a->wrong && wrong == answer) return rn_seterr(err, RN_EINPUT, "--wrong: the same token as --answer");
    if ((rc = rn_tokenize_file(c, a->clean, &s->clean, &nc, err)) ||
        (rc = rn_tokenize_file(c, a->corrupt, &s->corrupt, &nx, err)))
        return rc;
    viz_format vf;
    if (figure && (rc = viz_format_from_path(figure, &vf, err))) return rc;
    return an_patch_heads(&s->model, s->clean, nc, s->corrupt, nx, answer, wrong, a->metric, (int)a->slot_heads,
                          &s->r, err);
}

void fig_patching_sweep_free(fig_patching_sweep *s)
{
    an_patch_free(&s->r);
    free(s->clean);
    free(s->corrupt);
    if (s->loaded) rn_model_free(&s->model);
    s->loaded = 0;
    s->clean = s->corrupt = NULL;
}

int fig_patching(const an_patch_result *r, const rn_config *c, const char *path, rn_error *err)
{
    const int L = c->n_layers, H = c->n_heads;
    int n_slot_rows = 0;
    for (int i = 0; i < r->n_rows; i++) n_slot_rows += r->rows[i].slot >= 0;
    double *hv = calloc((size_t)L * H, sizeof *hv), *sv = calloc((size_t)n_slot_rows + 1, sizeof *sv);
    char (*lab)[32] = calloc((size_t)(L + H + n_slot_rows), sizeof *lab);
    const char **ptr = calloc((size_t)(L + H + n_slot_rows), sizeof *ptr);
    int rc = RN_OK;
    if (!hv || !sv || !lab || !ptr) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    for (int l = 0; l < L; l++) snprintf(lab[l], sizeof lab[l], "layer %d", l), ptr[l] = lab[l];
    for (int h = 0; h < H; h++) snprintf(lab[L + h], sizeof lab[L + h], "head %d", h), ptr[L + h] = lab[L + h];
    for (int i = 0, k = 0; i < r->n_rows; i++) {
        const an_patch_row *p = &r->rows[i];
        double v = isfinite(p->recovered) ? p->recovered : 0;
        if (p->slot < 0) hv[p->layer * H + p->head] = v;
        else {
            snprintf(lab[L + H + k], sizeof lab[L + H + k], "%d.%d slot %d", p->layer, p->head, p->slot);
            ptr[L + H + k] = lab[L + H + k];
            sv[k++] = v;
        }
    }
    char pa[64];
    rn_token_piece(c, r->answer, pa, sizeof pa);
    viz_matrix_data hd = { L, H, hv, ptr, ptr + L, "", "recovered (fraction)", "", "", 0, 0 };
    snprintf(hd.title, sizeof hd.title, "patching %s of '%s': recovered per head", an_metric_name(r->metric), pa);
    static const char *const one[1] = { "slot" };
    /* slot rows are labelled "L.H slot S": head H of layer L, slot S */
    viz_matrix_data sd = { n_slot_rows, 1, sv, ptr + L + H, one, "per restored slot", "recovered (fraction)", "",
                           "restored slot (layer.head slot S)", 0, 0 };
    double W = n_slot_rows ? 1000 : 640, Hh = 120 + 44.0 * (L > n_slot_rows / 2 ? L : n_slot_rows / 2);
    if (Hh < 420) Hh = 420;
    viz_surface s;
    if ((rc = viz_surface_open(&s, path, W, Hh, 96, err))) goto done;
    double hw = n_slot_rows ? W * 0.6 : W;
    rc = viz_matrix_draw(s.cr, viz_rect_make(4, 4, hw - 8, Hh - 8), &hd, VIZ_CMAP_RDBU, 13, err);
    if (!rc && n_slot_rows)
        rc = viz_matrix_draw(s.cr, viz_rect_make(hw + 4, 4, W - hw - 8, Hh - 8), &sd, VIZ_CMAP_RDBU, 13, err);
    if (rc) viz_surface_abort(&s);
    else rc = viz_surface_commit(&s, err);
done:
    free(hv); free(sv); free(lab); free(ptr);
    return rc;
}

/* plot patching MODEL CLEAN CORRUPT --answer TOKEN -o FILE: patch's sweep,
 * drawn to -o without the table. */
static int run(int argc, char **argv, const fig_front *fe)
{
    static const char cmd[] = "plot patching";
    fig_patching_args a;
    int rc = fig_patching_parse(argc, argv, cmd, fe, &a);
    if (rc) return rc;
    if (a.plot) return fe->usage_error(cmd, "--plot: use -o FILE for the figure");
    if (!a.out) return fe->usage_error(cmd, "-o FILE (the figure) is required");
    fe->threads(a.threads);
    fig_patching_sweep s;
    rn_error err = { 0 };
    rc = fig_patching_run(&a, a.out, &s, &err);
    if (!rc) rc = fig_patching(&s.r, &s.model.cfg, a.out, &err);
    fig_patching_sweep_free(&s);
    return rc ? fe->fail(&err) : 0;
}
