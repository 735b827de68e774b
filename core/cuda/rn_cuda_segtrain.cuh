/* rn_cuda_segtrain.cuh — the GPU trainer's PDMA scan, forward and backward,
 * parallel over (sequence, head, slot) segments instead of one block
 * walking a sequence's T steps (the paper's §3.4: the accesses sorted so
 * each slot's events are contiguous in time; docs/cuda.md, "Training on the
 * GPU").  The kernels are here; rn_cuda_train.cu launches them.
 *
 * A run is the events of one (sequence b, head h), bh = b·H + h: L = T·K
 * write events e = t·K + j, sorted stably by slot (k_sg_row_sort, then
 * k_sg_merge passes), so each slot's writes form one segment in time
 * order.  Every sequence starts from the reset state (S = 0, z = z0 =
 * 1/M), so no dense [M, d_v] state is needed: a segment's walk starts from
 * it, and the state after each write, st[p] at the write's sorted position
 * p, is what the forward saves ([B·H·L, d_v + 1] floats, as many as the
 * T-walk saved for the writes; the reads save only a position each).
 *
 * Why the results are the CPU's floats (rn_pdma_train_forward/_backward):
 * slots do not interact, and within one slot every kernel applies the
 * CPU's operations in the CPU's order.  Forward: the walk is S ← d·S + w·v
 * over the slot's writes in time order; a read of row t takes the state
 * after the slot's last write at rows <= t (a row's writes precede its
 * reads; a slot is written at most once per row since the K slots of a
 * step are distinct), and o sums its K terms in rank order.  Backward: the
 * CPU walks rows in reverse, and at row t first the reads (dS += r/(z+ε)·
 * dout, dz −= …), then the writes (dots of the gradient, then the decay).
 * Per slot that is: for each write position p in reverse, the reads that
 * saw st[p] (sorted by the position they saw, then row) in reverse row
 * order, then write p.  All sums across columns (the dots) and across
 * slots (dv over a row's writes, o over its reads) are done serially in
 * the CPU's order by one thread.  The arithmetic uses the _rn intrinsics
 * (no FMA contraction); the decay's pow is the device's, which may differ
 * from glibc's in the last bit of a double, so for γ ∉ {0, 1} a float can
 * differ where that double lands on a rounding boundary.
 *
 * No kernel here uses a barrier, shared memory or atomics: they are
 * correct for any block size and repeat bit for bit.
 */
#ifndef RN_CUDA_SEGTRAIN_CUH
#define RN_CUDA_SEGTRAIN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "rn_cuda_pdma.cuh"

/* The run's first index at or after which keys are >= k (keys sorted). */
__device__ static inline int64_t rn_sg_lower(const uint32_t *key, int64_t len, uint32_t k)
{
    int64_t lo = 0, hi = len;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (key[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Sort step 1: each row's K keys of each run, insertion-sorted (stably)
 * into key[bh·L + t·K ...], with their events t·K + j in val.  src is in
 * the trainer's layout [B·T rows, H, K]: one thread per (run, row). */
__global__ static void k_sg_row_sort(uint32_t *key, uint32_t *val, const uint32_t *src, int B, int T,
                                     int H, int K)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * H * T) return;
    const int t = (int)(i % T);
    const int64_t bh = i / T, b = bh / H, h = bh % H;
    const uint32_t *s = src + ((b * T + t) * H + h) * K;
    uint32_t *ko = key + bh * T * K + (int64_t)t * K, *vo = val + bh * T * K + (int64_t)t * K;
    for (int j = 0; j < K; j++) {
        const uint32_t k = s[j];
        int q = j;
        for (; q > 0 && ko[q - 1] > k; q--) {
            ko[q] = ko[q - 1];
            vo[q] = vo[q - 1];
        }
        ko[q] = k;
        vo[q] = (uint32_t)(t * K + j);
    }
}

/* Sort step 2, one pass: within each run of L, the sorted blocks [2mw,
 * 2mw + w) and [2mw + w, 2mw + 2w) merge stably into out.  One thread per
 * element finds its place by a binary search in the other block (an
 * element of the first block goes before the second's equal keys). */
__global__ static void k_sg_merge(uint32_t *ko, uint32_t *vo, const uint32_t *ki, const uint32_t *vi,
                                  int64_t runs, int64_t L, int64_t w)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= runs * L) return;
    const int64_t base = i / L * L, x = i % L, lo = x / (2 * w) * (2 * w);
    const int64_t mid = lo + w < L ? lo + w : L, hi = lo + 2 * w < L ? lo + 2 * w : L;
    const uint32_t k = ki[i];
    int64_t pos;
    if (x < mid) { /* first block: after the second block's keys < k */
        pos = x + rn_sg_lower(ki + base + mid, hi - mid, k);
    } else {       /* second block: after the first block's keys <= k */
        pos = lo + (x - mid) + (k == UINT32_MAX ? mid - lo : rn_sg_lower(ki + base + lo, mid - lo, k + 1));
    }
    ko[base + pos] = k;
    vo[base + pos] = vi[i];
}

