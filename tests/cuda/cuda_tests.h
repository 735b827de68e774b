/* cuda_tests.h — what the GPU test files share: the random test model
 * (tests/cuda/test_cuda_train.c defines it) and the training tests' entry
 * points, linked into test_cuda_parity and the host emulation binary. */
#ifndef CUDA_TESTS_H
#define CUDA_TESTS_H

#include <stdint.h>

#include <CUnit/Basic.h>

#include "rn_model.h"

/* A random model of the GPU tests' shape (V 97, D 64, L 2, H 4, d_v 16,
 * F 96) with order U, d_p, top_k K, CAPE on heads 0 and 2 or none, a tied
 * or untied head and decay exponent gamma.  RN_OK or the error. */
int cuda_test_model(rn_model *m, int U, int dp, int K, int cape, int tied, float gamma, uint64_t seed);

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

#endif
