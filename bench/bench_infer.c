/* bench_infer.c — inference speed at llama2.c's stories15M shape (D=288,
 * L=6, H=6, F=768, V=32000, d_v=48, U=4, d_p=4, K=8): prefill and
 * generation tokens/s at 1 and 2 threads, generation at context 256 and
 * 4096 in fp32 and with --precision bf16 (the ratio bf16 / fp32 measured
 * in the same run), bytes of weights read per generated token, and the
 * achieved GB/s next to the machine's read and copy bandwidth measured in
 * the same run; then the step's product alone (lm_head's 32000 x 288) by
 * our GEMV kernels and by OpenBLAS's sgemv.
 * Reports medians of repeated measurements. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "rn_gemv.h"
#include "rn_model.h"
#include "rn_precision.h"
#include "rn_runtime.h"
#include "bench_util.h"

extern void openblas_set_num_threads(int);

/* Read bandwidth: stream a 512 MiB buffer through OpenBLAS's vectorised
 * sasum, each thread its own part (GB/s). */
static double read_bw(float *buf, size_t n, int threads)
{
    double t[5];
    volatile float sink = 0;
    openblas_set_num_threads(1);
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        float s = 0;
        #pragma omp parallel num_threads(threads) reduction(+:s)
        {
            int id = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t chunk = n / nt, lo = id * chunk, len = id == nt - 1 ? n - lo : chunk;
            s += cblas_sasum((int)len, buf + lo, 1);
        }
        sink += s;
        t[r] = bench_now() - t0;
    }
    (void)sink;
    openblas_set_num_threads(threads);
    return n * sizeof(float) / bench_median(t, 5) / 1e9;
}

/* Copy bandwidth: memcpy halves of the buffer (bytes read + written). */
static double copy_bw(float *buf, size_t n, int threads)
{
    double t[5];
    size_t half = n / 2;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        #pragma omp parallel num_threads(threads)
        {
            int id = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t chunk = half / nt, lo = id * chunk, len = id == nt - 1 ? half - lo : chunk;
            memcpy(buf + half + lo, buf + lo, len * sizeof(float));
        }
        t[r] = bench_now() - t0;
    }
    return 2.0 * half * sizeof(float) / bench_median(t, 5) / 1e9;
}

