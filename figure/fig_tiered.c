/* fig_tiered.c — `plot tiered`: tokens/s of the tiered state against its
 * budget, beside the disk's read-rate bound (fig_tiered.h). */
#include "fig_tiered.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_lineplot.h"
#include "viz_surface.h"

static int draw_kind(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_tiered = {
    .name = "tiered", .order = 60, .input = FIG_INPUT_FILE, .draw = draw_kind,
    .help = "the tiered state's tokens/s against its budget, beside the\n"
            "disk's read-rate bound: ramtrace plot tiered BENCH.csv -o FILE\n"
            "(the CSV of scripts/bench-tiered; docs/tiered-state.md)",
};

#define MAX_ROWS 256
#define MAX_POL 8

enum { C_BUDGET, C_POLICY, C_TOKENS, C_READS, C_DIRECT, C_NOPF, C_CACHE, C_RATE, N_COLS };
static const char *const col_names[N_COLS] = { "budget_bytes", "policy", "tokens", "reads", "tok_s_direct",
                                               "tok_s_direct_noprefetch", "tok_s_cache", "read_rate" };

typedef struct {
    double budget, tokens, reads, direct, nopf, cache, rate;
    char policy[32];
    char machine[96]; /* the optional machine column ("" without it) */
} bench_row;

/* Split line (modified) at commas into at most max fields. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int read_csv(const char *path, bench_row *rows, int *n, rn_error *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return rn_seterr(err, RN_EINPUT, "%s: cannot open", path);
    char line[1024], *f[64];
    int idx[N_COLS], nf, rc = RN_OK, imach = -1;
    *n = 0;
    if (!fgets(line, sizeof line, fp)) { fclose(fp); return rn_seterr(err, RN_EINPUT, "%s: empty", path); }
    nf = split(line, f, 64);
    for (int c = 0; c < N_COLS && !rc; c++) {
        idx[c] = -1;
        for (int i = 0; i < nf; i++)
            if (!strcmp(f[i], col_names[c])) idx[c] = i;
        if (idx[c] < 0) rc = rn_seterr(err, RN_EINPUT, "%s: no column %s (a CSV of scripts/bench-tiered?)", path,
                                       col_names[c]);
    }
    for (int i = 0; i < nf; i++)
        if (!strcmp(f[i], "machine")) imach = i;
    for (int ln = 2; !rc && fgets(line, sizeof line, fp); ln++) {
        if (!line[strspn(line, " \r\n")]) continue;
        if (*n == MAX_ROWS) { rc = rn_seterr(err, RN_EINPUT, "%s: more than %d rows", path, MAX_ROWS); break; }
        nf = split(line, f, 64);
        bench_row *r = &rows[*n];
        double *num[N_COLS] = { &r->budget, NULL, &r->tokens, &r->reads, &r->direct, &r->nopf, &r->cache, &r->rate };
        for (int c = 0; c < N_COLS && !rc; c++) {
            if (idx[c] >= nf) { rc = rn_seterr(err, RN_EINPUT, "%s:%d: too few fields", path, ln); break; }
            if (!num[c]) { snprintf(r->policy, sizeof r->policy, "%s", f[idx[c]]); continue; }
            char *end;
            *num[c] = strtod(f[idx[c]], &end);
            if (end == f[idx[c]] || *end || *num[c] < 0)
                rc = rn_seterr(err, RN_EINPUT, "%s:%d: %s '%s' is not a number >= 0", path, ln, col_names[c],
                               f[idx[c]]);
        }
        r->machine[0] = 0;
        if (!rc && imach >= 0 && imach < nf) snprintf(r->machine, sizeof r->machine, "%s", f[imach]);
        if (!rc && r->budget <= 0) rc = rn_seterr(err, RN_EINPUT, "%s:%d: budget_bytes must be > 0", path, ln);
        if (!rc) (*n)++;
    }
    fclose(fp);
    if (!rc && !*n) rc = rn_seterr(err, RN_EINPUT, "%s: no rows", path);
    return rc;
}

static int by_budget(const void *a, const void *b)
{
    const bench_row *x = a, *y = b;
    return (x->budget > y->budget) - (x->budget < y->budget);
}

typedef struct {
    viz_series *s;
    int n;
    viz_lineplot_style st;
    char note[256]; /* where it was measured ("" for none) */
} page;

