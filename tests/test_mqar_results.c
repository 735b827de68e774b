/* test_mqar_results.c — the MQAR sweep's results and the baselines:
 * CSV splitting, loading by column name, the best-of-lr and per-seed
 * summaries against hand computations, and `ramtrace plot frontier|scaling`
 * (the figures have ink where the points are; bad input is one line, exit
 * 2, no file). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_results.h"
#include "th.h"
#include "viz_png.h"

static const char *HDR = "name,figure,U,d_p,M,K,d_v,heads,layers,vocab,lr,seed,steps,tokens,train_seconds,"
                         "state_bytes,active_state_bytes,acc_64_4,acc_64_8,acc_64_16,acc_128_32,acc_256_64,"
                         "acc_512_128,acc_1024_256,mean7,mean_l64,mean_trained,eval_examples,deviations\n";

/* A results file: two lrs of one fig3 shape, one of another; fig4 rows over
 * two seeds at U = 2 and one at U = 1 (M = 256), and M = 64. */
static const char *write_results(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s"
             "a,fig3,2,8,64,8,32,2,2,600,3e-3,1,3000,1,1,33792,8448,1,1,1,1,0.9,0.5,0.3,0.8143,1,0.9,1000,\"V=600, 3000 steps\"\n"
             "b,fig3,2,8,64,8,32,2,2,600,1e-3,1,3000,1,1,33792,8448,1,1,1,1,0.9,0.6,0.3,0.8286,1,0.9,1000,x\n"
             "c,fig3,2,12,144,8,32,2,2,600,3e-3,1,3000,1,1,76032,8448,1,1,1,1,1,0.6,0.4,0.8571,1,1,1000,x\n"
             "d,\"fig4-U,fig4-M\",2,16,256,8,32,2,2,600,3e-3,1,1500,1,1,135168,8448,,,,,,,,0.5,0.8,,1000,x\n"
             "e,\"fig4-U,fig4-M\",2,16,256,8,32,2,2,600,3e-3,2,1500,1,1,135168,8448,,,,,,,,0.3,0.6,,1000,x\n"
             "f,fig4-U,1,256,256,8,32,2,2,600,3e-3,1,1500,1,1,135168,8448,,,,,,,,0.2,0.4,,1000,x\n"
             "g,fig4-M,2,8,64,8,32,2,2,600,3e-3,1,1500,1,1,33792,8448,,,,,,,,0.1,0.3,,1000,x\n", HDR);
    const char *p = th_path("results.csv");
    th_write_file(p, buf, strlen(buf));
    return p;
}

static const char *write_anchors(void)
{
    static const char a[] = "# comment line\nmodel,state_bytes,accuracy\nDeltaNet,9.0e3,0.79\nDeltaNet,3.5e4,0.96\n"
                            "GLA,4.7e3,0.53\n";
    const char *p = th_path("anchors.csv");
    th_write_file(p, a, strlen(a));
    return p;
}

TH_TEST(test_csv_split, "CSV fields: quotes, doubled quotes, empty fields")
{
    char line[] = "a,\"b,c\",,\"say \"\"hi\"\"\",e\n";
    char *f[8];
    CU_ASSERT_EQUAL_FATAL(an_csv_split(line, f, 8), 5);
    CU_ASSERT_STRING_EQUAL(f[0], "a");
    CU_ASSERT_STRING_EQUAL(f[1], "b,c");
    CU_ASSERT_STRING_EQUAL(f[2], "");
    CU_ASSERT_STRING_EQUAL(f[3], "say \"hi\"");
    CU_ASSERT_STRING_EQUAL(f[4], "e");
    char bad[] = "a,\"open";
    CU_ASSERT_EQUAL(an_csv_split(bad, f, 8), -1);
}

