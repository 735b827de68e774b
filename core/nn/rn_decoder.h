/* rn_decoder.h — the address decoder: product softmax + exact top-K + CAPE.
 *
 * A key or query a ∈ R^{U·d_p} is split into U chunks of d_p; chunk u gives
 * p_u = softmax(scale·a_u) (scale = e^α/τ).  The address of digits
 * (i_0..i_{U-1}) is Σ_u i_u·d_p^{U-1-u} and its weight Π_u p_u[i_u].
 *
 * rn_decode_topk returns the K addresses of largest weight, ties broken
 * towards the smaller address, in descending weight (rank 0 first), without
 * ever building the M-vector: a log-domain beam search keeps the best K
 * prefixes after each chunk, drawing each chunk's digits from its best
 * min(K, d_p) in (log-prob desc, digit asc) order.  The K best extensions
 * of a beam come off a frontier heap (the candidates are sorted along both
 * the beam and the digit axis), so the cost is O(U·K·log K +
 * U·d_p·log d_p), within the paper's O(U·K² + U·d_p·log d_p); works for
 * any M <= 2^31.
 *
 * Exactness: each chunk log-prob is quantised to a fixed-point integer
 * (units of 2^-40 ≈ 1e-12 in log space, far below float precision of the
 * weights) and the score of an address is the integer sum over its digits.
 * Integer addition is exact, so extending a better prefix by a digit always
 * gives a strictly better (or, from an equal prefix, equal) score, and a
 * smaller prefix always extends to a smaller address: pruning to K prefixes
 * per level is exact for the order (score desc, address asc), exact ties
 * included.  (Floating-point sums are not: rounding can turn a strict
 * prefix order into a full-address tie.)  The weight reported is
 * exp(score·2^-40).  tests/test_decoder.c checks against a brute force over
 * all M addresses.
 */
#ifndef RN_DECODER_H
#define RN_DECODER_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "rn_real.h"

/* Scratch for one decode; one per thread, sized by rn_decode_ws_bytes. */
typedef struct rn_decode_ws rn_decode_ws;

size_t rn_decode_ws_bytes(int U, int d_p, int K);
/* Carve a workspace in mem (rn_decode_ws_bytes bytes, 16-byte aligned). */
rn_decode_ws *rn_decode_ws_init(void *mem, int U, int d_p, int K);

/* Log-softmax of each chunk of scale·a into lp[U·d_p] (double). */
void rn_chunk_log_softmax(const rn_real *a, int U, int d_p, double scale, double *lp);

/* Exact top-K of the product softmax of scale·a.  addr[K], weight[K] out. */
void rn_decode_topk(const rn_real *a, int U, int d_p, int K, double scale,
                    uint32_t *addr, rn_real *weight, rn_decode_ws *ws);

/* Same, from precomputed chunk log-probs lp[U·d_p]; score[K] (optional)
 * receives the log-weights. */
void rn_decode_topk_lp(const double *lp, int U, int d_p, int K,
                       uint32_t *addr, double *score, rn_decode_ws *ws);

/* Fixed-point log-probabilities used for ranking (see above). */
#define RN_LOGP_ONE 1099511627776.0 /* 2^40 */
static inline int64_t rn_quantize_logp(double lp)
{
    if (!(lp > -1e5)) lp = -1e5; /* weight exp(-1e5) == 0; keeps sums in range */
    return (int64_t)llround(lp * RN_LOGP_ONE);
}
static inline double rn_dequantize_logp(int64_t q) { return (double)q / RN_LOGP_ONE; }

/* CAPE: the physical slot of address a at position t, (a − t) mod M. */
static inline uint32_t rn_cape_slot(uint32_t a, int64_t t, int64_t M)
{
    int64_t s = ((int64_t)a - t) % M;
    return (uint32_t)(s < 0 ? s + M : s);
}

#endif
