/* rn_cuda_train.h — training on the GPU: the CUDA counterpart of
 * core/train/rn_train.h's rn_trainer plus AdamW (core/nn/rn_adamw.h), with the
 * parameters, their gradients and both AdamW moments resident on the
 * device.
 *
 * Built from core/cuda/rn_cuda_train.cu with nvcc; in builds without CUDA
 * core/cuda/rn_cuda_train_stub.c defines the same functions, each
 * reporting that the binary has no CUDA.  The math is the CPU trainer's op
 * for op (rn_train.c and the layer files); docs/cuda.md, "Training on the
 * GPU", gives the design and the precision notes.
 *
 * The host model is read once, at create (its parameter block is uploaded);
 * after that the device copy is the one that trains.  rn_cuda_trainer_get_state
 * brings parameters and moments back (checkpoints, evaluation) and
 * rn_cuda_trainer_set_state sends them (resume), so the checkpoint format is
 * the CPU's.
 */
#ifndef RN_CUDA_TRAIN_H
#define RN_CUDA_TRAIN_H

#include <stdint.h>

#include "rn_adamw.h"
#include "rn_error.h"
#include "rn_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rn_cuda_trainer rn_cuda_trainer;

/* A trainer for model m's config computing in `precision` (rn_precision:
 * RN_PREC_FP32; RN_PREC_TF32, the FP32 products on TF32 tensor cores; or
 * RN_PREC_BF16, llm.c's recipe: every product on bf16 operands — the
 * weights' bf16 copy, refreshed by AdamW, and the rounded activations and
 * output gradients — with FP32 accumulation and outputs, while parameters,
 * gradients, moments, norms, the decoder, the scan and the cross-entropy
 * stay FP32; docs/cuda.md, "Precision of every tensor"), with room for
 * max_rows = B·T rows and
 * max_lab labelled rows, the proxy gradient's eps_g, and room for up to
 * kw_max write (>= top_k) and kr_max read addresses per (row, head) (0 =
 * the model's top_k; top-K annealing uses larger ones, a read K below
 * top_k smaller ones: rn_cuda_trainer_set_topk).  Uploads m's parameters;
 * moments and gradients start at zero.  The writes' K starts at top_k, the
 * reads' at min(top_k, kr_max).  One device allocation, nothing per step. */
int rn_cuda_trainer_create(rn_cuda_trainer **out, const rn_model *m, int max_rows, int max_lab,
                           double eps_g, int kw_max, int kr_max, int precision, rn_error *err);
void rn_cuda_trainer_free(rn_cuda_trainer *tr);

/* Device bytes of the trainer (parameters, gradients, moments, workspace). */
size_t rn_cuda_trainer_bytes(const rn_cuda_trainer *tr);

/* The K of the writes and of the reads for the next forward (the CPU's
 * rn_trainer_create_kr with the model's top_k set to kw); each within
 * 1..the create-time room. */
int rn_cuda_trainer_set_topk(rn_cuda_trainer *tr, int kw, int kr, rn_error *err);

/* As rn_trainer_forward: B sequences of T (tokens, targets host arrays,
 * RN_IGNORE unlabelled); *loss the mean cross-entropy over labelled rows. */
int rn_cuda_trainer_forward(rn_cuda_trainer *tr, const int *tokens, const int *targets, int B, int T,
                            double *loss, rn_error *err);

/* After a forward: labelled rows, Σ −log p(target), and per labelled row
 * whether the argmax is the target (host copy). */
int rn_cuda_trainer_n_labelled(const rn_cuda_trainer *tr);
double rn_cuda_trainer_loss_sum(const rn_cuda_trainer *tr);
const uint8_t *rn_cuda_trainer_correct(const rn_cuda_trainer *tr);
const int *rn_cuda_trainer_label_rows(const rn_cuda_trainer *tr); /* row indices, row order */

