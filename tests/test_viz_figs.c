/* test_viz_figs.c — what the figures say, read back from their pixels: the
 * patching map is diverging (0 white, below red, above blue, symmetric
 * limits), attribution --log keeps exact zeros apart from the smallest
 * value, a log axis labels its ticks in one format and gets enough of them
 * over a short range, the MQAR accuracy axes stop at 1, the frontier leaves
 * out shapes that did not learn, the heatmap's default bins are whole
 * positions (a uniform stream draws no stripes), the model grid numbers its
 * thumbnails' ticks, and the tiered figure names its machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fig_mqar.h"
#include "fig_patching.h"
#include "fig_tiered.h"
#include "th.h"
#include "tr_writer.h"
#include "viz_attribution.h"
#include "viz_axes.h"
#include "viz_heatmap.h"
#include "viz_png.h"
#include "viz_surface.h"

/* |p - (r, g, b)| <= tol in every channel */
static int near_rgb(const unsigned char *p, int r, int g, int b, int tol)
{
    return abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol;
}

/* The plot area viz_matrix_draw uses for d in r (measured on a scratch
 * surface: it depends on label widths only). */
static viz_rect matrix_area(const viz_matrix_data *d, viz_rect r, double font)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 8, 8);
    cairo_t *cr = cairo_create(s);
    viz_rect a = viz_matrix_area(cr, r, d, font);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return a;
}

TH_TEST(test_patching_diverging, "patching: RdBu centred on 0 (0 white, -max dark red, +max dark blue)")
{
    rn_config c;
    rn_config_default(&c);
    c.n_layers = 2;
    c.n_heads = 2;
    /* recovered per head: layer 0 (0, -0.5), layer 1 (0.5, 0.25) */
    an_patch_row rows[4] = {
        { 0, 0, -1, -1, 0, 0, 0.0 }, { 0, 1, -1, -1, 0, 0, -0.5 },
        { 1, 0, -1, -1, 0, 0, 0.5 }, { 1, 1, -1, -1, 0, 0, 0.25 },
    };
    an_patch_result r = { 0, 'o', 'O', 10, 1, 0, rows, 4, 6, 0 };
    const char *path = th_path("patch.png");
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_patching(&r, &c, path, &err), RN_OK);
    /* the layout fig_patching draws: no slot rows, a 640 x 420 page */
    static const char *const rl[2] = { "layer 0", "layer 1" }, *const cl[2] = { "head 0", "head 1" };
    double v[4] = { 0 };
    viz_matrix_data d = { 2, 2, v, rl, cl, "t", "recovered (fraction)", "", "", 0, 0 };
    viz_rect a = matrix_area(&d, viz_rect_make(4, 4, 632, 412), 13);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    const unsigned char *p[4];
    for (int i = 0; i < 4; i++) p[i] = vp_at(&im, a.x + (i % 2 + 0.5) * a.w / 2, a.y + (i / 2 + 0.5) * a.h / 2);
    CU_ASSERT(vp_white(p[0]));                   /* 0: white */
    CU_ASSERT(near_rgb(p[1], 103, 0, 31, 4));    /* -max|v|: RdBu's darkest red, #67001f */
    CU_ASSERT(near_rgb(p[2], 5, 48, 97, 4));     /* +max|v|: RdBu's darkest blue, #053061 */
    /* +0.25 = half way to the top: t = 0.75, between #92c5de and #4393c3 */
    CU_ASSERT(near_rgb(p[3], 107, 172, 209, 4));
    if (!vp_white(p[0]) || !near_rgb(p[1], 103, 0, 31, 4))
        fprintf(stderr, "\n0 -> %d,%d,%d; -0.5 -> %d,%d,%d", p[0][0], p[0][1], p[0][2], p[1][0], p[1][1], p[1][2]);
    free(im.px);
}

