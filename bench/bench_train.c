/* bench_train.c — training throughput: tokens/s of a full training step
 * (forward, backward, AdamW) at D = 256, and the achieved matrix FLOP/s as
 * a fraction of the SGEMM rate measured in the same run (the baseline).
 * Medians of several repetitions; the machine is shared, so compare the
 * ratio, not the absolute numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "rn_adamw.h"
#include "rn_rng.h"
#include "rn_train.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* SGEMM rate (FLOP/s) on shapes like the model's: [rows, D] x [D, 3D]. */
static double sgemm_rate(int m, int k, int n, int reps)
{
    float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)k * n, 4), *c = calloc((size_t)m * n, 4);
    for (size_t i = 0; i < (size_t)m * k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)k * n; i++) b[i] = (float)(i % 5) * 0.1f;
    double t[16];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1, a, k, b, k, 0, c, n);
        t[r] = now() - t0;
    }
    free(a); free(b); free(c);
    return 2.0 * m * k * n / median(t, reps);
}

int main(void)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 257; c.d_model = 256; c.n_layers = 2; c.n_heads = 4; c.d_p = 16; c.order = 2;
    c.d_v = 64; c.top_k = 8; c.d_ff = 768;
    c.cape_mask[0] = 15;
    const int B = 8, T = 128, n = B * T, reps = 5;
    rn_model m;
    rn_error err;
    if (rn_model_create_random(&m, &c, 1, &err) != RN_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
    rn_trainer *tr;
    if (rn_trainer_create(&tr, &m, n, n, 0.01, &err) != RN_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
    float *mom = calloc(2 * (size_t)m.n_block, sizeof(float));
    int *tok = malloc(sizeof(int) * 2 * n), *tgt = tok + n;
    rn_rng rng;
    rn_rng_seed(&rng, 3);
    for (int i = 0; i < n; i++) { tok[i] = (int)rn_rng_below(&rng, 256); tgt[i] = (int)rn_rng_below(&rng, 256); }
    rn_adamw_opts o;
    rn_adamw_defaults(&o);
    double ts[16];
    for (int r = 0; r < reps + 1; r++) {
        double t0 = now(), loss;
        rn_trainer_zero_grads(tr);
        rn_trainer_forward(tr, tok, tgt, B, T, &loss, &err);
        rn_trainer_backward(tr, 1.0);
        double gn = rn_grad_norm(rn_trainer_grads(tr), m.n_block);
        rn_adamw_update(&c, m.params, rn_trainer_grads(tr), mom, mom + m.n_block, &o, r, 1e-3, gn > 1 ? 1 / gn : 1);
        if (r) ts[r - 1] = now() - t0; /* first step warms caches */
    }
    double step = median(ts, reps);
    /* matrix FLOPs of one step: forward 2·n·Σ(in·out), backward twice that */
    double D = c.d_model, hdk = c.n_heads * c.order * c.d_p, hdv = c.n_heads * c.d_v, F = c.d_ff;
    double per_row = c.n_layers * (2 * hdk * D + 2 * hdv * D + 3 * F * D) + D * c.vocab_size;
    double flops = 3 * 2 * n * per_row;
    double gemm = sgemm_rate(n, (int)D, (int)(3 * D), 7);
    printf("training step (D=%d, L=%d, H=%d, K=%d, M=%lld, %d rows): median %.1f ms over %d reps\n",
           c.d_model, c.n_layers, c.n_heads, c.top_k, (long long)rn_config_slots(&c), n, step * 1e3, reps);
    printf("  tokens/s           %.0f\n", n / step);
    printf("  matrix GFLOP/s     %.2f\n", flops / step * 1e-9);
    printf("  SGEMM GFLOP/s      %.2f  (baseline, [%d x %d] x [%d x %d], same run)\n", gemm * 1e-9, n, (int)D, (int)D, (int)(3 * D));
    printf("  fraction of SGEMM  %.1f%%\n", 100 * flops / step / gemm);
    free(mom); free(tok);
    rn_trainer_free(tr);
    rn_model_free(&m);
    return 0;
}