int main(void)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 32000; c.d_model = 288; c.n_layers = 6; c.n_heads = 6; c.d_ff = 768;
    c.d_v = 48; c.order = 4; c.d_p = 4; c.top_k = 8; c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    for (int l = 0; l < 3; l++) c.cape_mask[l] = 63;
    rn_model m;
    rn_error err;
    if (rn_model_create_random(&m, &c, 1, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }

    /* weights streamed per generated token: every layer matrix and norm,
     * the final norm, lm_head, and one embedding row */
    int64_t D = c.d_model, H = c.n_heads, dk = rn_config_dk(&c);
    int64_t per_layer = 2 * D + 2 * H * dk * D + 2 * H * c.d_v * D + 2 * H + 3 * (int64_t)c.d_ff * D;
    int64_t wbytes = 4 * (per_layer * c.n_layers + D + (int64_t)c.vocab_size * D + D);
    printf("model: stories15M shape, %lld params, M=%lld, weights read per token: %.1f MB\n",
           (long long)rn_config_param_count(&c), (long long)rn_config_slots(&c), wbytes / 1e6);

    size_t nbuf = (size_t)128 << 20; /* 512 MiB of floats */
    float *buf = malloc(nbuf * sizeof(float));
    for (size_t i = 0; i < nbuf; i++) buf[i] = (float)(i & 7);

    int ctxs[2] = { 256, 4096 };
    int *tok = malloc(sizeof(int) * 4096);
    for (int i = 0; i < 4096; i++) tok[i] = (i * 7919) % c.vocab_size;
    float *logits = malloc(sizeof(float) * c.vocab_size);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        openblas_set_num_threads(threads);
        double rbw = read_bw(buf, nbuf, threads), cbw = copy_bw(buf, nbuf, threads);
        rn_runtime *rt;
        if (rn_runtime_create(&m, 256, &rt, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        /* prefill: 256 tokens, 5 repetitions */
        double pt[5];
        for (int r = 0; r < 5; r++) {
            rn_runtime_reset(rt);
            double t0 = bench_now();
            rn_prefill(rt, tok, 256, logits, 0, &err);
            pt[r] = bench_now() - t0;
        }
        double prefill_tps = 256 / bench_median(pt, 5), fp32_tps[2] = { 0, 0 };
        printf("threads %d: read bandwidth %.2f GB/s, copy bandwidth %.2f GB/s (read+write)\n", threads, rbw, cbw);
        printf("  prefill (256 tokens):            %8.1f tok/s\n", prefill_tps);
        for (int prec = 0; prec < 2; prec++)
        for (int ci = 0; ci < 2; ci++) {
            if (rn_runtime_set_precision(rt, prec ? RN_PREC_BF16 : RN_PREC_FP32, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            rn_runtime_reset(rt);
            rn_prefill(rt, tok, ctxs[ci], logits, 0, &err);
            double gt[7];
            const int steps = 32;
            for (int r = 0; r < 7; r++) {
                double t0 = bench_now();
                for (int s = 0; s < steps; s++) rn_step(rt, tok[s], logits, &err);
                gt[r] = (bench_now() - t0) / steps;
            }
            /* bf16: the matrices' bytes halve (norms and alphas stay FP32: a rounding error) */
            double bytes = prec ? wbytes / 2.0 : (double)wbytes;
            double tps = 1.0 / bench_median(gt, 7), gbs = tps * bytes / 1e9;
            if (!prec) fp32_tps[ci] = tps;
            printf("  generation at context %4d, %s: %8.1f tok/s  %.2f GB/s of weights = %.0f%% of read bandwidth",
                   ctxs[ci], prec ? "bf16" : "fp32", tps, gbs, 100.0 * gbs / rbw);
            if (prec) printf("  (%.2fx fp32)", tps / fp32_tps[ci]);
            printf("\n");
        }
        rn_runtime_free(rt);
    }
    /* the step's largest product alone, one thread: our kernels and OpenBLAS */
    omp_set_num_threads(1);
    openblas_set_num_threads(1);
    {
        const int R = c.vocab_size, C = c.d_model;
        float *x = malloc(sizeof(float) * C), *y = malloc(sizeof(float) * R);
        uint16_t *wb = malloc(sizeof(uint16_t) * (size_t)R * C);
        for (int i = 0; i < C; i++) x[i] = (float)(i % 5) - 2;
        rn_bf16_round(wb, m.w.lm_head, (size_t)R * C);
        double t[9], blas;
        for (int r = 0; r < 9; r++) {
            double t0 = bench_now();
            for (int k = 0; k < 20; k++) cblas_sgemv(CblasRowMajor, CblasNoTrans, R, C, 1, m.w.lm_head, C, x, 1, 0, y, 1);
            t[r] = (bench_now() - t0) / 20;
        }
        blas = bench_median(t, 9);
        printf("lm_head product (%d x %d), 1 thread: OpenBLAS sgemv %.3f ms (%.1f GB/s)\n", R, C, blas * 1e3,
               4.0 * R * C / blas / 1e9);
        const char *orig = rn_gemv_kernel();
        static const char *const ks[] = { "c", "avx2", "avx512" };
        for (int k = 0; k < 3; k++) {
            if (rn_gemv_set_kernel(ks[k])) continue;
            for (int fmt = 0; fmt < 2; fmt++) {
                for (int r = 0; r < 9; r++) {
                    double t0 = bench_now();
                    for (int j = 0; j < 20; j++) {
                        if (fmt) rn_gemv_bf16(y, wb, x, R, C, 0);
                        else rn_gemv_f32(y, m.w.lm_head, x, R, C, 0);
                    }
                    t[r] = (bench_now() - t0) / 20;
                }
                double tk = bench_median(t, 9);
                printf("  rn_gemv %-6s %s: %.3f ms (%.1f GB/s) = %.2fx OpenBLAS sgemv's time\n", ks[k],
                       fmt ? "bf16" : "fp32", tk * 1e3, (fmt ? 2.0 : 4.0) * R * C / tk / 1e9, blas / tk);
            }
        }
        rn_gemv_set_kernel(orig);
        printf("  the runtime uses: %s\n", orig);
        free(x); free(y); free(wb);
    }
    free(buf); free(tok); free(logits);
    rn_model_free(&m);
    return 0;
}
