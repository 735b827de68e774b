/* rn_device.c — the --device choice and its availability check (the
 * CUDA backend answers through core/cuda/rn_cuda.h, stubbed without it). */
#include "rn_device.h"

#include <string.h>

#include "rn_cuda.h"

int rn_device_parse(const char *s, rn_device *out, rn_error *err)
{
    if (!strcmp(s, "cpu")) *out = RN_DEVICE_CPU;
    else if (!strcmp(s, "cuda")) *out = RN_DEVICE_CUDA;
    else return rn_seterr(err, RN_EINPUT, "--device: expected cpu or cuda, got '%s'", s);
    return RN_OK;
}

int rn_device_check(rn_device d, rn_error *err)
{
    if (d == RN_DEVICE_CPU) return RN_OK;
    if (!rn_cuda_built())
        return rn_seterr(err, RN_EINPUT,
                         "--device cuda: this ramtrace was built without CUDA (rebuild with make CUDA=1)");
    if (rn_cuda_device_count() < 1)
        return rn_seterr(err, RN_EINPUT, "--device cuda: no CUDA device");
    return RN_OK;
}

int rn_device_select(const char *arg, rn_device *out, rn_error *err)
{
    *out = RN_DEVICE_CPU;
    if (!arg) return RN_OK;
    int rc = rn_device_parse(arg, out, err);
    if (!rc) rc = rn_device_check(*out, err);
    return rc;
}

int rn_device_default_chunk(rn_device d)
{
    return d == RN_DEVICE_CUDA ? 1024 : 256;
}

int rn_device_check_infer_precision(rn_device d, rn_precision p, rn_error *err)
{
    if (p != RN_PREC_TF32) return RN_OK;
    return rn_seterr(err, RN_EINPUT, "--precision tf32: inference runs fp32 or bf16 (%s)",
                     d == RN_DEVICE_CUDA ? "the GPU's step reads its weights by GEMV, where TF32 gains nothing"
                                         : "TF32 is a GPU tensor-core format");
}

int rn_device_check_precision(rn_device d, rn_precision p, rn_error *err)
{
    if (p == RN_PREC_FP32) return RN_OK;
    if (d == RN_DEVICE_CUDA)
        return rn_seterr(err, RN_EINPUT, "--precision %s: the GPU backend runs fp32 only so far (docs/cuda.md)",
                         rn_precision_name(p));
    if (p == RN_PREC_TF32)
        return rn_seterr(err, RN_EINPUT, "--precision tf32: TF32 is a GPU tensor-core format; the CPU runs fp32 or bf16");
    return RN_OK;
}

int rn_device_check_train_precision(rn_device d, rn_precision p, rn_error *err)
{
    return d == RN_DEVICE_CUDA ? RN_OK : rn_device_check_precision(d, p, err);
}
