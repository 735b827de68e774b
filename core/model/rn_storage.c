/* rn_storage.c — parameter storage formats of model files (rn_storage.h). */
#include "rn_storage.h"
#include "rn_bf16.h"
#include "rn_fp16.h"

#include <math.h>
#include <string.h>

const char *rn_storage_name(int s)
{
    return s == RN_STORE_BF16 ? "bf16" : s == RN_STORE_F16 ? "fp16" : "fp32";
}

int rn_storage_parse(const char *s)
{
    if (!strcmp(s, "fp32") || !strcmp(s, "f32") || !strcmp(s, "float32")) return RN_STORE_F32;
    if (!strcmp(s, "bf16")) return RN_STORE_BF16;
    if (!strcmp(s, "fp16") || !strcmp(s, "f16")) return RN_STORE_F16;
    return -1;
}

size_t rn_storage_bytes(int s) { return s == RN_STORE_F32 ? 4 : 2; }

/* rn_bf16_from_f32, but a NaN keeps its top 7 payload bits (quiet only
 * when those are 0), so every bf16 NaN read from a file is written back
 * as it was. */
static uint16_t bf16_store(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) <= 0x7f800000u) return rn_bf16_from_f32(f);
    return (uint16_t)((u >> 16) | ((u >> 16) & 0x7fu ? 0 : 0x40u));
}

int64_t rn_storage_narrow(int s, const float *src, uint16_t *dst, int64_t n)
{
    int64_t bad = -1;
    for (int64_t i = 0; i < n; i++) {
        dst[i] = s == RN_STORE_BF16 ? bf16_store(src[i]) : rn_fp16_from_f32(src[i]);
        if (bad < 0 && isfinite(src[i]) && (dst[i] & 0x7fffu) == (s == RN_STORE_BF16 ? 0x7f80u : 0x7c00u)) bad = i;
    }
    return bad;
}

void rn_storage_widen(int s, const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = s == RN_STORE_BF16 ? rn_bf16_to_f32(src[i]) : rn_fp16_to_f32(src[i]);
}
