/* rn_fp16.h — IEEE binary16 (fp16: 5 exponent bits, 10 mantissa bits), a
 * storage format of model files (docs/model-format.md).  Widening is exact;
 * narrowing rounds to nearest, ties to even, subnormals included.  Written
 * out because C11 has no half type and clang 14 has no _Float16 on x86-64;
 * tests/test_storage.c checks both directions against independent
 * computations on every fp16 value (and gcc's _Float16 where it exists). */
#ifndef RN_FP16_H
#define RN_FP16_H

#include <stdint.h>
#include <string.h>

/* FP32 → fp16, rounded to nearest even: a NaN stays a NaN, a value
 * of magnitude ≥ 65520 (past the largest fp16, 65504, by half an ulp or
 * more) becomes ±inf, one below 2^-14 a subnormal or ±0. */
static inline uint16_t rn_fp16_from_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) { /* NaN: its top 10 payload bits kept (quiet if those are 0), so fp16 NaNs round-trip */
        uint32_t m = (ax >> 13) & 0x3ffu;
        return (uint16_t)(sign | 0x7c00u | (m ? m : 0x200u));
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                         /* ±inf */
    if (ax < 0x38800000u) {                                                           /* below 2^-14 */
        if (ax <= 0x33000000u) return (uint16_t)sign; /* ≤ 2^-25: 0 (2^-25 is a tie, to the even 0) */
        uint32_t shift = 126 - (ax >> 23), mant = (ax & 0x7fffffu) | 0x800000u;
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++; /* 0x400 is the smallest normal: right too */
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u; /* the exponent rebiased from 127 to 15 */
    uint32_t q = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* a carry moves into the exponent, as it should */
    return (uint16_t)(sign | q);
}

/* fp16 → FP32 (exact). */
static inline float rn_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
    else if (e) x = sign | ((e + 112) << 23) | (m << 13);
    else {
        float v = (float)m * 0x1p-24f; /* a subnormal: m · 2^-24, exact */
        memcpy(&x, &v, 4);
        x |= sign;
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#endif
