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
static uint16_t bf16_store_nan(uint32_t u) { return (uint16_t)((u >> 16) | ((u >> 16) & 0x7fu ? 0 : 0x40u)); }

int64_t rn_storage_narrow(int s, const float *src, uint16_t *dst, int64_t n)
{
    const uint16_t inf = s == RN_STORE_BF16 ? 0x7f80u : 0x7c00u;
    if (s == RN_STORE_BF16) rn_bf16_round(dst, src, (size_t)n);
    int64_t bad = -1;
    for (int64_t i = 0; i < n; i++) {
        if (s != RN_STORE_BF16) dst[i] = rn_fp16_from_f32(src[i]);
        else if (isnan(src[i])) {
            uint32_t u;
            memcpy(&u, &src[i], 4);
            dst[i] = bf16_store_nan(u);
        }
        if (bad < 0 && isfinite(src[i]) && (dst[i] & 0x7fffu) == inf) bad = i;
    }
    return bad;
}

int rn_storage_narrow_params(int s, const rn_config *c, const float *params, int64_t at, int64_t n, uint16_t *dst,
                             const char *path, rn_error *err)
{
    int64_t bad = rn_storage_narrow(s, params + at, dst, n);
    if (bad < 0) return RN_OK;
    bad += at;
    rn_tensor_desc t = { 0 };
    for (int i = 0; i < rn_params_count_tensors(c); i++) {
        rn_params_tensor(c, i, &t);
        if (bad >= t.offset && bad < t.offset + t.numel) break;
    }
    return rn_seterr(err, RN_EINPUT, "%s: tensor %s holds %g, which %s cannot store (largest %s)", path, t.name,
                     (double)params[bad], rn_storage_name(s), s == RN_STORE_F16 ? "65504" : "3.39e38");
}

void rn_storage_widen(int s, const uint16_t *src, float *dst, int64_t n)
{
    if (s == RN_STORE_BF16) rn_bf16_widen(dst, src, (size_t)n);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = rn_fp16_to_f32(src[i]);
}
