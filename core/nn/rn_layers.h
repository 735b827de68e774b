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
 * workspace per OpenMP thread, t < n_ws (at most n_ws threads are used).
 * Parallel over rows. */
void rn_address_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                        const rn_real *alpha, const rn_config *c, uint64_t cape_mask,
                        int n, int64_t pos0, rn_decode_ws **ws, int n_ws);

/* PDMA for one head: apply the K writes (slot ws[K], weight ww[K]) of value
 * v[d_v] to state S[M, d_v] and z[M]: d = (1−w)^γ (0⁰ = 1),
 * S[s] ← d·S[s] + w·v, z[s] ← d·z[s] + w. */
void rn_pdma_write(rn_real *S, rn_real *z, int d_v, const uint32_t *slot, const rn_real *w,
                   int K, const rn_real *v, rn_real gamma);

/* PDMA read for one head: o[d_v] = Σ_j r_j · S[s_j] / (z[s_j] + eps). */
void rn_pdma_read(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
                  const rn_real *r, int K, rn_real eps);
/* The same sum added to o (not cleared first). */
void rn_pdma_read_acc(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
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

/* ---- Training: forward variants that save what the backward needs, and
 * the _backward pairs.  Gradients named d* accumulate (+=) unless stated. */

/* RMSNorm backward.  dx[n,D] += ∂/∂x, dg[D] += ∂/∂g, from dout[n,D], the
 * forward input x[n,D], gain g[D] and the saved rstd[n]. */
void rn_rmsnorm_backward(rn_real *dx, rn_real *dg, const rn_real *dout, const rn_real *x,
                         const rn_real *g, const rn_real *rstd, int n, int D);

/* Projection backward for out[n,O] = in[n,I]·W[O,I]ᵀ: din[n,I] = (or += when
 * din_accumulate) dout·W (skipped when din is NULL); dW[O,I] += doutᵀ·in. */
void rn_matmul_backward(rn_real *din, rn_real *dW, const rn_real *dout, const rn_real *in,
                        const rn_real *W, int n, int in_w, int out_w, int din_accumulate);

/* SwiGLU backward: dg[n], du[n] (set) from dout[n] and the forward inputs. */
void rn_swiglu_backward(rn_real *dg, rn_real *du, const rn_real *dout, const rn_real *g,
                        const rn_real *u, int64_t n);

/* Training address decoding: as rn_address_forward for n rows of sequences
 * of length T (row r is position r mod T, for CAPE), but each weight is
 * computed as exp(Σ_u log p_u[i_u]) from the unquantised chunk log-probs,
 * so it is a smooth function of a between top-K changes.  K (not
 * c->top_k) addresses per head: training may anneal it; the decoder
 * workspaces must have room for it. */
void rn_address_train_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                              const rn_real *alpha, const rn_config *c, int K, uint64_t cape_mask,
                              int n, int T, rn_decode_ws **ws, int n_ws);

/* Address backward through the product softmax and the top-K mask (the
 * selection is piecewise constant: only the K selected weights carry
 * gradient).  K addresses per head.  From dw[n,H,K] (gradient of the selected weights), the raw
 * a[n,H·dk], addr[n,H,K], w[n,H,K] and alpha[H]: da[n,H·dk] (set) and
 * dalpha[H] (+=).  With G_k = dw_k·w_k and scale = e^α/τ:
 *   da_u[j] = scale·(Σ_{k: i_u^k = j} G_k − p_u[j]·Σ_k G_k),
 *   dα = Σ_j da[j]·a[j].
 * lp is scratch of dk doubles per OpenMP thread (lp + thread·dk), for
 * n_lp threads (at most n_lp threads are used). */
void rn_address_backward(rn_real *da, rn_real *dalpha, const rn_real *dw, const rn_real *a,
                         const uint32_t *addr, const rn_real *w, const rn_real *alpha,
                         const rn_config *c, int K, int n, double *lp, int n_lp);

/* Training memory scan of one (sequence, head) over T steps.  Step t uses
 * v/o at + t·vstride (d_v wide), Kw write slots/weights at + t·wstride and
 * Kr read slots/weights at + t·rstride (Kr may differ from Kw while
 * training anneals the reads' top-K).  It saves, per step and rank j, the
 * pre-write row and z of the written slot (wsave[(t·Kw + j)·(d_v+1)]: d_v
 * values then z) and the row and z of the read slot at read time
 * (rsave[(t·Kr + j)·(d_v+1)]), so the reverse scan needs no dense per-step
 * states.  S[M·d_v], z[M] must be in the reset state (S = 0, z = 1/M) on
 * entry and are returned to it (only touched slots are reset, so the cost
 * is O(T·(Kw + Kr)·d_v), not O(M·d_v)). */
void rn_pdma_train_forward(rn_real *o, rn_real *wsave, rn_real *rsave, rn_real *S, rn_real *z,
                           const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                           const uint32_t *rslot, const rn_real *rw, int T, int vstride,
                           int wstride, int Kw, int rstride, int Kr, int d_v, int64_t M,
                           rn_real gamma, rn_real eps);

/* Reverse scan of rn_pdma_train_forward.  From dout (layout of o): dv (set,
 * layout of v), dww and drw (set, layout of the weights).  dS[M·d_v], dz[M]
 * are gradient accumulators that must be zero on entry and are zeroed again
 * (touched slots only) on return.  The decay's derivative is the proxy
 * −γ(1−ε_g)(ε_g + (1−ε_g)(1−w))^(γ−1) (ε_g = 0: the exact derivative). */
void rn_pdma_train_backward(rn_real *dv, rn_real *dww, rn_real *drw, rn_real *dS, rn_real *dz,
                            const rn_real *dout, const rn_real *wsave, const rn_real *rsave,
                            const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                            const uint32_t *rslot, const rn_real *rw, int T, int vstride,
                            int wstride, int Kw, int rstride, int Kr, int d_v, rn_real gamma,
                            rn_real eps, rn_real eps_g);

/* The decay (1−w)^γ and its (proxy) derivative, exposed for tests. */
rn_real rn_pdma_decay(rn_real w, rn_real gamma);
rn_real rn_pdma_decay_grad(rn_real w, rn_real gamma, rn_real eps_g);

#endif
