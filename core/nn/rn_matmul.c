/* rn_matmul.c — projection layer out = in · Wᵀ through CBLAS. */
#include "rn_layers.h"

/* out[n,O] (=|+=) in[n,I] · W[O,I]ᵀ.  One row uses GEMV (the generation
 * step is bandwidth-bound: W streams through once). */
void rn_matmul_forward(rn_real *out, const rn_real *in, const rn_real *W, int n, int in_w, int out_w,
                       int accumulate)
{
    rn_real beta = accumulate ? 1 : 0;
    if (n == 1)
        RN_GEMV(CblasRowMajor, CblasNoTrans, out_w, in_w, 1, W, in_w, in, 1, beta, out, 1);
    else
        RN_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_w, in_w, 1, in, in_w, W, in_w, beta, out, out_w);
}

/* din[n,I] (=|+=) dout[n,O]·W[O,I];  dW[O,I] += dout[n,O]ᵀ·in[n,I]. */
void rn_matmul_backward(rn_real *din, rn_real *dW, const rn_real *dout, const rn_real *in,
                        const rn_real *W, int n, int in_w, int out_w, int din_accumulate)
{
    if (din)
        RN_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_w, out_w, 1, dout, out_w, W, in_w,
                din_accumulate ? 1 : 0, din, in_w);
    if (dW)
        RN_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, out_w, in_w, n, 1, dout, out_w, in, in_w,
                1, dW, in_w);
}
