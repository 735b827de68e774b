/* test_decoder.c — the beam-search top-K against brute force over all M
 * addresses, CAPE mapping, and a decode at M = 8^8. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_decoder.h"
#include "rn_rng.h"
#include "th.h"

typedef struct { int64_t s; uint64_t a; } cand;

static int cmp_cand(const void *x, const void *y)
{
    const cand *p = x, *q = y;
    if (p->s > q->s) return -1;
    if (p->s < q->s) return 1;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Brute force: score every address as the sum of its digits' quantised
 * chunk log-probs, sort all M by (score desc, addr asc), take K. */
static void brute(const double *lp, int U, int dp, int K, uint32_t *addr, double *score)
{
    int64_t M = 1;
    for (int u = 0; u < U; u++) M *= dp;
    cand *c = malloc(sizeof *c * M);
    for (int64_t a = 0; a < M; a++) {
        int64_t rest = a, div = M / dp;
        int64_t s = 0;
        for (int u = 0; u < U; u++) {
            int digit = (int)(rest / div);
            rest %= div;
            div = div > 1 ? div / dp : 1;
            s += rn_quantize_logp(lp[u * dp + digit]);
        }
        c[a].s = s;
        c[a].a = (uint64_t)a;
    }
    qsort(c, M, sizeof *c, cmp_cand);
    for (int j = 0; j < K; j++) { addr[j] = (uint32_t)c[j].a; score[j] = rn_dequantize_logp(c[j].s); }
    free(c);
}

/* ws_k: the K the workspace is made for (>= K; training decodes a smaller
 * K with a workspace sized for the largest K of an annealing schedule). */
static void check_config_ws(int U, int dp, int K, int ws_k, int trials, int tie_mode, rn_rng *rng)
{
    void *mem = aligned_alloc(64, (rn_decode_ws_bytes(U, dp, ws_k) + 63) / 64 * 64);
    rn_decode_ws *ws = rn_decode_ws_init(mem, U, dp, ws_k);
    float *a = malloc(sizeof(float) * U * dp);
    double *lp = malloc(sizeof(double) * U * dp);
    uint32_t *ga = malloc(4 * K), *ba = malloc(4 * K);
    double *gs = malloc(8 * K), *bs = malloc(8 * K);
    int bad = 0;
    for (int t = 0; t < trials && !bad; t++) {
        for (int i = 0; i < U * dp; i++) {
            if (tie_mode == 1) a[i] = (float)rn_rng_below(rng, 3);      /* many exact ties */
            else if (tie_mode == 2) a[i] = 0.0f;                       /* all equal */
            else a[i] = (float)(2.0 * rn_rng_normal(rng));
        }
        rn_chunk_log_softmax(a, U, dp, 1.0, lp);
        rn_decode_topk_lp(lp, U, dp, K, ga, gs, ws);
        brute(lp, U, dp, K, ba, bs);
        for (int j = 0; j < K; j++)
            if (ga[j] != ba[j] || gs[j] != bs[j]) bad = 1;
    }
    if (bad) fprintf(stderr, "\nmismatch at U=%d d_p=%d K=%d tie_mode=%d\n", U, dp, K, tie_mode);
    CU_ASSERT_FALSE(bad);
    free(mem); free(a); free(lp); free(ga); free(ba); free(gs); free(bs);
}

static void check_config(int U, int dp, int K, int trials, int tie_mode, rn_rng *rng)
{
    check_config_ws(U, dp, K, K, trials, tie_mode, rng);
}

TH_TEST(test_beam_equals_brute_force, "beam top-K equals brute force (ties, K=M)")
{
    rn_rng rng;
    rn_rng_seed(&rng, 1234);
    const int cfgs[][2] = { {1, 8}, {2, 2}, {2, 5}, {3, 4}, {4, 4}, {2, 16}, {5, 3}, {3, 8}, {8, 2} };
    const int ks[] = { 1, 2, 3, 8, 16 };
    int total = 0;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        int U = cfgs[c][0], dp = cfgs[c][1];
        int64_t M = 1;
        for (int u = 0; u < U; u++) M *= dp;
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
            int K = ks[k];
            if (K > M) continue;
            for (int mode = 0; mode < 3; mode++) {
                int n = mode == 2 ? 3 : 150;
                check_config(U, dp, K, n, mode, &rng);
                total += n;
            }
        }
        /* K = M: the whole address space, sorted */
        if (M <= 256) { check_config(U, dp, (int)M, 50, 0, &rng); check_config(U, dp, (int)M, 50, 1, &rng); total += 100; }
        /* a workspace made for K = M decoding smaller K */
        if (M <= 256 && M >= 3)
            for (int mode = 0; mode < 2; mode++) { check_config_ws(U, dp, (int)(M / 3), (int)M, 50, mode, &rng); total += 50; }
    }
    CU_ASSERT(total > 5000);
}

