/* rn_pdma.c — Power Decay Moving Average memory (paper §3.3): sparse writes
 * and reads that touch only the K addressed slots of a head. */
#include <assert.h>
#include <math.h>

#include "rn_layers.h"

void rn_pdma_reset(rn_real *S, rn_real *z, int64_t M, int d_v)
{
    assert(M >= 1 && d_v >= 1);
    rn_real inv = (rn_real)(1.0 / (double)M);
    for (int64_t i = 0; i < M * d_v; i++) S[i] = 0;
    for (int64_t i = 0; i < M; i++) z[i] = inv;
}

/* d = (1−w)^γ with 0⁰ = 1 (pow(0, 0) is 1 in C99). */
static inline rn_real decay(rn_real w, rn_real gamma)
{
    if (gamma == 1) return 1 - w;
    if (gamma == 0) return 1;
    return (rn_real)pow((double)(1 - w), (double)gamma);
}

void rn_pdma_write(rn_real *S, rn_real *z, int d_v, const uint32_t *slot, const rn_real *w,
                   int K, const rn_real *v, rn_real gamma)
{
    for (int j = 0; j < K; j++) {
        rn_real wj = w[j], d = decay(wj, gamma);
        rn_real *row = S + (size_t)slot[j] * d_v;
        for (int i = 0; i < d_v; i++) row[i] = d * row[i] + wj * v[i];
        z[slot[j]] = d * z[slot[j]] + wj;
    }
}

void rn_pdma_read(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
                  const rn_real *r, int K, rn_real eps)
{
    for (int i = 0; i < d_v; i++) o[i] = 0;
    rn_pdma_read_acc(o, S, z, d_v, slot, r, K, eps);
}

/* The read's sum without clearing o: the tiered state (rn_state.c) adds one
 * slot at a time, with these same operations, so it equals rn_pdma_read. */
void rn_pdma_read_acc(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
                      const rn_real *r, int K, rn_real eps)
{
    for (int j = 0; j < K; j++) {
        rn_real c = r[j] / (z[slot[j]] + eps);
        const rn_real *row = S + (size_t)slot[j] * d_v;
        for (int i = 0; i < d_v; i++) o[i] += c * row[i];
    }
}

void rn_pdma_scan_forward(rn_real *o, rn_real *S, rn_real *z, const rn_real *v,
                          const uint32_t *wslot, const rn_real *ww, const uint32_t *rslot,
                          const rn_real *rw, int n, int H, int h, int K, int d_v,
                          rn_real gamma, rn_real eps)
{
    for (int t = 0; t < n; t++) {
        size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * d_v + (size_t)h * d_v;
        rn_pdma_write(S, z, d_v, wslot + a, ww + a, K, v + vv, gamma);
        rn_pdma_read(o + vv, S, z, d_v, rslot + a, rw + a, K, eps);
    }
}

rn_real rn_pdma_decay(rn_real w, rn_real gamma) { return decay(w, gamma); }

/* The paper's proxy gradient: the derivative of (ε_g + (1−ε_g)(1−w))^γ,
 * used in place of that of (1−w)^γ (whose slope is infinite at w → 1 for
 * γ < 1 and vanishes for γ > 1). */
rn_real rn_pdma_decay_grad(rn_real w, rn_real gamma, rn_real eps_g)
{
    if (gamma == 0) return 0;
    double base = (double)eps_g + (1.0 - (double)eps_g) * (1.0 - (double)w);
    if (gamma == 1) return (rn_real)(-(1.0 - (double)eps_g));
    return (rn_real)(-(double)gamma * (1.0 - (double)eps_g) * pow(base, (double)gamma - 1.0));
}

/* Set the rows S[s] to 0 and z[s] to z0 for every slot s of slot[t·stride
 * + j], t < T, j < K: undoes a scan's touches in O(T·K·d_v), not O(M·d_v). */
static void reset_slots(rn_real *S, rn_real *z, rn_real z0, const uint32_t *slot, int T,
                        int stride, int K, int d_v)
{
    for (int t = 0; t < T; t++)
        for (int j = 0; j < K; j++) {
            uint32_t s = slot[(size_t)t * stride + j];
            for (int i = 0; i < d_v; i++) S[(size_t)s * d_v + i] = 0;
            z[s] = z0;
        }
}

