/* rn_cuda_swiglu.cuh — SwiGLU's kernels (rn_swiglu.c on the GPU), one
 * source for the CUDA inference runtime (rn_cuda.cu) and the GPU trainer
 * (rn_cuda_train.cu).  One thread per element.
 *
 * forward:  out = silu(g)·u with the CPU's double exp; out may be g
 *           (inference overwrites the gate, training keeps it)
 * backward: du = dout·silu(g), dg = dout·u·σ(g)·(1 + g·(1 − σ(g))) (float)
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_SWIGLU_CUH
#define RN_CUDA_SWIGLU_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

static __global__ void k_swiglu_forward(float *out, const float *g, const float *u, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = g[i];
    out[i] = x / (1 + (float)exp(-(double)x)) * u[i];
}

static __global__ void k_swiglu_backward(float *dg, float *du, const float *dout, const float *g,
                                         const float *u, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = g[i], sg = 1 / (1 + expf(-x));
    du[i] = dout[i] * x * sg;
    dg[i] = dout[i] * u[i] * sg * (1 + x * (1 - sg));
}

#endif
