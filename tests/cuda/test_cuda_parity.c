/* test_cuda_parity.c — the CUDA backend against the CPU reference, its own
 * CUnit binary (mk/cuda.mk: built wherever nvcc is found, run by `make
 * test` and `make test-cuda`).
 *
 * Without a usable CUDA device it prints "skipped: no CUDA device" and
 * exits 0 (1 under RN_CUDA_REQUIRE=1, which `make test-cuda` sets, so a GPU
 * machine that cannot see its GPU fails loudly).  With one it checks, over
 * a grid of random models (CAPE on/off, tied/untied head, γ ∈ {0, 0.5, 1,
 * 2}, several U, d_p, K):
 *   - the GPU decoder's top-K slots and weights on random keys equal the
 *     CPU's, except where the CPU's own K-th and (K+1)-th weights tie within
 *     float rounding (counted and printed);
 *   - prefill logits of every row (in several chunks: chunks of 64 rows take
 *     the segmented scan, the last shorter one and the steps the sequential
 *     kernel) and step logits after it: max |gpu − cpu| / max |cpu| per row
 *     < 1e-4;
 *   - reset returns the GPU runtime to the fresh state;
 *   - traced events (a probe on both runtimes over prefill and steps) are
 *     identical: same order, layer, head, position, op, slots, addresses,
 *     and weights within 1e-6 relative;
 *   - --precision bf16 (rn_runtime_set_precision): the GPU's bf16 step
 *     (bf16 weights in its GEMV, FP32 activations) against the CPU's bf16
 *     runtime, one token at a time from position 0: logits within 1e-4
 *     relative per row and traced events identical, as in fp32;
 *   - the GPU's bf16 prefill and steps against its fp32 ones on the same
 *     model (bf16 weights and, in the prefill, bf16 activations: a
 *     different function, so looser bounds, calibrated on the CPU, where
 *     bf16 weights alone give per-row errors up to 0.026, mean 0.0018, and
 *     top-10 sets that differ in 3.5% of rows, by tokens within 0.02 of
 *     the row's scale of the 10th logit): per row max |bf16 − fp32| /
 *     max |fp32| < 0.1, mean over rows < 0.01; the top-10 sets may differ
 *     only at near-ties — every token in one set and not the other within
 *     0.05·max |fp32| of the fp32 10th logit — in at most 15% of rows
 *     (the share is printed); and fp32 again after bf16 gives the first
 *     fp32 logits back;
 *   - the GPU trainer against the CPU trainer (tests/cuda/test_cuda_train.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cuda_tests.h"

#include "rn_cuda.h"
#include "rn_decoder.h"
#include "rn_layers.h"
#include "rn_model.h"
#include "rn_rng.h"
#include "rn_runtime.h"

typedef struct { int U, dp, K, cape, tied; float gamma; } shape;

static const shape g_shapes[] = {
    { 2, 8, 4, 0, 1, 1.0f }, { 2, 8, 4, 1, 1, 0.5f }, { 3, 4, 8, 1, 0, 0.0f },
    { 3, 4, 8, 0, 0, 2.0f }, { 4, 4, 16, 1, 1, 1.0f }, { 1, 16, 4, 1, 0, 0.5f },
    { 5, 4, 8, 1, 1, 2.0f }, { 2, 16, 32, 0, 1, 0.0f },
};
#define N_SHAPES (int)(sizeof g_shapes / sizeof g_shapes[0])
int rn_cuda_parity_quick = 0;

/* full, or quick under rn_cuda_parity_quick */
static int qk(int full, int quick) { return rn_cuda_parity_quick ? quick : full; }

static long g_ties, g_rows, g_events;

/* A probe that keeps every event: 5 ints of (layer, head, pos, op, k), then
 * k slots, k addresses and k weights (bits), in one growing array. */
typedef struct { uint32_t *v; size_t n, cap; } recorder;

static void rec_push(recorder *r, uint32_t x)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1 << 16;
        r->v = realloc(r->v, sizeof *r->v * r->cap);
    }
    r->v[r->n++] = x;
}

