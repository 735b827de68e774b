/* rn_bf16.h — bfloat16: the upper 16 bits of an IEEE FP32 (8 exponent bits,
 * 7 mantissa bits), the storage format of `--precision bf16` weights.
 * Widening is exact; rounding is to nearest, ties to even. */
#ifndef RN_BF16_H
#define RN_BF16_H

#include <stddef.h>
#include <stdint.h>

/* FP32 → bf16, rounded to nearest even (a NaN stays a quiet NaN, ±inf
 * stays ±inf, a finite value past the largest bf16 rounds to ±inf). */
static inline uint16_t rn_bf16_from_f32(float f)
{
    union { float f; uint32_t u; } v = { f };
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40); /* NaN */
    v.u += 0x7fffu + ((v.u >> 16) & 1);
    return (uint16_t)(v.u >> 16);
}

/* bf16 → FP32 (exact). */
static inline float rn_bf16_to_f32(uint16_t b)
{
    union { uint32_t u; float f; } v = { (uint32_t)b << 16 };
    return v.f;
}

/* f rounded to the nearest bf16, as an FP32. */
static inline float rn_bf16_round_f32(float f) { return rn_bf16_to_f32(rn_bf16_from_f32(f)); }

/* Round n FP32 values to bf16 / widen n bf16 values to FP32. */
void rn_bf16_round(uint16_t *dst, const float *src, size_t n);
void rn_bf16_widen(float *dst, const uint16_t *src, size_t n);

#endif