void rn_pdma_train_forward(rn_real *o, rn_real *wsave, rn_real *rsave, rn_real *S, rn_real *z,
                           const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                           const uint32_t *rslot, const rn_real *rw, int T, int vstride,
                           int wstride, int Kw, int rstride, int Kr, int d_v, int64_t M,
                           rn_real gamma, rn_real eps)
{
    assert(vstride >= d_v && wstride >= Kw && rstride >= Kr && M >= 1);
    const size_t rs = (size_t)d_v + 1;
    for (int t = 0; t < T; t++) {
        const uint32_t *ws = wslot + (size_t)t * wstride, *rsl = rslot + (size_t)t * rstride;
        const rn_real *wt = ww + (size_t)t * wstride, *rt = rw + (size_t)t * rstride;
        const rn_real *vt = v + (size_t)t * vstride;
        for (int j = 0; j < Kw; j++) {
            assert(ws[j] < (uint64_t)M); /* the decoder's addresses (after CAPE) are slots */
            rn_real *sv = wsave + ((size_t)t * Kw + j) * rs, *row = S + (size_t)ws[j] * d_v;
            for (int i = 0; i < d_v; i++) sv[i] = row[i];
            sv[d_v] = z[ws[j]];
        }
        rn_pdma_write(S, z, d_v, ws, wt, Kw, vt, gamma);
        for (int j = 0; j < Kr; j++) {
            assert(rsl[j] < (uint64_t)M);
            rn_real *sv = rsave + ((size_t)t * Kr + j) * rs;
            const rn_real *row = S + (size_t)rsl[j] * d_v;
            for (int i = 0; i < d_v; i++) sv[i] = row[i];
            sv[d_v] = z[rsl[j]];
        }
        rn_pdma_read(o + (size_t)t * vstride, S, z, d_v, rsl, rt, Kr, eps);
    }
    reset_slots(S, z, (rn_real)(1.0 / (double)M), wslot, T, wstride, Kw, d_v);
}

/* Walk the steps in reverse.  At step t the read is undone first (its S and
 * z were saved), then the writes in reverse rank order; for a write
 * S' = d·S + w·v, z' = d·z + w with incoming gradients (dS', dz'):
 *   dv += w·dS',  dw = ⟨dS', v⟩ + dz' + d'(w)·(⟨dS', S⟩ + dz'·z),
 *   dS = d·dS',   dz = d·dz',
 * where S, z are the saved pre-write values.  A slot written at several
 * steps is handled naturally: dS/dz carry its gradient back through each
 * decay in turn. */
void rn_pdma_train_backward(rn_real *dv, rn_real *dww, rn_real *drw, rn_real *dS, rn_real *dz,
                            const rn_real *dout, const rn_real *wsave, const rn_real *rsave,
                            const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                            const uint32_t *rslot, const rn_real *rw, int T, int vstride,
                            int wstride, int Kw, int rstride, int Kr, int d_v, rn_real gamma,
                            rn_real eps, rn_real eps_g)
{
    assert(vstride >= d_v && wstride >= Kw && rstride >= Kr);
    const size_t rs = (size_t)d_v + 1;
    for (int t = T - 1; t >= 0; t--) {
        const uint32_t *ws = wslot + (size_t)t * wstride, *rsl = rslot + (size_t)t * rstride;
        const rn_real *wt = ww + (size_t)t * wstride, *rt = rw + (size_t)t * rstride;
        const rn_real *vt = v + (size_t)t * vstride, *go = dout + (size_t)t * vstride;
        rn_real *dvt = dv + (size_t)t * vstride;
        rn_real *dwt = dww + (size_t)t * wstride, *drt = drw + (size_t)t * rstride;
        for (int j = 0; j < Kr; j++) {
            const rn_real *sv = rsave + ((size_t)t * Kr + j) * rs;
            rn_real zz = sv[d_v] + eps, dot = 0;
            for (int i = 0; i < d_v; i++) dot += go[i] * sv[i];
            drt[j] = dot / zz;
            rn_real c = rt[j] / zz, *g = dS + (size_t)rsl[j] * d_v;
            for (int i = 0; i < d_v; i++) g[i] += c * go[i];
            dz[rsl[j]] -= c * dot / zz;
        }
        for (int i = 0; i < d_v; i++) dvt[i] = 0;
        for (int j = Kw - 1; j >= 0; j--) {
            const rn_real *sv = wsave + ((size_t)t * Kw + j) * rs;
            rn_real w = wt[j], d = decay(w, gamma), dd = rn_pdma_decay_grad(w, gamma, eps_g);
            rn_real *g = dS + (size_t)ws[j] * d_v, gz = dz[ws[j]];
            rn_real dsv = 0, dss = 0;
            for (int i = 0; i < d_v; i++) {
                dsv += g[i] * vt[i];
                dss += g[i] * sv[i];
                dvt[i] += w * g[i];
                g[i] *= d;
            }
            dwt[j] = dsv + gz + dd * (dss + gz * sv[d_v]);
            dz[ws[j]] = d * gz;
        }
    }
    reset_slots(dS, dz, 0, wslot, T, wstride, Kw, d_v);
    reset_slots(dS, dz, 0, rslot, T, rstride, Kr, d_v);
}
