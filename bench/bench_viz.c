/* bench_viz.c — plotting speed, end to end from a trace database to PNG:
 *   1. the whole-model heatmap grid (layers x heads thumbnails) of a
 *      1024-token run shaped like the sample model (samples/configs/kjv.cfg:
 *      4 layers x 4 heads, M = 256, K = 8; 262k events);
 *   2. a single-head trace plot of 4096 tokens x 1024 slots (K = 8; 65k
 *      events).
 * Both include loading the events from SQLite.  The databases are
 * synthetic (CAPE-like diagonals plus scattered reads) so the benchmark
 * needs no trained model.  Medians of 5 runs; target <= 2 s each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rn_config.h"
#include "tr_writer.h"
#include "fig_figure.h"
#include "bench_util.h"

static int ignore_key(void *u, const char *k, const char *v, rn_error *e)
{
    (void)u; (void)k; (void)v; (void)e;
    return RN_OK;
}

/* Write a run of n_pos tokens with every head of cfg traced. */
static int make_db(const char *path, const rn_config *cfg, int n_pos, rn_error *err)
{
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .name = "bench", .command = "bench", .cfg = cfg };
    tr_writer *w;
    int rc = tr_writer_open(path, &meta, &sel, NULL, &w, err);
    if (rc) return rc;
    const rn_probe *pr = tr_writer_probe(w);
    uint32_t M = (uint32_t)rn_config_slots(cfg), K = (uint32_t)cfg->top_k;
    uint32_t s[RN_MAX_TOPK], a[RN_MAX_TOPK];
    float wt[RN_MAX_TOPK];
    uint64_t x = 88172645463325252ull;
    for (int p = 0; p < n_pos; p++) tr_writer_add_token(w, p, 'a' + p % 26, NULL, 0);
    for (int l = 0; l < cfg->n_layers; l++)
        for (int h = 0; h < cfg->n_heads; h++)
            for (int p = 0; p < n_pos; p++)
                for (int op = 0; op < 2; op++) {
                    for (uint32_t r = 0; r < K; r++) {
                        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                        s[r] = a[r] = op == 0 ? ((uint32_t)p + r * (M / K) + (uint32_t)(l * 7 + h)) % M
                                              : (uint32_t)(x % M);
                        wt[r] = 1.0f / (float)(r + 1);
                    }
                    pr->access(pr->user, l, h, p, op, (int)K, s, a, wt);
                }
    return tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, err);
}

#define REPS 5

static double time_figure(const fig_opts *o)
{
    double t[REPS];
    rn_error err = { 0 };
    for (int i = 0; i < REPS; i++) {
        double t0 = bench_now();
        if (fig_draw(o, &err)) {
            fprintf(stderr, "bench_viz: %s\n", err.msg);
            exit(1);
        }
        t[i] = bench_now() - t0;
    }
    qsort(t, REPS, sizeof t[0], bench_cmp_double);
    return t[REPS / 2];
}

int main(void)
{
    rn_error err = { 0 };
    char dir[] = "/tmp/bench_viz.XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    char db1[64], db2[64], out1[64], out2[64];
    snprintf(db1, sizeof db1, "%s/model.db", dir);
    snprintf(db2, sizeof db2, "%s/head.db", dir);
    snprintf(out1, sizeof out1, "%s/grid.png", dir);
    snprintf(out2, sizeof out2, "%s/trace.png", dir);

    rn_config c1;
    rn_config_default(&c1);
    if (rn_config_load_file(&c1, "samples/configs/kjv.cfg", ignore_key, NULL, &err) ||
        rn_config_validate(&c1, &err) || make_db(db1, &c1, 1024, &err)) {
        fprintf(stderr, "bench_viz: %s\n", err.msg);
        return 1;
    }
    rn_config c2;
    rn_config_default(&c2);
    c2.n_layers = 1;
    c2.n_heads = 1;
    c2.d_p = 32;
    c2.order = 2;
    c2.top_k = 8;
    c2.cape_mask[0] = 1;
    c2.cape_mask[1] = 0;
    if (rn_config_validate(&c2, &err) || make_db(db2, &c2, 4096, &err)) {
        fprintf(stderr, "bench_viz: %s\n", err.msg);
        return 1;
    }

    fig_opts o;
    fig_opts_default(&o);
    o.kind = fig_kind_find("heatmap");
    o.model = 1;
    o.db_path = db1;
    o.out_path = out1;
    double t1 = time_figure(&o);
    printf("heatmap grid, %dx%d heads, 1024 tokens, M=%lld: %.3f s (median of %d)\n", c1.n_layers,
           c1.n_heads, (long long)rn_config_slots(&c1), t1, REPS);

    fig_opts_default(&o);
    o.kind = fig_kind_find("trace");
    o.db_path = db2;
    o.out_path = out2;
    double t2 = time_figure(&o);
    printf("trace plot, 1 head, 4096 tokens x 1024 slots: %.3f s (median of %d)\n", t2, REPS);

    unlink(db1); unlink(db2); unlink(out1); unlink(out2);
    rmdir(dir);
    if (t1 > 2.0 || t2 > 2.0) printf("bench_viz: slower than the 2 s target\n");
    return 0;
}
