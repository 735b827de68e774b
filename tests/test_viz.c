/* test_viz.c — the plotting layer and the trace plot: render synthetic data
 * to PNG, read the pixels back with libpng and check that marks land where
 * the data says (writes vermilion and reads blue by default, red and green
 * in the paper palette, background white), that axes and
 * labels leave ink in the margins, that SVG/PDF outputs are well-formed, and
 * that bad outputs fail cleanly without leaving files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "viz_attribution.h"
#include "viz_axes.h"
#include "viz_colormap.h"
#include "viz_surface.h"
#include "viz_reuse.h"
#include "viz_trace.h"
#include "viz_png.h"

TH_TEST(test_nice_ticks, "nice ticks, log ticks, labels")
{
    double t[VIZ_MAX_TICKS], step;
    viz_axis a = viz_axis_make(0, 4096, 0, 1, NULL);
    int n = viz_axis_ticks(&a, 6, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT(n >= 4 && n <= 10);
    CU_ASSERT_DOUBLE_EQUAL(step, 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(t[0], 0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(t[n - 1], 4000, 1e-9);
    viz_axis b = viz_axis_make(0.13, 0.87, 0, 0, NULL);
    n = viz_axis_ticks(&b, 5, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_DOUBLE_EQUAL(step, 0.2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(t[0], 0.2, 1e-12);
    char buf[32];
    viz_tick_label(t[1], step, 0, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "0.4");
    viz_axis c = viz_axis_make(1, 100000, 1, 0, NULL);
    n = viz_axis_ticks(&c, 8, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_EQUAL(n, 6);
    CU_ASSERT_DOUBLE_EQUAL(t[5], 1e5, 1e-6);
    /* an integer axis never gets fractional steps */
    viz_axis d = viz_axis_make(0, 3, 0, 1, NULL);
    n = viz_axis_ticks(&d, 10, t, VIZ_MAX_TICKS, &step);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_DOUBLE_EQUAL(viz_axis_map(&c, 100, 0, 50), 20, 1e-9);
}

TH_TEST(test_colormap, "colour maps")
{
    viz_rgb lo = viz_cmap_rgb(VIZ_CMAP_VIRIDIS, 0), hi = viz_cmap_rgb(VIZ_CMAP_VIRIDIS, 1);
    CU_ASSERT_DOUBLE_EQUAL(lo.r, 0.267004, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(hi.g, 0.906157, 1e-6);
    /* viridis lightness rises monotonically (perceptual uniformity proxy) */
    double prev = -1;
    int mono = 1;
    for (int i = 0; i <= 32; i++) {
        viz_rgb c = viz_cmap_rgb(VIZ_CMAP_VIRIDIS, i / 32.0);
        double l = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
        if (l <= prev) mono = 0;
        prev = l;
    }
    CU_ASSERT(mono);
    CU_ASSERT_EQUAL(viz_cmap_from_name("greys"), VIZ_CMAP_GREYS);
    CU_ASSERT_EQUAL(viz_cmap_from_name("jet"), -1);
    CU_ASSERT_EQUAL(viz_cmap_argb(VIZ_CMAP_GREYS, 0), 0xffffffffu);
}

/* Synthetic trace: 16 positions x 8 slots; writes on a CAPE-like diagonal,
 * reads on a fixed slot. */
#define NP 16
#define NS 8
static void synth(viz_access *ev, size_t *n)
{
    size_t k = 0;
    for (int p = 0; p < NP; p++) {
        ev[k++] = (viz_access){ p, (NS - 1 - p % NS), 1.0f, RN_OP_WRITE };
        if (p % 2 == 0) ev[k++] = (viz_access){ p, 2 + (p / 2) % 2 * 3, 1.0f, RN_OP_READ };
    }
    *n = k;
}

static int has_event(const viz_access *ev, size_t n, int64_t p, int64_t s)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].pos == p && ev[i].slot == s) return 1;
    return 0;
}

