# ramtrace — build, test, benchmark.
#
#   make            build ./ramtrace and build/libramnet.a
#   make demo       run the main job on the bundled sample
#   make test       run the test suite (CUnit)
#   make test-long  the suite plus slow checks
#   make test-asan  the suite under AddressSanitizer + UBSan
#   make test-clang the suite built with clang
#   make test-portable  the suite under several OpenBLAS kernels and built
#                   with -march=native (the suite must pass on any x86-64)
#   make bench      benchmarks (see bench/)
#
# Targets that build call scripts/setup first, which installs missing
# dependencies with apt-get (Debian 12) and is a no-op when all are present.
# Module fragments (mk/*.mk) may add rules and extend TEST_BINS / BENCH_BINS.

CC      ?= cc
# core/ is in rooms, one per subsystem, ordered so a room includes only
# rooms to its left (docs/design.md; scripts/check-rooms checks it).
# core/cuda/ sits between state and infer; its .cu files are built by
# mk/cuda.mk.  Headers are included by name: every room is on the path.
CORE_ROOMS := base model nn cache state infer train
CORE_INC    = $(patsubst %,-Icore/%,$(CORE_ROOMS) cuda)
BUILD   ?= $(if $(filter 1,$(CUDA)),build-cuda,build)
# No -march=native: the binary (and what `make install` ships) runs on any
# x86-64, and -march=native did not make it faster (docs/portability.md).
# OPT="-O2 -march=native" in a BUILD of its own for that.
OPT     ?= -O2
SAN     ?=
# gcc warns about intended snprintf truncation; clang has no such warning
# These are evaluated lazily (once, on first use), i.e. after scripts/setup
# has installed pkg-config and the libraries on a fresh machine.
WNO      = $(eval WNO := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),,-Wno-format-truncation))$(WNO)
# OpenBLAS's OpenMP build (libopenblas-openmp-dev): BLAS calls share the
# program's OpenMP thread pool instead of a second pthread pool spinning
# against it (measured: a 2-thread training step 285 ms -> 147 ms).
MULTIARCH = $(eval MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu))$(MULTIARCH)
BLASLIB  = /usr/lib/$(MULTIARCH)/openblas-openmp
PKGCFG   = $(eval PKGCFG := -I/usr/include/$(MULTIARCH)/openblas-openmp $(shell pkg-config --cflags sqlite3 cairo libpng libmicrohttpd 2>/dev/null))$(PKGCFG)
PKGLIBS  = $(eval PKGLIBS := -L$(BLASLIB) -Wl,-rpath,$(BLASLIB) $(shell pkg-config --libs sqlite3 cairo libpng libmicrohttpd 2>/dev/null))$(PKGLIBS)
# -fPIC (but in sanitized builds): the archive's objects are also those of
# libramnet.so (mk/api.mk), so the library is compiled once.
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Werror $(WNO) -fopenmp -D_GNU_SOURCE -pthread $(SAN) $(if $(SAN),,-fPIC) \
           $(CORE_INC) -Itrace -Ianalysis -Iviz -Ifigure -Iserve -Icli -I$(BUILD)/gen $(PKGCFG)
LDLIBS  += $(PKGLIBS) -lopenblas -lsqlite3 -lcairo -lpng -lzstd -lmicrohttpd -lm -pthread
LDFLAGS += -fopenmp $(SAN)

