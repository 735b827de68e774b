/* rn_cuda_addrwarp.cuh — the warp decoder (exact top-K addresses of the
 * product-key decoder, one warp per (row, head)), one source for the CUDA
 * inference runtime (rn_cuda.cu) and the GPU trainer (rn_cuda_train.cu),
 * which then recomputes the weights unquantised and applies CAPE at each
 * row's position in its sequence.  The arithmetic is rn_cuda_topk.h's.
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_ADDRWARP_CUH
#define RN_CUDA_ADDRWARP_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rn_cuda_topk.h"

/* One decode job: n rows of keys a[n, H·dk] with per-head log-scales
 * alpha[H] → addresses, slots after CAPE and weights, each [n, H, K]. */
typedef struct { uint32_t *addr, *slot; float *w; const float *a, *alpha; } addr_job;

/* The warp decoder: one warp per (row, head), the same beam search and the
 * same arithmetic as rn_cu_topk (so the same result, bit for bit), spread
 * over the 32 lanes.  Every chunk's log-softmax at once: each lane takes
 * (chunk, digit) pairs, computes its exp(o − max) in parallel, then the
 * chunk's sum in the CPU's serial order (d_p adds from shared memory) and
 * its quantised log-prob.  Selections rank by counting: a candidate's rank
 * is the number of candidates before it in (score desc, address asc), a
 * strict total order because addresses are distinct, and a candidate of
 * rank < keep lands at that index.  Limits: U·d_p <= AW_MAXUD, K·min(K, d_p)
 * <= AW_MAXC (address_launch falls back to k_address beyond them). */
#define AW_WARPS 4
#define AW_MAXUD 128
#define AW_MAXC 256
typedef struct {
    int64_t cs[AW_MAXC]; uint32_t ca[AW_MAXC]; /* candidates */
    int64_t bs[AW_MAXC]; uint32_t ba[AW_MAXC]; /* the beam, rank order */
    double o[AW_MAXUD], ex[AW_MAXUD];          /* scale·a and exp(o − chunk max) */
    int64_t lp[AW_MAXUD];                      /* quantised log-probs */
    int64_t ds[AW_MAXUD]; uint32_t da[AW_MAXUD]; /* chunk u's best kc digits at u·d_p + rank */
} aw_smem;

/* The largest o of chunk `base` (d_p values, serial: as the CPU). */
__device__ static inline double aw_max(const aw_smem *m, int base, int dp)
{
    double mx = -INFINITY;
    for (int i = 0; i < dp; i++)
        if (m->o[base + i] > mx) mx = m->o[base + i];
    return mx;
}

static __global__ void k_address_warp(addr_job j0, addr_job j1, int n, int H, int U, int dp, int K,
                                      float tau, uint64_t cape_mask, const int64_t *pos, int64_t M)
{
    __shared__ aw_smem smem[AW_WARPS];
    const int64_t pos0 = *pos;
    const addr_job jb = blockIdx.y ? j1 : j0;
    const int wid = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int i = blockIdx.x * AW_WARPS + wid;
    if (i >= n * H) return; /* the whole warp: no block-wide barriers below */
    aw_smem *m = &smem[wid];
    const int r = i / H, h = i % H, dk = U * dp, kc = K < dp ? K : dp;
    const double scale = exp((double)jb.alpha[h]) / (double)tau;
    const float *key = jb.a + (int64_t)r * H * dk + (int64_t)h * dk;
    for (int x = lane; x < dk; x += 32) m->o[x] = scale * (double)key[x];
    __syncwarp();
    for (int x = lane; x < dk; x += 32) m->ex[x] = exp(m->o[x] - aw_max(m, x - x % dp, dp));
    __syncwarp();
    for (int x = lane; x < dk; x += 32) {
        const int base = x - x % dp;
        double s = 0;
        for (int q = 0; q < dp; q++) s += m->ex[base + q];
        m->lp[x] = rn_cu_quantize(m->o[x] - (aw_max(m, base, dp) + log(s)));
    }
    __syncwarp();
    for (int x = lane; x < dk; x += 32) { /* each chunk's best kc digits */
        const int base = x - x % dp, d = x % dp;
        int rank = 0;
        for (int q = 0; q < dp; q++) rank += rn_cu_better(m->lp[base + q], (uint64_t)q, m->lp[x], (uint64_t)d);
        if (rank < kc) { m->ds[base + rank] = m->lp[x]; m->da[base + rank] = (uint32_t)d; }
    }
    __syncwarp();
    for (int j = lane; j < kc; j += 32) { m->bs[j] = m->ds[j]; m->ba[j] = m->da[j]; }
    int nb = kc;
    __syncwarp();
    for (int u = 1; u < U; u++) {
        const int nc = nb * kc, keep = nc < K ? nc : K, base = u * dp;
        for (int q = lane; q < nc; q += 32) {
            m->cs[q] = m->bs[q / kc] + m->ds[base + q % kc];
            m->ca[q] = m->ba[q / kc] * (uint32_t)dp + m->da[base + q % kc];
        }
        __syncwarp();
        for (int q = lane; q < nc; q += 32) {
            int rank = 0;
            for (int p = 0; p < nc; p++) rank += rn_cu_better(m->cs[p], m->ca[p], m->cs[q], m->ca[q]);
            if (rank < keep) { m->bs[rank] = m->cs[q]; m->ba[rank] = m->ca[q]; }
        }
        nb = keep;
        __syncwarp();
    }
    const int cape = (int)((cape_mask >> h) & 1u);
    for (int j = lane; j < K; j += 32) {
        uint32_t a = m->ba[j];
        jb.w[(int64_t)i * K + j] = (float)exp((double)m->bs[j] / 1099511627776.0);
        jb.addr[(int64_t)i * K + j] = a;
        jb.slot[(int64_t)i * K + j] = cape ? rn_cu_cape(a, pos0 + r, M) : a;
    }
}

#endif
