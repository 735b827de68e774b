/* rn_decoder.c — product softmax and exact top-K by log-domain beam search.
 * See rn_decoder.h for the contract and the argument for exactness. */
#include "rn_decoder.h"

#include <assert.h>
#include <math.h>
#include <string.h>

struct rn_decode_ws {
    int U, d_p, K, kc;     /* kc = min(K, d_p): digits kept per chunk */
    double *lp;            /* [max(U·d_p, K)] chunk log-probs, then the scores */
    int64_t *ql;           /* [U·d_p] quantised log-probs */
    int *order;            /* [U·kc] best digits of each chunk, sorted */
    int64_t *bs, *ns;      /* beam scores, current and next [K] */
    uint64_t *ba, *na;     /* beam prefix addresses [K] */
    int64_t *cs;           /* candidate scores [cand_len] */
    uint64_t *ca;          /* candidate addresses [cand_len] */
    int *heap;             /* [cand_len] */
};

#define RN_DECODE_MAXK_STACK 64

static size_t al(size_t n) { return (n + 15) & ~(size_t)15; }

/* Candidate buffer length: K beams × kc digits, or one whole chunk. */
static size_t cand_len(int d_p, int K)
{
    size_t kc = (size_t)(K < d_p ? K : d_p), n = (size_t)K * kc;
    return n > (size_t)d_p ? n : (size_t)d_p;
}

/* lp holds the U·d_p chunk log-probs, and afterwards the K scores of
 * rn_decode_topk when they do not fit its stack buffer: room for both. */
static size_t lp_len(int U, int d_p, int K)
{
    size_t n = (size_t)U * d_p;
    return (size_t)K > n ? (size_t)K : n;
}

size_t rn_decode_ws_bytes(int U, int d_p, int K)
{
    size_t kc = (size_t)(K < d_p ? K : d_p);
    return al(sizeof(struct rn_decode_ws)) + al(sizeof(double) * lp_len(U, d_p, K)) + al(sizeof(double) * U * d_p) +
           al(sizeof(int) * U * kc) + 2 * al(sizeof(double) * K) + 2 * al(sizeof(uint64_t) * K) +
           al(sizeof(double) * cand_len(d_p, K)) + al(sizeof(uint64_t) * cand_len(d_p, K)) +
           al(sizeof(int) * cand_len(d_p, K));
}

rn_decode_ws *rn_decode_ws_init(void *mem, int U, int d_p, int K)
{
    char *p = mem;
    rn_decode_ws *ws = (rn_decode_ws *)p;
    p += al(sizeof *ws);
    ws->U = U; ws->d_p = d_p; ws->K = K; ws->kc = K < d_p ? K : d_p;
    size_t kc = (size_t)ws->kc;
    ws->lp = (double *)p; p += al(sizeof(double) * lp_len(U, d_p, K));
    ws->ql = (int64_t *)p; p += al(sizeof(int64_t) * U * d_p);
    ws->order = (int *)p; p += al(sizeof(int) * U * kc);
    ws->bs = (int64_t *)p; p += al(sizeof(int64_t) * K);
    ws->ns = (int64_t *)p; p += al(sizeof(int64_t) * K);
    ws->ba = (uint64_t *)p; p += al(sizeof(uint64_t) * K);
    ws->na = (uint64_t *)p; p += al(sizeof(uint64_t) * K);
    ws->cs = (int64_t *)p; p += al(sizeof(int64_t) * cand_len(d_p, K));
    ws->ca = (uint64_t *)p; p += al(sizeof(uint64_t) * cand_len(d_p, K));
    ws->heap = (int *)p;
    return ws;
}

void rn_chunk_log_softmax(const rn_real *a, int U, int d_p, double scale, double *lp)
{
    for (int u = 0; u < U; u++) {
        const rn_real *c = a + (size_t)u * d_p;
        double *o = lp + (size_t)u * d_p;
        double mx = -INFINITY;
        for (int i = 0; i < d_p; i++) {
            o[i] = scale * (double)c[i];
            if (o[i] > mx) mx = o[i];
        }
        double s = 0;
        for (int i = 0; i < d_p; i++) s += exp(o[i] - mx);
        double lse = mx + log(s);
        for (int i = 0; i < d_p; i++) o[i] -= lse;
    }
}