/* As rn_trainer_backward: gradients of the last forward's loss times scale
 * are added into the device gradient block. */
int rn_cuda_trainer_backward(rn_cuda_trainer *tr, double scale, rn_error *err);

int rn_cuda_trainer_zero_grads(rn_cuda_trainer *tr, rn_error *err);

/* Copy the gradient block (n_block floats, the parameter layout) to host. */
int rn_cuda_trainer_grads(rn_cuda_trainer *tr, float *out, rn_error *err);

/* L2 norm of the gradient block (double accumulation). */
int rn_cuda_trainer_grad_norm(rn_cuda_trainer *tr, double *norm, rn_error *err);

/* One AdamW update on the device, as rn_adamw_update(c, params, grads, m1,
 * m2, o, step, lr, gscale). */
int rn_cuda_trainer_adamw(rn_cuda_trainer *tr, const rn_adamw_opts *o, int64_t step, double lr,
                          double gscale, rn_error *err);

/* The same for the elements [lo, hi) of the block only (a rank's shard,
 * ZeRO-1: rn_adamw_update_range): grad is a device array whose grad[0] is
 * element lo's gradient; the device parameters and moments of [lo, hi)
 * change, the rest stay. */
int rn_cuda_trainer_adamw_range(rn_cuda_trainer *tr, const float *grad, const rn_adamw_opts *o,
                                int64_t step, double lr, double gscale, int64_t lo, int64_t hi,
                                rn_error *err);

/* Σ g² (double) of the device array g[0..n). */
int rn_cuda_trainer_sumsq(rn_cuda_trainer *tr, const float *g, int64_t n, double *sumsq, rn_error *err);

/* The device addresses of the parameter, gradient and moment blocks and
 * their length (for the collectives of rn_cuda_nccl.h). */
void rn_cuda_trainer_block(rn_cuda_trainer *tr, float **params, float **grad, float **m1, float **m2,
                           int64_t *n);

/* Parameters and AdamW moments, n_block floats each: download (any of the
 * three may be NULL) and upload (all three). */
int rn_cuda_trainer_get_state(rn_cuda_trainer *tr, float *params, float *m1, float *m2, rn_error *err);
int rn_cuda_trainer_set_state(rn_cuda_trainer *tr, const float *params, const float *m1,
                              const float *m2, rn_error *err);

/* The trainer's PDMA scan alone, for tests: forward and backward of B
 * sequences of T rows and H heads (M slots, d_v columns, Kw writes and Kr
 * reads a row and head) from the reset state, in rn_pdma_train_forward /
 * _backward's layouts over all heads (v, dout, o, dv: [B·T, H·d_v]; wslot,
 * ww, dww: [B·T, H, Kw]; rslot, rw, drw: [B·T, H, Kr]).  Allocates and
 * frees its own device memory. */
int rn_cuda_pdma_train_run(float *o, float *dv, float *dww, float *drw, const float *v,
                           const uint32_t *wslot, const float *ww, const uint32_t *rslot,
                           const float *rw, const float *dout, int B, int T, int H, int Kw, int Kr,
                           int d_v, int64_t M, float gamma, float eps, float eps_g, rn_error *err);

/* --precision bf16: the weights the next forward's products read (n_block
 * bf16 bit patterns, the parameter layout), as the host's rn_bf16_from_f32
 * of the FP32 parameters; RN_EINPUT under another precision. */
int rn_cuda_trainer_weights_bf16(rn_cuda_trainer *tr, uint16_t *out, rn_error *err);

/* The last forward's top-K of layer l (writes when `writes`, else reads):
 * addresses and unquantised weights, [B·T, H, K] each, K the writes' or the
 * reads' current K (either array may be NULL).  For the precision tests. */
int rn_cuda_trainer_topk(rn_cuda_trainer *tr, int l, int writes, uint32_t *addr, float *w, rn_error *err);

#ifdef __cplusplus
}
#endif

#endif
