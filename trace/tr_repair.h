/* tr_repair.h — making a run that never finished analysable again.
 *
 * A run whose writer was killed (SIGKILL, a second Ctrl-C, a crash) stays
 * `running`; one whose writer failed (disk full) may hold events of
 * positions whose token row never made it.  Repair keeps the longest prefix
 * of complete positions 0..P-1 and drops everything after it, recounts the
 * run's tokens and events and marks it `interrupted`, all in one
 * transaction.  A position p is complete when it has its `tokens` row and,
 * for every traced (layer, head) of the run's `heads` rows, the event
 * blocks of that head cover positions 0..p without a gap, each holding
 * every traced op of the run's selection (a block always holds whole
 * positions: top_k ranks of each op).  Blocks past P are deleted and a
 * block across P is cut to its positions before P.
 * Repair is idempotent: a second repair changes nothing.  docs/tracing.md
 * ("Repairing a run") has the rules and guarantees.
 */
#ifndef TR_REPAIR_H
#define TR_REPAIR_H

#include <sqlite3.h>
#include <stdint.h>

#include "rn_error.h"

/* Open path for a change no live writer may see (repair, upgrade): every
 * live writer holds a shared flock on the file (tr_writer.c), so *fd gets
 * the exclusive one, kept until closed (after the SQLite connection).
 * RN_EINPUT naming the file when it is missing, a directory, unreadable,
 * or still being written: "a ramtrace process is still writing" then
 * `busy`, e.g. " to this file; upgrade it", then " once that process has
 * ended". */
int tr_lock_idle(const char *path, const char *busy, int *fd, rn_error *err);

/* What repair found and did for one run. */
typedef struct {
    int64_t run_id;
    char status[16];          /* the status before repair */
    char status_after[16];    /* and after: interrupted, or complete for a
                                 complete run that kept every position */
    int changed;              /* 0: the run was already consistent */
    int64_t tokens, events;   /* counts after repair */
    int64_t dropped_tokens;   /* tokens rows removed */
    int64_t dropped_blocks;   /* event_blocks rows removed or cut */
    int64_t dropped_events;   /* events (ranks) removed */
} tr_repair_result;

/* Repair run run_id of the trace at path, or (run_id 0) every run whose
 * status is `running`.  A complete run given by id is left alone (changed
 * 0) when its rows match its counts; one that lost a block, the tail of one
 * or a tokens row (or holds a block twice) is cut to its complete prefix
 * and marked interrupted like any other.  *res (malloc'd, *n entries, possibly 0) tells what was done.
 * RN_EINPUT: no such file or run, not a trace, or a ramtrace writer still
 * has the file open (its run is alive, so it is not repaired). */
int tr_repair(const char *path, int64_t run_id, tr_repair_result **res, int *n, rn_error *err);

/* Repair one run on an open writer connection,
 * inside the caller's transaction (the writer uses it when it failed). */
int tr_repair_db(sqlite3 *db, const char *path, int64_t run_id, tr_repair_result *r, rn_error *err);

#endif