static void rec_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    recorder *r = user;
    rec_push(r, (uint32_t)layer); rec_push(r, (uint32_t)head); rec_push(r, (uint32_t)pos);
    rec_push(r, (uint32_t)op); rec_push(r, (uint32_t)k);
    for (int j = 0; j < k; j++) rec_push(r, slot[j]);
    for (int j = 0; j < k; j++) rec_push(r, addr[j]);
    for (int j = 0; j < k; j++) { uint32_t b; memcpy(&b, &weight[j], 4); rec_push(r, b); }
}

/* Compare two recordings event by event; returns the number of events. */
static long rec_compare(const recorder *a, const recorder *b)
{
    CU_ASSERT_EQUAL_FATAL(a->n, b->n);
    long events = 0;
    for (size_t i = 0; i < a->n;) {
        uint32_t k = a->v[i + 4];
        for (size_t j = i; j < i + 5 + 2 * k; j++) CU_ASSERT_EQUAL(a->v[j], b->v[j]);
        for (size_t j = i + 5 + 2 * k; j < i + 5 + 3 * k; j++) {
            float x, y;
            memcpy(&x, &a->v[j], 4);
            memcpy(&y, &b->v[j], 4);
            CU_ASSERT(fabsf(x - y) <= 1e-6f * fabsf(x));
        }
        i += 5 + 3 * k;
        events++;
    }
    return events;
}
static double g_worst;
static double g_b16_worst, g_b16_mean; /* bf16 against fp32 on the GPU */
static long g_b16_rows, g_b16_differ, g_b16_steps;

/* tests/cuda/test_cuda_train.c: the GPU trainer's tests and summary line */
static int make_model(rn_model *m, const shape *s, uint64_t seed)
{
    return cuda_test_model(m, s->U, s->dp, s->K, s->cape, s->tied, s->gamma, seed);
}

/* max |g − c| / max |c| over one row of V logits. */
static double rel_err(const float *g, const float *c, int V)
{
    double d = 0, n = 0;
    for (int i = 0; i < V; i++) {
        d = fmax(d, fabs((double)g[i] - c[i]));
        n = fmax(n, fabs((double)c[i]));
    }
    return d / (n > 0 ? n : 1);
}

static void test_decode_parity(void)
{
    rn_rng r;
    rn_rng_seed(&r, 11);
    for (int si = 0; si < N_SHAPES; si += rn_cuda_parity_quick ? 3 : 1) {
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_model(&m, &g_shapes[si], 100 + si), RN_OK);
        const rn_config *c = &m.cfg;
        const int n = 512, H = c->n_heads, K = c->top_k, dk = rn_config_dk(c);
        float *a = malloc(sizeof(float) * n * H * dk), alpha[RN_MAX_HEADS];
        float *cw = malloc(sizeof(float) * n * H * K), *gw = malloc(sizeof(float) * n * H * K);
        uint32_t *ca = malloc(sizeof(uint32_t) * n * H * K), *cs = malloc(sizeof(uint32_t) * n * H * K),
                 *gs = malloc(sizeof(uint32_t) * n * H * K);
        for (int i = 0; i < n * H * dk; i++) a[i] = (float)(rn_rng_uniform(&r) * 6 - 3);
        for (int h = 0; h < H; h++) alpha[h] = (float)(rn_rng_uniform(&r) - 0.5);
        void *mem = malloc(rn_decode_ws_bytes(c->order, c->d_p, K));
        rn_decode_ws *ws = rn_decode_ws_init(mem, c->order, c->d_p, K);
        uint32_t *ga = malloc(sizeof(uint32_t) * n * H * K);
        rn_address_forward(ca, cs, cw, a, alpha, c, c->cape_mask[0], n, 37, &ws, 1);
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(rn_cuda_decode(a, alpha, c, c->cape_mask[0], n, 37, ga, gs, gw, &err), RN_OK);
        for (int i = 0; i < n * H; i++) {
            if (!memcmp(cs + (size_t)i * K, gs + (size_t)i * K, sizeof(uint32_t) * K)) {
                CU_ASSERT(!memcmp(ca + (size_t)i * K, ga + (size_t)i * K, sizeof(uint32_t) * K));
                for (int j = 0; j < K; j++)
                    CU_ASSERT(fabs(cw[i * K + j] - gw[i * K + j]) <= 1e-6 * cw[i * K + j]);
                continue;
            }
            /* a differing set is allowed only where the CPU's weights tie
             * within rounding at the point of difference */
            int j = 0;
            while (cs[(size_t)i * K + j] == gs[(size_t)i * K + j]) j++;
            float wc = cw[(size_t)i * K + j], wg = gw[(size_t)i * K + j];
            CU_ASSERT(fabs(wc - wg) <= 1e-6 * wc);
            g_ties++;
        }
        free(mem); free(a); free(cw); free(gw); free(ca); free(cs); free(gs); free(ga);
        rn_model_free(&m);
    }
}

