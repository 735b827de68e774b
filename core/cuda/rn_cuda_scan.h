/* rn_cuda_scan.h — the slot-parallel formulation of one head's PDMA memory
 * scan over a chunk (docs/cuda.md, "The PDMA scan"), written once as
 * portable C so its bookkeeping — which state each read sees — is checked on
 * the host against the sequential scan (rn_pdma_scan_forward) as well as on
 * the GPU by the parity suite.
 *
 * Each slot's row [S[s], z[s]] evolves independently of every other slot's.
 * The n·K writes of a chunk, stably sorted by slot, form one segment per
 * slot, in row order; one GPU thread per (segment, column) walks its segment
 * applying S ← d·S + w·v (z ← d·z + w), the CPU's arithmetic in the CPU's
 * order, and keeps the row after every write.  A read in row t of slot s
 * takes the state after the last write to s in rows <= t (binary search in
 * the sorted events; a row's reads follow its writes), or the chunk-start
 * state when there is none.  Last, each segment's final state is written
 * back.  Work O(nK·d_v), parallel over slots × columns; depth the longest
 * segment (the hottest slot's writes in the chunk).
 */
#ifndef RN_CUDA_SCAN_H
#define RN_CUDA_SCAN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Working arrays for nK = n·K events and d_v columns. */
typedef struct {
    uint32_t *slot;   /* [nK] sorted slots */
    int *row;         /* [nK] row of each sorted event */
    float *st;        /* [nK·(d_v+1)] the slot's row [S, z] after each write */
    int64_t *ord, *tmp; /* [nK] sort order and merge buffer */
} rn_scan_ws;

/* Bytes of working memory for nK events, d_v columns (the caller allocates
 * them, 8-byte aligned; rn_scan_ws_carve lays them out). */
static inline size_t rn_scan_ws_bytes(int64_t nK, int dv)
{
    return (size_t)nK * (2 * sizeof(int64_t) + sizeof(uint32_t) + sizeof(int) +
                         sizeof(float) * (size_t)(dv + 1));
}

static inline rn_scan_ws rn_scan_ws_carve(void *mem, int64_t nK, int dv)
{
    rn_scan_ws w;
    char *p = (char *)mem;
    w.ord = (int64_t *)p; p += sizeof(int64_t) * nK;
    w.tmp = (int64_t *)p; p += sizeof(int64_t) * nK;
    w.st = (float *)p; p += sizeof(float) * nK * (dv + 1);
    w.slot = (uint32_t *)p; p += sizeof(uint32_t) * nK;
    w.row = (int *)p;
    return w;
}

/* (1−w)^γ with 0⁰ = 1, as rn_pdma.c. */
static inline float rn_scan_decay(float w, float gamma)
{
    if (gamma == 1) return 1 - w;
    if (gamma == 0) return 1;
    return (float)pow((double)(1 - w), (double)gamma);
}

/* One head's chunk: same arguments and layout as rn_pdma_scan_forward
 * (rows of H·K addresses and H·d_v values; S[M·d_v], z[M] updated). */
static inline void rn_scan_segmented(float *o, float *S, float *z, const float *v,
                                     const uint32_t *wslot, const float *ww,
                                     const uint32_t *rslot, const float *rw, int n, int H,
                                     int h, int K, int dv, float gamma, float eps, rn_scan_ws w)
{
    const int64_t nK = (int64_t)n * K;
    const int C = dv + 1;
    /* 1. stable sort of the events by slot (bottom-up merge sort; a GPU
     *    uses a stable radix sort of (slot, event) pairs) */
    int64_t *ord = w.ord, *tmp = w.tmp;
    for (int64_t e = 0; e < nK; e++) ord[e] = e;
    for (int64_t width = 1; width < nK; width *= 2) {
        for (int64_t lo = 0; lo < nK; lo += 2 * width) {
            int64_t mid = lo + width < nK ? lo + width : nK, hi = lo + 2 * width < nK ? lo + 2 * width : nK;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                uint32_t si = wslot[((ord[i] / K) * H + h) * K + ord[i] % K];
                uint32_t sj = wslot[((ord[j] / K) * H + h) * K + ord[j] % K];
                tmp[k++] = sj < si ? ord[j++] : ord[i++];
            }
            while (i < mid) tmp[k++] = ord[i++];
            while (j < hi) tmp[k++] = ord[j++];
        }
        int64_t *t = ord; ord = tmp; tmp = t;
    }
    for (int64_t p = 0; p < nK; p++) {
        w.slot[p] = wslot[((ord[p] / K) * H + h) * K + ord[p] % K];
        w.row[p] = (int)(ord[p] / K);
    }
    /* 2. walk each segment (on a GPU: a thread per segment and column) */
    for (int64_t p0 = 0; p0 < nK;) {
        const uint32_t s = w.slot[p0];
        int64_t p1 = p0;
        while (p1 < nK && w.slot[p1] == s) p1++;
        for (int c = 0; c < C; c++) {
            float x = c < dv ? S[(int64_t)s * dv + c] : z[s];
            for (int64_t p = p0; p < p1; p++) {
                int64_t t = ord[p] / K, a = (t * H + h) * K + ord[p] % K;
                float wt = ww[a], d = rn_scan_decay(wt, gamma);
                x = d * x + wt * (c < dv ? v[t * H * dv + (int64_t)h * dv + c] : 1.0f);
                w.st[p * C + c] = x;
            }
        }
        p0 = p1;
    }
    /* 3. reads: the state after the last write to the slot in rows <= t */
    for (int t = 0; t < n; t++) {
        float *ot = o + (int64_t)t * H * dv + (int64_t)h * dv;
        for (int c = 0; c < dv; c++) ot[c] = 0;
        for (int j = 0; j < K; j++) {
            int64_t a = ((int64_t)t * H + h) * K + j;
            uint32_t s = rslot[a];
            int64_t lo = 0, hi = nK; /* first sorted event with (slot, row) > (s, t) */
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (w.slot[mid] < s || (w.slot[mid] == s && w.row[mid] <= t)) lo = mid + 1;
                else hi = mid;
            }
            int64_t p = lo - 1;
            const float *row = p >= 0 && w.slot[p] == s ? w.st + p * C : NULL;
            float coef = rw[a] / ((row ? row[dv] : z[s]) + eps);
            for (int c = 0; c < dv; c++) ot[c] += coef * (row ? row[c] : S[(int64_t)s * dv + c]);
        }
    }
    /* 4. write back each segment's last state */
    for (int64_t p = 0; p < nK; p++) {
        if (p + 1 < nK && w.slot[p + 1] == w.slot[p]) continue;
        uint32_t s = w.slot[p];
        for (int c = 0; c < dv; c++) S[(int64_t)s * dv + c] = w.st[p * C + c];
        z[s] = w.st[p * C + dv];
    }
}

#endif
