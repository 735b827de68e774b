/* rn_precision.h — `--precision fp32|tf32|bf16`: the number format a model's
 * products run in.
 *
 * fp32: everything in FP32 (the reference).  tf32: FP32 storage, products
 * on TF32 tensor cores (a GPU mode; the CPU refuses it).  bf16: the weight
 * matrices — embedding, q/k/v/o projections, the MLP's gate/up/down and
 * lm_head — rounded to bf16 (rn_bf16.h); norm gains, the α scalars and
 * every activation, sum and memory-state value stay FP32.  On the CPU, bf16
 * is "bf16 weights, FP32 arithmetic": a product over bf16 weights equals
 * the FP32 product over the rounded weights, up to the order of summation
 * (docs/inference.md).  Model files and checkpoints always hold FP32.
 */
#ifndef RN_PRECISION_H
#define RN_PRECISION_H

#include "rn_error.h"
#include "rn_model.h"

typedef enum { RN_PREC_FP32 = 0, RN_PREC_TF32 = 1, RN_PREC_BF16 = 2 } rn_precision;

/* Parse "fp32", "tf32" or "bf16" (RN_EINPUT naming --precision otherwise). */
int rn_precision_parse(const char *s, rn_precision *out, rn_error *err);
const char *rn_precision_name(rn_precision p);

/* 1 when tensor t (rn_params.h) is stored in bf16 under --precision bf16:
 * the matrices and embeddings, not the norm gains or α scalars. */
int rn_precision_bf16_tensor(const rn_tensor_desc *t);

/* *dst = a copy of src (block owned) whose bf16 tensors hold their values
 * rounded to bf16: the model that `--precision bf16` computes with, for
 * the paths that run FP32 kernels over it (eval, the trainer's forward). */
int rn_model_copy_bf16(rn_model *dst, const rn_model *src, rn_error *err);
/* The same into an existing model of src's config (the bf16 trainer's
 * compute copy, refreshed from the FP32 master after each update). */
void rn_model_round_bf16(rn_model *dst, const rn_model *src);

#endif
