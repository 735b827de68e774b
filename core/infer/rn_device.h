/* rn_device.h — which device runs a model (--device cpu|cuda) and the
 * check that the chosen one is usable in this binary on this machine. */
#ifndef RN_DEVICE_H
#define RN_DEVICE_H

#include "rn_error.h"
#include "rn_precision.h"

typedef enum { RN_DEVICE_CPU = 0, RN_DEVICE_CUDA = 1 } rn_device;

/* Parse "cpu" or "cuda" (RN_EINPUT naming --device otherwise). */
int rn_device_parse(const char *s, rn_device *out, rn_error *err);

/* RN_OK when device d can run here; RN_EINPUT with a one-line reason
 * naming --device when the binary has no CUDA or the machine no GPU. */
int rn_device_check(rn_device d, rn_error *err);

/* Parse and check --device ARG (NULL: cpu).  RN_EINPUT with a one-line
 * message naming --device on any refusal. */
int rn_device_select(const char *arg, rn_device *out, rn_error *err);

/* RN_OK when device d computes in precision p; else RN_EINPUT naming
 * --precision: tf32 is a GPU tensor-core format (the CPU refuses it), and
 * the GPU backend runs fp32 only so far. */
int rn_device_check_precision(rn_device d, rn_precision p, rn_error *err);

/* The same for the trainer's forward and backward (train, eval): on the
 * GPU fp32, tf32 (TF32 tensor cores) and bf16 (bf16 products, FP32 master:
 * rn_cuda_train.h); on the CPU fp32 and bf16. */
int rn_device_check_train_precision(rn_device d, rn_precision p, rn_error *err);

/* The same for inference (run, trace: the runtime, rn_runtime.h): fp32
 * and bf16 on either device (on the GPU, bf16 weights in its step GEMV
 * and bf16 tensor-core prefill products: docs/cuda.md); tf32 refused. */
int rn_device_check_infer_precision(rn_device d, rn_precision p, rn_error *err);

/* Default prefill rows per forward call on device d: 256 on the CPU (the
 * activations stay in cache), 1024 on the GPU (its products need a thousand
 * rows or more to fill the chip; 2048 measured no faster: docs/cuda.md). */
int rn_device_default_chunk(rn_device d);

#endif
