/* test_viz_heatmap.c — access-count binning and heatmap rendering: counts
 * land in the right bins (also on a grid with rows != columns, where a
 * slot/position swap shows), the hottest bin gets the top of the colour
 * map, the log scale puts 10 under 100 at the map's middle, untouched bins
 * stay white, and the model grid puts each head's thumbnail in its own
 * cell with one shared scale. */
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "viz_heatmap.h"
#include "viz_png.h"
#include "viz_surface.h"

TH_TEST(test_bin_counts, "binning counts")
{
    viz_access ev[] = {
        { 0, 0, 1, RN_OP_WRITE }, { 1, 0, 1, RN_OP_READ }, { 1, 1, 1, RN_OP_READ },
        { 7, 7, 1, RN_OP_WRITE }, { 8, 0, 1, RN_OP_WRITE }, /* pos 8 is out of range */
        { 3, 9, 1, RN_OP_WRITE },                           /* slot 9 is out of range */
    };
    float out[4];
    /* 2 slot bins (0-3, 4-7) x 2 time buckets (0-3, 4-7) */
    viz_heatmap_bin(ev, 6, RN_OPS_BOTH, 0, 8, 8, 2, 2, out);
    CU_ASSERT_EQUAL(out[0], 3); /* row 0 (low slots), bucket 0 */
    CU_ASSERT_EQUAL(out[1], 0);
    CU_ASSERT_EQUAL(out[2], 0);
    CU_ASSERT_EQUAL(out[3], 1); /* row 1, bucket 1: (7, 7) */
    viz_heatmap_bin(ev, 6, RN_OPS_WRITE, 0, 8, 8, 2, 2, out);
    CU_ASSERT_EQUAL(out[0], 1);
    viz_heatmap_bin(ev, 6, RN_OPS_READ, 0, 8, 8, 2, 2, out);
    CU_ASSERT_EQUAL(out[0], 2);
    CU_ASSERT_EQUAL(out[3], 0);
}

/* A grid whose rows (slot bins) and columns (time buckets) differ in
 * number and width, so a slot/position swap cannot go unnoticed: each
 * event's cell is computed here from the bin widths (4 positions, 4 slots). */
TH_TEST(test_bin_asymmetric, "binning: 3 slot rows x 5 time columns, asymmetric events")
{
    enum { ROWS = 3, COLS = 5, LO = 10, HI = 30, SLOTS = 12 };
    viz_access ev[64];
    int n = 0;
    ev[n++] = (viz_access){ 27, 2, 1, RN_OP_WRITE };  /* late position, low slot: row 0, column 4 */
    ev[n++] = (viz_access){ 11, 11, 1, RN_OP_READ };  /* early position, high slot: row 2, column 0 */
    for (int i = 0; i < 40; i++) /* a spread of others, some out of range */
        ev[n++] = (viz_access){ 5 + (i * 7) % 30, (i * 5) % 14, 1, (uint8_t)(i & 1) };
    float out[ROWS * COLS], want[ROWS * COLS] = {0};
    for (int i = 0; i < n; i++) {
        if (ev[i].pos < LO || ev[i].pos >= HI || ev[i].slot >= SLOTS) continue;
        int col = (int)(ev[i].pos - LO) / 4, row = (int)ev[i].slot / 4;
        want[row * COLS + col] += 1;
    }
    viz_heatmap_bin(ev, (size_t)n, RN_OPS_BOTH, LO, HI, SLOTS, ROWS, COLS, out);
    int bad = 0;
    for (int i = 0; i < ROWS * COLS; i++) bad += out[i] != want[i];
    CU_ASSERT_EQUAL(bad, 0);
    /* the two marked events alone */
    viz_heatmap_bin(ev, 2, RN_OPS_BOTH, LO, HI, SLOTS, ROWS, COLS, out);
    CU_ASSERT_EQUAL(out[0 * COLS + 4], 1);
    CU_ASSERT_EQUAL(out[2 * COLS + 0], 1);
    float sum = 0;
    for (int i = 0; i < ROWS * COLS; i++) sum += out[i];
    CU_ASSERT_EQUAL(sum, 2);
}

