/* an_replay.h — a run's events read back in replay order, one event at a
 * time, without loading the run.
 *
 * The trace reader hands each head's events in (pos, op, rank) order
 * (trace/tr_reader.h).  A replay opens one reader per (layer, head) of a
 * group and merges them the way the model ran: for each position, layer by
 * layer and head by head, each head's writes then reads by rank — replay
 * order (pos, layer, head, op, rank), an_stream.h.  Memory is one decoded
 * block per head of the group (a few KiB each), whatever the run's length.
 */
#ifndef AN_REPLAY_H
#define AN_REPLAY_H

#include <stdint.h>

#include "rn_error.h"
#include "tr_reader.h"

typedef struct an_replay an_replay;

/* Replay the events of run_id in db of every (layer, head) of the config
 * with layer in [l0, l1) and head in [h0, h1), keeping the ops of the
 * RN_OPS_* set ops. */
int an_replay_open(tr_db *db, int64_t run_id, int l0, int l1, int h0, int h1, int ops, an_replay **out,
                   rn_error *err);

/* Replay the positions of each of the n chunks (sorted by pos0, not
 * overlapping; kept by reference until close) as one unit.  Call before
 * the first an_replay_next. */
void an_replay_set_chunks(an_replay *r, const tr_chunk *chunks, int n);

/* The first position of the unit (chunk or position) of the event last
 * returned: its position in step order. */
int64_t an_replay_unit(const an_replay *r);

/* 1 and the next event in *ev, 0 at the end, or an error code. */
int an_replay_next(an_replay *r, tr_event *ev, rn_error *err);

void an_replay_close(an_replay *r);

#endif