static void test_prefill_step_parity(void)
{
    rn_rng r;
    rn_rng_seed(&r, 12);
    for (int si = 0; si < N_SHAPES; si += rn_cuda_parity_quick ? 3 : 1) {
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_model(&m, &g_shapes[si], 200 + si), RN_OK);
        const int V = m.cfg.vocab_size, T = qk(150, 70), steps = qk(20, 4); /* 70: a 64-row chunk and a short one */
        int tok[150];
        for (int t = 0; t < T; t++) tok[t] = (int)(rn_rng_u64(&r) % (uint64_t)V);
        rn_runtime *cpu = NULL, *gpu = NULL;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create_on(&m, 64, RN_DEVICE_CPU, &cpu, &err), RN_OK);
        if (rn_runtime_create_on(&m, 64, RN_DEVICE_CUDA, &gpu, &err)) {
            fprintf(stderr, "cuda runtime: %s\n", err.msg);
            CU_FAIL_FATAL("rn_runtime_create_on(cuda)");
        }
        float *lc = malloc(sizeof(float) * T * V), *lg = malloc(sizeof(float) * T * V);
        for (int pass = 0; pass < 2; pass++) { /* pass 1: after reset */
            CU_ASSERT_EQUAL(rn_prefill(cpu, tok, T, lc, 1, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_prefill(gpu, tok, T, lg, 1, &err), RN_OK);
            for (int t = 0; t < T; t++) {
                double e = rel_err(lg + (size_t)t * V, lc + (size_t)t * V, V);
                g_worst = fmax(g_worst, e);
                g_rows++;
                CU_ASSERT(e < 1e-4);
            }
            for (int s = 0; s < steps; s++) {
                int next = (int)(rn_rng_u64(&r) % (uint64_t)V);
                CU_ASSERT_EQUAL(rn_step(cpu, next, lc, &err), RN_OK);
                CU_ASSERT_EQUAL(rn_step(gpu, next, lg, &err), RN_OK);
                double e = rel_err(lg, lc, V);
                g_worst = fmax(g_worst, e);
                g_rows++;
                CU_ASSERT(e < 1e-4);
            }
            CU_ASSERT_EQUAL(rn_runtime_pos(gpu), T + steps);
            rn_runtime_reset(cpu);
            rn_runtime_reset(gpu);
        }
        free(lc); free(lg);
        rn_runtime_free(cpu);
        rn_runtime_free(gpu);
        rn_model_free(&m);
    }
}

/* A CPU and a GPU runtime in precision p, each with a recording probe, on
 * every model: a T-token prefill (none when T = 0), then `steps` steps of
 * random tokens; the steps' logits within 1e-4 relative per row, the event
 * streams identical (rec_compare). */
