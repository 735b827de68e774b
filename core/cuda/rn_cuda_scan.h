/* rn_cuda_scan.h — the segmented-scan formulation of one head's PDMA memory
 * scan over a chunk (docs/cuda.md, "The PDMA scan as designed"), written
 * once as portable C so its arithmetic — the order in which the parallel
 * version composes the decays — is checked on the host against the
 * sequential scan (rn_pdma_scan_forward) before a GPU kernel runs it.
 *
 * A write of weight w and value v to slot s is the affine map
 * x ↦ d·x + w·[v, 1] of the slot's row [S[s], z[s]] (d = (1−w)^γ); maps
 * compose associatively, (d₂, b₂)∘(d₁, b₁) = (d₂d₁, d₂b₁ + b₂).  The n·K
 * writes of a chunk, stably sorted by slot, form one segment per slot; an
 * inclusive segmented scan (here Hillis–Steele: log₂(nK) passes, each a
 * data-parallel step — one GPU thread per event and column) gives, for every
 * write, the map from the chunk-start row to the row after it.  A read in
 * row t of slot s takes the last write to s in rows <= t (binary search in
 * the segment), or the chunk-start row.  Here the passes run serially with a
 * second buffer, exactly as the parallel passes would combine.
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
    int *head;        /* [nK] 1 where a segment starts */
    float *d, *d2;    /* [nK] composed decay (and pass buffer) */
    float *b, *b2;    /* [nK·(d_v+1)] composed offset (and pass buffer) */
    int64_t *ord, *tmp; /* [nK] sort order and merge buffer */
    int *reach;       /* [nK] distance to the segment's first event */
} rn_scan_ws;

/* Bytes of working memory for nK events, d_v columns (the caller allocates
 * them, 8-byte aligned; rn_scan_ws_carve lays them out). */
static inline size_t rn_scan_ws_bytes(int64_t nK, int dv)
{
    return (size_t)nK * (2 * sizeof(int64_t) + sizeof(uint32_t) + 3 * sizeof(int) +
                         2 * sizeof(float) + 2 * sizeof(float) * (size_t)(dv + 1));
}

static inline rn_scan_ws rn_scan_ws_carve(void *mem, int64_t nK, int dv)
{
    rn_scan_ws w;
    char *p = (char *)mem;
    w.ord = (int64_t *)p; p += sizeof(int64_t) * nK;
    w.tmp = (int64_t *)p; p += sizeof(int64_t) * nK;
    w.reach = (int *)p; p += sizeof(int) * nK;
    w.slot = (uint32_t *)p; p += sizeof(uint32_t) * nK;
    w.row = (int *)p; p += sizeof(int) * nK;
    w.head = (int *)p; p += sizeof(int) * nK;
    w.d = (float *)p; p += sizeof(float) * nK;
    w.d2 = (float *)p; p += sizeof(float) * nK;
    w.b = (float *)p; p += sizeof(float) * nK * (dv + 1);
    w.b2 = (float *)p;
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
    /* 1. stable sort of the events by slot (insertion into a merge order;
     *    a GPU uses a stable radix sort of (slot, event) pairs) */
    int64_t *ord = w.ord, *tmp = w.tmp;
    for (int64_t e = 0; e < nK; e++) ord[e] = e;
    for (int64_t width = 1; width < nK; width *= 2) { /* bottom-up merge sort: stable */
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
    /* 2. each event's own map and its segment flag */
    for (int64_t p = 0; p < nK; p++) {
        int64_t t = ord[p] / K, j = ord[p] % K, a = (t * H + h) * K + j;
        w.slot[p] = wslot[a];
        w.row[p] = (int)t;
        w.head[p] = p == 0 || w.slot[p] != w.slot[p - 1];
        float wt = ww[a];
        w.d[p] = rn_scan_decay(wt, gamma);
        const float *vv = v + t * H * dv + (int64_t)h * dv;
        for (int c = 0; c < dv; c++) w.b[p * C + c] = wt * vv[c];
        w.b[p * C + dv] = wt;
    }
    /* 3. segmented inclusive scan, Hillis–Steele: pass k combines p with
     *    p − k unless a segment starts in (p − k, p] */
    int *reach = w.reach;
    for (int64_t p = 0; p < nK; p++) reach[p] = w.head[p] ? 0 : reach[p - 1] + 1;
    for (int64_t k = 1; k < nK; k *= 2) {
        for (int64_t p = 0; p < nK; p++) {
            if (reach[p] >= k) { /* P_p ← P_p ∘ P_{p−k} */
                w.d2[p] = w.d[p] * w.d[p - k];
                for (int c = 0; c < C; c++) w.b2[p * C + c] = w.d[p] * w.b[(p - k) * C + c] + w.b[p * C + c];
            } else {
                w.d2[p] = w.d[p];
                for (int c = 0; c < C; c++) w.b2[p * C + c] = w.b[p * C + c];
            }
        }
        float *t = w.d; w.d = w.d2; w.d2 = t;
        t = w.b; w.b = w.b2; w.b2 = t;
    }
    /* 4. reads: the last write to the slot in rows <= t */
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
            const float *S0 = S + (int64_t)s * dv;
            float zz, coef;
            if (p >= 0 && w.slot[p] == s) {
                zz = w.d[p] * z[s] + w.b[p * C + dv];
                coef = rw[a] / (zz + eps);
                for (int c = 0; c < dv; c++) ot[c] += coef * (w.d[p] * S0[c] + w.b[p * C + c]);
            } else {
                coef = rw[a] / (z[s] + eps);
                for (int c = 0; c < dv; c++) ot[c] += coef * S0[c];
            }
        }
    }
    /* 5. write back each segment's last state */
    for (int64_t p = 0; p < nK; p++) {
        if (p + 1 < nK && !w.head[p + 1]) continue;
        uint32_t s = w.slot[p];
        float *Sr = S + (int64_t)s * dv;
        for (int c = 0; c < dv; c++) Sr[c] = w.d[p] * Sr[c] + w.b[p * C + c];
        z[s] = w.d[p] * z[s] + w.b[p * C + dv];
    }
}

#endif
