/* rn_cuda_gemm.cu — a plain implementation of rn_cuda_gemm.h (one thread
 * per output element, float accumulation) so that code written against the
 * interface compiles, links and runs before the cuBLAS version replaces
 * this file.  Correct, not fast. */
#include <cuda_runtime.h>

#include "rn_cuda_gemm.h"

extern "C" int rn_cu_gemm_init(void) { return 0; }

extern "C" const char *rn_cu_gemm_error(int status)
{
    return cudaGetErrorString((cudaError_t)status);
}

/* out[n,O] (+)= in[n,I] · W[O,I]ᵀ: thread (r, o) sums over I. */
__global__ void k_gemm_nt(float *out, const float *in, const float *W, int n, int I, int O, int acc)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)n * O) return;
    int r = (int)(i / O), o = (int)(i % O);
    float s = 0;
    for (int k = 0; k < I; k++) s += in[(long long)r * I + k] * W[(long long)o * I + k];
    out[i] = acc ? out[i] + s : s;
}

/* din[n,I] (+)= dout[n,O] · W[O,I]: thread (r, i) sums over O. */
__global__ void k_gemm_nn(float *din, const float *dout, const float *W, int n, int I, int O, int acc)
{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)n * I) return;
    int r = (int)(t / I), i = (int)(t % I);
    float s = 0;
    for (int k = 0; k < O; k++) s += dout[(long long)r * O + k] * W[(long long)k * I + i];
    din[t] = acc ? din[t] + s : s;
}

/* dW[O,I] += dout[n,O]ᵀ · in[n,I]: thread (o, i) sums over n. */
__global__ void k_gemm_tn(float *dW, const float *dout, const float *in, int n, int I, int O)
{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)O * I) return;
    int o = (int)(t / I), i = (int)(t % I);
    float s = 0;
    for (int r = 0; r < n; r++) s += dout[(long long)r * O + o] * in[(long long)r * I + i];
    dW[t] += s;
}

static unsigned nblk(long long n) { return (unsigned)((n + 255) / 256); }

extern "C" int rn_cu_matmul(float *out, const float *in, const float *W, int n, int I, int O, int acc)
{
    if ((long long)n * O == 0) return 0;
    k_gemm_nt<<<nblk((long long)n * O), 256>>>(out, in, W, n, I, O, acc);
    return (int)cudaGetLastError();
}

extern "C" int rn_cu_matmul_din(float *din, const float *dout, const float *W, int n, int I, int O, int acc)
{
    if ((long long)n * I == 0) return 0;
    k_gemm_nn<<<nblk((long long)n * I), 256>>>(din, dout, W, n, I, O, acc);
    return (int)cudaGetLastError();
}

extern "C" int rn_cu_matmul_dw(float *dW, const float *dout, const float *in, int n, int I, int O)
{
    if ((long long)O * I == 0) return 0;
    k_gemm_tn<<<nblk((long long)O * I), 256>>>(dW, dout, in, n, I, O);
    return (int)cudaGetLastError();
}
