# mk/spm.mk — the SentencePiece tokenizer module (core/model/rn_spm.cc).
#
# The library's only C++ file: compiled with $(CXX) against Debian's
# libsentencepiece-dev, and everything linking the library also links
# -lsentencepiece_train, -lsentencepiece and the C++ runtime.

CXX      = g++
CXXFLAGS = -std=c++17 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread $(SAN) $(if $(SAN),,-fPIC) $(CORE_INC)
SPM_SRC := $(wildcard core/model/*.cc)
LIB_OBJ += $(SPM_SRC:%.cc=$(BUILD)/%.o)
LDLIBS  += -lsentencepiece_train -lsentencepiece -lstdc++

$(BUILD)/%.o: %.cc $(BUILD)/build-flags | setup
	@mkdir -p $(dir $@)
	@echo "CXX $<"; $(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@
