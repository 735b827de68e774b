# install.mk — `make install PREFIX=...` and `make uninstall`.
#
# Installs the binary, the static and the shared library (libramnet.so, with
# the C API header ramnet_api.h), the Python package (python/ramtrace/, into
# PYDIR, where Debian's python3 looks for /usr/local: lib/python3.N/
# dist-packages, with a _config.py naming the installed library), the
# public headers (every header
# of core/ trace/ analysis/ viz/ figure/ serve/, flat in include/ramnet/, as the
# sources include them), ramnet.pc for pkg-config, a man page for ramtrace
# and for each of its commands, and bash completion.  The man pages and the
# completion are generated at build time from the --help texts of the built
# binary (scripts/gen-man, scripts/gen-completion), which also name the
# commands, so a new command gets both without a change here.  DESTDIR is
# honoured for staged installs.  `make uninstall` with the same PREFIX
# removes exactly those files (the list written at install time) and the
# directories it created when they are left empty.
#
# An installed binary must run on any x86-64: install refuses a build whose
# flags ($(BUILD)/build-flags) name a CPU (-march= other than x86-64, -mavx
# and the like), before building anything.  The default OPT (-O2) is such a
# build; tests/test_install.c checks the installed binary's instructions.

PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
MANDIR      ?= $(PREFIX)/share/man
COMPLDIR    ?= $(PREFIX)/share/bash-completion/completions
PCDIR       ?= $(LIBDIR)/pkgconfig
PYVER        = $(eval PYVER := $(shell /usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || echo python3))$(PYVER)
PYDIR       ?= $(PREFIX)/lib/$(PYVER)/dist-packages
PY_SRC      := $(wildcard python/ramtrace/*.py)
PUB_HDR     := $(sort $(wildcard $(CORE_ROOMS:%=core/%/*.h) trace/*.h analysis/*.h viz/*.h figure/*.h serve/*.h))
MANIFEST     = $(DESTDIR)$(PREFIX)/share/ramtrace/install-manifest

.PHONY: man completion install install-check uninstall
all: man completion

man: $(BUILD)/man/.stamp
completion: $(BUILD)/completion/ramtrace

$(BUILD)/man/.stamp: $(BIN) scripts/gen-man
	@rm -rf $(BUILD)/man && scripts/gen-man $(BIN) $(BUILD)/man && touch $@

$(BUILD)/completion/ramtrace: $(BIN) scripts/gen-completion
	@scripts/gen-completion $(BIN) $@

# -lramnet links libramnet.so (found at run time by the rpath), or the static
# libramnet.a with -static; Libs carries what the static one links against.
$(BUILD)/ramnet.pc: mk/install.mk core/base/rn_version.h
	@mkdir -p $(dir $@)
	@{ echo 'prefix=$(PREFIX)'; \
	   echo 'libdir=$(LIBDIR)'; \
	   echo 'includedir=$(INCLUDEDIR)'; \
	   echo; \
	   echo 'Name: ramnet'; \
	   echo 'Description: RAM-Net model, memory-access traces, their analysis and plots (the library of ramtrace)'; \
	   echo 'Version: '$$(sed -n 's/.*RAMTRACE_VERSION "\(.*\)"/\1/p' core/base/rn_version.h); \
	   echo 'Requires: sqlite3 cairo libpng libmicrohttpd'; \
	   echo 'Cflags: -I$${includedir}/ramnet -I/usr/include/$(MULTIARCH)/openblas-openmp -fopenmp'; \
	   echo 'Libs: -L$${libdir} -lramnet -Wl,-rpath,$${libdir} -L$(BLASLIB) -Wl,-rpath,$(BLASLIB) -lopenblas -lsentencepiece_train -lsentencepiece -lstdc++ -fopenmp -lm -pthread'; \
	 } > $@.tmp && mv $@.tmp $@

# Always regenerated: PREFIX is part of its text.
.PHONY: $(BUILD)/ramnet.pc

# The flags that make a binary CPU-specific (an extended regular expression
# on the build's flags line).
CPU_FLAGS_RE = (^| )-(march=([^x ]|x86-64-)|mavx|mfma|mf16c|mbmi|mlzcnt|mpopcnt|msse3|mssse3|msse4|mmovbe|mamx)

install-check: $(BUILD)/build-flags
	@f=$$(grep -Eo -- '$(CPU_FLAGS_RE)[^ ]*' $< | sed 's/^ //' | tr '\n' ' ' | sed 's/ $$//'); \
	if [ -n "$$f" ]; then \
	    echo "ramtrace: make install: $(BUILD) is built with $$f ($<): an installed binary must run on any x86-64; install from a build without CPU-specific flags (the default OPT=-O2)" >&2; \
	    exit 2; \
	fi

install: install-check $(BIN) $(LIB) $(SOLIB) man completion $(BUILD)/ramnet.pc
	@set -e; d='$(DESTDIR)'; m='$(MANIFEST)'; \
	mkdir -p "$$d$(BINDIR)" "$$d$(LIBDIR)" "$$d$(INCLUDEDIR)/ramnet" "$$d$(PCDIR)" "$$d$(PYDIR)/ramtrace" \
	         "$$d$(MANDIR)/man1" "$$d$(COMPLDIR)" "$$(dirname "$$m")"; \
	: > "$$m.tmp"; \
	put() { install -m "$$1" "$$2" "$$3"; echo "$$3" >> "$$m.tmp"; }; \
	put 755 $(BIN) "$$d$(BINDIR)/ramtrace"; \
	put 644 $(LIB) "$$d$(LIBDIR)/libramnet.a"; \
	put 755 $(SOLIB) "$$d$(LIBDIR)/libramnet.so"; \
	put 644 api/ramnet_api.h "$$d$(INCLUDEDIR)/ramnet/ramnet_api.h"; \
	for p in $(PY_SRC); do put 644 $$p "$$d$(PYDIR)/ramtrace/$$(basename $$p)"; done; \
	printf '"""Written by make install: where the installed library is."""\nLIB = %s\n' "'$(LIBDIR)/libramnet.so'" > "$$d$(PYDIR)/ramtrace/_config.py"; \
	echo "$$d$(PYDIR)/ramtrace/_config.py" >> "$$m.tmp"; \
	for h in $(PUB_HDR); do put 644 $$h "$$d$(INCLUDEDIR)/ramnet/$$(basename $$h)"; done; \
	put 644 $(BUILD)/ramnet.pc "$$d$(PCDIR)/ramnet.pc"; \
	for p in $(BUILD)/man/*.1; do put 644 $$p "$$d$(MANDIR)/man1/$$(basename $$p)"; done; \
	put 644 $(BUILD)/completion/ramtrace "$$d$(COMPLDIR)/ramtrace"; \
	mv "$$m.tmp" "$$m"; \
	echo "installed $$(wc -l < "$$m") files under $$d$(PREFIX)"

# Removes the files the install recorded, then every directory on their
# paths that is left empty, up to (not including) PREFIX.
uninstall:
	@set -e; m='$(MANIFEST)'; top='$(DESTDIR)$(PREFIX)'; \
	if [ ! -f "$$m" ]; then echo "ramtrace: nothing installed under $$top (no $$m)" >&2; exit 2; fi; \
	dirs=$$(while read -r f; do rm -f "$$f"; dirname "$$f"; done < "$$m"; dirname "$$m"); \
	rm -f "$$m"; \
	for dir in $$(echo "$$dirs" | sort -u | sort -r); do \
	    while [ "$$dir" != "$$top" ] && [ "$${dir#$$top/}" != "$$dir" ] && rmdir "$$dir" 2>/dev/null; do dir=$$(dirname "$$dir"); done; \
	done; \
	echo "uninstalled ramtrace from $$top"

# tests/test_install.c compiles a program against the installed library with
# the compiler and sanitizer flags of this build.
# It runs make with the CC, OPT and SAN of the build under test (other flags
# would rebuild it: $(BUILD)/build-flags).
$(BUILD)/tests/test_install.o: private CFLAGS += -DRN_TEST_CC='"$(CC)"' -DRN_TEST_SAN='"$(SAN)"' -DRN_TEST_OPT='"$(OPT)"'
