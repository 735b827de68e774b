# mk/cuda.mk — the CUDA backend (core/cuda/).
#
#   make CUDA=1        ./ramtrace with the CUDA backend (objects in build-cuda/)
#
# nvcc is taken from PATH, else from the toolkit's standard prefix.  The
# CUDA runtime is linked statically (libcudart_static.a), so binaries carry
# no libcudart dependency (scripts/gpu-bundle); the GPU needs only a driver
# new enough for this toolkit.  Without CUDA=1 the library holds
# core/cuda/rn_cuda_stub.c and `--device cuda` is refused.

NVCC      ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS ?= -O2 -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Werror -Icore
CUDA_LIBS  = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
CU_SRC    := $(wildcard core/cuda/*.cu)
CU_OBJ    := $(CU_SRC:core/cuda/%.cu=$(BUILD)/cuda/%.o)
CU_HDR    := $(wildcard core/cuda/*.h) core/rn_model.h core/rn_config.h core/rn_params.h

ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error make CUDA=1: nvcc not found on PATH nor at /usr/local/cuda/bin/nvcc)
endif
LIB_OBJ += $(CU_OBJ)
LDLIBS  += $(CUDA_LIBS)
else
LIB_OBJ += $(BUILD)/core/cuda/rn_cuda_stub.o
endif

$(BUILD)/cuda/%.o: core/cuda/%.cu $(CU_HDR) mk/cuda.mk
	@mkdir -p $(dir $@)
	@echo "NVCC $<"; $(NVCC) $(NVCCFLAGS) -c $< -o $@