/* "x ranks before y": higher score, or equal score and smaller address. */
static inline int better(int64_t sx, uint64_t ax, int64_t sy, uint64_t ay)
{
    return sx > sy || (sx == sy && ax < ay);
}

/* Restore the min-heap (worst candidate on top) of h indices after its top
 * was replaced. */
static inline void sift_down(const int64_t *s, const uint64_t *a, int *heap, int h)
{
    int j = 0;
    for (;;) {
        int l = 2 * j + 1, r = l + 1, w = j;
        if (l < h && better(s[heap[w]], a[heap[w]], s[heap[l]], a[heap[l]])) w = l;
        if (r < h && better(s[heap[w]], a[heap[w]], s[heap[r]], a[heap[r]])) w = r;
        if (w == j) break;
        int t = heap[w]; heap[w] = heap[j]; heap[j] = t; j = w;
    }
}

/* Select the best k of n (score, addr) candidates into (os, oa), sorted in
 * rank order.  Uses a size-k min-heap (worst on top) over candidate indices:
 * O(n log k). */
static void select_best(const int64_t *s, const uint64_t *a, int n, int k, int *heap,
                        int64_t *os, uint64_t *oa)
{
    int h = 0;
    for (int i = 0; i < n; i++) {
        if (h < k) {
            /* push, sift up: parent must be worse than child */
            int j = h++;
            heap[j] = i;
            while (j > 0) {
                int p = (j - 1) / 2;
                if (better(s[heap[p]], a[heap[p]], s[heap[j]], a[heap[j]])) {
                    int t = heap[p]; heap[p] = heap[j]; heap[j] = t; j = p;
                } else break;
            }
        } else if (better(s[i], a[i], s[heap[0]], a[heap[0]])) {
            heap[0] = i;
            sift_down(s, a, heap, h);
        }
    }
    /* pop worst-first into the back of the output */
    for (int out = h - 1; out >= 0; out--) {
        int top = heap[0];
        os[out] = s[top];
        oa[out] = a[top];
        heap[0] = heap[--h];
        sift_down(s, a, heap, h);
    }
}

/* The best `keep` extensions of a beam by one chunk, in rank order.
 * Candidate (b, j) is beam b (score bs[b], prefix ba[b]) extended by the
 * chunk's j-th best digit ord[j] (score l[ord[j]]).  Beams and digits are
 * each sorted by (score desc, address asc), and an address is prefix·d_p +
 * digit, so (b, j) ranks before both (b+1, j) and (b, j+1): the ranking is
 * monotone along both axes, and the best candidates come off a frontier
 * heap (pop the best; push its right neighbour (b, j+1) and, for j = 0, the
 * next beam's first (b+1, 0)).  Exact, ties included, in O(keep·log keep)
 * instead of selecting from all nb·kc candidates.  hs/ha/hi hold the heap
 * (at least keep + 1 entries). */
static void merge_best(const int64_t *bs, const uint64_t *ba, int nb, const int64_t *l,
                       const int *ord, int kc, uint64_t d_p, int keep, int64_t *hs, uint64_t *ha,
                       int *hi, int64_t *os, uint64_t *oa)
{
    int h = 0;
#define MB_PUSH(b, j) do { \
        int q_ = h++; \
        hs[q_] = bs[b] + l[ord[j]]; ha[q_] = ba[b] * d_p + (uint64_t)ord[j]; hi[q_] = (b) * kc + (j); \
        while (q_ > 0) { \
            int p_ = (q_ - 1) / 2; \
            if (!better(hs[q_], ha[q_], hs[p_], ha[p_])) break; \
            int64_t ts = hs[p_]; hs[p_] = hs[q_]; hs[q_] = ts; \
            uint64_t ta = ha[p_]; ha[p_] = ha[q_]; ha[q_] = ta; \
            int ti = hi[p_]; hi[p_] = hi[q_]; hi[q_] = ti; \
            q_ = p_; \
        } \
    } while (0)
    MB_PUSH(0, 0);
    for (int out = 0; out < keep; out++) {
        os[out] = hs[0];
        oa[out] = ha[0];
        int b = hi[0] / kc, j = hi[0] % kc;
        /* pop: move the last entry to the root and sift it down */
        h--;
        hs[0] = hs[h]; ha[0] = ha[h]; hi[0] = hi[h];
        for (int q = 0;;) {
            int c1 = 2 * q + 1, c2 = c1 + 1, w = q;
            if (c1 < h && better(hs[c1], ha[c1], hs[w], ha[w])) w = c1;
            if (c2 < h && better(hs[c2], ha[c2], hs[w], ha[w])) w = c2;
            if (w == q) break;
            int64_t ts = hs[w]; hs[w] = hs[q]; hs[q] = ts;
            uint64_t ta = ha[w]; ha[w] = ha[q]; ha[q] = ta;
            int ti = hi[w]; hi[w] = hi[q]; hi[q] = ti;
            q = w;
        }
        if (j + 1 < kc) MB_PUSH(b, j + 1);
        if (j == 0 && b + 1 < nb) MB_PUSH(b + 1, 0);
    }
