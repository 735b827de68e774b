# mk/sqlext.mk — the SQLite loadable extension that gives the sqlite3 shell
# and Python the `events` virtual table of trace files (trace/tr_vtab.h,
# docs/trace-schema.md):  sqlite3 t.db -cmd '.load ./build/libramtrace_sql'
#
# Built without the sanitizers (it is loaded into processes that are not
# sanitized: the sqlite3 shell, Python), from the two sources it needs.

SQLEXT       := $(BUILD)/libramtrace_sql.so
SQLEXT_FLAGS  = -std=c11 -O2 -g -Wall -Wextra -Werror $(WNO) -D_GNU_SOURCE -fPIC -shared \
                -DTR_VTAB_EXTENSION -Itrace $(CORE_INC) $(PKGCFG)

all: $(SQLEXT)
demo: $(SQLEXT)
test: $(SQLEXT)
bench: $(SQLEXT)

$(SQLEXT): trace/tr_vtab.c trace/tr_block.c trace/tr_vtab.h trace/tr_block.h | setup
	@mkdir -p $(dir $@)
	$(CC) $(SQLEXT_FLAGS) -o $@ trace/tr_vtab.c trace/tr_block.c -lm
