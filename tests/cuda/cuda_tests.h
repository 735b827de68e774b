/* cuda_tests.h — what the GPU test files share: the random test model
 * (tests/cuda/test_cuda_train.c defines it) and the training tests' entry
 * points, linked into test_cuda_parity and the host emulation binary. */
#ifndef CUDA_TESTS_H
#define CUDA_TESTS_H

#include <stdint.h>

#include <CUnit/Basic.h>

#include "rn_model.h"
#include "rn_rng.h"
#include "rn_train_loop.h"

/* A random model of the GPU tests' shape (V 97, D 64, L 2, H 4, d_v 16,
 * F 96) with order U, d_p, top_k K, CAPE on heads 0 and 2 or none, a tied
 * or untied head and decay exponent gamma.  RN_OK or the error. */
int cuda_test_model(rn_model *m, int U, int dp, int K, int cape, int tied, float gamma, uint64_t seed);

/* B·T = n random tokens below V; about half the targets labelled. */
void cuda_test_batch(rn_rng *r, int V, int n, int *tok, int *tgt);

/* max |g − c| / max |c| over n values (|c| = 0 everywhere: max |g − c|). */
double cuda_test_rel(const float *g, const float *c, int64_t n);

/* The step losses a training run reports (STEP events; log_every = 1). */
#define CUDA_TEST_MAX_STEPS 320
typedef struct { double loss[CUDA_TEST_MAX_STEPS]; int n; } cuda_loss_log;

/* The loop tests' MQAR run: a 2-layer model, 8 steps of 2 × 64 with two
 * micro-batches, K annealed from 8 (reads from 16), evaluation and
 * checkpoints every 4 steps.  RN_OK or the error (printed). */
int cuda_test_loop_config(rn_config *c, rn_train_opts *o);

/* One rn_train_run of config c with options base (its precision) on
 * `device`, stop_after / resume (NULL: none) as the options, the model to
 * out (its checkpoint out.ckpt); the step losses into lg.  RN_OK or the
 * error (printed). */
int cuda_test_loop_run(const rn_config *c, const rn_train_opts *base, int device, int64_t stop_after,
                       const char *resume, const char *out, cuda_loss_log *lg);

/* 4 steps of the run in options first on device dev1, then the rest
 * resumed from its checkpoint in options second on dev2 (out and its
 * .ckpt as cuda_test_loop_run); RN_OK or the error. */
int cuda_test_split_run(const rn_config *c, const rn_train_opts *first, int dev1, const rn_train_opts *second,
                        int dev2, const char *out, cuda_loss_log *lg);

/* Remove a run's model file out and its checkpoint out.ckpt. */
void cuda_test_remove_run(const char *out);

/* The inference tests (tests/cuda/test_cuda_parity.c: the GPU runtime
 * against the CPU's, fp32 and bf16) and their summary lines;
 * rn_cuda_parity_quick = 1 runs three of the eight model shapes over
 * shorter sequences (the host emulation). */
void rn_cuda_parity_tests(CU_pSuite s);
void rn_cuda_parity_summary(void);
extern int rn_cuda_parity_quick;

/* The training tests (GPU trainer against the CPU's) and their summary. */
void rn_cuda_train_tests(CU_pSuite s);
void rn_cuda_train_summary(void);
extern int rn_cuda_train_test_steps;
extern int rn_cuda_train_test_exact;

/* --precision bf16 (and tf32) on the GPU trainer (test_cuda_bf16.c): the
 * short tests, run in the host emulation and on the GPU; the 300-step
 * curves, on a GPU only; and the summary. */
void rn_cuda_bf16_tests(CU_pSuite s);
void rn_cuda_bf16_gpu_tests(CU_pSuite s);
void rn_cuda_bf16_summary(void);

#endif