/* --log: on a scale from the smallest count (1) to the largest (100), a
 * cell of 10 sits at log10(10)/log10(100) = 0.5 of the colour map (linear
 * would be 0.1). */
TH_TEST(test_heatmap_log_pixels, "heatmap --log: 10 under a maximum of 100 gets the colour at 0.5")
{
    float v[4] = { 100, 1, 0, 10 }; /* row 0: (100, 1); row 1: (0, 10) */
    viz_heatmap_data d = { 2, 2, v, 0, 64, 0, 32, "log" };
    viz_heatmap_style st;
    viz_heatmap_style_default(&st);
    st.log = 1;
    const char *path = th_path("heatlog.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 400, 300, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(0, 0, 400, 300);
    CU_ASSERT_EQUAL(viz_heatmap_draw(s.cr, r, &d, &st, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    viz_rect a = viz_heatmap_area(r, &d, &st);
    double cw = a.w / 2, ch = a.h / 2;
    const unsigned char *ten = vp_at(&im, a.x + 1.5 * cw, a.y + 0.5 * ch);   /* row 1 is the top row */
    const unsigned char *hundred = vp_at(&im, a.x + 0.5 * cw, a.y + 1.5 * ch);
    uint32_t mid = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 0.5), top = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 1);
    for (int k = 0; k < 3; k++) {
        CU_ASSERT(abs(ten[k] - (int)(mid >> (16 - 8 * k) & 255)) <= 2);
        CU_ASSERT(abs(hundred[k] - (int)(top >> (16 - 8 * k) & 255)) <= 2);
    }
    /* and 0.5 is far from where linear scaling would put it */
    uint32_t lin = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 0.1);
    CU_ASSERT(abs(ten[0] - (int)(lin >> 16 & 255)) + abs(ten[1] - (int)(lin >> 8 & 255)) > 30);
    free(im.px);
}

/* 4 x 4 counts with one hot cell, one warm cell, the rest empty. */
TH_TEST(test_heatmap_pixels, "single-head heatmap pixels")
{
    float v[16] = { 0 };
    v[0 * 4 + 0] = 10; /* lowest slot bin, first bucket: hottest */
    v[3 * 4 + 2] = 1;  /* top slot bin, third bucket */
    viz_heatmap_data d = { 4, 4, v, 0, 64, 0, 32, "layer 1, head 2" };
    viz_heatmap_style st;
    viz_heatmap_style_default(&st);
    const char *path = th_path("heat.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 500, 400, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(0, 0, 500, 400);
    CU_ASSERT_EQUAL(viz_heatmap_draw(s.cr, r, &d, &st, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    viz_rect a = viz_heatmap_area(r, &d, &st);
    double cw = a.w / 4, ch = a.h / 4;
    const unsigned char *hot = vp_at(&im, a.x + cw / 2, a.y + a.h - ch / 2);
    const unsigned char *warm = vp_at(&im, a.x + 2.5 * cw, a.y + ch / 2);
    const unsigned char *cold = vp_at(&im, a.x + 1.5 * cw, a.y + 1.5 * ch);
    /* the smallest drawn count takes the bottom colour of the scale */
    uint32_t top = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 1), low = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 0);
    CU_ASSERT(abs(hot[0] - (int)(top >> 16 & 255)) <= 2 && abs(hot[1] - (int)(top >> 8 & 255)) <= 2);
    CU_ASSERT(abs(warm[0] - (int)(low >> 16 & 255)) <= 2 && abs(warm[2] - (int)(low & 255)) <= 2);
    CU_ASSERT(vp_white(cold));
    /* the colour bar right of the plot carries the map's colours */
    int bar = 0;
    for (int x = (int)(a.x + a.w); x < im.w; x++) {
        const unsigned char *p = vp_at(&im, x, a.y + 2);
        if (abs(p[0] - (int)(top >> 16 & 255)) <= 6 && abs(p[1] - (int)(top >> 8 & 255)) <= 6) bar++;
    }
    CU_ASSERT(bar > 3);
    /* the bar's foot: a white box for zero, and just above it the bottom
     * colour of the map (the colour of the smallest count) */
    int foot_white = 0, bottom = 0;
    for (int x = (int)(a.x + a.w + st.font * 1.2 + 3); x < (int)(a.x + a.w + st.font * 2.3 - 2); x++) {
        if (vp_white(vp_at(&im, x, a.y + a.h - st.font * 0.5))) foot_white++;
        const unsigned char *p = vp_at(&im, x, a.y + a.h - st.font * 1.6 - 3);
        if (abs(p[0] - (int)(low >> 16 & 255)) <= 12 && abs(p[2] - (int)(low & 255)) <= 12) bottom++;
    }
    CU_ASSERT(foot_white > 3);
    CU_ASSERT(bottom > 3);
    CU_ASSERT(vp_ink(&im, viz_rect_make(0, a.y, a.x - 1, a.h)) > 100);
    free(im.px);
}

/* The scale runs from the smallest non-zero count (0) to the largest (1);
 * zero is white (< 0). */
TH_TEST(test_heatmap_scale, "colour scale from the smallest drawn count; zero white")
{
    CU_ASSERT(viz_heatmap_scale(0, 3, 9, 0) < 0);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_scale(3, 3, 9, 0), 0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_scale(6, 3, 9, 0), 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_scale(9, 3, 9, 0), 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_scale(30, 3, 300, 1), 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_scale(5, 5, 5, 0), 1, 1e-12); /* one value: top colour */
    float v[4] = { 0, 7, 2, 0 };
    viz_heatmap_data d = { 2, 2, v, 0, 4, 0, 4, "" };
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_min(&d), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(viz_heatmap_max(&d), 7, 0);
}

