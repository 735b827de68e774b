/* rn_cuda_gemm.h — the matrix products of the CUDA backend (inference and
 * training), in the CPU layer's row-major terms, on cuBLAS.
 *
 * All matrices are row-major device arrays, as rn_layers.h lays them out:
 * activations [n, width], weights W[O, I] (out_w rows of in_w).  Every call
 * is asynchronous (on the default stream unless rn_cu_gemm_stream says
 * otherwise) and returns the cuBLAS status as a
 * cudaError_t-like int (0 = success); rn_cu_gemm_error() names it.
 *
 * Precision: float32 inputs and outputs.  By default the products use
 * cuBLAS's default math mode, which for SGEMM computes in FP32 (no TF32),
 * so results differ from OpenBLAS's sgemm only by the order of the sums;
 * RN_CUDA_TF32=1 in the environment
 * allows TF32 tensor cores (faster, about 1e-3 relative error: not for the
 * parity tests).
 *
 * The _bf16 products take bfloat16 operands (uint16_t bit patterns, the
 * rounding of rn_bf16.h; rn_cuda_bf16.cuh converts on the device) and run
 * on the bf16 tensor cores with FP32 accumulation; outputs and the
 * accumulated gradients stay FP32 (docs/cuda.md, "Precision of every
 * tensor").
 */
#ifndef RN_CUDA_GEMM_H
#define RN_CUDA_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create the process's cuBLAS handle (idempotent; thread-compatible, not
 * thread-safe: call from the thread that runs the model).  0 on success. */
int rn_cu_gemm_init(void);

/* The math mode of the FP32 products that follow: on = TF32 tensor cores
 * (`--precision tf32`), off = cuBLAS's default FP32 math unless
 * RN_CUDA_TF32=1 is in the environment.  A per-call switch of the
 * process's handle (cheap: host-side), 0 on success. */
int rn_cu_gemm_set_tf32(int on);

/* Run the products that follow on CUDA stream `stream` (a cudaStream_t;
 * NULL: the legacy default stream, where the handle starts). */
int rn_cu_gemm_stream(void *stream);

/* Text of a status returned by the functions below. */
const char *rn_cu_gemm_error(int status);

/* Forward: out[n,O] = in[n,I] · W[O,I]ᵀ  (+= when acc), I = in_w, O = out_w. */
int rn_cu_matmul(float *out, const float *in, const float *W, int n, int in_w, int out_w, int acc);

/* Backward to the input: din[n,I] = dout[n,O] · W[O,I]  (+= when acc). */
int rn_cu_matmul_din(float *din, const float *dout, const float *W, int n, int in_w, int out_w, int acc);

/* Backward to the weight: dW[O,I] += dout[n,O]ᵀ · in[n,I]. */
int rn_cu_matmul_dw(float *dW, const float *dout, const float *in, int n, int in_w, int out_w);

/* The same three products over bf16 operands (FP32 outputs, FP32
 * accumulation, `+=` as above). */
int rn_cu_matmul_bf16(float *out, const uint16_t *in, const uint16_t *W, int n, int in_w, int out_w, int acc);
int rn_cu_matmul_din_bf16(float *din, const uint16_t *dout, const uint16_t *W, int n, int in_w, int out_w,
                          int acc);
int rn_cu_matmul_dw_bf16(float *dW, const uint16_t *dout, const uint16_t *in, int n, int in_w, int out_w);

#ifdef __cplusplus
}
#endif

#endif
