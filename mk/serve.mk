# mk/serve.mk — `ramtrace serve`: the viewer's static files (serve/web/)
# compiled into the library as a table (scripts/embed-assets), and the
# viewer's browser test (tests/browser/, run by make test; it skips with a
# message when its npm packages could not be installed).

SERVE_WEB := $(wildcard serve/web/*)
LIB_OBJ   += $(BUILD)/gen/srv_assets.o

$(BUILD)/gen/srv_assets.c: $(SERVE_WEB) scripts/embed-assets
	@mkdir -p $(dir $@)
	@scripts/embed-assets $(SERVE_WEB) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/srv_assets.o: $(BUILD)/gen/srv_assets.c serve/srv_assets.h $(BUILD)/build-flags | setup
	@echo "CC $<"; $(CC) $(CFLAGS) -c $< -o $@

TEST_BINS += tests/browser/run
