/* rn_storage.h — the number format a model file stores its parameters in
 * (docs/model-format.md): float32, bf16 or fp16.  Computation is always
 * float32: a 16-bit file is widened when loaded (exactly: every bf16 and
 * fp16 value is a float32) and a model is narrowed, rounding to nearest
 * even, only when written with a 16-bit storage. */
#ifndef RN_STORAGE_H
#define RN_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "rn_params.h"

enum { RN_STORE_F32 = 0, RN_STORE_BF16 = 1, RN_STORE_F16 = 2 };

/* "fp32", "bf16", "fp16". */
const char *rn_storage_name(int s);

/* The storage named s (fp32/f32/float32, bf16, fp16/f16); -1 if none. */
int rn_storage_parse(const char *s);

/* Bytes per stored parameter (4 or 2). */
size_t rn_storage_bytes(int s);

/* Narrow src[0..n) into the 16-bit storage s.  Returns the index of the
 * first finite value that does not fit (fp16: magnitude ≥ 65520, which
 * would become inf), or -1 when all fit. */
int64_t rn_storage_narrow(int s, const float *src, uint16_t *dst, int64_t n);

/* rn_storage_narrow over parameters [at, at+n) of a model of config c
 * (params: its whole float32 block) into dst: RN_OK, or RN_EINPUT naming
 * path, the tensor and the value when one does not fit storage s. */
int rn_storage_narrow_params(int s, const rn_config *c, const float *params, int64_t at, int64_t n, uint16_t *dst,
                             const char *path, rn_error *err);

/* Widen n values of the 16-bit storage s (exact). */
void rn_storage_widen(int s, const uint16_t *src, float *dst, int64_t n);

#endif
