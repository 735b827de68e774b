/* rn_precision.c — the --precision names and the bf16-rounded model copy
 * (rn_precision.h). */
#include "rn_precision.h"

#include <string.h>

#include "rn_bf16.h"

int rn_precision_parse(const char *s, rn_precision *out, rn_error *err)
{
    if (s && !strcmp(s, "fp32")) *out = RN_PREC_FP32;
    else if (s && !strcmp(s, "tf32")) *out = RN_PREC_TF32;
    else if (s && !strcmp(s, "bf16")) *out = RN_PREC_BF16;
    else return rn_seterr(err, RN_EINPUT, "--precision: '%s': expected fp32, tf32 or bf16", s ? s : "");
    return RN_OK;
}

const char *rn_precision_name(rn_precision p)
{
    return p == RN_PREC_BF16 ? "bf16" : p == RN_PREC_TF32 ? "tf32" : "fp32";
}

int rn_precision_bf16_tensor(const rn_tensor_desc *t)
{
    return t->kind == RN_T_MATRIX || t->kind == RN_T_EMBED;
}

void rn_model_round_bf16(rn_model *dst, const rn_model *src)
{
    memcpy(dst->params, src->params, sizeof(rn_real) * (size_t)src->n_block);
    rn_tensor_desc t;
    for (int i = 0; rn_params_tensor(&src->cfg, i, &t) == 0; i++) {
        if (!rn_precision_bf16_tensor(&t)) continue;
        rn_real *p = dst->params + t.offset;
        for (int64_t j = 0; j < t.numel; j++) p[j] = (rn_real)rn_bf16_round_f32((float)p[j]);
    }
}

int rn_model_copy_bf16(rn_model *dst, const rn_model *src, rn_error *err)
{
    int rc = rn_model_create_zero(dst, &src->cfg, err);
    if (rc) return rc;
    rn_model_round_bf16(dst, src);
    return RN_OK;
}
