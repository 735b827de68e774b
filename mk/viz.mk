# mk/viz.mk — plotting module (viz/) build settings.
#
# cairo 1.16's toy text API keeps a fontconfig pattern alive for the life of
# the process; cairo_debug_reset_static_data() (called by `ramtrace plot` and
# the viz suites) does not release it, and FcFini would need fontconfig
# linked directly.  LeakSanitizer is told to ignore allocations made inside
# libfontconfig only (mk/viz-lsan.supp); everything else still counts.
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/mk/viz-lsan.supp
