/* test_viz_plot.c — `ramtrace plot` end to end on a synthetic trace
 * database written with the trace writer: marks land where the database's
 * events are, every kind renders in every format, and bad input (unknown
 * kind or extension, unwritable output, empty selection, missing database)
 * fails with one line and exit status 2, leaving no file behind. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_writer.h"
#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_colormap.h"
#include "viz_lineplot.h"
#include "viz_mrc.h"
#include "viz_surface.h"
#include "viz_png.h"
#include "viz_trace.h"

#define NPOS 40
#define K 2
static char g_db[512];

/* 2 layers x 2 heads, M = 16 slots, K = 2.  Head (l, h) writes slot
 * (pos + 3l + h) % 16 at rank 0 and (pos + 8) % 16 at rank 1, and reads slot
 * (5 + h) % 16 and 11 at every even position, (pos + 12 + h) % 16 and
 * (pos + 14) % 16 at every odd one, never a slot layer 1 head 0 writes there
 * (every position writes and reads, as the model does: rn_probe.h).  Layer
 * 0 head 0 uses CAPE: its address is (slot + pos) % 16; elsewhere address =
 * slot.  Positions from GEN on are generated, the ones before the prompt. */
#define GEN 30
static uint32_t w_slot(int l, int h, int p, int r) { return r == 0 ? (uint32_t)(p + 3 * l + h) % 16 : (uint32_t)(p + 8) % 16; }
static uint32_t r_slot(int h, int p, int r)
{
    if (p % 2) return r == 0 ? (uint32_t)(p + 12 + h) % 16 : (uint32_t)(p + 14) % 16;
    return r == 0 ? (uint32_t)(5 + h) % 16 : 11;
}