LIB_SRC   := $(wildcard $(CORE_ROOMS:%=core/%/*.c) trace/*.c analysis/*.c viz/*.c figure/*.c serve/*.c)
CLI_SRC   := $(wildcard cli/*.c)
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_HELP := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
BENCH_SRC := $(wildcard bench/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o) $(TEST_HELP:%.c=$(BUILD)/%.o)
CMDS      := $(sort $(patsubst cli/cmd_%.c,%,$(wildcard cli/cmd_*.c)))
LIB       := $(BUILD)/libramnet.a
BIN       := $(BUILD)/ramtrace
TEST_BINS :=
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all ramtrace setup demo test test-long test-asan test-clang test-portable bench clean FORCE
all: setup ramtrace $(LIB)

setup:
	@scripts/setup

-include $(wildcard mk/*.mk)

# ./ramtrace is a copy of the binary of the build directory in use, compared
# by content (not by time): after `make BUILD=build-asan ramtrace`, a plain
# `make ramtrace` puts the normal build back.
ramtrace: $(BIN)
	@cmp -s $(BIN) ramtrace || { cp $(BIN) ramtrace.tmp && mv -f ramtrace.tmp ramtrace; }

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The compiler and flags a build directory's objects were made with: a
# change (another OPT, CC or SAN in the same BUILD) rewrites the file, so
# everything is rebuilt rather than objects of two flag sets linked
# together.  install.mk reads it to refuse a CPU-specific build.
# (The build's own -I$(BUILD)/gen is left out: BUILD may be given as a
# relative or an absolute path.)
FLAGS_LINE = $(CC) $(filter-out -I$(BUILD)/gen,$(CFLAGS)) $(LDFLAGS)
$(BUILD)/build-flags: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(subst ','\'',$(FLAGS_LINE))' | cmp -s - $@ || printf '%s\n' '$(subst ','\'',$(FLAGS_LINE))' > $@
FORCE:

$(BUILD)/%.o: %.c $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC $<"; $(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Generated command table: every cli/cmd_NAME.c defines cmd_NAME() and
# cmd_NAME_summary[].
$(BUILD)/gen/commands.h: $(wildcard cli/cmd_*.c) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated by make from cli/cmd_*.c */'; \
	   for c in $(CMDS); do echo "extern int cmd_$$c(int argc, char **argv); extern const char cmd_$${c}_summary[];"; done; \
	   echo 'static const struct cli_command cli_commands[] = {'; \
	   for c in $(CMDS); do echo "    { \"$$c\", cmd_$$c, cmd_$${c}_summary },"; done; \
	   echo '};'; } > $@.tmp && mv $@.tmp $@

# Generated suite table: every tests/test_NAME.c is suite NAME, its tests
# its TH_TEST lines (tests/th.h, scripts/gen-suites).
$(BUILD)/gen/suites.h: $(TEST_SRC) Makefile scripts/gen-suites
	@mkdir -p $(dir $@)
	@scripts/gen-suites $(sort $(TEST_SRC)) > $@.tmp && mv $@.tmp $@

$(BUILD)/cli/main.o: $(BUILD)/gen/commands.h
$(BUILD)/tests/th_main.o: $(BUILD)/gen/suites.h

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

# The study programs too: tests/test_case_kernel.c runs scripts/case-study-kernel-lm
# with the binaries of the build under test.
$(BUILD)/test_runner: $(TEST_OBJ) $(LIB) | $(STUDY_BINS)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJ) $(LIB) $(LDLIBS) -lcunit

$(BUILD)/bench/%: bench/%.c $(LIB) | setup
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The suite runs from the repository root; RAMTRACE_BIN points CLI tests at
# the binary under test.  Every test binary runs even when an earlier one
# fails (the gradient check catches bugs the main suite may not); the
# target fails if any did.
test: setup $(BIN) $(BUILD)/test_runner $(TEST_BINS)
	@rc=0; RAMTRACE_BIN=$(abspath $(BIN)) $(BUILD)/test_runner || rc=1; \
	for t in $(TEST_BINS); do RAMTRACE_BIN=$(abspath $(BIN)) $$t || rc=1; done; \
	$(if $(SAN),,scripts/doc-examples --bin $(abspath $(BIN)) || rc=1;) \
	scripts/check-rooms || rc=1; exit $$rc

test-long:
	RN_TEST_LONG=1 $(MAKE) test

# Sanitized build in its own directory; leaks are errors.
test-asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -fno-omit-frame-pointer" \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    ASAN_OPTIONS=detect_leaks=1 test

# The same build and suite with clang (warnings are errors there too).
test-clang:
	$(MAKE) CC=clang BUILD=build-clang test

# The suite must pass on any x86-64 and any BLAS kernel: it runs once per
# OpenBLAS kernel set of PORTABLE_CORETYPES (those this CPU can execute;
# the others are named as skipped), once per generation-step GEMV kernel
# of PORTABLE_GEMV below the CPU's own (core/nn/rn_gemv.c) and once built
# with -march=native in build-native/.  A summary line names each run and its result.
PORTABLE_CORETYPES ?= Sandybridge Haswell SkylakeX Cooperlake Zen
PORTABLE_NATIVE    ?= -O2 -march=native
PORTABLE_GEMV      ?= c avx2
test-portable: setup
	@flags=$$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null); has() { for f; do case " $$flags " in *" $$f "*) ;; *) return 1;; esac; done; }; \
	res=; rc=0; \
	for ct in $(PORTABLE_CORETYPES); do \
	    case $$ct in Sandybridge) need=avx;; Haswell|Zen) need="avx2 fma";; \
	        SkylakeX) need="avx512f avx512bw avx512dq avx512vl";; Cooperlake) need="avx512f avx512bw avx512vl avx512_bf16";; *) need=;; esac; \
	    if ! has $$need; then res="$$res $$ct:skipped(no $$need)"; continue; fi; \
	    echo "== test-portable: OPENBLAS_CORETYPE=$$ct"; \
	    if OPENBLAS_CORETYPE=$$ct $(MAKE) --no-print-directory test; then res="$$res $$ct:ok"; else res="$$res $$ct:FAILED"; rc=1; fi; \
	done; \
	for k in $(PORTABLE_GEMV); do \
	    echo "== test-portable: RAMTRACE_GEMV=$$k (the generation step's kernel a CPU without the others gets)"; \
	    if RAMTRACE_GEMV=$$k $(MAKE) --no-print-directory test; then res="$$res gemv-$$k:ok"; else res="$$res gemv-$$k:FAILED"; rc=1; fi; \
	done; \
	echo "== test-portable: OPT='$(PORTABLE_NATIVE)' BUILD=build-native"; \
	if $(MAKE) --no-print-directory BUILD=build-native OPT='$(PORTABLE_NATIVE)' test; then res="$$res native:ok"; else res="$$res native:FAILED"; rc=1; fi; \
	echo "test-portable:$$res"; exit $$rc

bench: setup $(BIN) $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

# (mk/sqlext.mk adds the extension, which the demo loads into sqlite3)
demo: setup ramtrace
	@RAMTRACE_SQLEXT=$(basename $(SQLEXT)) scripts/demo

clean:
	rm -rf build build-asan build-cuda build-clang build-native ramtrace

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
