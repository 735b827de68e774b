/* tr_query.h — ad-hoc SQL over a trace database on a read-only connection
 * (`ramtrace sql`) and the run listing (`ramtrace runs`), printed as an
 * aligned table, CSV or JSON (RN_FMT_*, core/rn_rows.h). */
#ifndef TR_QUERY_H
#define TR_QUERY_H

#include <stdio.h>

#include "rn_error.h"
#include "rn_rows.h"

/* Run every statement of sql against path (opened read-only; must be a
 * trace) and print each result to out.  A statement that would modify the
 * database is refused with RN_EINPUT ("... is read-only").  Errors in the
 * SQL are RN_EINPUT with SQLite's message. */
int tr_query_print(const char *path, const char *sql, int format, FILE *out, rn_error *err);

/* List the runs of a trace (id, name, status, command, tokens, events,
 * model hash, start time, duration). */
int tr_runs_print(const char *path, int format, FILE *out, rn_error *err);

/* Process-wide stop flag (Ctrl-C) for every read-only trace connection:
 * once *stop is non-zero, a running query (sql, runs, the readers behind
 * stats, simulate, export, attribute, plot) is interrupted within about a
 * thousand SQLite instructions and fails with RN_EINTR.  NULL: never. */
void tr_set_stop_flag(volatile int *stop);

#endif
