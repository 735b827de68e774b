/* tr_stop.h — the process's stop flag (Ctrl-C) as trace connections see
 * it: set once by the command line, polled by every read connection's
 * statements (tr_schema_open_read), so a long query ends on Ctrl-C. */
#ifndef TR_STOP_H
#define TR_STOP_H

#include <sqlite3.h>

/* Process-wide stop flag (Ctrl-C) for every read-only trace connection:
 * once *stop is non-zero, a running query (sql, runs, the readers behind
 * stats, simulate, export, attribute, plot) is interrupted within about a
 * thousand SQLite instructions and fails with RN_EINTR.  NULL: never. */
void tr_set_stop_flag(volatile int *stop);

/* Non-zero once the stop flag is raised. */
int tr_stop_requested(void);

/* Make db's statements stop with SQLITE_INTERRUPT (mapped to RN_EINTR by
 * tr_sqlerr) once the flag is raised. */
void tr_watch_stop(sqlite3 *db);

#endif
