/* rn_bf16.c — array conversions between FP32 and bf16 (rn_bf16.h). */
#include "rn_bf16.h"

void rn_bf16_round(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = rn_bf16_from_f32(src[i]);
}

void rn_bf16_widen(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = rn_bf16_to_f32(src[i]);
}
