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