#undef MB_PUSH
}

void rn_decode_topk_lp(const double *lp, int U, int d_p, int K,
                       uint32_t *addr, double *score, rn_decode_ws *ws)
{
    /* the workspace is made for this shape and at least this K (training
     * may decode an annealed K smaller than the one it was sized for) */
    assert(U == ws->U && d_p == ws->d_p && K >= 1 && K <= ws->K);
    int kc = ws->kc;
    int64_t *ql = ws->ql;
    for (int i = 0; i < U * d_p; i++) ql[i] = rn_quantize_logp(lp[i]);
    /* Best kc digits of each chunk in (lp desc, digit asc) order. */
    int64_t *tmp_s = ws->cs;
    uint64_t *tmp_a = ws->ca;
    for (int u = 0; u < U; u++) {
        const int64_t *l = ql + (size_t)u * d_p;
        for (int i = 0; i < d_p; i++) { tmp_s[i] = l[i]; tmp_a[i] = (uint64_t)i; }
        select_best(tmp_s, tmp_a, d_p, kc, ws->heap, ws->ns, ws->na);
        for (int j = 0; j < kc; j++) ws->order[u * kc + j] = (int)ws->na[j];
    }
    /* Beam over chunks, most significant first. */
    int nb = 0;
    for (int j = 0; j < kc; j++) {
        int i = ws->order[j];
        ws->bs[nb] = ql[i];
        ws->ba[nb] = (uint64_t)i;
        nb++;
    }
    for (int u = 1; u < U; u++) {
        const int64_t *l = ql + (size_t)u * d_p;
        const int *ord = ws->order + (size_t)u * kc;
        int keep = nb * kc < K ? nb * kc : K;
        merge_best(ws->bs, ws->ba, nb, l, ord, kc, (uint64_t)d_p, keep, ws->cs, ws->ca, ws->heap,
                   ws->ns, ws->na);
        memcpy(ws->bs, ws->ns, sizeof(int64_t) * keep);
        memcpy(ws->ba, ws->na, sizeof(uint64_t) * keep);
        nb = keep;
    }
    /* At least K beams are left because K <= M = d_p^U (validated); more
     * only for U = 1 with a workspace made for a larger K. */
    assert(nb >= K);
    for (int j = 0; j < K; j++) {
        addr[j] = (uint32_t)ws->ba[j];
        if (score) score[j] = rn_dequantize_logp(ws->bs[j]);
    }
}

void rn_decode_topk(const rn_real *a, int U, int d_p, int K, double scale,
                    uint32_t *addr, rn_real *weight, rn_decode_ws *ws)
{
    rn_chunk_log_softmax(a, U, d_p, scale, ws->lp);
    double sc[RN_DECODE_MAXK_STACK];
    /* lp is free after quantising and holds max(U·d_p, K) doubles */
    double *score = K <= RN_DECODE_MAXK_STACK ? sc : ws->lp;
    rn_decode_topk_lp(ws->lp, U, d_p, K, addr, score, ws);
    for (int j = 0; j < K; j++) weight[j] = (rn_real)exp(score[j]);
}
