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

/* Bounds on an ad-hoc query of tr_query_json_run (the viewer's SQL box):
 * wall-clock seconds for all its statements (> 0), and rows kept per
 * result (>= 1; later rows are not read, *truncated is set). */
typedef struct {
    double seconds;
    int64_t max_rows;
} tr_query_limits;

/* As tr_query_print_run (read-only connection, scoping to run), bounded by
 * lim, printing one JSON array with an object per result that has columns:
 * {"columns": [names], "rows": [{name: value, ...}, ...]}.  A query past
 * the time limit stops with RN_EINPUT "query ran past the N s limit";
 * *truncated (may be NULL) is 1 when a result had more rows than
 * lim->max_rows.  On error what was printed is partial: print into a
 * buffer. */
int tr_query_json_run(const char *path, const char *sql, int64_t run, const tr_query_limits *lim, FILE *out,
                      int *truncated, rn_error *err);

/* List the runs of a trace (id, name, status, command, tokens, events,
 * model hash, start time, duration). */
int tr_runs_print(const char *path, int format, FILE *out, rn_error *err);


#endif
