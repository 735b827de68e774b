/* rn_swiglu.c — SwiGLU gate of the MLP. */
#include <math.h>

#include "rn_layers.h"

/* out[n] = silu(g[n]) ⊙ u[n], silu(x) = x·σ(x). */
void rn_swiglu_forward(rn_real *out, const rn_real *g, const rn_real *u, int64_t n)
{
    #pragma omp parallel for if (n > 65536) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        rn_real x = g[i];
        out[i] = x / (1 + (rn_real)exp(-(double)x)) * u[i];
    }
}

/* out = silu(g)·u: du = dout·silu(g), dg = dout·u·σ(g)·(1 + g·(1 − σ(g))). */
void rn_swiglu_backward(rn_real *dg, rn_real *du, const rn_real *dout, const rn_real *g,
                        const rn_real *u, int64_t n)
{
    #pragma omp parallel for if (n > 65536) schedule(static)
    for (int64_t i = 0; i < n; i++) {
#ifdef RN_DOUBLE
        double x = g[i], sg = 1 / (1 + exp(-x));
#else
        float x = g[i], sg = 1 / (1 + expf(-x));
#endif
        du[i] = dout[i] * x * sg;
        dg[i] = dout[i] * u[i] * sg * (1 + x * (1 - sg));
    }
}