/* The chart, and under it a line naming the machine and the disk. */
static int draw(cairo_t *cr, double W, double H, page *p, rn_error *err)
{
    double f = p->st.font, nh = p->note[0] ? f * 1.4 : 0;
    int rc = viz_lineplot_draw(cr, viz_rect_make(4, 4, W - 8, H - 8 - nh), p->s, p->n, &p->st, err);
    if (!rc && p->note[0]) {
        cairo_save(cr);
        viz_set_rgb(cr, VIZ_INK_RGB);
        viz_font(cr, f * 0.85, 0);
        viz_text_fit(cr, f * 0.8, H - 4 - nh / 2, p->note, W - f * 1.6, 0, 0.5);
        cairo_restore(cr);
    }
    return rc;
}

/* "measured on MACHINE; disk: N random reads/s at queue depth 1", from the
 * first row that names a machine (the CSV's optional machine column, which
 * scripts/bench-tiered writes) and the first row's read_rate. */
static void make_note(const bench_row *rows, int n, char *buf, size_t cap)
{
    const char *m = "";
    for (int i = 0; i < n && !*m; i++) m = rows[i].machine;
    buf[0] = 0;
    if (!*m) return;
    if (n > 0 && rows[0].rate > 0)
        snprintf(buf, cap, "measured on %s; disk: %.0f random reads/s at queue depth 1", m, rows[0].rate);
    else
        snprintf(buf, cap, "measured on %s", m);
}

int fig_tiered(const char *csv_path, const char *out_path, double width, double height, double dpi,
               double font, const char *title, rn_error *err)
{
    static bench_row rows[MAX_ROWS];
    int n = 0;
    int rc = read_csv(csv_path, rows, &n, err);
    if (rc) return rc;
    qsort(rows, (size_t)n, sizeof *rows, by_budget);
    /* policies in order of first appearance */
    char pols[MAX_POL][32];
    int np = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < np && strcmp(pols[k], rows[i].policy)) k++;
        if (k == np && np < MAX_POL) snprintf(pols[np++], 32, "%s", rows[i].policy);
    }
    /* x and y per series: the policies' O_DIRECT, then the first policy's
     * no read-ahead, page cache and bound */
    static double xs[MAX_POL + 3][MAX_ROWS], ys[MAX_POL + 3][MAX_ROWS];
    static char names[MAX_POL + 3][64];
    viz_series s[MAX_POL + 3];
    int ns = 0;
    for (int k = 0; k < np + 3; k++) {
        const char *pol = pols[k < np ? k : 0];
        size_t m = 0;
        for (int i = 0; i < n; i++) {
            const bench_row *r = &rows[i];
            if (strcmp(r->policy, pol)) continue;
            double y = k < np ? r->direct : k == np ? r->nopf : k == np + 1 ? r->cache
                     : r->reads > 0 ? r->tokens * r->rate / r->reads : -1;
            if (y <= 0) continue;
            xs[ns][m] = r->budget / 1048576.0;
            ys[ns][m++] = y;
        }
        if (!m) continue;
        if (k < np) snprintf(names[ns], sizeof names[ns], "%s, O_DIRECT", pol);
        else if (k == np) snprintf(names[ns], sizeof names[ns], "%s, O_DIRECT, no read-ahead", pol);
        else if (k == np + 1) snprintf(names[ns], sizeof names[ns], "%s, page cache", pol);
        else snprintf(names[ns], sizeof names[ns], "disk read-rate bound (%s's reads)", pol);
        s[ns] = (viz_series){ .name = names[ns], .n = m, .x = xs[ns], .y = ys[ns] };
        ns++;
    }
    page p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.n = ns;
    make_note(rows, n, p.note, sizeof p.note);
    viz_lineplot_style_default(&p.st);
    p.st.title = title ? title : "tiered state: tokens/s against the budget";
    p.st.font = font > 0 ? font : 13;
    p.st.markers = 1;
    p.st.looks = 1;
    p.st.corner = VIZ_TOP_LEFT;
    p.st.x = viz_axis_make(0, 0, 1, 0, "budget (MiB of slot rows in memory)");
    p.st.y = viz_axis_make(0, 0, 1, 0, "tokens/s (prompt and generated)");
    viz_surface sf;
    if ((rc = viz_surface_open(&sf, out_path, width > 0 ? width : 760, height > 0 ? height : 480,
                               dpi > 0 ? dpi : 96, err)))
        return rc;
    if ((rc = draw(sf.cr, sf.width, sf.height, &p, err))) {
        viz_surface_abort(&sf);
        return rc;
    }
    return viz_surface_commit(&sf, err);
}

/* plot tiered BENCH.csv: the CSV in o->db_path, with plot's page options */
static int draw_kind(fig_ctx *f, rn_error *err)
{
    const fig_opts *o = f->o;
    return fig_tiered(o->db_path, o->out_path, o->width, o->height, o->dpi, o->font, o->title, err);
}
