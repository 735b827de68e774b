# mk/fuzz.mk — fuzz targets (tests/fuzz/, docs/fuzzing.md).
#
# Every tests/fuzz/fuzz_NAME.c is a libFuzzer target NAME.  Two builds:
#
#   make test   links each target with tests/fuzz/replay.c (a plain main, the
#               normal compiler and flags) into $(BUILD)/fuzz/replay_NAME and
#               replays tests/fuzz/corpus/NAME and tests/fuzz/crashes/NAME
#               (so test-asan and test-clang replay them too).
#   make fuzz   builds every target with clang, libFuzzer, ASan and UBSan in
#               build-fuzz/ and runs each for FUZZ_SECONDS (default 60) on
#               its corpus; new inputs go to build-fuzz/corpus/NAME, crashes
#               to build-fuzz/crashes/NAME-*.  FUZZ=trace runs one target;
#               tests/fuzz/NAME.options holds a target's own libFuzzer flags.

FUZZ_TARGETS := $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_COMMON  := $(filter-out tests/fuzz/fuzz_%.c tests/fuzz/replay.c,$(wildcard tests/fuzz/*.c))
FUZZ_REPLAY  := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)
FUZZ_SECONDS ?= 60
FUZZ         ?= $(FUZZ_TARGETS)
FUZZ_BUILD   ?= build-fuzz
FUZZ_FLAGS   ?=

TEST_BINS += $(FUZZ_REPLAY)

.PHONY: fuzz fuzz-bins fuzz-run
# keep the objects of these chained rules (make would delete them)
.PRECIOUS: $(BUILD)/tests/fuzz/%.o

# Static pattern rules (only the listed targets), so make never tries them
# on other names such as the dependency files.
$(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/replay_%.o): $(BUILD)/tests/fuzz/replay_%.o: tests/fuzz/replay.c $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC $< ($*)"; $(CC) $(CFLAGS) -DFUZZ_TARGET_NAME='"$*"' -MMD -MP -c $< -o $@

$(FUZZ_REPLAY): $(BUILD)/fuzz/replay_%: $(BUILD)/tests/fuzz/replay_%.o $(BUILD)/tests/fuzz/fuzz_%.o \
                        $(FUZZ_COMMON:%.c=$(BUILD)/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The libFuzzer build: the whole library instrumented (fuzzer-no-link), its
# C++ file (rn_spm.cc) with clang++ too, the targets linked with libFuzzer's
# main; UBSan's vptr check is left out (its runtime is C++'s, which the C
# link of the targets does not bring).
fuzz:
	$(MAKE) CC=clang CXX=clang++ BUILD=$(FUZZ_BUILD) OPT="-O1 -fno-omit-frame-pointer" \
	    SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined" fuzz-run

fuzz-bins: $(FUZZ:%=$(BUILD)/fuzz/%)

$(FUZZ_TARGETS:%=$(BUILD)/fuzz/%): $(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_COMMON:%.c=$(BUILD)/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# Every target runs even when one finds a crash; the status says if any did.
fuzz-run: setup fuzz-bins
	@fail=; for t in $(FUZZ); do \
	    mkdir -p $(BUILD)/corpus/$$t $(BUILD)/crashes tests/fuzz/crashes/$$t; \
	    echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	    $(BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=20 -print_final_stats=1 \
	        $$(cat tests/fuzz/$$t.options 2>/dev/null) \
	        -artifact_prefix=$(BUILD)/crashes/$$t- $(FUZZ_FLAGS) \
	        $(BUILD)/corpus/$$t tests/fuzz/corpus/$$t tests/fuzz/crashes/$$t || fail="$$fail $$t"; \
	done; \
	if [ -n "$$fail" ]; then echo "fuzz: crashes in:$$fail (inputs in $(BUILD)/crashes/)"; exit 1; fi
