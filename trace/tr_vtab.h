/* tr_vtab.h — the `events` virtual table of trace schema v2: SQL access to
 * the packed event blocks with the columns of schema v1's view (run_id,
 * layer, head, pos, op, rank, slot, addr, weight), so `events`, `reads` and
 * `writes` answer the same queries as before.
 *
 * ramtrace registers the module on every connection it opens; the build
 * also compiles tr_vtab.c with -DTR_VTAB_EXTENSION into the SQLite loadable
 * extension build/libramtrace_sql.so for the sqlite3 shell and Python
 * (`.load ./build/libramtrace_sql`, docs/trace-schema.md). */
#ifndef TR_VTAB_H
#define TR_VTAB_H

#include <sqlite3.h>

#define TR_VTAB_MODULE "ramtrace_events"

/* Register the module on db; an SQLite result code. */
int tr_vtab_register(sqlite3 *db);

#endif
