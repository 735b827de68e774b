# studies.mk — case-study programs (studies/*.c), each linked against the
# library; scripts/case-study-* build and run them.

STUDY_BINS := $(patsubst studies/%.c,$(BUILD)/studies/%,$(wildcard studies/*.c))

$(BUILD)/studies/%: studies/%.c $(wildcard studies/*.h) $(LIB) | setup
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

studies: $(STUDY_BINS)
.PHONY: studies
