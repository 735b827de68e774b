/* tr_query.h — ad-hoc SQL over a trace database on a read-only connection
 * (`ramtrace sql`) and the run listing (`ramtrace runs`), printed as an
 * aligned table, CSV or JSON (RN_FMT_*, core/base/rn_rows.h). */
#ifndef TR_QUERY_H
#define TR_QUERY_H

#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "rn_rows.h"
#include "tr_stop.h" /* tr_set_stop_flag */

/* Run every statement of sql against path (opened read-only; must be a
 * trace) and print each result to out.  A statement that would modify the
 * database is refused with RN_EINPUT ("... is read-only").  Errors in the
 * SQL are RN_EINPUT with SQLite's message. */
int tr_query_print(const char *path, const char *sql, int format, FILE *out, rn_error *err);

/* Which run tr_query_print_run scopes the SQL to: a run id (>= 1), or one
 * of these. */
#define TR_RUN_LATEST 0   /* the highest run_id in the file */
#define TR_RUN_ALL (-1)   /* no scoping: every run, as tr_query_print */

/* As tr_query_print, but every unqualified name a run's rows live in
 * (events, reads, writes, tokens, heads, event_blocks) sees only run `run`,
 * and `runs_this` is that run's row of `runs` (`runs` itself still lists
 * every run).  Done with TEMP views on the read-only connection, which
 * shadow the main names (docs/trace-schema.md, "Scoping SQL to one run").
 * A run id that is not in the file is RN_EINPUT.  With TR_RUN_LATEST and no
 * runs at all, the scoped names are empty. */
int tr_query_print_run(const char *path, const char *sql, int64_t run, int format, FILE *out,
                       rn_error *err);

/* List the runs of a trace (id, name, status, command, tokens, events,
 * model hash, start time, duration). */
int tr_runs_print(const char *path, int format, FILE *out, rn_error *err);


#endif
