/* rn_cuda_bf16.cuh — FP32 → bfloat16 on the device, for the operands of the
 * bf16 products (rn_cuda_gemm.h): the bit arithmetic of rn_bf16.h's
 * rn_bf16_from_f32 (round to nearest, ties to even; NaN stays a quiet NaN),
 * written out so the GPU, the host emulation and the CPU's bf16 weights
 * round every value identically.  Included by the .cu files that need it.
 */
#ifndef RN_CUDA_BF16_CUH
#define RN_CUDA_BF16_CUH

#include <stdint.h>

/* f rounded to the nearest bf16 (bit pattern). */
__device__ static inline uint16_t rn_cu_bf16(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* dst[i] = bf16(src[i]) for i < n (one thread an element). */
__global__ static void rn_cu_k_to_bf16(uint16_t *dst, const float *src, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = rn_cu_bf16(src[i]);
}

#endif
