# mk/train.mk — training module build rules.
#
# The gradient check compiles the core compute sources a second time with
# -DRN_DOUBLE (rn_real = double) into $(BUILD)/dbl/ and links them with the
# double-only suite tests/gradcheck/gradcheck.c (its own CUnit main) into
# $(BUILD)/test_gradcheck, which `make test` runs after the main runner.

DBL_SRC := core/train/rn_train.c core/nn/rn_rmsnorm.c core/nn/rn_matmul.c core/nn/rn_swiglu.c \
           core/nn/rn_pdma.c core/nn/rn_address.c core/nn/rn_decoder.c core/nn/rn_labels.c core/model/rn_params.c \
           core/model/rn_config.c core/base/rn_rng.c core/base/rn_error.c core/model/rn_model.c core/base/rn_memlimit.c core/base/rn_file.c \
           core/base/rn_threads.c \
           tests/gradcheck/gradcheck.c
DBL_OBJ := $(DBL_SRC:%.c=$(BUILD)/dbl/%.o)

$(BUILD)/dbl/%.o: %.c $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CC(double) $<"; $(CC) $(CFLAGS) -DRN_DOUBLE -MMD -MP -c $< -o $@

$(BUILD)/test_gradcheck: $(DBL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $(DBL_OBJ) $(LDLIBS) -lcunit

TEST_BINS += $(BUILD)/test_gradcheck
