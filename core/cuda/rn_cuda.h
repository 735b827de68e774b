/* rn_cuda.h — the CUDA backend's C interface, used by rn_runtime.c.
 *
 * Built from core/cuda/rn_cuda.cu with `make CUDA=1`; in other builds
 * core/cuda/rn_cuda_stub.c defines the same functions, reporting that the
 * binary has no CUDA.  The GPU runtime mirrors rn_runtime: weights uploaded
 * once, the memory state (S, z of every head) resident on the device,
 * forward over up to max_chunk rows per call; one row is the generation
 * step.  Only logits come back to the host.
 */
#ifndef RN_CUDA_H
#define RN_CUDA_H

#include <stdint.h>

#include "rn_error.h"
#include "rn_model.h"
#include "rn_precision.h"
#include "rn_probe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rn_cuda_rt rn_cuda_rt;

/* Non-zero when this binary was built with the CUDA backend. */
int rn_cuda_built(void);

/* Number of usable CUDA devices (0 when none or when the driver is
 * missing); -1 in a build without CUDA. */
int rn_cuda_device_count(void);

/* RN_OK when the GPU path supports config c (e.g. K <= RN_CUDA_MAX_K);
 * otherwise RN_EINPUT with the reason. */
int rn_cuda_supported(const rn_config *c, rn_error *err);

int rn_cuda_rt_create(const rn_model *m, int max_chunk, rn_cuda_rt **out, rn_error *err);
void rn_cuda_rt_free(rn_cuda_rt *g);

/* Compute from now on in precision p: RN_PREC_FP32, or RN_PREC_BF16 — m's
 * matrices and embedding uploaded again rounded to bf16 (rn_bf16_round, the
 * CPU's rounding) in place of their FP32 copy, read by the step's GEMV with
 * FP32 activations and by the prefill's bf16 tensor-core products over
 * activations rounded to bf16 (docs/cuda.md).  m must be the model the
 * runtime was created from.  The memory state is kept.  RN_EINPUT for
 * tf32; RN_ENOMEM when the device is out of memory (the runtime is then
 * unusable: free it). */
int rn_cuda_rt_set_precision(rn_cuda_rt *g, const rn_model *m, rn_precision p, rn_error *err);

/* S = 0, z = 1/M on every head. */
int rn_cuda_rt_reset(rn_cuda_rt *g, rn_error *err);

/* Forward n <= max_chunk rows of tokens at positions pos..pos+n-1; logits
 * as in rn_prefill ([V] for the last row, [n,V] when all_rows, or NULL).
 * With a probe, each layer's slots, addresses and weights of all n rows come
 * back in one copy after its memory scan and are reported exactly as the
 * CPU's prefill reports them (rn_probe.h: head-major; per position the K
 * writes, then the K reads). */
int rn_cuda_forward(rn_cuda_rt *g, const int *tokens, int n, int64_t pos, float *logits,
                    int all_rows, const rn_probe *probe, rn_error *err);

/* The GPU address decoder alone, for the parity tests: n rows of keys
 * a[n, H·U·d_p] (host memory), per-head log-scales alpha[H], positions
 * pos0..; slot[n,H,K] and w[n,H,K] (host) as rn_address_forward gives. */
int rn_cuda_decode(const float *a, const float *alpha, const rn_config *c, uint64_t cape_mask,
                   int n, int64_t pos0, uint32_t *addr, uint32_t *slot, float *w, rn_error *err);

#ifdef __cplusplus
}
#endif

#endif
