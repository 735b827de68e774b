# mk/cuda.mk — the CUDA backend (core/cuda/).
#
#   make CUDA=1        ./ramtrace with the CUDA backend (objects in build-cuda/)
#   make test          where nvcc is found: also compiles core/cuda/*.cu and
#                      builds and runs $(BUILD)/test_cuda_parity, which prints
#                      "skipped: no CUDA device" on a machine without a GPU
#   make test-cuda     the parity suite alone (for a machine with a GPU)
#
# nvcc is taken from PATH, else from the toolkit's standard prefix.  The
# CUDA runtime is linked statically (libcudart_static.a), so binaries carry
# no libcudart dependency (scripts/gpu-bundle); cuBLAS is linked shared
# (libcublas.so.13, from the toolkit or PyTorch's nvidia-cublas on the GPU
# machine: scripts/gpu-check finds it).  Without CUDA=1 the library holds
# core/cuda/rn_cuda_stub.c and rn_cuda_train_stub.c, and `--device cuda` is
# refused.

ifeq ($(origin NVCC),undefined)
NVCC      := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS ?= -O2 -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Werror,-fPIC $(CORE_INC)
CUDA_STDCXX ?= -lstdc++
CUDA_LIBS  = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart_static -ldl -lrt $(CUDA_STDCXX)
# NCCL (data-parallel training on GPUs, rn_cuda_nccl.cu) where the toolkit
# ships nccl.h; libnccl.so.2 itself is opened at run time (dlopen), only
# by `train --device cuda --dist`, so binaries run where it is missing.
NCCL_H    ?= $(wildcard $(CUDA_HOME)/include/nccl.h)
ifneq ($(NCCL_H),)
NVCCFLAGS += -DRN_HAVE_NCCL
endif
CU_SRC    := $(wildcard core/cuda/*.cu)
CU_OBJ    := $(CU_SRC:core/cuda/%.cu=$(BUILD)/cuda/%.o)
CU_HDR    := $(wildcard core/cuda/*.h core/cuda/*.cuh) core/nn/rn_labels.h core/model/rn_model.h core/model/rn_config.h core/model/rn_params.h core/model/rn_precision.h \
             core/train/rn_train.h core/nn/rn_adamw.h

ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error make CUDA=1: nvcc not found on PATH nor at /usr/local/cuda/bin/nvcc)
endif
LIB_OBJ += $(CU_OBJ)
LDLIBS  += $(CUDA_LIBS)
else
LIB_OBJ += $(BUILD)/core/cuda/rn_cuda_stub.o $(BUILD)/core/cuda/rn_cuda_train_stub.o $(BUILD)/core/cuda/rn_cuda_nccl_stub.o
endif

$(BUILD)/cuda/%.o: core/cuda/%.cu $(CU_HDR) mk/cuda.mk
	@mkdir -p $(dir $@)
	@echo "NVCC $<"; $(NVCC) $(NVCCFLAGS) -c $< -o $@

# The parity suite: its own CUnit binary, linked with the CUDA objects ahead
# of the library (whose stub member then stays out of the link).
CU_TEST_OBJ := $(BUILD)/tests/cuda/test_cuda_parity.o $(BUILD)/tests/cuda/test_cuda_train.o \
               $(BUILD)/tests/cuda/test_cuda_bf16.o
$(BUILD)/test_cuda_parity: $(CU_TEST_OBJ) $(CU_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CU_TEST_OBJ) $(CU_OBJ) $(LIB) $(LDLIBS) $(if $(filter 1,$(CUDA)),,$(CUDA_LIBS)) -lcunit

ifneq ($(NVCC),)
TEST_BINS += $(BUILD)/test_cuda_parity
endif

.PHONY: test-cuda
test-cuda: setup $(BUILD)/test_cuda_parity
	RN_CUDA_REQUIRE=1 $(BUILD)/test_cuda_parity

# GPU benchmark (bench/cuda/bench_cuda.c), linked like the parity suite;
# not part of `make bench` (it needs a GPU): `make bench-cuda`.
CU_BENCH_OBJ := $(BUILD)/bench/cuda/bench_cuda.o
$(BUILD)/bench/cuda/bench_cuda.o: bench/cuda/bench_cuda.c $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC $<"; $(CC) $(CFLAGS) -Ibench -I$(CUDA_HOME)/include -MMD -MP -c $< -o $@
$(BUILD)/bench_cuda: $(CU_BENCH_OBJ) $(CU_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CU_BENCH_OBJ) $(CU_OBJ) $(LIB) $(LDLIBS) $(if $(filter 1,$(CUDA)),,$(CUDA_LIBS))

.PHONY: bench-cuda
bench-cuda: setup $(BUILD)/bench_cuda
	$(BUILD)/bench_cuda all

# The GPU trainer's kernels compiled for the host (tests/cuda/emu/: a
# minimal CUDA runtime whose launches run blocks in turn and threads as
# coroutines), run by `make test` against the CPU trainer with the same
# tests as the parity suite.  Checks logic and indexing anywhere; the GPU's
# own rounding and concurrency only test_cuda_parity checks.
CXX_EMU   ?= g++
EMU_CXXFLAGS = -std=c++17 -O2 -g -Wall -Wextra -Werror -Wno-unknown-pragmas $(SAN) -DRN_CUDA_TRAIN_NT=32 \
               -Itests/cuda/emu $(CORE_INC) $(PKGCFG)
$(BUILD)/emu/rn_cuda_train_emu.cpp: core/cuda/rn_cuda_train.cu | setup
	@mkdir -p $(dir $@)
	@sed -E 's/([A-Za-z_][A-Za-z_0-9]*)<<<(.*)>>>\(/EMU_LAUNCH(\1, \2)(/' $< > $@.tmp && mv $@.tmp $@
EMU_HDR   := $(CU_HDR) $(wildcard tests/cuda/emu/*.h)
$(BUILD)/emu/rn_cuda_train_emu.o: $(BUILD)/emu/rn_cuda_train_emu.cpp $(EMU_HDR)
	@echo "CXX $< (host emulation)"; $(CXX_EMU) $(EMU_CXXFLAGS) -c $< -o $@
# the shared layer kernels (core/cuda/, .cuh) at the inference block size
$(BUILD)/emu/emu_layers.o: tests/cuda/emu/emu_layers.cpp $(EMU_HDR) | setup
	@mkdir -p $(dir $@)
	@echo "CXX $< (host emulation)"; $(CXX_EMU) $(EMU_CXXFLAGS) -c $< -o $@
# the step's GEMV kernels (rn_cuda_gemv.cuh) at the inference block size
$(BUILD)/emu/emu_gemv.o: tests/cuda/emu/emu_gemv.cpp $(EMU_HDR) | setup
	@mkdir -p $(dir $@)
	@echo "CXX $< (host emulation)"; $(CXX_EMU) $(EMU_CXXFLAGS) -c $< -o $@
# the inference runtime (rn_cuda.cu) rewritten the same way, against the
# CPU runtime by the GPU parity suite's inference tests (compiled again
# without their main); the rewrite drops launch streams, so a
# parameter used only there looks unused, as do the trainer's kernels of
# the shared headers
$(BUILD)/emu/rn_cuda_emu.cpp: core/cuda/rn_cuda.cu | setup
	@mkdir -p $(dir $@)
	@sed -E 's/([A-Za-z_][A-Za-z_0-9]*)<<<(.*)>>>\(/EMU_LAUNCH(\1, \2)(/' $< > $@.tmp && mv $@.tmp $@
$(BUILD)/emu/rn_cuda_emu.o: $(BUILD)/emu/rn_cuda_emu.cpp $(EMU_HDR) $(wildcard tests/cuda/emu/cub/*.cuh)
	@echo "CXX $< (host emulation)"; $(CXX_EMU) $(EMU_CXXFLAGS) -Wno-unused-parameter -Wno-unused-function -MMD -MP -c $< -o $@
$(BUILD)/emu/test_cuda_parity_emu.o: tests/cuda/test_cuda_parity.c tests/cuda/cuda_tests.h $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC $< (host emulation)"; $(CC) $(CFLAGS) -DRN_CUDA_EMU -MMD -MP -c $< -o $@
EMU_OBJ := $(BUILD)/emu/rn_cuda_train_emu.o $(BUILD)/emu/emu_layers.o $(BUILD)/emu/emu_gemv.o $(BUILD)/tests/cuda/emu/emu_gemm.o \
           $(BUILD)/emu/rn_cuda_emu.o $(BUILD)/emu/test_cuda_parity_emu.o \
           $(BUILD)/tests/cuda/emu/emu_main.o $(BUILD)/tests/cuda/test_cuda_train.o $(BUILD)/tests/cuda/test_cuda_bf16.o
# linked by $(CC) (its OpenMP runtime: libgomp or clang's libomp) with libstdc++
$(BUILD)/test_cuda_train_emu: $(EMU_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(EMU_OBJ) $(LIB) $(LDLIBS) -lcunit -lstdc++
ifneq ($(shell command -v $(CXX_EMU) 2>/dev/null),)
TEST_BINS += $(BUILD)/test_cuda_train_emu
endif

# the emulated runtime's and parity suite's header dependencies (-MMD above)
-include $(BUILD)/emu/rn_cuda_emu.d $(BUILD)/emu/test_cuda_parity_emu.d