/* Forward walk: one thread per (run, sorted position p, column c of C =
 * d_v + 1; c == d_v: z).  The thread whose p starts its slot's segment
 * applies the segment's writes in time order from the reset state and
 * keeps the value after each in st[(bh·L + p)·C + c]. */
__global__ static void k_sg_walk(float *st, const uint32_t *key, const uint32_t *val, const float *ww,
                                 const float *v, int B, int T, int H, int K, int dv, float z0, float gamma)
{
    const int C = dv + 1;
    const int64_t L = (int64_t)T * K, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * H * L * C) return;
    const int64_t q = i / C, bh = q / L, b = bh / H, h = bh % H, end = (bh + 1) * L;
    const int c = (int)(i % C);
    const uint32_t s = key[q];
    if (q % L != 0 && key[q - 1] == s) return; /* not its segment's first write */
    float x = c < dv ? 0.0f : z0;
    for (int64_t r = q; r < end && key[r] == s; r++) {
        const int64_t e = val[r], row = b * T + e / K, a = (row * H + h) * K + e % K;
        x = rn_cu_pdma_update(x, ww[a], c < dv ? v[(row * H + h) * dv + c] : 1.0f, gamma);
        st[r * C + c] = x;
    }
}

/* Which state each read sees: one thread per read (row, head, rank) in the
 * [B·T, H, Kr] layout; see = 1 + the sorted position (within its run) of
 * the slot's last write at rows <= t, or 0 for the reset state. */
__global__ static void k_sg_find(uint32_t *see, const uint32_t *key, const uint32_t *val,
                                 const uint32_t *rslot, int B, int T, int H, int K, int Kr)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * T * H * Kr) return;
    const int64_t L = (int64_t)T * K, rh = i / Kr, h = rh % H, row = rh / H, t = row % T;
    const int64_t bh = row / T * H + h;
    const uint32_t *kb = key + bh * L, *vb = val + bh * L, s = rslot[i];
    int64_t lo = 0, hi = L; /* first (slot, row) > (s, t) */
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (kb[mid] < s || (kb[mid] == s && (int64_t)(vb[mid] / (uint32_t)K) <= t)) lo = mid + 1;
        else hi = mid;
    }
    see[i] = lo > 0 && kb[lo - 1] == s ? (uint32_t)lo : 0u;
}

/* The reads: one thread per (row, head, column c < d_v): o = Σ_j r_j·x_j /
 * (z_j + ε) in rank order, x_j, z_j the state the read sees. */
__global__ static void k_sg_read(float *o, const float *st, const uint32_t *see, const float *rw, int B,
                                 int T, int H, int K, int Kr, int dv, float z0, float eps)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * T * H * dv) return;
    const int C = dv + 1, c = (int)(i % dv);
    const int64_t L = (int64_t)T * K, rh = i / dv, h = rh % H, bh = rh / H / T * H + h;
    float acc = 0;
    for (int j = 0; j < Kr; j++) {
        const int64_t a = rh * Kr + j;
        const uint32_t u = see[a];
        const float *r = u ? st + (bh * L + u - 1) * C : NULL;
        acc = rn_cu_pdma_read_add(acc, rw[a], r ? r[dv] : z0, r ? r[c] : 0.0f, eps);
    }
    o[i] = acc;
}

/* Backward, the reads' own gradients: one thread per read.  dot = ⟨dout,
 * x⟩ over the state the read saw (serially, the CPU's order); dr = dot /
 * (z + ε); q = (r/(z + ε))·dot/(z + ε), what the read takes from dz. */
__global__ static void k_sg_read_grad(float *drw, float *q, const float *st, const uint32_t *see,
                                      const float *rw, const float *dout, int B, int T, int H, int K,
                                      int Kr, int dv, float z0, float eps)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * T * H * Kr) return;
    const int C = dv + 1;
    const int64_t L = (int64_t)T * K, rh = i / Kr, h = rh % H, bh = rh / H / T * H + h;
    const uint32_t u = see[i];
    const float *r = u ? st + (bh * L + u - 1) * C : NULL, *go = dout + rh * dv;
    float dot = 0;
    for (int c = 0; c < dv; c++) dot = __fadd_rn(dot, __fmul_rn(go[c], r ? r[c] : 0.0f));
    const float zz = __fadd_rn(r ? r[dv] : z0, eps), k = __fdiv_rn(rw[i], zz);
    drw[i] = __fdiv_rn(dot, zz);
    q[i] = __fdiv_rn(__fmul_rn(k, dot), zz);
}