/* Weights are exp(score) = Π p_u, sum to <= 1, and are non-increasing. */
TH_TEST(test_weights_are_products, "weights are chunk-probability products")
{
    int U = 3, dp = 5, K = 7;
    void *mem = aligned_alloc(64, (rn_decode_ws_bytes(U, dp, K) + 63) / 64 * 64);
    rn_decode_ws *ws = rn_decode_ws_init(mem, U, dp, K);
    float a[15];
    rn_rng rng;
    rn_rng_seed(&rng, 7);
    for (int i = 0; i < 15; i++) a[i] = (float)rn_rng_normal(&rng);
    uint32_t addr[7];
    float w[7];
    double scale = 1.7;
    rn_decode_topk(a, U, dp, K, scale, addr, w, ws);
    double sum = 0;
    for (int j = 0; j < K; j++) {
        int d[3] = { (int)(addr[j] / 25), (int)(addr[j] / 5 % 5), (int)(addr[j] % 5) };
        double prod = 1;
        for (int u = 0; u < U; u++) {
            double z = 0;
            for (int i = 0; i < dp; i++) z += exp(scale * a[u * dp + i]);
            prod *= exp(scale * a[u * dp + d[u]]) / z;
        }
        CU_ASSERT_DOUBLE_EQUAL(w[j], prod, 1e-6);
        if (j) CU_ASSERT(w[j] <= w[j - 1]);
        sum += w[j];
    }
    CU_ASSERT(sum <= 1.0 + 1e-6);
    free(mem);
}

/* M = 8^8 = 16.7M slots: the decoder needs only O(U·K²) memory; check the
 * winner is the per-chunk argmax tuple and ranks 1.. are valid. */
TH_TEST(test_large_m, "decode at M = 8^8")
{
    int U = 8, dp = 8, K = 16;
    void *mem = aligned_alloc(64, (rn_decode_ws_bytes(U, dp, K) + 63) / 64 * 64);
    rn_decode_ws *ws = rn_decode_ws_init(mem, U, dp, K);
    float a[64];
    rn_rng rng;
    rn_rng_seed(&rng, 99);
    for (int i = 0; i < 64; i++) a[i] = (float)rn_rng_normal(&rng);
    uint32_t addr[16];
    float w[16];
    rn_decode_topk(a, U, dp, K, 1.0, addr, w, ws);
    uint32_t best = 0;
    for (int u = 0; u < U; u++) {
        int am = 0;
        for (int i = 1; i < dp; i++) if (a[u * dp + i] > a[u * dp + am]) am = i;
        best = best * dp + (uint32_t)am;
    }
    CU_ASSERT_EQUAL(addr[0], best);
    for (int j = 0; j < K; j++) CU_ASSERT(addr[j] < 16777216u);
    for (int j = 1; j < K; j++) CU_ASSERT(w[j] <= w[j - 1]);
    free(mem);
}

TH_TEST(test_cape, "CAPE slot mapping")
{
    /* [P_t(a)]_i = a_{(i+t) mod M}: address a lands on slot (a − t) mod M */
    CU_ASSERT_EQUAL(rn_cape_slot(5, 0, 16), 5u);
    CU_ASSERT_EQUAL(rn_cape_slot(5, 3, 16), 2u);
    CU_ASSERT_EQUAL(rn_cape_slot(5, 6, 16), 15u);
    CU_ASSERT_EQUAL(rn_cape_slot(0, 16, 16), 0u);
    CU_ASSERT_EQUAL(rn_cape_slot(0, 1000001, 16), 15u);
    CU_ASSERT_EQUAL(rn_cape_slot(2147483647u, 1, 2147483648LL), 2147483646u);
    /* the shift operator as a vector permutation agrees */
    int M = 7;
    for (int t = 0; t < 20; t++)
        for (int a = 0; a < M; a++) {
            /* weight vector with 1 at a; shifted vector has 1 at i with (i+t)%M == a */
            int i = (int)rn_cape_slot((uint32_t)a, t, M);
            CU_ASSERT_EQUAL((i + t) % M, a);
        }
}

/* Slow (make test-long): larger M and K against brute force, many vectors. */
TH_TEST(test_beam_brute_force_long, "beam top-K vs brute force at larger M (test-long only)")
{
    if (!th_long()) return;
    rn_rng rng;
    rn_rng_seed(&rng, 4321);
    const int cfgs[][3] = { {3, 16, 64}, {4, 8, 32}, {2, 64, 100}, {6, 4, 48}, {12, 2, 128} };
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (int mode = 0; mode < 2; mode++) check_config(cfgs[c][0], cfgs[c][1], cfgs[c][2], 300, mode, &rng);
}
