/* rn_rmsnorm.c — RMSNorm layer. */
#include <math.h>

#include "rn_layers.h"

/* out[n,D] = x[n,D] / sqrt(mean(x²) + eps) ⊙ g[D]; rstd[n] saved if non-NULL. */
void rn_rmsnorm_forward(rn_real *out, rn_real *rstd, const rn_real *x, const rn_real *g,
                        int n, int D, rn_real eps)
{
    for (int r = 0; r < n; r++) {
        const rn_real *xr = x + (int64_t)r * D;
        rn_real *o = out + (int64_t)r * D;
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)xr[i] * xr[i];
        rn_real s = (rn_real)(1.0 / sqrt(ss / D + (double)eps));
        if (rstd) rstd[r] = s;
        for (int i = 0; i < D; i++) o[i] = xr[i] * s * g[i];
    }
}

/* With s = rstd and y = x·s: ∂L/∂x_i = s·g_i·dy_i − s³/D · x_i · Σ_j dy_j·g_j·x_j.
 * dg is reduced serially over rows so results do not depend on threads. */
void rn_rmsnorm_backward(rn_real *dx, rn_real *dg, const rn_real *dout, const rn_real *x,
                         const rn_real *g, const rn_real *rstd, int n, int D)
{
    #pragma omp parallel for if ((int64_t)n * D > 32768) schedule(static)
    for (int r = 0; r < n; r++) {
        const rn_real *xr = x + (int64_t)r * D, *dy = dout + (int64_t)r * D;
        rn_real *dxr = dx + (int64_t)r * D;
        double s = rstd[r], dot = 0;
        for (int i = 0; i < D; i++) dot += (double)dy[i] * g[i] * xr[i];
        double c = s * s * s * dot / D;
        for (int i = 0; i < D; i++) dxr[i] += (rn_real)(s * g[i] * dy[i] - c * xr[i]);
    }
    for (int r = 0; r < n; r++) {
        const rn_real *xr = x + (int64_t)r * D, *dy = dout + (int64_t)r * D;
        rn_real s = rstd[r];
        for (int i = 0; i < D; i++) dg[i] += dy[i] * xr[i] * s;
    }
}
