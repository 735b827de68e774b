/* rn_address.c — address decoding of every head of a batch of rows, with
 * the per-head α scale and CAPE (see rn_decoder.h for the decoder). */
#include <math.h>
#include <omp.h>

#include "rn_layers.h"

/* Each head's softmax scale: e^α / τ (the α re-parameterisation). */
static void head_scales(double *scale, const rn_real *alpha, const rn_config *c)
{
    for (int h = 0; h < c->n_heads; h++) scale[h] = exp((double)alpha[h]) / (double)c->tau;
}

/* The team size of a region that indexes per-thread scratch allocated for
 * n threads: the current OpenMP default, but never more than n. */
static int threads_upto(int n)
{
    int t = omp_get_max_threads();
    return t < n ? t : n;
}

void rn_address_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                        const rn_real *alpha, const rn_config *c, uint64_t cape_mask,
                        int n, int64_t pos0, rn_decode_ws **ws, int n_ws)
{
    const int H = c->n_heads, U = c->order, dp = c->d_p, K = c->top_k, dk = U * dp;
    const int64_t M = rn_config_slots(c);
    double scale[RN_MAX_HEADS];
    head_scales(scale, alpha, c);
    const int nt = threads_upto(n_ws);
    #pragma omp parallel for if (n * H > 16) schedule(static) num_threads(nt)
    for (int r = 0; r < n; r++) {
        rn_decode_ws *my = ws[omp_get_thread_num()];
        for (int h = 0; h < H; h++) {
            size_t o = ((size_t)r * H + h) * K;
            rn_decode_topk(a + (size_t)r * H * dk + (size_t)h * dk, U, dp, K, scale[h],
                           addr + o, w + o, my);
            if ((cape_mask >> h) & 1u)
                for (int j = 0; j < K; j++) slot[o + j] = rn_cape_slot(addr[o + j], pos0 + r, M);
            else
                for (int j = 0; j < K; j++) slot[o + j] = addr[o + j];
        }
    }
}

/* Keys up to this width decode with their log-probs on the stack. */
#define RN_ADDR_LP_STACK 1024

/* Digit u of an address (chunk 0 most significant). */
static inline int digit_of(uint32_t addr, int u, int U, int dp)
{
    for (int i = U - 1; i > u; i--) addr /= (uint32_t)dp;
    return (int)(addr % (uint32_t)dp);
}

void rn_address_train_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                              const rn_real *alpha, const rn_config *c, int K, uint64_t cape_mask,
                              int n, int T, rn_decode_ws **ws, int n_ws)
{
    const int H = c->n_heads, U = c->order, dp = c->d_p, dk = U * dp;
    const int64_t M = rn_config_slots(c);
    double scale[RN_MAX_HEADS];
    head_scales(scale, alpha, c);
    const int nt = threads_upto(n_ws);
    #pragma omp parallel for if (n * H > 16) schedule(static) num_threads(nt)
    for (int r = 0; r < n; r++) {
        rn_decode_ws *my = ws[omp_get_thread_num()];
        double lp[RN_ADDR_LP_STACK];
        double *lpp = dk <= RN_ADDR_LP_STACK ? lp : NULL;
        for (int h = 0; h < H; h++) {
            size_t o = ((size_t)r * H + h) * K;
            const rn_real *ah = a + (size_t)r * H * dk + (size_t)h * dk;
            if (!lpp) { /* very wide keys: fall back to the decoder's weights */
                rn_decode_topk(ah, U, dp, K, scale[h], addr + o, w + o, my);
            } else {
                rn_chunk_log_softmax(ah, U, dp, scale[h], lpp);
                rn_decode_topk_lp(lpp, U, dp, K, addr + o, NULL, my);
                for (int j = 0; j < K; j++) {
                    double s = 0;
                    for (int u = 0; u < U; u++) s += lpp[u * dp + digit_of(addr[o + j], u, U, dp)];
                    w[o + j] = (rn_real)exp(s);
                }
            }
            int64_t t = r % T;
            if ((cape_mask >> h) & 1u)
                for (int j = 0; j < K; j++) slot[o + j] = rn_cape_slot(addr[o + j], t, M);
            else
                for (int j = 0; j < K; j++) slot[o + j] = addr[o + j];
        }
    }
}

void rn_address_backward(rn_real *da, rn_real *dalpha, const rn_real *dw, const rn_real *a,
                         const uint32_t *addr, const rn_real *w, const rn_real *alpha,
                         const rn_config *c, int K, int n, double *lp, int n_lp)
{
    const int H = c->n_heads, U = c->order, dp = c->d_p, dk = U * dp;
    double scale[RN_MAX_HEADS];
    head_scales(scale, alpha, c);
    const int nt = threads_upto(n_lp);
    #pragma omp parallel for if (n * H > 16) schedule(static) num_threads(nt)
    for (int r = 0; r < n; r++) {
        double *p = lp + (size_t)omp_get_thread_num() * dk;
        for (int h = 0; h < H; h++) {
            size_t o = ((size_t)r * H + h) * K, ao = (size_t)r * H * dk + (size_t)h * dk;
            rn_chunk_log_softmax(a + ao, U, dp, scale[h], p);
            double Gsum = 0;
            for (int k = 0; k < K; k++) Gsum += (double)dw[o + k] * w[o + k];
            for (int i = 0; i < dk; i++) p[i] = -exp(p[i]) * Gsum;   /* −p_u[j]·ΣG */
            for (int k = 0; k < K; k++) {
                double G = (double)dw[o + k] * w[o + k];
                for (int u = 0; u < U; u++) p[u * dp + digit_of(addr[o + k], u, U, dp)] += G;
            }
            for (int i = 0; i < dk; i++) da[ao + i] = (rn_real)(scale[h] * p[i]);
        }
    }
    /* dα[h] = Σ_rows Σ_j da·a, reduced serially (thread-count independent). */
    for (int h = 0; h < H; h++) {
        double s = 0;
        for (int r = 0; r < n; r++) {
            size_t ao = (size_t)r * H * dk + (size_t)h * dk;
            for (int i = 0; i < dk; i++) s += (double)da[ao + i] * a[ao + i];
        }
        dalpha[h] += (rn_real)s;
    }
}