/* Backward walk: one thread per (run, sorted write position p, column c;
 * c == d_v: z), working where p ends its slot's segment.  In reverse over
 * the segment's writes: the reads that saw the state after write p (rk/rv:
 * the run's reads sorted by see, so those with see == p + 1 are contiguous
 * and in row order) in reverse row order — dS += r/(z + ε)·dout, dz −= q —
 * then the gradient with respect to the state after write p goes to
 * gs[p·C + c], and it decays: dS ← d·dS, dz ← d·dz. */
__global__ static void k_sg_back_walk(float *gs, const uint32_t *key, const uint32_t *val,
                                      const uint32_t *rk, const uint32_t *rv, const float *st,
                                      const float *ww, const float *rw, const float *q,
                                      const float *dout, int B, int T, int H, int K, int Kr, int dv,
                                      float gamma, float eps)
{
    const int C = dv + 1;
    const int64_t L = (int64_t)T * K, Lr = (int64_t)T * Kr, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * H * L * C) return;
    const int64_t p = i / C, bh = p / L, b = bh / H, h = bh % H, start = bh * L;
    const int c = (int)(i % C);
    const uint32_t s = key[p];
    if ((p + 1) % L != 0 && key[p + 1] == s) return; /* not its segment's last write */
    const uint32_t *rkb = rk + bh * Lr, *rvb = rv + bh * Lr;
    int64_t at = rn_sg_lower(rkb, Lr, (uint32_t)(p - start + 2)) - 1; /* the last read that saw p */
    float x = 0;
    for (int64_t r = p; r >= start && key[r] == s; r--) {
        const uint32_t seen = (uint32_t)(r - start + 1);
        for (; at >= 0 && rkb[at] == seen; at--) {
            const int64_t e = rvb[at], row = b * T + e / Kr, a = (row * H + h) * Kr + e % Kr;
            if (c < dv) {
                const float k = __fdiv_rn(rw[a], __fadd_rn(st[r * C + dv], eps));
                x = __fadd_rn(x, __fmul_rn(k, dout[(row * H + h) * dv + c]));
            } else {
                x = __fadd_rn(x, -q[a]);
            }
        }
        gs[r * C + c] = x;
        const int64_t e = val[r], a = ((b * T + e / K) * H + h) * K + e % K;
        x = __fmul_rn(x, rn_cu_decay(ww[a], gamma));
    }
}

/* Backward, each write's weight gradient: one thread per sorted write
 * position p, with g = gs[p] (dS, dz after the write) and the state
 * before it (the segment's previous st, or the reset state):
 * dw = ⟨g, v⟩ + g_z + d'(w)·(⟨g, S⟩ + g_z·z), sums in the CPU's order.
 * inv[bh·L + e] = p (where event e's gradient is, for k_sg_dv). */
__global__ static void k_sg_write_grad(float *dww, uint32_t *inv, const float *gs, const float *st,
                                       const uint32_t *key, const uint32_t *val, const float *ww,
                                       const float *v, int B, int T, int H, int K, int dv, float z0,
                                       float gamma, float eps_g)
{
    const int64_t L = (int64_t)T * K, p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= (int64_t)B * H * L) return;
    const int C = dv + 1;
    const int64_t bh = p / L, b = bh / H, h = bh % H, e = val[p], row = b * T + e / K;
    const int64_t a = (row * H + h) * K + e % K;
    const float *g = gs + p * C, *vt = v + (row * H + h) * dv;
    const float *sv = p % L != 0 && key[p - 1] == key[p] ? st + (p - 1) * C : NULL;
    float dsv = 0, dss = 0;
    for (int c = 0; c < dv; c++) {
        dsv = __fadd_rn(dsv, __fmul_rn(g[c], vt[c]));
        dss = __fadd_rn(dss, __fmul_rn(g[c], sv ? sv[c] : 0.0f));
    }
    const float w = ww[a], gz = g[dv], dd = rn_cu_decay_grad(w, gamma, eps_g);
    dww[a] = __fadd_rn(__fadd_rn(dsv, gz), __fmul_rn(dd, __fadd_rn(dss, __fmul_rn(gz, sv ? sv[dv] : z0))));
    inv[bh * L + e] = (uint32_t)(p - bh * L);
}

/* Backward, dv: one thread per (row, head, column c < d_v): Σ_j w_j·g_j[c]
 * over the row's writes in reverse rank order (the CPU's), g_j the
 * gradient after write j. */
__global__ static void k_sg_dv(float *dv_out, const float *gs, const uint32_t *inv, const float *ww, int B,
                               int T, int H, int K, int dv)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)B * T * H * dv) return;
    const int C = dv + 1, c = (int)(i % dv);
    const int64_t L = (int64_t)T * K, rh = i / dv, h = rh % H, row = rh / H, bh = row / T * H + h;
    const uint32_t *ib = inv + bh * L + row % T * K;
    float acc = 0;
    for (int j = K - 1; j >= 0; j--)
        acc = __fadd_rn(acc, __fmul_rn(ww[rh * K + j], gs[(bh * L + ib[j]) * C + c]));
    dv_out[i] = acc;
}

#endif