TH_TEST(test_results_summaries, "best of the lrs per shape; mean, min, max over seeds")
{
    an_result *r;
    int n;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(an_results_load(write_results(), &r, &n, &err), 0);
    CU_ASSERT_EQUAL_FATAL(n, 7);
    CU_ASSERT_STRING_EQUAL(r[0].figure, "fig3");
    CU_ASSERT_STRING_EQUAL(r[3].figure, "fig4-U,fig4-M");
    CU_ASSERT_DOUBLE_EQUAL(r[2].acc[6], 0.4, 1e-12);
    CU_ASSERT(isnan(r[3].acc[0]));
    CU_ASSERT(an_result_tagged(&r[3], "fig4-M") && an_result_tagged(&r[3], "fig4-U"));
    CU_ASSERT(!an_result_tagged(&r[3], "fig4"));
    int best[8];
    CU_ASSERT_EQUAL_FATAL(an_results_best(r, n, "fig3", best, 8), 2);
    CU_ASSERT_EQUAL(best[0], 1); /* lr 1e-3 beat 3e-3 at M = 64 */
    CU_ASSERT_EQUAL(best[1], 2);
    double x[8], mean[8], lo[8], hi[8];
    int cnt[8];
    CU_ASSERT_EQUAL_FATAL(an_results_by(r, n, "fig4-U", "U", "mean7", x, cnt, mean, lo, hi, 8), 2);
    CU_ASSERT(x[0] == 1 && x[1] == 2 && cnt[0] == 1 && cnt[1] == 2);
    CU_ASSERT_DOUBLE_EQUAL(mean[1], 0.4, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(lo[1], 0.3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hi[1], 0.5, 1e-12);
    CU_ASSERT_EQUAL_FATAL(an_results_by(r, n, "fig4-M", "M", "mean_l64", x, cnt, mean, lo, hi, 8), 2);
    CU_ASSERT(x[0] == 64 && x[1] == 256);
    CU_ASSERT_DOUBLE_EQUAL(mean[1], 0.7, 1e-12);
    CU_ASSERT_EQUAL(an_results_by(r, n, "fig4-M", "d_v", "mean7", x, cnt, mean, lo, hi, 8), -1);
    free(r);
    an_anchor *a;
    CU_ASSERT_EQUAL_FATAL(an_anchors_load(write_anchors(), &a, &n, &err), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(a[1].model, "DeltaNet");
    CU_ASSERT_DOUBLE_EQUAL(a[1].state_bytes, 3.5e4, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(a[2].accuracy, 0.53, 1e-12);
    free(a);
    /* a missing column and a bad number name the problem */
    const char *p = th_path("bad.csv");
    th_write_file(p, "name,figure\nx,fig3\n", 19);
    CU_ASSERT_EQUAL(an_results_load(p, &r, &n, &err), RN_EINPUT);
    CU_ASSERT(strstr(err.msg, "state_bytes") != NULL);
    char buf[2048];
    snprintf(buf, sizeof buf, "%sa,fig3,2,8,64,8,32,2,2,600,3e-3,1,3000,1,1,lots,8448,1,1,1,1,1,1,1,1,1,1,1,x\n", HDR);
    th_write_file(p, buf, strlen(buf));
    CU_ASSERT_EQUAL(an_results_load(p, &r, &n, &err), RN_EINPUT);
    CU_ASSERT(strstr(err.msg, ":2: state_bytes") != NULL);
}

/* Coloured (not white, not grey) pixels in a rectangle of the page. */
static long colour_px(const vp_img *im, double x0, double y0, double x1, double y1)
{
    long c = 0;
    for (double y = y0; y < y1; y++)
        for (double x = x0; x < x1; x++) {
            const unsigned char *p = vp_at(im, x, y);
            int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
            int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
            c += mx - mn > 60;
        }
    return c;
}

TH_TEST(test_plot_frontier_scaling, "plot frontier and scaling: both panels drawn; bad input")
{
    char res[512], anc[512], e[512];
    snprintf(res, sizeof res, "%s", write_results()); /* th_path's buffers are reused */
    snprintf(anc, sizeof anc, "%s", write_anchors());
    snprintf(e, sizeof e, "%s", th_path("e.png"));
    const char *out = th_path("f3.png");
    CU_ASSERT_EQUAL_FATAL(th_run("%s plot frontier --csv '%s' --anchors '%s' -o '%s'", th_bin(), res, anc, out), 0);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    CU_ASSERT_EQUAL(im.w, 1100);
    CU_ASSERT(colour_px(&im, 60, 20, 540, 400) > 200);  /* left panel: series */
    CU_ASSERT(colour_px(&im, 610, 20, 1090, 400) > 100); /* right panel */
    free(im.px);
    out = th_path("f4.svg");
    CU_ASSERT_EQUAL(th_run("%s plot scaling --csv '%s' -o '%s'", th_bin(), res, out), 0);
    char *t = th_read_file(out, NULL);
    CU_ASSERT(t && strstr(t, "</svg>"));
    free(t);
    CU_ASSERT_EQUAL(th_run("%s plot frontier -o '%s'", th_bin(), e), 2);
    CU_ASSERT(strstr(th_err(), "--csv") && th_count_lines(th_err()) == 1);
    CU_ASSERT_EQUAL(th_run("%s plot scaling --csv '%s' --anchors '%s' -o '%s'", th_bin(), res, anc, e), 2);
    CU_ASSERT(strstr(th_err(), "--anchors") != NULL);
    CU_ASSERT_EQUAL(th_run("%s plot frontier --csv '%s' -o '%s'", th_bin(), th_path("nope.csv"), e), 2);
    CU_ASSERT(strstr(th_err(), "nope.csv") && th_count_lines(th_err()) == 1);
    CU_ASSERT_EQUAL(th_run("%s plot frontier --csv '%s' --anchors '%s' -o '%s'", th_bin(), anc, anc, e), 2);
    CU_ASSERT(strstr(th_err(), "no column") != NULL);
    CU_ASSERT(!th_file_exists(e));
}

/* Pixels near palette colour 1 (orange, 255 127 14) in a rectangle. */
static long orange_px(const vp_img *im, double x0, double y0, double x1, double y1)
{
    long c = 0;
    for (double y = y0; y < y1; y++)
        for (double x = x0; x < x1; x++) {
            const unsigned char *p = vp_at(im, x, y);
            c += abs(p[0] - 255) < 40 && abs(p[1] - 127) < 40 && abs(p[2] - 14) < 40;
        }
    return c;
}

TH_TEST(test_plot_frontier_length, "plot frontier: rows tagged length make a second RAM-Net line, absent without them")
{
    char res[512], res2[512];
    snprintf(res, sizeof res, "%s", write_results());
    char *t = th_read_file(res, NULL);
    CU_ASSERT_FATAL(t != NULL);
    size_t n = strlen(t);
    const char extra[] = "h,length,2,11,121,8,16,4,2,600,3e-3,1,4500,1,1,65824,8704,1,1,1,1,1,1,0.99,0.9986,1,0.9986,1000,x\n"
                         "i,length,2,8,64,8,16,4,2,600,3e-3,1,3000,1,1,34816,8704,1,1,1,1,0.9,0.8,0.5,0.88,1,0.88,1000,x\n";
    char *t2 = malloc(n + sizeof extra);
    CU_ASSERT_FATAL(t2 != NULL);
    memcpy(t2, t, n);
    memcpy(t2 + n, extra, sizeof extra);
    snprintf(res2, sizeof res2, "%s", th_path("results-length.csv"));
    th_write_file(res2, t2, strlen(t2));
    free(t);
    free(t2);
    /* no anchors: the only series are RAM-Net's, the second one orange */
    const char *out = th_path("fl.png");
    CU_ASSERT_EQUAL_FATAL(th_run("%s plot frontier --csv '%s' -o '%s'", th_bin(), res2, out), 0);
    vp_img im;
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    long with = orange_px(&im, 60, 20, 540, 400);
    free(im.px);
    CU_ASSERT_EQUAL_FATAL(th_run("%s plot frontier --csv '%s' -o '%s'", th_bin(), res, out), 0);
    CU_ASSERT_EQUAL_FATAL(vp_load(out, &im), 0);
    long without = orange_px(&im, 60, 20, 540, 400);
    free(im.px);
    CU_ASSERT(with > 100);
    CU_ASSERT_EQUAL(without, 0);
}

TH_SUITE(mqar_results, NULL, NULL);