TH_TEST(test_heatmap_grid, "model grid with a shared scale")
{
    enum { L = 2, H = 3, R = 8, C = 8 };
    float v[L * H][R * C];
    viz_heatmap_data d[L * H];
    memset(v, 0, sizeof v);
    for (int i = 0; i < L * H; i++) {
        v[i][i] = (float)(i + 1); /* a distinct hot cell per head: row 0, column i */
        d[i] = (viz_heatmap_data){ R, C, v[i], 0, 256, 0, 64, "" };
    }
    strcpy(d[0].title, "CAPE");
    viz_heatmap_style st;
    viz_heatmap_style_default(&st);
    const char *path = th_path("grid.png");
    viz_surface s;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, path, 700, 450, 96, &err), RN_OK);
    viz_rect thumbs[L * H];
    CU_ASSERT_EQUAL(viz_heatmap_grid_draw(s.cr, viz_rect_make(0, 0, 700, 450), d, L, H, &st, thumbs, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&s, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    int bad = 0;
    for (int i = 0; i < L * H; i++) {
        viz_rect t = thumbs[i];
        double cw = t.w / C, ch = t.h / R;
        /* hot cell coloured (not white), its neighbour above white */
        const unsigned char *p = vp_at(&im, t.x + (i + 0.5) * cw, t.y + t.h - ch / 2);
        const unsigned char *q = vp_at(&im, t.x + (i + 0.5) * cw, t.y + t.h - 2.5 * ch);
        if (vp_white(p) || !vp_white(q)) bad++;
        /* the shared scale: the last head holds the global maximum */
        if (i == L * H - 1) {
            uint32_t top = viz_cmap_argb(VIZ_CMAP_VIRIDIS, 1);
            if (abs(p[1] - (int)(top >> 8 & 255)) > 2) bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(vp_ink(&im, viz_rect_make(0, thumbs[0].y, thumbs[0].x - 1, thumbs[0].h)) > 30); /* "layer 0" */
    free(im.px);
    /* empty grids are input errors */
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&s, th_path("g0.png"), 100, 100, 96, &err), RN_OK);
    CU_ASSERT_EQUAL(viz_heatmap_grid_draw(s.cr, viz_rect_make(0, 0, 100, 100), d, 0, H, &st, NULL, &err), RN_EINPUT);
    viz_surface_abort(&s);
}

/* Let leak checkers see cairo's font caches released. */
static int release_fonts(void)
{
    cairo_debug_reset_static_data();
    return 0;
}

TH_SUITE(viz_heatmap, NULL, release_fonts);
