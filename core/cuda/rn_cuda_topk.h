/* rn_cuda_topk.h — the exact beam top-K of the product softmax in a form that
 * compiles both as host C11 and as CUDA device code (one thread decodes one
 * (row, head)), so the GPU decoder and its host unit test share one source.
 *
 * Same contract and arithmetic as rn_decode_topk (core/nn/rn_decoder.h): the
 * chunk log-softmax of scale·a in double, each log-prob quantised to
 * integer units of 2^-40 (rn_quantize_logp), integer scores summed over the
 * digits, order (score desc, address asc), weights exp(score·2^-40), no
 * renormalisation.  Pruning to K prefixes per chunk is exact for that order
 * (argument in rn_decoder.h).  Unlike the CPU decoder it keeps no per-chunk
 * arrays: each chunk's softmax is recomputed from a (two passes) and the
 * beam is merged by insertion into a sorted array of at most K entries, so
 * the per-thread state is O(K) (RN_CUDA_MAX_K entries in registers/local
 * memory) and the cost O(U·(d_p·kc + K·kc·K)), fine for the small K of the
 * model shapes the GPU path targets.
 */
#ifndef RN_CUDA_TOPK_H
#define RN_CUDA_TOPK_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define RN_HD __host__ __device__ static inline
#else
#define RN_HD static inline
#endif

/* Largest K (top_k) the GPU decoder supports (rn_cuda_supported checks). */
#define RN_CUDA_MAX_K 64

/* The quantisation of rn_decoder.h, repeated for device code (the header
 * there is host-only); tests check the two agree. */
RN_HD int64_t rn_cu_quantize(double lp)
{
    if (!(lp > -1e5)) lp = -1e5;
    return (int64_t)llround(lp * 1099511627776.0);
}

/* "x ranks before y": higher score, or equal score and smaller address. */
RN_HD int rn_cu_better(int64_t sx, uint64_t ax, int64_t sy, uint64_t ay)
{
    return sx > sy || (sx == sy && ax < ay);
}

/* Insert (s, a) into the rank-sorted arrays (ss, sa) of *n entries holding
 * at most cap; drops the worst when full. */
RN_HD void rn_cu_insert(int64_t *ss, uint64_t *sa, int *n, int cap, int64_t s, uint64_t a)
{
    int i = *n;
    if (i == cap) {
        if (!rn_cu_better(s, a, ss[cap - 1], sa[cap - 1])) return;
        i = cap - 1;
    } else
        (*n)++;
    while (i > 0 && rn_cu_better(s, a, ss[i - 1], sa[i - 1])) {
        ss[i] = ss[i - 1];
        sa[i] = sa[i - 1];
        i--;
    }
    ss[i] = s;
    sa[i] = a;
}

/* The log-sum-exp of chunk c[d_p] scaled by scale, as the CPU's
 * rn_chunk_log_softmax: o = scale·c, mx = max o, lse = mx + log Σ exp(o − mx)
 * (the GPU trainer's weights and gradients use it too). */
RN_HD double rn_cu_chunk_lse(const float *c, int d_p, double scale)
{
    double mx = -INFINITY;
    for (int i = 0; i < d_p; i++) {
        double o = scale * (double)c[i];
        if (o > mx) mx = o;
    }
    double s = 0;
    for (int i = 0; i < d_p; i++) s += exp(scale * (double)c[i] - mx);
    return mx + log(s);
}

/* Best kc digits of chunk c[d_p] (scaled by scale) with their quantised
 * log-probs, in (log-prob desc, digit asc) order. */
RN_HD void rn_cu_chunk_best(const float *c, int d_p, double scale, int kc, int64_t *ds,
                            uint64_t *da)
{
    const double lse = rn_cu_chunk_lse(c, d_p, scale);
    int n = 0;
    for (int i = 0; i < d_p; i++)
        rn_cu_insert(ds, da, &n, kc, rn_cu_quantize(scale * (double)c[i] - lse), (uint64_t)i);
}

/* Exact top-K addresses addr[K] and weights w[K] of key a[U·d_p];
 * K <= RN_CUDA_MAX_K and K <= d_p^U (validated by the caller). */
RN_HD void rn_cu_topk(const float *a, int U, int d_p, int K, double scale, uint32_t *addr,
                      float *w)
{
    int64_t bs[RN_CUDA_MAX_K], ns[RN_CUDA_MAX_K], ds[RN_CUDA_MAX_K];
    uint64_t ba[RN_CUDA_MAX_K], na[RN_CUDA_MAX_K], da[RN_CUDA_MAX_K];
    const int kc = K < d_p ? K : d_p;
    rn_cu_chunk_best(a, d_p, scale, kc, bs, ba);
    int nb = kc;
    for (int u = 1; u < U; u++) {
        rn_cu_chunk_best(a + (size_t)u * d_p, d_p, scale, kc, ds, da);
        int keep = nb * kc < K ? nb * kc : K, nn = 0;
        for (int b = 0; b < nb; b++)
            for (int j = 0; j < kc; j++)
                rn_cu_insert(ns, na, &nn, keep, bs[b] + ds[j], ba[b] * (uint64_t)d_p + da[j]);
        for (int j = 0; j < nn; j++) { bs[j] = ns[j]; ba[j] = na[j]; }
        nb = nn;
    }
    for (int j = 0; j < K; j++) {
        addr[j] = (uint32_t)ba[j];
        w[j] = (float)exp((double)bs[j] / 1099511627776.0);
    }
}

/* CAPE: the physical slot of address a at position t, (a − t) mod M. */
RN_HD uint32_t rn_cu_cape(uint32_t a, int64_t t, int64_t M)
{
    int64_t s = ((int64_t)a - t) % M;
    return (uint32_t)(s < 0 ? s + M : s);
}

#endif