/* Render the synthetic trace in one palette and check every cell's colour
 * (is_w / is_r say what a write / read pixel looks like in it). */
static void check_trace_palette(int paper, int (*is_w)(const unsigned char *), int (*is_r)(const unsigned char *))
{
    viz_access ev[2 * NP];
    size_t n;
    synth(ev, &n);
    viz_trace_data d = { 0, NP, NS, n, ev, "layer 0, head 0, CAPE on", 0 };
    viz_trace_style st;
    viz_trace_style_default(&st);
    if (paper) viz_trace_style_paper(&st);
    const char *path = th_path("trace.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 640, 400, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(0, 0, 640, 400);
    viz_rect cell;
    CU_ASSERT_EQUAL(viz_trace_grid_draw(s.cr, r, &d, 1, 0, &st, &cell, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);

    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    CU_ASSERT_EQUAL(im.w, 640);
    CU_ASSERT_EQUAL(im.h, 400);
    viz_rect a = viz_trace_area(cell, &d, &st);
    int bad_w = 0, bad_r = 0, bad_bg = 0, checked = 0;
    for (int p = 0; p < NP; p++)
        for (int sl = 0; sl < NS; sl++) {
            viz_rect c = viz_trace_cell(a, &d, p, sl);
            const unsigned char *px = vp_at(&im, c.x + c.w / 2, c.y + c.h / 2);
            int w = 0, rd = 0;
            for (size_t i = 0; i < n; i++)
                if (ev[i].pos == p && ev[i].slot == sl) {
                    if (ev[i].op == RN_OP_WRITE) w = 1; else rd = 1;
                }
            if (w && !is_w(px)) bad_w++;
            if (rd && !w && !is_r(px)) bad_r++;
            if (!w && !rd && !vp_white(px)) bad_bg++;
            checked++;
        }
    CU_ASSERT_EQUAL(checked, NP * NS);
    CU_ASSERT_EQUAL(bad_w, 0);
    CU_ASSERT_EQUAL(bad_r, 0);
    CU_ASSERT_EQUAL(bad_bg, 0);
    CU_ASSERT(has_event(ev, n, 0, NS - 1));
    /* the margins carry ticks and labels: left (slot axis), below (position
     * axis) and above (title); the far right margin stays nearly empty */
    CU_ASSERT(vp_ink(&im, viz_rect_make(cell.x, a.y, a.x - cell.x - 1, a.h)) > 100);
    CU_ASSERT(vp_ink(&im, viz_rect_make(a.x, a.y + a.h + 2, a.w, cell.y + cell.h - a.y - a.h - 2)) > 100);
    CU_ASSERT(vp_ink(&im, viz_rect_make(a.x, cell.y, a.w, a.y - cell.y - 1)) > 50);
    free(im.px);
}

TH_TEST(test_trace_pixels, "trace: marks where the events are (Okabe-Ito default, paper palette)")
{
    check_trace_palette(0, vp_write, vp_read);
    check_trace_palette(1, vp_red, vp_green);
}

/* Count pixels of a kind in r. */
static int count_px(const vp_img *im, viz_rect r, int (*is)(const unsigned char *))
{
    int n = 0;
    for (int y = (int)r.y; y < (int)(r.y + r.h); y++)
        for (int x = (int)r.x; x < (int)(r.x + r.w); x++)
            if (x >= 0 && y >= 0 && x < im->w && y < im->h && is(vp_at(im, x, y))) n++;
    return n;
}

/* The legend names only the ops drawn; a generation start inside the
 * range is a dark dashed line down the panel at its position. */
TH_TEST(test_trace_legend_and_generation_marker, "trace: legend shows only drawn ops; prompt/generation marker")
{
    viz_access ev[2 * NP];
    size_t n;
    synth(ev, &n);
    for (int reads = 0; reads < 2; reads++) {
        viz_trace_data d = { 0, NP, NS, n, ev, "marker", NP / 2 };
        viz_trace_style st;
        viz_trace_style_default(&st);
        st.show_reads = reads;
        const char *path = th_path("marker.png");
        viz_surface s;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 640, 400, 96, &err), RN_OK);
        viz_rect cell;
        CU_ASSERT_EQUAL(viz_trace_grid_draw(s.cr, viz_rect_make(0, 0, 640, 400), &d, 1, 0, &st, &cell, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
        vp_img im;
        CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
        viz_rect legend = viz_rect_make(0, 0, 640, cell.y + st.font * 1.6);
        CU_ASSERT(count_px(&im, legend, vp_write) > 10);
        if (reads) {
            CU_ASSERT(count_px(&im, legend, vp_read) > 10);
        } else {
            CU_ASSERT_EQUAL(count_px(&im, legend, vp_read), 0);
        }
        /* the marker: dark pixels down most of the column at NP/2 (below the
         * label strip at the top), none one cell to the left */
        viz_rect a = viz_trace_area(cell, &d, &st);
        double gx = viz_trace_cell(a, &d, NP / 2, 0).x, cw = a.w / NP;
        int dark = 0, dark_left = 0, rows = 0;
        for (int y = (int)(a.y + st.font * 1.5); y < (int)(a.y + a.h - 2); y++, rows++) {
            if (vp_dark(vp_at(&im, gx, y)) || vp_dark(vp_at(&im, gx - 1, y)) || vp_dark(vp_at(&im, gx + 1, y))) dark++;
            if (vp_dark(vp_at(&im, gx - cw, y))) dark_left++;
        }
        CU_ASSERT(dark > rows / 3); /* a dashed line: 4 on, 3 off */
        CU_ASSERT_EQUAL(dark_left, 0);
        free(im.px);
    }
}

/* More tokens than pixel columns: the panel bins them (and says how many
 * per column); fewer: one token per column at least. */
TH_TEST(test_trace_binning, "trace: tokens binned when they outnumber columns")
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 10, 10);
    cairo_t *cr = cairo_create(sf);
    CU_ASSERT_EQUAL(viz_trace_bin(cr, 100, 400), 1);
    CU_ASSERT_EQUAL(viz_trace_bin(cr, 400, 400), 1);
    CU_ASSERT_EQUAL(viz_trace_bin(cr, 4096, 400), 11);
    CU_ASSERT_EQUAL(viz_trace_bin(cr, 800, 400), 2);
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
}

