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
    return rn_cu_gemm_set_tf32(0);
}

extern "C" int rn_cu_gemm_set_tf32(int on)
{
    const char *env = getenv("RN_CUDA_TF32");
    if (env && !strcmp(env, "1")) on = 1;
    return (int)cublasSetMathMode(g_blas, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
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

/* The bf16 products: the same column-major calls through cublasGemmEx, bf16
 * operands, FP32 output and CUBLAS_COMPUTE_32F (tensor cores, FP32
 * accumulation).  One row goes through GemmEx too: cuBLAS has no bf16
 * GEMV, and the generation step's own GEMV kernels replace it there. */
extern "C" int rn_cu_matmul_bf16(float *out, const uint16_t *in, const uint16_t *W, int n, int I, int O, int acc)
{
    const float one = 1, beta = acc ? 1.f : 0.f;
    return (int)cublasGemmEx(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, O, n, I, &one, W, CUDA_R_16BF, I, in, CUDA_R_16BF,
                             I, &beta, out, CUDA_R_32F, O, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

extern "C" int rn_cu_matmul_din_bf16(float *din, const uint16_t *dout, const uint16_t *W, int n, int I, int O,
                                     int acc)
{
    const float one = 1, beta = acc ? 1.f : 0.f;
    return (int)cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, I, n, O, &one, W, CUDA_R_16BF, I, dout,
                             CUDA_R_16BF, O, &beta, din, CUDA_R_32F, I, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

extern "C" int rn_cu_matmul_dw_bf16(float *dW, const uint16_t *dout, const uint16_t *in, int n, int I, int O)
{
    const float one = 1;
    return (int)cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, I, O, n, &one, in, CUDA_R_16BF, I, dout,
                             CUDA_R_16BF, O, &one, dW, CUDA_R_32F, I, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
