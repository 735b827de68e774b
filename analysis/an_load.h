/* an_load.h — opening a trace run for analysis through trace/tr_reader.h,
 * with the checks every analysis command shares: the run exists, it is not
 * still running, and a requested layer / head was traced. */
#ifndef AN_LOAD_H
#define AN_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "tr_reader.h"

typedef struct {
    const char *path;
    tr_db *db;
    tr_run_info run;      /* run.cfg: the model config */
    int64_t M;            /* slots */
    tr_head_info *heads;  /* traced heads */
    int n_heads;
} an_run;

/* Open path and run run_id (0 = latest).  RN_EINPUT when the file is not a
 * trace, the run does not exist, or its status is `running`. */
int an_run_open(const char *path, int64_t run_id, an_run *r, rn_error *err);
void an_run_close(an_run *r);

/* The same on a connection db to path that the caller keeps (one
 * connection for several runs of a file): r->db is db; on failure db is
 * left open.  Set r->db to NULL before an_run_close to keep db open. */
int an_run_open_on(tr_db *db, const char *path, int64_t run_id, an_run *r, rn_error *err);

/* RN_EINPUT unless (layer, head) was traced; -1 matches any. */
int an_run_check_head(const an_run *r, int layer, int head, rn_error *err);

/* Load the events of the run selected by layer / head (-1 = all) and ops
 * (an RN_OPS_* set). */
int an_run_load(const an_run *r, int layer, int head, int ops, tr_event **ev, size_t *n, rn_error *err);

/* The same, limited to positions [lo, hi) (hi < 0: to the end). */
int an_run_load_range(const an_run *r, int layer, int head, int ops, int64_t lo, int64_t hi, tr_event **ev,
                      size_t *n, rn_error *err);

#endif
