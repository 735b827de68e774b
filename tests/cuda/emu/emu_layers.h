/* emu_layers.h — the emulated layer-kernel tests (emu_layers.cpp), run by
 * the host emulation binary beside the GPU trainer's parity tests. */
#ifndef RN_CUDA_EMU_LAYERS_H
#define RN_CUDA_EMU_LAYERS_H

#include <CUnit/Basic.h>

void rn_cuda_emu_layer_tests(CU_pSuite s);
/* the step's GEMV kernels (emu_gemv.cpp) */
void rn_cuda_emu_gemv_tests(CU_pSuite s);

#endif
