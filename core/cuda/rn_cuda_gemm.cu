/* rn_cuda_gemm.cu — the CUDA backend's matrix products on cuBLAS
 * (rn_cuda_gemm.h).  cuBLAS is column-major; a row-major [r, c] array is
 * the column-major [c, r] array, so each row-major product below is the
 * column-major product of the transposes, with the operands swapped.
 */
#include <cublas_v2.h>
#include <stdlib.h>
#include <string.h>

#include "rn_cuda_gemm.h"

/* The process's handle, made once by rn_cu_gemm_init (the runtime and the
 * trainer both call it; a handle per call would cost a context setup). */
static cublasHandle_t g_blas;

extern "C" int rn_cu_gemm_init(void)
{
    if (g_blas) return 0;
    cublasStatus_t s = cublasCreate(&g_blas);
    if (s != CUBLAS_STATUS_SUCCESS) {
        g_blas = NULL;
        return (int)s;
    }
    const char *tf32 = getenv("RN_CUDA_TF32");
    cublasMath_t mode = tf32 && !strcmp(tf32, "1") ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    return (int)cublasSetMathMode(g_blas, mode);
}

extern "C" int rn_cu_gemm_stream(void *stream)
{
    return (int)cublasSetStream(g_blas, (cudaStream_t)stream);
}

extern "C" const char *rn_cu_gemm_error(int status)
{
    return cublasGetStatusString((cublasStatus_t)status);
}

/* out[n,O] = in[n,I]·W[O,I]ᵀ: column-major out[O,n] = Wᵀ[O,I]·in[I,n].  One
 * row (the generation step) is a matrix-vector product, bound by reading W:
 * SGEMV, which cuBLAS runs nearer the memory bandwidth than SGEMM with n = 1. */
extern "C" int rn_cu_matmul(float *out, const float *in, const float *W, int n, int I, int O, int acc)
{
    const float one = 1, beta = acc ? 1.f : 0.f;
    if (n == 1) return (int)cublasSgemv(g_blas, CUBLAS_OP_T, I, O, &one, W, I, in, 1, &beta, out, 1);
    return (int)cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, O, n, I, &one, W, I, in, I, &beta, out, O);
}

/* din[n,I] = dout[n,O]·W[O,I]: column-major din[I,n] = W[I,O]·dout[O,n]. */
extern "C" int rn_cu_matmul_din(float *din, const float *dout, const float *W, int n, int I, int O, int acc)
{
    const float one = 1, beta = acc ? 1.f : 0.f;
    return (int)cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, I, n, O, &one, W, I, dout, O, &beta, din, I);
}

/* dW[O,I] += dout[n,O]ᵀ·in[n,I]: column-major dW[I,O] += in[I,n]·doutᵀ[n,O]. */
extern "C" int rn_cu_matmul_dw(float *dW, const float *dout, const float *in, int n, int I, int O)
{
    const float one = 1;
    return (int)cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, I, O, n, &one, in, I, dout, O, &one, dW, I);
}
