# mk/api.mk — libramnet.so: the library and its stable C API (api/, the
# header api/ramnet_api.h) as one shared object, which the Python package
# (python/ramtrace/) loads with ctypes.
#
# Built by `make`, `make test` and `make install` from the objects of the
# static library (compiled -fPIC), or apart in sanitized builds.

API_SRC   := $(wildcard api/*.c)
SOLIB     := $(BUILD)/libramnet.so

all: $(SOLIB)
test: $(SOLIB)

ifeq ($(SAN),)
# The library's objects are position-independent (CFLAGS' -fPIC): the .so
# is the whole archive (whatever it holds: the CUDA stubs or, with CUDA=1,
# the CUDA objects; SentencePiece; the viewer's page) plus the API.
API_OBJ   := $(API_SRC:%.c=$(BUILD)/%.o)
$(SOLIB): $(LIB) $(API_OBJ)
	$(CC) -shared -fopenmp -Wl,-soname,libramnet.so -Wl,--no-undefined -o $@ $(API_OBJ) \
	    -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive $(LDLIBS)
else
# A sanitized build's objects are not fit for a .so loaded by processes that
# are not sanitized (python3): its .so is compiled apart, without the
# sanitizers, into $(BUILD)/pic/.
PIC_STUBS := $(if $(filter 1,$(CUDA)),,core/cuda/rn_cuda_stub.c core/cuda/rn_cuda_train_stub.c core/cuda/rn_cuda_nccl_stub.c)
PIC_OBJ   := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC) $(API_SRC) $(PIC_STUBS)) \
             $(patsubst %.cc,$(BUILD)/pic/%.o,$(wildcard core/model/*.cc)) $(BUILD)/pic/gen/srv_assets.o
PIC_CFLAGS = $(filter-out $(SAN),$(CFLAGS)) -fPIC

$(BUILD)/pic/%.o: %.c $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC(pic) $<"; $(CC) $(PIC_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/pic/%.o: %.cc $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CXX(pic) $<"; $(CXX) $(filter-out $(SAN),$(CXXFLAGS)) -fPIC -MMD -MP -c $< -o $@
$(BUILD)/pic/core/cache/rn_cache.o: $(BUILD)/gen/rn_policies.h
$(BUILD)/pic/figure/fig_figure.o: $(BUILD)/gen/fig_kinds.h
$(BUILD)/pic/gen/srv_assets.o: $(BUILD)/gen/srv_assets.c serve/srv_assets.h $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC(pic) $<"; $(CC) $(PIC_CFLAGS) -c $< -o $@

$(SOLIB): $(PIC_OBJ) $(if $(filter 1,$(CUDA)),$(CU_OBJ))
	$(CC) -shared -fopenmp -Wl,-soname,libramnet.so -Wl,--no-undefined -o $@ $^ $(LDLIBS)
endif

# The Python API's overhead over the C forward (bench/bench_python.py).
.PHONY: bench-python
bench-python: $(SOLIB)
	@echo "== bench/bench_python.py"; PYTHONPATH=python /usr/bin/python3 bench/bench_python.py
bench: bench-python
