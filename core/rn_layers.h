/* rn_layers.h — the model's layers as _forward functions (and, for
 * training, their _backward pairs), each over a batch of rows.  Shapes are
 * given as [rows, width]; every buffer is caller-owned (nothing allocates).
 * One file per layer: rn_rmsnorm.c, rn_matmul.c, rn_swiglu.c, rn_pdma.c,
 * rn_address.c.
 */
#ifndef RN_LAYERS_H
#define RN_LAYERS_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_decoder.h"
#include "rn_real.h"

/* RMSNorm: out[n,D] = x / sqrt(mean(x²) + eps) ⊙ g.  rstd[n] (optional)
 * keeps 1/sqrt(mean(x²)+eps) for the backward pass. */
void rn_rmsnorm_forward(rn_real *out, rn_real *rstd, const rn_real *x, const rn_real *g,
                        int n, int D, rn_real eps);

/* out[n,O] = in[n,I] · W[O,I]ᵀ (+= when accumulate).  n == 1 uses GEMV. */
void rn_matmul_forward(rn_real *out, const rn_real *in, const rn_real *W, int n, int in_w, int out_w,
                       int accumulate);

/* SwiGLU: out[n,F] = silu(g[n,F]) ⊙ u[n,F]. */
void rn_swiglu_forward(rn_real *out, const rn_real *g, const rn_real *u, int64_t n);

/* Address decoding of every head of n rows.  a[n, H·dk] are raw keys or
 * queries; alpha[H] the per-head log-scales.  For row r (sequence position
 * pos0 + r) and head h, writes the K top addresses addr[(r·H + h)·K + j],
 * their physical slots after CAPE (slot, same layout; CAPE where
 * cape_mask bit h is set) and weights w (same layout).  ws[t] is a decode
 * workspace per OpenMP thread.  Parallel over rows. */
void rn_address_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                        const rn_real *alpha, const rn_config *c, uint64_t cape_mask,
                        int n, int64_t pos0, rn_decode_ws **ws);

/* PDMA for one head: apply the K writes (slot ws[K], weight ww[K]) of value
 * v[d_v] to state S[M, d_v] and z[M]: d = (1−w)^γ (0⁰ = 1),
 * S[s] ← d·S[s] + w·v, z[s] ← d·z[s] + w. */
void rn_pdma_write(rn_real *S, rn_real *z, int d_v, const uint32_t *slot, const rn_real *w,
                   int K, const rn_real *v, rn_real gamma);

/* PDMA read for one head: o[d_v] = Σ_j r_j · S[s_j] / (z[s_j] + eps). */
void rn_pdma_read(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
                  const rn_real *r, int K, rn_real eps);

/* The memory scan of one head over n positions: for each row t, the writes
 * of wslot/ww[t·H+h] with value v[t, h·d_v..], then the read of
 * rslot/rw[t·H+h] into o[t, h·d_v..].  Row strides are H·K for addresses
 * and H·d_v for values.  State S, z is read and updated in place. */
void rn_pdma_scan_forward(rn_real *o, rn_real *S, rn_real *z, const rn_real *v,
                          const uint32_t *wslot, const rn_real *ww, const uint32_t *rslot,
                          const rn_real *rw, int n, int H, int h, int K, int d_v,
                          rn_real gamma, rn_real eps);

/* Reset a head's state: S = 0, z = 1/M. */
void rn_pdma_reset(rn_real *S, rn_real *z, int64_t M, int d_v);

#endif