/* Left and right ends of the ink in band r (-1, -1 when none). */
static void ink_span(const vp_img *im, viz_rect r, int *x0, int *x1)
{
    *x0 = *x1 = -1;
    for (int y = (int)r.y; y < (int)(r.y + r.h); y++)
        for (int x = (int)r.x; x < (int)(r.x + r.w); x++)
            if (!vp_white(vp_at(im, x, y))) {
                if (*x0 < 0 || x < *x0) *x0 = x;
                if (x > *x1) *x1 = x;
            }
}

/* Render a one-panel trace of np positions (one write per position on a
 * diagonal) at 640 x 400; the panel's x-axis title text, its width in the
 * axis font, and the ink span of the band where that title is drawn. */
static void render_binned(int64_t np, char *xt, size_t nxt, int64_t *bin, double *text_w, viz_rect *a_out,
                          int *x0, int *x1)
{
    viz_access *ev = malloc((size_t)np * sizeof *ev);
    for (int64_t p = 0; p < np; p++) ev[p] = (viz_access){ p, NS - 1 - p % NS, 1.0f, RN_OP_WRITE };
    viz_trace_data d = { 0, np, NS, (size_t)np, ev, "binned", 0 };
    viz_trace_style st;
    viz_trace_style_default(&st);
    const char *path = th_path("binned.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 640, 400, 96, &err), RN_OK);
    viz_rect cell;
    CU_ASSERT_EQUAL(viz_trace_grid_draw(s.cr, viz_rect_make(0, 0, 640, 400), &d, 1, 0, &st, &cell, &err), RN_OK);
    viz_rect a = viz_trace_area(cell, &d, &st);
    *bin = viz_trace_bin(s.cr, np, a.w);
    viz_trace_xtitle(xt, nxt, *bin);
    viz_font(s.cr, st.font, 0);
    *text_w = viz_text_width(s.cr, xt);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    /* the title sits a tick and 1.5 font sizes below the plot area, under
     * the tick labels (viz_axes_draw); the band holds it and nothing else */
    double top = a.y + a.h + st.font * 0.4 + st.font * 1.5;
    ink_span(&im, viz_rect_make(cell.x, top - 1, cell.w, st.font * 1.4), x0, x1);
    *a_out = a;
    free(im.px);
    free(ev);
}

TH_TEST(test_trace_bin_title_pixels, "trace: a binned panel's x-axis title names the bin width, and is drawn")
{
    char xt[96], want[96];
    int64_t bin;
    double tw;
    viz_rect a;
    int x0, x1;
    /* 4096 tokens over a plot area a few hundred px wide: binned */
    render_binned(4096, xt, sizeof xt, &bin, &tw, &a, &x0, &x1);
    int64_t cols = (int64_t)ceil(a.w); /* an image surface at 96 DPI: one raster column per px */
    CU_ASSERT(cols < 4096);
    CU_ASSERT_EQUAL(bin, (4096 + cols - 1) / cols);
    CU_ASSERT(bin > 1);
    snprintf(want, sizeof want, "token position (%lld tokens per column)", (long long)((4096 + cols - 1) / cols));
    CU_ASSERT_STRING_EQUAL(xt, want);
    /* text pixels under the axis, as wide as the composed title, centred */
    CU_ASSERT_FATAL(x0 >= 0);
    CU_ASSERT(fabs((x1 - x0 + 1) - tw) < 6);
    CU_ASSERT(fabs((x0 + x1) / 2.0 - (a.x + a.w / 2)) < 4);
    double binned_w = x1 - x0 + 1;
    /* 16 tokens: not binned; the plain title, and a narrower span of ink */
    render_binned(16, xt, sizeof xt, &bin, &tw, &a, &x0, &x1);
    CU_ASSERT_EQUAL(bin, 1);
    CU_ASSERT_STRING_EQUAL(xt, "token position");
    CU_ASSERT_FATAL(x0 >= 0);
    CU_ASSERT(fabs((x1 - x0 + 1) - tw) < 6);
    CU_ASSERT(binned_w > (x1 - x0 + 1) + 60);
}

/* Reuse panels: a tick under every labelled bin edge (the first bins' edges
 * are always labelled), the counts once in a summary line. */
TH_TEST(test_reuse_edge_ticks_and_summary, "reuse: ticks on labelled bin edges; counts summarised once")
{
    double lo[4] = { 0, 1, 2, 4 }, hi[4] = { 0, 1, 3, 7 }, cnt[4] = { 10, 20, 30, 40 };
    viz_hist_data h = { "reuse time (tokens)", 4, lo, hi, cnt, 100 };
    char sum[96];
    viz_reuse_summary(&h, sum, sizeof sum);
    CU_ASSERT_STRING_EQUAL(sum, "100 reused accesses, 50.0% cold");
    const char *path = th_path("reuse.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 800, 300, 96, &err), RN_OK);
    viz_rect cells[2];
    CU_ASSERT_EQUAL(viz_reuse_draw(s.cr, viz_rect_make(0, 0, 800, 300), &h, 1, 13, cells, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    for (int p = 0; p < 2; p++) {
        viz_rect a = viz_reuse_area(cells[p], 13);
        for (int b = 0; b < 4; b++) {
            double x = viz_reuse_edge_x(a, 4, b);
            int tick = 0;
            for (int dx = -1; dx <= 1; dx++)
                if (!vp_white(vp_at(&im, x + dx, a.y + a.h + 3))) tick = 1;
            CU_ASSERT(tick);
        }
        /* and none mid-bin, where the old labels sat */
        double mid = (viz_reuse_edge_x(a, 4, 1) + viz_reuse_edge_x(a, 4, 2)) / 2;
        CU_ASSERT(vp_white(vp_at(&im, mid, a.y + a.h + 3)));
    }
    free(im.px);
}

/* Attribution matrix: the future (column after row) is grey, the past in
 * the colour map; with --log a value 10^-2 under a maximum of 1 (scale
 * floor 10^-4 of the maximum) sits at the map's middle. */
TH_TEST(test_attribution_mask_and_log, "attribution: future masked grey; --log colour scale")
{
    double v[9] = { 1, 0, 0, 0.01, 0.5, 0, 1e-6, 0.2, 0.3 }; /* lower triangle only */
    for (int log = 0; log < 2; log++) {
        viz_matrix_data d = { 3, 3, v, NULL, NULL, "m", "attribution", NULL, NULL, 1, log };
        const char *path = th_path("matrix.png");
        viz_surface s;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 500, 400, 96, &err), RN_OK);
        viz_rect r = viz_rect_make(0, 0, 500, 400);
        viz_rect a = viz_matrix_area(s.cr, r, &d, 13);
        CU_ASSERT_EQUAL(viz_matrix_draw(s.cr, r, &d, VIZ_CMAP_VIRIDIS, 13, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
        vp_img im;
        CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
        double cw = a.w / 3, ch = a.h / 3;
        int grey = (int)lround(VIZ_MASK_RGB.r * 255);
        for (int row = 0; row < 3; row++)
            for (int col = 0; col < 3; col++) {
                const unsigned char *p = vp_at(&im, a.x + (col + 0.5) * cw, a.y + (row + 0.5) * ch);
                int is_grey = abs(p[0] - grey) <= 2 && abs(p[1] - grey) <= 2 && abs(p[2] - grey) <= 2;
                CU_ASSERT_EQUAL(is_grey, col > row);
            }
        const unsigned char *p = vp_at(&im, a.x + 0.5 * cw, a.y + 1.5 * ch); /* row 1, col 0: 0.01 */
        uint32_t want = viz_cmap_argb(VIZ_CMAP_VIRIDIS, log ? 0.5 : 0.01);
        for (int k = 0; k < 3; k++) CU_ASSERT(abs(p[k] - (int)(want >> (16 - 8 * k) & 255)) <= 3);
        free(im.px);
    }
}

/* A dense trace far larger than the panel still shows every event: at
 * 4096 x 1024 one isolated write must leave a write-coloured pixel. */
TH_TEST(test_trace_dense_keeps_isolated_event, "trace: dense panel keeps an isolated event")
{
    size_t n = 4096;
    viz_access *ev = malloc(sizeof *ev * n);
    for (size_t i = 0; i < n; i++) ev[i] = (viz_access){ (int64_t)i, (int64_t)(i % 256), 0.5f, RN_OP_READ };
    ev[2000] = (viz_access){ 2000, 900, 1.0f, RN_OP_WRITE };
    viz_trace_data d = { 0, 4096, 1024, n, ev, "", 0 };
    viz_trace_style st;
    viz_trace_style_default(&st);
    st.legend = 0;
    const char *path = th_path("dense.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 800, 500, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(0, 0, 800, 500);
    CU_ASSERT_EQUAL(viz_trace_draw(s.cr, r, &d, &st, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    viz_rect a = viz_trace_area(r, &d, &st);
    viz_rect c = viz_trace_cell(a, &d, 2000, 900);
    int found = 0;
    for (int y = (int)c.y - 1; y <= (int)(c.y + c.h) + 1; y++)
        for (int x = (int)c.x - 1; x <= (int)(c.x + c.w) + 1; x++)
            if (vp_write(vp_at(&im, x, y))) found = 1;
    CU_ASSERT(found);
    /* reads on the low slots show up in the read colour somewhere along the bottom band */
    viz_rect g = viz_trace_cell(a, &d, 100, 100);
    int green = 0;
    for (int x = (int)a.x; x < (int)(a.x + a.w); x++)
        if (vp_read(vp_at(&im, x, g.y + g.h / 2))) green++;
    CU_ASSERT(green > 0);
    free(im.px);
    free(ev);
}

static void render_small(const char *path, int *rc_open, int *rc_commit)
{
    viz_access ev[2 * NP];
    size_t n;
    synth(ev, &n);
    viz_trace_data d = { 0, NP, NS, n, ev, "vector", 0 };
    viz_trace_style st;
    viz_trace_style_default(&st);
    viz_surface s;
    rn_error err = { 0 };
    *rc_open = viz_surface_open(&s, path, 400, 300, 96, &err);
    *rc_commit = -1;
    if (*rc_open) return;
    viz_trace_grid_draw(s.cr, viz_rect_make(0, 0, 400, 300), &d, 1, 0, &st, NULL, &err);
    *rc_commit = viz_surface_commit(&s, &err);
}

TH_TEST(test_vector_outputs, "SVG and PDF are well-formed")
{
    int ro, rc;
    const char *svg = th_path("t.svg");
    render_small(svg, &ro, &rc);
    CU_ASSERT_EQUAL(ro, 0);
    CU_ASSERT_EQUAL(rc, 0);
    size_t len = 0;
    char *t = th_read_file(svg, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT(strncmp(t, "<?xml", 5) == 0);
    CU_ASSERT(strstr(t, "<svg") != NULL);
    CU_ASSERT(strstr(t, "</svg>") != NULL);
    CU_ASSERT(strstr(t, "<image") != NULL); /* the raster panel is embedded */
    free(t);
    const char *pdf = th_path("t.pdf");
    render_small(pdf, &ro, &rc);
    CU_ASSERT_EQUAL(rc, 0);
    t = th_read_file(pdf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT(len > 200 && strncmp(t, "%PDF-", 5) == 0);
    /* ends with %%EOF and an optional newline */
    CU_ASSERT(len > 6 && (memcmp(t + len - 6, "%%EOF\n", 6) == 0 || memcmp(t + len - 5, "%%EOF", 5) == 0));
    free(t);
}

TH_TEST(test_bad_outputs, "bad outputs fail cleanly")
{
    viz_surface s;
    rn_error err = { 0 };
    const char *p = th_path("x.gif");
    CU_ASSERT_EQUAL(viz_surface_open(&s, p, 100, 100, 96, &err), RN_EINPUT);
    CU_ASSERT(strstr(err.msg, "x.gif") != NULL);
    CU_ASSERT(!th_file_exists(p));
    p = th_path("no-such-dir/x.png");
    CU_ASSERT_EQUAL(viz_surface_open(&s, p, 100, 100, 96, &err), RN_EINPUT);
    CU_ASSERT(strstr(err.msg, "no-such-dir/x.png") != NULL);
    CU_ASSERT_EQUAL(viz_surface_open(&s, th_path("big.png"), 100, 100, 5000, &err), RN_EINPUT);
    /* an aborted plot leaves neither the target nor a temp file */
    p = th_path("aborted.png");
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, p, 100, 100, 96, &err), RN_OK);
    viz_surface_abort(&s);
    CU_ASSERT(!th_file_exists(p));
    CU_ASSERT_EQUAL(th_run("ls %s | grep -c tmp", th_tmpdir()), 1); /* grep found none */
    /* an empty selection is an input error */
    viz_trace_style st;
    viz_trace_style_default(&st);
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, th_path("empty.png"), 100, 100, 96, &err), RN_OK);
    CU_ASSERT_EQUAL(viz_trace_grid_draw(s.cr, viz_rect_make(0, 0, 100, 100), NULL, 0, 0, &st, NULL, &err), RN_EINPUT);
    viz_surface_abort(&s);
    CU_ASSERT(!th_file_exists(th_path("empty.png")));
}

/* Let leak checkers see cairo's font caches released. */
static int release_fonts(void)
{
    cairo_debug_reset_static_data();
    return 0;
}

TH_SUITE(viz, NULL, release_fonts);