TH_TEST(test_attribution_log_zero, "attribution --log: an exact 0 is not coloured like the smallest value")
{
    /* row 0: the maximum, the bottom of the scale (max / 10^4), exactly 0 */
    double v[9] = { 1, 1e-4, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5 };
    viz_matrix_data d = { 3, 3, v, NULL, NULL, "z", "attribution", NULL, NULL, 0, 1 };
    const char *path = th_path("attr0.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 500, 400, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(4, 4, 492, 392), a = viz_matrix_area(s.cr, r, &d, 13);
    CU_ASSERT_EQUAL(viz_matrix_draw(s.cr, r, &d, VIZ_CMAP_VIRIDIS, 13, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    const unsigned char *lo = vp_at(&im, a.x + 1.5 * a.w / 3, a.y + 0.5 * a.h / 3);
    const unsigned char *zero = vp_at(&im, a.x + 2.5 * a.w / 3, a.y + 0.5 * a.h / 3);
    uint32_t bottom = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 0);
    CU_ASSERT(near_rgb(lo, bottom >> 16 & 255, bottom >> 8 & 255, bottom & 255, 3)); /* 1e-4: the bottom colour */
    CU_ASSERT(vp_white(zero));                                                   /* 0: white, apart */
    CU_ASSERT(!near_rgb(zero, lo[0], lo[1], lo[2], 40));
    /* its key under the colour bar: an outlined box (ink around white) */
    CU_ASSERT(vp_ink(&im, viz_rect_make(a.x + a.w + 13 * 1.2, a.y + a.h - 13 * 2.6, 13 * 6, 13 * 2.6)) > 20);
    free(im.px);
}

TH_TEST(test_log_tick_labels_one_format, "log axis: one label format per axis (never 10000 beside 1e+06)")
{
    double t[VIZ_MAX_TICKS], step;
    char lab[VIZ_MAX_TICKS][VIZ_TICK_LABEL];
    viz_axis a = viz_axis_make(1000, 1e7, 1, 0, NULL);
    int n = viz_axis_ticks(&a, 6, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    viz_axis_tick_labels(&a, t, n, step, lab);
    static const char *const want[5] = { "1e3", "1e4", "1e5", "1e6", "1e7" };
    for (int i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(lab[i], want[i]);
        CU_ASSERT(strchr(lab[i], '+') == NULL);
    }
    /* small values: exponents too, with their sign */
    viz_axis b = viz_axis_make(1e-4, 0.3, 1, 0, NULL);
    n = viz_axis_ticks(&b, 6, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT(n >= 3);
    viz_axis_tick_labels(&b, t, n, step, lab);
    int exp_labels = 0;
    for (int i = 0; i < n; i++) exp_labels += strchr(lab[i], 'e') != NULL;
    CU_ASSERT_EQUAL(exp_labels, n);
    CU_ASSERT_STRING_EQUAL(lab[0], "1e-4");
    /* an axis within [0.001, 1e5): plain numbers throughout */
    viz_axis c = viz_axis_make(1, 10000, 1, 0, NULL);
    n = viz_axis_ticks(&c, 6, t, VIZ_MAX_TICKS, &step);
    viz_axis_tick_labels(&c, t, n, step, lab);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    CU_ASSERT_STRING_EQUAL(lab[0], "1");
    CU_ASSERT_STRING_EQUAL(lab[4], "10000");
}

TH_TEST(test_log_ticks_short_range, "log axis over one decade: at least four ticks (tiered's 250-2500)")
{
    double t[VIZ_MAX_TICKS], step;
    viz_axis a = viz_axis_make(246.8, 2567, 1, 0, NULL); /* the tiered figure's tokens/s axis */
    int n = viz_axis_ticks(&a, 5, t, VIZ_MAX_TICKS, &step);
    static const double want[] = { 300, 500, 700, 1000, 2000 };
    CU_ASSERT_EQUAL_FATAL(n, 5);
    for (int i = 0; i < n; i++) CU_ASSERT_DOUBLE_EQUAL(t[i], want[i], 1e-9);
    /* a range of three decades keeps decades only */
    viz_axis b = viz_axis_make(1, 1000, 1, 0, NULL);
    n = viz_axis_ticks(&b, 8, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_EQUAL(n, 4);
    /* wider 1-2-5 ranges are unchanged: 1 to 100 */
    viz_axis c = viz_axis_make(1, 100, 1, 0, NULL);
    n = viz_axis_ticks(&c, 8, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_EQUAL(n, 7);
}

/* The topmost y in column band [x0, x1] of the palette's first colour (the
 * first series), or -1. */
static double top_of_series0(const vp_img *im, double x0, double x1, double y0, double y1)
{
    viz_rgb c = viz_palette(0);
    int r = (int)lround(c.r * 255), g = (int)lround(c.g * 255), b = (int)lround(c.b * 255);
    for (double y = y0; y <= y1; y++)
        for (double x = x0; x <= x1; x++)
            if (near_rgb(vp_at(im, x, y), r, g, b, 30)) return y;
    return -1;
}

/* Pixels of the first series' colour in r. */
static long count_series0(const vp_img *im, viz_rect rr)
{
    viz_rgb c = viz_palette(0);
    int r = (int)lround(c.r * 255), g = (int)lround(c.g * 255), b = (int)lround(c.b * 255);
    long n = 0;
    for (double y = rr.y; y < rr.y + rr.h; y++)
        for (double x = rr.x; x < rr.x + rr.w; x++) n += near_rgb(vp_at(im, x, y), r, g, b, 30);
    return n;
}

static const char *results_header =
    "name,figure,U,d_p,M,K,d_v,heads,layers,lr,seed,state_bytes,active_state_bytes,mean7,mean_l64\n";

TH_TEST(test_scaling_accuracy_axis, "scaling: the accuracy axis ends at 1, not 1.4")
{
    char csv[1024];
    snprintf(csv, sizeof csv,
             "%sa,fig4-U,2,16,256,8,32,2,2,3e-3,1,135168,8448,0.5,1.0\n"
             "b,fig4-U,8,2,256,8,32,2,2,3e-3,1,135168,8448,0.5,1.0\n"
             "c,fig4-M,2,8,64,8,32,2,2,3e-3,1,33792,8448,0.5,1.0\n"
             "d,fig4-M,2,16,256,8,32,2,2,3e-3,1,135168,8448,0.5,1.0\n",
             results_header);
    const char *in = th_path("scaling.csv"), *out = th_path("scaling.png");
    CU_ASSERT_EQUAL_FATAL(th_write_file(in, csv, strlen(csv)), 0);
    fig_mqar_opts o = { in, NULL, out, NULL, 1100, 460, 96, 13 };
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_mqar_scaling(&o, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    /* left panel; U = 8 at (8 - 0.5) / 8 of the x axis 0.5..8.5: the L = 64
     * mean there is 1, which belongs at the top of the plot area */
    viz_rect a = viz_axes_inner(viz_rect_make(4, 4, 1100 / 2 - 8, 460 - 8), 13, 1);
    double X = a.x + a.w * 7.5 / 8;
    double top = top_of_series0(&im, X - 2, X + 2, a.y - 6, a.y + a.h);
    CU_ASSERT(top >= 0);
    CU_ASSERT(top < a.y + 0.06 * a.h);
    if (!(top < a.y + 0.06 * a.h)) fprintf(stderr, "\naccuracy 1 drawn at %.0f, plot area %.0f..%.0f", top, a.y, a.y + a.h);
    /* and the axis: ticks 0 .. 1 */
    viz_axis y = fig_mqar_accuracy_axis(NULL);
    double t[VIZ_MAX_TICKS], step;
    int n = viz_axis_ticks(&y, 6, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT(n >= 3);
    CU_ASSERT_DOUBLE_EQUAL(t[n - 1], 1.0, 1e-12);
    CU_ASSERT(y.hi <= 1.05);
    free(im.px);
}

TH_TEST(test_frontier_skips_unlearned, "frontier: a shape that did not learn is no dip in the active-state line")
{
    char csv[1024];
    /* a shape with the least active state that did not learn (L = 64 mean
     * 0.09), then two that did */
    snprintf(csv, sizeof csv,
             "%sx,fig3,2,8,64,8,8,2,2,3e-3,1,9216,2304,0.044,0.09\n"
             "y,fig3,2,4,16,8,32,2,2,3e-3,1,8448,8448,0.55,0.9\n"
             "z,fig3,2,8,64,8,32,2,2,3e-3,1,33792,8448,0.85,0.999\n",
             results_header);
    const char *in = th_path("frontier.csv"), *out = th_path("frontier.png");
    CU_ASSERT_EQUAL_FATAL(th_write_file(in, csv, strlen(csv)), 0);
    fig_mqar_opts o = { in, NULL, out, NULL, 1100, 460, 96, 13 };
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_mqar_frontier(&o, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    /* the right panel below accuracy 0.4: no RAM-Net line there */
    viz_rect a = viz_axes_inner(viz_rect_make(1100 / 2 + 4, 4, 1100 / 2 - 8, 460 - 8), 13, 1);
    viz_axis y = fig_mqar_accuracy_axis(NULL);
    double y04 = viz_axis_map(&y, 0.4, a.y + a.h, a.y);
    long low = count_series0(&im, viz_rect_make(a.x + 2, y04, a.w - 4, a.y + a.h - 2 - y04));
    long all = count_series0(&im, viz_rect_make(a.x + 2, a.y + 2, a.w - 4, a.h - 4));
    CU_ASSERT_EQUAL(low, 0);
    CU_ASSERT(all > 20); /* the line of the two that learned is drawn */
    free(im.px);
    /* only shapes that did not learn: an input error naming the file */
    snprintf(csv, sizeof csv, "%sx,fig3,2,8,64,8,8,2,2,3e-3,1,9216,2304,0.044,0.09\n", results_header);
    CU_ASSERT_EQUAL_FATAL(th_write_file(in, csv, strlen(csv)), 0);
    o.out = th_path("frontier0.png");
    CU_ASSERT_EQUAL(fig_mqar_frontier(&o, &err), RN_EINPUT);
    CU_ASSERT(strstr(err.msg, "frontier.csv") != NULL);
    CU_ASSERT(!th_file_exists(o.out));
}

TH_TEST(test_heatmap_bin_width, "heatmap: whole bin widths")
{
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(456, 256), 2);
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(1025, 256), 5);
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(256, 256), 1);
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(100, 256), 1);
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(144, 128), 2);
    CU_ASSERT_EQUAL(viz_heatmap_bin_width(0, 256), 1);
}

/* A one-head trace of NPOS positions (M = 16, K = 1) whose every position
 * writes and reads slot 0: a uniform stream. */
#define NPOS 456
static int make_uniform_db(const char *path)
{
    rn_config cfg;
    rn_config_default(&cfg);
    cfg.n_layers = 1;
    cfg.n_heads = 1;
    cfg.d_p = 4;
    cfg.order = 2;
    cfg.top_k = 1;
    cfg.cape_mask[0] = 0;
    rn_error err = { 0 };
    if (rn_config_validate(&cfg, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .name = "uniform", .command = "test", .cfg = &cfg };
    tr_writer *w;
    if (tr_writer_open(path, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    const rn_probe *pr = tr_writer_probe(w);
    for (int p = 0; p < NPOS; p++) tr_writer_add_token(w, p, 'a', "a", 0);
    for (int p = 0; p < NPOS; p++) {
        uint32_t s[1] = { 0 }, a[1] = { 0 };
        float wt[1] = { 1 };
        pr->access(pr->user, 0, 0, p, 0, 1, s, a, wt);
        pr->access(pr->user, 0, 0, p, 1, 1, s, a, wt);
    }
    if (tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    return 0;
}

TH_TEST(test_heatmap_default_no_stripes, "heatmap default bins: a uniform stream draws one colour, no stripes")
{
    const char *db = th_path("uniform.db"), *out = th_path("uniform.png");
    CU_ASSERT_EQUAL_FATAL(make_uniform_db(db), 0);
    int rc = th_run("%s plot heatmap '%s' -o '%s'", th_bin(), db, out);
    if (rc) fprintf(stderr, "\n%s", th_err());
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* the single-head layout: page 860 x 520, a title, slot 0 the bottom of 16 rows */
    viz_heatmap_data d = { 16, 228, NULL, 0, NPOS, 0, 16, "t" };
    viz_heatmap_style st;
    viz_heatmap_style_default(&st);
    viz_rect a = viz_heatmap_area(viz_rect_make(4, 4, 852, 512), &d, &st);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    /* 456 positions in 256 buckets (1.78 each) gave buckets of 1 and 2
     * positions, 2 and 4 accesses: two colours alternating */
    unsigned colours[8];
    int nc = 0, coloured = 0;
    double y = a.y + a.h * (1 - 0.5 / 16);
    for (double x = a.x + 2; x < a.x + a.w - 2; x++) {
        const unsigned char *p = vp_at(&im, x, y);
        if (vp_white(p)) continue;
        coloured++;
        unsigned c = (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
        int k = 0;
        while (k < nc && colours[k] != c) k++;
        if (k == nc && nc < 8) colours[nc++] = c;
    }
    CU_ASSERT(coloured > a.w / 2);
    CU_ASSERT_EQUAL(nc, 1);
    free(im.px);
}

TH_TEST(test_heatmap_grid_numbers, "heatmap grid: the thumbnails' ticks are numbered")
{
    enum { L = 2, H = 2, R = 8, C = 8 };
    float v[L * H][R * C];
    viz_heatmap_data d[L * H];
    memset(v, 0, sizeof v);
    for (int i = 0; i < L * H; i++) {
        v[i][i] = 1;
        d[i] = (viz_heatmap_data){ R, C, v[i], 0, 512, 0, 64, "" };
    }
    viz_heatmap_style st;
    viz_heatmap_style_default(&st);
    st.font = 13;
    const char *path = th_path("gridnum.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 700, 450, 96, &err), RN_OK);
    viz_rect th[L * H];
    CU_ASSERT_EQUAL(viz_heatmap_grid_draw(s.cr, viz_rect_make(0, 0, 700, 450), d, L, H, &st, th, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    double f = 13, len = f * 0.3;
    /* slot 50 of 0..64 sits in the top third of a first-column thumbnail:
     * its number just left of the tick mark (the "layer" label is further
     * out and centred) */
    for (int l = 0; l < L; l++) {
        viz_rect c = th[l * H];
        CU_ASSERT(vp_ink(&im, viz_rect_make(c.x - len - 8, c.y, 7, c.h * 0.3)) > 5);
    }
    /* numbers under the bottom-left thumbnail: "0" under its left edge */
    viz_rect c = th[(L - 1) * H];
    CU_ASSERT(vp_ink(&im, viz_rect_make(c.x - 4, c.y + c.h + len + 1, 8, f * 0.7)) > 3);
    free(im.px);
}

/* fig_tiered on a two-row CSV, with or without a machine column. */
static void draw_tiered(const char *name, int machine, vp_img *im)
{
    char csv[512], in[512];
    snprintf(csv, sizeof csv,
             "budget_bytes,policy,tokens,reads,tok_s_direct,tok_s_direct_noprefetch,tok_s_cache,read_rate%s\n"
             "2097152,lru,457,15298,490.9,266.5,956.1,15912%s\n"
             "134217728,lru,457,0,960.1,914.0,925.1,15912%s\n",
             machine ? ",machine" : "", machine ? ",Test CPU 9000 (2 cores)" : "",
             machine ? ",Test CPU 9000 (2 cores)" : "");
    snprintf(in, sizeof in, "%s", th_path(name));
    CU_ASSERT_EQUAL_FATAL(th_write_file(in, csv, strlen(csv)), 0);
    const char *out = th_path("tiered.png");
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_tiered(in, out, 760, 480, 96, 13, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(vp_load(out, im), 0);
}

TH_TEST(test_tiered_names_machine, "tiered: the CSV's machine is named under the chart")
{
    vp_img with, without;
    draw_tiered("t1.csv", 1, &with);
    draw_tiered("t0.csv", 0, &without);
    /* the bottom strip left of the centred axis title */
    viz_rect strip = viz_rect_make(0, 480 - 4 - 13 * 1.4, 760 * 0.25, 13 * 1.4 + 4);
    CU_ASSERT(vp_ink(&with, strip) > 30);
    CU_ASSERT_EQUAL(vp_ink(&without, strip), 0);
    free(with.px);
    free(without.px);
}

/* Let leak checkers see cairo's font caches released. */
static int release_fonts(void)
{
    cairo_debug_reset_static_data();
    return 0;
}

TH_SUITE(viz_figs, NULL, release_fonts);