static void paired_trace(rn_precision p, uint64_t seed, int model_seed, int T, int steps)
{
    rn_rng r;
    rn_rng_seed(&r, seed);
    for (int si = 0; si < N_SHAPES; si += rn_cuda_parity_quick ? 3 : 1) {
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_model(&m, &g_shapes[si], (uint64_t)(model_seed + si)), RN_OK);
        const int V = m.cfg.vocab_size;
        int tok[100];
        CU_ASSERT_FATAL(T <= 100);
        for (int t = 0; t < T; t++) tok[t] = (int)(rn_rng_u64(&r) % (uint64_t)V);
        rn_runtime *cpu = NULL, *gpu = NULL;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create_on(&m, 64, RN_DEVICE_CPU, &cpu, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create_on(&m, 64, RN_DEVICE_CUDA, &gpu, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_runtime_set_precision(cpu, p, &err), RN_OK);
        if (rn_runtime_set_precision(gpu, p, &err)) {
            fprintf(stderr, "cuda %s: %s\n", rn_precision_name(p), err.msg);
            CU_FAIL_FATAL("rn_runtime_set_precision(cuda)");
        }
        /* a third runtime without a probe: its steps run as the captured
         * CUDA graph (a probe makes the step ungraphable) */
        rn_runtime *gpu_graph = NULL;
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create_on(&m, 64, RN_DEVICE_CUDA, &gpu_graph, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_runtime_set_precision(gpu_graph, p, &err), RN_OK);
        recorder rc = { 0 }, rg = { 0 };
        rn_probe pc = { .user = &rc, .access = rec_access }, pg = { .user = &rg, .access = rec_access };
        rn_runtime_set_probe(cpu, &pc);
        rn_runtime_set_probe(gpu, &pg);
        float *lc = malloc(sizeof(float) * V), *lg = malloc(sizeof(float) * V), *lgg = malloc(sizeof(float) * V);
        if (T > 0) {
            CU_ASSERT_EQUAL(rn_prefill(cpu, tok, T, lc, 0, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_prefill(gpu, tok, T, lg, 0, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_prefill(gpu_graph, tok, T, lgg, 0, &err), RN_OK);
        }
        for (int s = 0; s < steps; s++) {
            const int next = (int)(rn_rng_u64(&r) % (uint64_t)V);
            CU_ASSERT_EQUAL(rn_step(cpu, next, lc, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_step(gpu, next, lg, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_step(gpu_graph, next, lgg, &err), RN_OK);
            const double e = fmax(rel_err(lg, lc, V), rel_err(lgg, lc, V));
            g_worst = fmax(g_worst, e);
            g_rows++;
            if (p == RN_PREC_BF16) g_b16_steps++;
            CU_ASSERT(e < 1e-4);
        }
        rn_runtime_free(gpu_graph);
        free(lgg);
        g_events += rec_compare(&rc, &rg);
        free(rc.v); free(rg.v); free(lc); free(lg);
        rn_runtime_free(cpu);
        rn_runtime_free(gpu);
        rn_model_free(&m);
    }
}

static void test_trace_parity(void) { paired_trace(RN_PREC_FP32, 13, 300, qk(100, 70), qk(10, 3)); }

/* The GPU's bf16 step against the CPU's bf16 runtime: every token one step
 * at a time from position 0 (the prompt of `run --chunk 1`). */
static void test_bf16_step_parity(void) { paired_trace(RN_PREC_BF16, 15, 500, 0, qk(40, 12)); }

/* One row of bf16 logits b against fp32 logits f (V of them): the relative
 * error (returned) and whether the top-10 sets differ (*differ), asserting
 * that any difference is a near-tie (see the file's comment). */
static double bf16_row(const float *b, const float *f, int V, int *differ)
{
    enum { KK = 10 };
    char inf[1024] = { 0 }, inb[1024] = { 0 };
    CU_ASSERT_FATAL(V <= 1024 && V >= KK);
    for (int k = 0; k < KK; k++) { /* the KK largest of each, ties to the lower index */
        int bi = -1, bj = -1;
        for (int i = 0; i < V; i++) {
            if (!inf[i] && (bi < 0 || f[i] > f[bi])) bi = i;
            if (!inb[i] && (bj < 0 || b[i] > b[bj])) bj = i;
        }
        inf[bi] = 1;
        inb[bj] = 1;
    }
    double fk = INFINITY, scale = 0;
    for (int i = 0; i < V; i++) {
        if (inf[i]) fk = fmin(fk, f[i]);
        scale = fmax(scale, fabs((double)f[i]));
    }
    *differ = 0;
    for (int i = 0; i < V; i++)
        if (inf[i] != inb[i]) {
            *differ = 1;
            CU_ASSERT(fabs(f[i] - fk) <= 0.05 * scale);
        }
    return rel_err(b, f, V);
}

/* The GPU in bf16 against itself in fp32: a prefill of every row's logits
 * (chunks of 64 rows: the bf16 tensor-core products and the segmented
 * scan, then a shorter chunk), then steps. */
static void test_bf16_vs_fp32(void)
{
    rn_rng r;
    rn_rng_seed(&r, 16);
    double sum = 0;
    long rows = 0, differ = 0;
    for (int si = 0; si < N_SHAPES; si += rn_cuda_parity_quick ? 3 : 1) {
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_model(&m, &g_shapes[si], 600 + si), RN_OK);
        const int V = m.cfg.vocab_size, T = qk(150, 70), steps = qk(20, 4);
        int tok[150 + 20];
        for (int t = 0; t < T + steps; t++) tok[t] = (int)(rn_rng_u64(&r) % (uint64_t)V);
        rn_runtime *gpu = NULL;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create_on(&m, 64, RN_DEVICE_CUDA, &gpu, &err), RN_OK);
        const int n = T + steps;
        float *f = malloc(sizeof(float) * n * V), *b = malloc(sizeof(float) * n * V),
              *f2 = malloc(sizeof(float) * n * V);
        float *out[3] = { f, b, f2 };
        const rn_precision prec[3] = { RN_PREC_FP32, RN_PREC_BF16, RN_PREC_FP32 };
        for (int pass = 0; pass < 3; pass++) {
            CU_ASSERT_EQUAL_FATAL(rn_runtime_set_precision(gpu, prec[pass], &err), RN_OK);
            rn_runtime_reset(gpu);
            CU_ASSERT_EQUAL(rn_prefill(gpu, tok, T, out[pass], 1, &err), RN_OK);
            for (int s = 0; s < steps; s++)
                CU_ASSERT_EQUAL(rn_step(gpu, tok[T + s], out[pass] + (size_t)(T + s) * V, &err), RN_OK);
        }
        for (int t = 0; t < n; t++) {
            int d = 0;
            double e = bf16_row(b + (size_t)t * V, f + (size_t)t * V, V, &d);
            CU_ASSERT(e < 0.1);
            g_b16_worst = fmax(g_b16_worst, e);
            sum += e;
            differ += d;
            rows++;
            CU_ASSERT(rel_err(f2 + (size_t)t * V, f + (size_t)t * V, V) < 1e-6); /* fp32 again */
        }
        free(f); free(b); free(f2);
        rn_runtime_free(gpu);
        rn_model_free(&m);
    }
    g_b16_rows = rows;
    g_b16_differ = differ;
    g_b16_mean = rows ? sum / rows : 0;
    CU_ASSERT(g_b16_mean < 0.01);
    CU_ASSERT(differ <= 0.15 * rows);
}

void rn_cuda_parity_tests(CU_pSuite s)
{
    CU_add_test(s, "GPU decoder top-K == CPU's (ties within rounding counted)", test_decode_parity);
    CU_add_test(s, "prefill and step logits: relative error < 1e-4; reset", test_prefill_step_parity);
    CU_add_test(s, "traced events of prefill and steps identical to the CPU's", test_trace_parity);
    CU_add_test(s, "bf16 step == CPU bf16 step (logits < 1e-4, events identical)", test_bf16_step_parity);
    CU_add_test(s, "bf16 prefill and steps vs fp32 on the GPU: bounded error, top-10 differs only at near-ties",
                test_bf16_vs_fp32);
}

void rn_cuda_parity_summary(void)
{
    printf("cuda parity: %ld logit rows, worst relative error %.3g; %ld top-K sets differ at CPU ties; "
           "%ld traced events compared\n", g_rows, g_worst, g_ties, g_events);
    printf("cuda bf16: %ld step rows against the CPU's bf16 (in the worst error above); against fp32 on the GPU: "
           "%ld rows, relative error worst %.3g, mean %.3g; top-10 sets differ in %ld rows (%.1f%%, at near-ties)\n",
           g_b16_steps, g_b16_rows, g_b16_worst, g_b16_mean, g_b16_differ,
           g_b16_rows ? 100.0 * g_b16_differ / g_b16_rows : 0.0);
}

#ifndef RN_CUDA_EMU /* the host emulation (tests/cuda/emu/emu_main.c) has its own main */
int main(void)
{
    int n = rn_cuda_device_count();
    if (n < 1) {
        printf("test_cuda_parity: skipped: no CUDA device%s\n",
               n < 0 ? " (built without CUDA)" : "");
        const char *req = getenv("RN_CUDA_REQUIRE");
        return req && *req == '1' ? 1 : 0;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("cuda_parity", NULL, NULL);
    rn_cuda_parity_tests(s);
    rn_cuda_train_tests(s);
    rn_cuda_bf16_tests(s);
    rn_cuda_bf16_gpu_tests(s);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    rn_cuda_parity_summary();
    rn_cuda_train_summary();
    rn_cuda_bf16_summary();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
#endif
