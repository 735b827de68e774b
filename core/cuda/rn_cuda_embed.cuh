/* rn_cuda_embed.cuh — the token embedding's kernels (rn_train.c's embed
 * and its gradient), one source for the CUDA inference runtime
 * (rn_cuda.cu) and the GPU trainer (rn_cuda_train.cu).
 *
 * forward:  x[n,D] = embed[tok[r]], one thread per element
 * backward: gembed[tok[r]] += dres[r], one thread per column walking the
 *           rows in order (the CPU's serial sum, so deterministic)
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_EMBED_CUH
#define RN_CUDA_EMBED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

static __global__ void k_embed_forward(float *x, const float *embed, const int *tok, int n, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    x[i] = embed[(int64_t)tok[i / D] * D + i % D];
}

static __global__ void k_embed_backward(float *gembed, const float *dres, const int *tok, int n, int D)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= D) return;
    for (int r = 0; r < n; r++) gembed[(int64_t)tok[r] * D + i] += dres[(int64_t)r * D + i];
}

#endif
