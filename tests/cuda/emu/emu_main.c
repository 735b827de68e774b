/* emu_main.c — the GPU trainer's parity tests (tests/cuda/test_cuda_train.c)
 * run against its kernels compiled for the host (tests/cuda/emu/
 * cuda_runtime.h), and the shared layer kernels at the inference runtime's
 * block size (emu_layers.cpp): checks the kernels' logic and indexing on
 * any machine; the GPU itself is checked by test_cuda_parity. */
#include <stdio.h>

#include <CUnit/Basic.h>

#include "../cuda_tests.h"
#include "emu_layers.h"

int main(void)
{
    rn_cuda_train_test_steps = 3; /* the emulation is slow; a few steps reach clipping and warm-up */
    rn_cuda_train_test_exact = 1; /* the host's pow is the CPU trainer's */
    rn_cuda_parity_quick = 1;     /* and the inference tests on 3 of 8 shapes (tied and untied, CAPE on
                                   * and off), shorter sequences */
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("cuda_train_emu", NULL, NULL);
    rn_cuda_parity_tests(s);
    rn_cuda_train_tests(s);
    rn_cuda_bf16_tests(s);
    rn_cuda_emu_layer_tests(s);
    rn_cuda_emu_gemv_tests(s);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    printf("(host emulation) ");
    rn_cuda_parity_summary();
    printf("(host emulation) ");
    rn_cuda_train_summary();
    printf("(host emulation) ");
    rn_cuda_bf16_summary();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