static int make_db(void)
{
    snprintf(g_db, sizeof g_db, "%s", th_path("plot.db"));
    rn_config cfg;
    rn_config_default(&cfg);
    cfg.n_layers = 2;
    cfg.n_heads = 2;
    cfg.d_p = 4;
    cfg.order = 2;
    cfg.top_k = K;
    cfg.cape_mask[0] = 1; /* layer 0 head 0 */
    cfg.cape_mask[1] = 0;
    rn_error err = { 0 };
    if (rn_config_validate(&cfg, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .name = "synthetic", .command = "test", .cfg = &cfg };
    tr_writer *w;
    if (tr_writer_open(g_db, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    const rn_probe *pr = tr_writer_probe(w);
    for (int p = 0; p < NPOS; p++) {
        char piece[8];
        snprintf(piece, sizeof piece, "%c", 'a' + p % 26);
        tr_writer_add_token(w, p, 'a' + p % 26, piece, p >= GEN);
    }
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++)
            for (int p = 0; p < NPOS; p++) {
                uint32_t s[K], a[K];
                float wt[K] = { 0.9f, 0.3f };
                int cape = l == 0 && h == 0;
                for (int r = 0; r < K; r++) s[r] = w_slot(l, h, p, r), a[r] = cape ? (s[r] + p) % 16 : s[r];
                pr->access(pr->user, l, h, p, 0, K, s, a, wt);
                for (int r = 0; r < K; r++) s[r] = r_slot(h, p, r), a[r] = cape ? (s[r] + p) % 16 : s[r];
                pr->access(pr->user, l, h, p, 1, K, s, a, wt);
            }
    if (tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    return 0;
}

static int setup(void) { return make_db(); }

/* The figure library draws layer 1 head 0 where its events are, and only
 * the operations asked for (ops "rw", "r" or "w"). */
static void check_trace_pixels(const char *ops)
{
    int want_w = strchr(ops, 'w') != NULL, want_r = strchr(ops, 'r') != NULL;
    fig_opts o;
    fig_opts_default(&o);
    o.kind = fig_kind_find("trace");
    o.db_path = g_db;
    o.out_path = th_path("fig-trace.png");
    o.layers = "1";
    o.heads = "0";
    o.ops = ops;
    o.width = 700;
    o.height = 450;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_draw(&o, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(o.out_path, &im), 0);
    /* the panel rectangle the trace figure uses for one head: the page less a 4 px
     * border and the legend strip */
    viz_trace_style st;
    viz_trace_style_default(&st);
    viz_rect cell = viz_rect_inset(viz_rect_make(4, 4, 700 - 8, 450 - 8), 0, st.font * 1.8, 0, 0);
    viz_trace_data d = { 0, NPOS, 16, 0, NULL, "x", 0 };
    viz_rect a = viz_trace_area(cell, &d, &st);
    int bad = 0;
    for (int p = 0; p < NPOS; p++)
        for (int s = 0; s < 16; s++) {
            viz_rect c = viz_trace_cell(a, &d, p, s);
            if (p == GEN || p == GEN - 1 || c.y < a.y + st.font * 1.2) continue; /* the generation marker */
            const unsigned char *px = vp_at(&im, c.x + c.w / 2, c.y + c.h / 2);
            int w = want_w && ((uint32_t)s == w_slot(1, 0, p, 0) || (uint32_t)s == w_slot(1, 0, p, 1));
            int r = want_r && ((uint32_t)s == r_slot(0, p, 0) || (uint32_t)s == r_slot(0, p, 1));
            if (w && !vp_write(px)) bad++;
            if (r && !w && !vp_read(px)) bad++;
            if (!w && !r && !vp_white(px)) bad++;
        }
    if (bad) fprintf(stderr, "\n--ops %s: %d cells wrong\n", ops, bad);
    CU_ASSERT_EQUAL(bad, 0);
    free(im.px);
}

TH_TEST(test_trace_figure_pixels, "trace figure from a database")
{
    check_trace_pixels("rw");
    check_trace_pixels("w");
    check_trace_pixels("r");
}

/* --addr draws the CAPE head's addresses (slot + pos) % 16 instead of its
 * slots; --palette paper draws writes red; the figure marks where the
 * prompt ends (a dark line at position GEN). */
TH_TEST(test_trace_figure_addr_palette_marker, "trace figure: --addr, --palette, generation marker")
{
    fig_opts o;
    fig_opts_default(&o);
    o.kind = fig_kind_find("trace");
    o.db_path = g_db;
    o.out_path = th_path("fig-addr.png");
    o.layers = "0";
    o.heads = "0";
    o.ops = "w";
    o.addr = 1;
    o.palette = 1;
    o.width = 700;
    o.height = 450;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_draw(&o, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(o.out_path, &im), 0);
    viz_trace_style st;
    viz_trace_style_default(&st);
    viz_rect cell = viz_rect_inset(viz_rect_make(4, 4, 700 - 8, 450 - 8), 0, st.font * 1.8, 0, 0);
    viz_trace_data d = { 0, NPOS, 16, 0, NULL, "x", 0 };
    viz_rect a = viz_trace_area(cell, &d, &st);
    int bad = 0;
    for (int p = 0; p < NPOS; p++)
        for (int sl = 0; sl < 16; sl++) {
            if (p == GEN || p == GEN - 1) continue; /* the marker's column */
            viz_rect c = viz_trace_cell(a, &d, p, sl);
            const unsigned char *px = vp_at(&im, c.x + c.w / 2, c.y + c.h / 2);
            int w = (uint32_t)sl == (w_slot(0, 0, p, 0) + p) % 16 || (uint32_t)sl == (w_slot(0, 0, p, 1) + p) % 16;
            if (c.y < a.y + st.font * 1.2) continue; /* under the marker's labels */
            if (w && !vp_red(px)) bad++;
            if (!w && !vp_white(px)) bad++;
        }
    if (bad) fprintf(stderr, "\n--addr: %d cells wrong\n", bad);
    CU_ASSERT_EQUAL(bad, 0);
    double gx = viz_trace_cell(a, &d, GEN, 0).x;
    int dark = 0, rows = 0;
    for (int y = (int)(a.y + st.font * 1.5); y < (int)(a.y + a.h - 2); y++, rows++)
        if (vp_dark(vp_at(&im, gx, y)) || vp_dark(vp_at(&im, gx - 1, y)) || vp_dark(vp_at(&im, gx + 1, y))) dark++;
    CU_ASSERT(dark > rows / 3); /* a dashed line: 4 on, 3 off */
    free(im.px);
}

/* plot mrc and plot reuse default to the scope `simulate` defaults to: one
 * cache for the model (one stream of every selected head's accesses). */
TH_TEST(test_mrc_default_scope_is_simulates, "mrc/reuse default scope: model, as simulate")
{
    fig_opts o;
    fig_opts_default(&o);
    o.kind = fig_kind_find("mrc");
    o.db_path = g_db;
    o.out_path = th_path("scope.png");
    fig_ctx f;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(fig_ctx_open(&f, &o, &err), RN_OK);
    int scope = -1;
    an_streams ss;
    CU_ASSERT_EQUAL_FATAL(fig_load_streams(&f, &scope, &ss, &err), RN_OK);
    CU_ASSERT_EQUAL(scope, RN_CACHE_SCOPE_MODEL);
    CU_ASSERT_EQUAL(ss.n, 1);
    an_streams_free(&ss);
    fig_ctx_close(&f);
    CU_ASSERT_EQUAL(th_run("%s simulate --help", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "model\n                        (one cache for all heads; default"));
    char buf[32];
    viz_bytes_text(132, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "132 B");
    viz_bytes_text(132 * 100, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "12.9 KiB");
    viz_bytes_text(3 << 20, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "3 MiB");
}

/* Two policies with identical curves (LRU and CLOCK often are) stay
 * distinguishable: with looks, the second is dashed, so the first shows
 * through its gaps and both colours appear along the line. */
TH_TEST(test_lineplot_looks_distinguish_overlaps, "mrc: overlapping curves told apart by dash and marker")
{
    double x[2] = { 0, 10 }, y[2] = { 0.5, 0.5 };
    viz_series s[2] = { { "lru", 2, x, y, 0, NULL, NULL }, { "clock", 2, x, y, 0, NULL, NULL } };
    viz_mrc_data d = { 2, s, "", 0, NULL, 0, 0 };
    const char *path = th_path("looks.png");
    viz_surface sf;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(viz_surface_open(&sf, path, 600, 400, 96, &err), RN_OK);
    viz_rect r = viz_rect_make(0, 0, 600, 400);
    CU_ASSERT_EQUAL(viz_mrc_draw(sf.cr, r, &d, 13, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(viz_surface_commit(&sf, &err), RN_OK);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(path, &im), 0);
    viz_rect a = viz_mrc_area(r, &d, 13);
    double yl = a.y + a.h / 2; /* y = 0.5 on [0, 1] */
    viz_rgb c0 = viz_palette(0), c1 = viz_palette(1);
    int n0 = 0, n1 = 0;
    for (int x = (int)(a.x + a.w * 0.1); x < (int)(a.x + a.w * 0.6); x++) {
        const unsigned char *p = vp_at(&im, x, yl);
        if (abs(p[0] - (int)(c0.r * 255)) < 40 && abs(p[1] - (int)(c0.g * 255)) < 40 && abs(p[2] - (int)(c0.b * 255)) < 40) n0++;
        if (abs(p[0] - (int)(c1.r * 255)) < 40 && abs(p[1] - (int)(c1.g * 255)) < 40 && abs(p[2] - (int)(c1.b * 255)) < 40) n1++;
    }
    CU_ASSERT(n0 > 10);
    CU_ASSERT(n1 > 10);
    free(im.px);
}

static int plot(const char *args, const char *out)
{
    return th_run("%s plot %s '%s' -o '%s'", th_bin(), args, g_db, out);
}

TH_TEST(test_cli_kinds_and_formats, "every kind, PNG/SVG/PDF")
{
    const char *out = th_path("t.svg");
    CU_ASSERT_EQUAL(plot("trace", out), 0);
    char *t = th_read_file(out, NULL);
    CU_ASSERT(t && strncmp(t, "<?xml", 5) == 0 && strstr(t, "</svg>"));
    free(t);
    out = th_path("h.pdf");
    CU_ASSERT_EQUAL(plot("heatmap --model", out), 0);
    size_t len = 0;
    t = th_read_file(out, &len);
    CU_ASSERT(t && len > 100 && strncmp(t, "%PDF-", 5) == 0 && strstr(t + len - 8, "%%EOF"));
    free(t);
    vp_img im;
    CU_ASSERT_EQUAL(plot("heatmap --layers 0 --heads 1 --log", th_path("h1.png")), 0);
    CU_ASSERT_EQUAL(vp_load(th_path("h1.png"), &im), 0);
    free(im.px);
    CU_ASSERT_EQUAL(plot("mrc --log --policies lru,fifo,opt", th_path("m.png")), 0);
    CU_ASSERT_EQUAL(vp_load(th_path("m.png"), &im), 0);
    free(im.px);
    CU_ASSERT_EQUAL(plot("reuse --scope layer", th_path("r.png")), 0);
    CU_ASSERT_EQUAL(vp_load(th_path("r.png"), &im), 0);
    free(im.px);
    CU_ASSERT_EQUAL(plot("attribution --layers 1 --heads 1 --to 20", th_path("a.png")), 0);
    CU_ASSERT_EQUAL(vp_load(th_path("a.png"), &im), 0);
    free(im.px);
    CU_ASSERT_EQUAL(plot("attribution --layers 1 --heads 1 --to 20 --log", th_path("a.png")), 0);
    CU_ASSERT_EQUAL(plot("trace --addr --palette paper", th_path("a.png")), 0);
    CU_ASSERT_EQUAL(plot("trace --palette okabe-ito", th_path("a.png")), 0);
    CU_ASSERT_EQUAL(vp_load(th_path("a.png"), &im), 0);
    free(im.px);
    /* every kind draws reads only and writes only (--ops r once failed with
     * "no traced head matches") */
    static const char *const kinds[] = { "trace", "heatmap --model", "mrc", "reuse",
                                         "attribution --layers 1 --heads 1 --to 20" };
    for (int k = 0; k < 5; k++)
        for (int op = 0; op < 2; op++) {
            char args[128];
            snprintf(args, sizeof args, "%s --ops %s", kinds[k], op ? "r" : "w");
            int rc = plot(args, th_path("ops.png"));
            if (rc) fprintf(stderr, "\nplot %s: %s", args, th_err());
            CU_ASSERT_EQUAL(rc, 0);
        }
    CU_ASSERT_EQUAL(th_run("%s plot --help", th_bin()), 0);
    CU_ASSERT(strstr(th_out(), "usage: ramtrace plot") != NULL);
}

/* One line on stderr, exit 2, and neither the output nor a temp file. */
static void expect_bad(const char *args, const char *out, const char *needle)
{
    int rc = th_run("%s plot %s -o '%s'", th_bin(), args, out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    if (needle && !strstr(th_err(), needle)) {
        fprintf(stderr, "\nexpected '%s' in: %s", needle, th_err());
        CU_FAIL("message does not name the problem");
    }
    CU_ASSERT(!th_file_exists(out));
    CU_ASSERT_EQUAL(th_run("ls '%s' | grep -c '\\.tmp\\.'", th_tmpdir()), 1);
}

TH_TEST(test_plot_bad_input, "bad input: one line, exit 2, no file")
{
    char args[700];
    snprintf(args, sizeof args, "trace '%s'", g_db);
    expect_bad(args, th_path("x.gif"), "x.gif");
    expect_bad(args, th_path("missing-dir/x.png"), "missing-dir/x.png");
    snprintf(args, sizeof args, "trace '%s' --from 500", g_db);
    expect_bad(args, th_path("e.png"), "empty");
    snprintf(args, sizeof args, "trace '%s' --heads 7", g_db);
    expect_bad(args, th_path("e.png"), "--heads");
    snprintf(args, sizeof args, "bogus '%s'", g_db);
    expect_bad(args, th_path("e.png"), "bogus");
    snprintf(args, sizeof args, "trace '%s'", th_path("nope.db"));
    expect_bad(args, th_path("e.png"), "nope.db");
    snprintf(args, sizeof args, "attribution '%s'", g_db);
    expect_bad(args, th_path("e.png"), "one head");
    snprintf(args, sizeof args, "heatmap '%s' --cmap jet", g_db);
    expect_bad(args, th_path("e.png"), "--cmap");
    snprintf(args, sizeof args, "trace '%s' --palette rainbow", g_db);
    expect_bad(args, th_path("e.png"), "--palette");
    snprintf(args, sizeof args, "mrc '%s' --policies nosuch", g_db);
    expect_bad(args, th_path("e.png"), "nosuch");
    snprintf(args, sizeof args, "trace '%s' --run 9", g_db);
    expect_bad(args, th_path("e.png"), "no run 9");
    snprintf(args, sizeof args, "trace '%s' --run 18446744073709551615", g_db);
    expect_bad(args, th_path("e.png"), "--run");
    /* a run still being written (or whose writer died) is refused, as every
     * analysis command refuses it */
    const char *running = th_path("running.db");
    CU_ASSERT_EQUAL_FATAL(th_run("cp '%s' '%s'", g_db, running), 0);
    sqlite3 *s;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(running, &s), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(s, "UPDATE runs SET status = 'running'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    snprintf(args, sizeof args, "heatmap '%s'", running);
    expect_bad(args, th_path("e.png"), "still running");
    /* an existing output survives a failed plot untouched */
    const char *keep = th_path("keep.png");
    th_write_file(keep, "old", 3);
    snprintf(args, sizeof args, "trace '%s' --from 500", g_db);
    CU_ASSERT_EQUAL(th_run("%s plot %s -o '%s'", th_bin(), args, keep), 2);
    char *t = th_read_file(keep, NULL);
    CU_ASSERT(t && strcmp(t, "old") == 0);
    free(t);
}

TH_SUITE(viz_plot, setup, NULL);
