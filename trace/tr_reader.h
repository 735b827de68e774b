/* tr_reader.h — reading trace databases back (DESIGN.md §3), so analysis/
 * and viz/ never write SQL by hand.
 *
 * A trace database holds runs; each run holds events (layer, head, pos, op,
 * rank, slot, addr, weight).  tr_open_read validates that the file is a
 * ramtrace trace of a supported schema version (PRAGMA user_version) and
 * opens it read-only.  Events come back in canonical order: by layer, head,
 * pos, then op (writes before reads), then rank.
 */
#ifndef TR_READER_H
#define TR_READER_H

#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_probe.h"

typedef struct tr_db tr_db;

/* One memory access.  op: 0 write, 1 read (RN_OP_WRITE / RN_OP_READ). */
typedef struct {
    int32_t pos;
    uint32_t slot;    /* physical slot (after CAPE) */
    uint32_t addr;    /* address before CAPE */
    float weight;
    uint16_t layer, head;
    uint8_t op;
    uint16_t rank;    /* 0..K-1 (K may exceed 255) */
} tr_event;

typedef struct {
    int64_t run_id;
    char name[128];
    char status[16];       /* "running", "complete", "interrupted" */
    char model_path[1024];
    char model_hash[80];
    rn_config cfg;         /* full model config (M, K, d_v, γ, ε, CAPE masks) */
    int64_t n_tokens;      /* traced positions */
    int64_t n_events;
    double start_time, end_time; /* unix seconds; end 0 while running */
    int weight_format;     /* TR_WEIGHTS_* (tr_block.h): f32 exact, or f16 */
} tr_run_info;

typedef struct {
    int layer, head, cape;
} tr_head_info;

typedef struct {
    int32_t pos;
    int32_t token_id;
    char piece[32];        /* printable text of the token (escaped) */
    int generated;         /* 0 prompt, 1 generated */
} tr_token;

/* Open read-only; RN_EINPUT if missing, not SQLite, not a trace, or another
 * schema version (message names the file and the problem). */
int tr_open_read(const char *path, tr_db **out, rn_error *err);
void tr_close(tr_db *db);

/* Runs in id order (malloc'd array; free()). */
int tr_list_runs(tr_db *db, tr_run_info **runs, int *n, rn_error *err);

/* One run; run_id 0 means the latest run.  RN_EINPUT if it does not exist. */
int tr_run_get(tr_db *db, int64_t run_id, tr_run_info *out, rn_error *err);

/* Traced heads of a run, by (layer, head) (malloc'd; free()). */
int tr_list_heads(tr_db *db, int64_t run_id, tr_head_info **heads, int *n, rn_error *err);

/* Traced tokens of a run, by pos (malloc'd; free()). */
int tr_load_tokens(tr_db *db, int64_t run_id, tr_token **toks, int64_t *n, rn_error *err);

/* The traced tokens of positions [lo, hi) (hi < 0: to the end), by pos
 * (malloc'd; free(); NULL and 0 when none). */
int tr_load_tokens_range(tr_db *db, int64_t run_id, int64_t lo, int64_t hi, tr_token **toks, int64_t *n,
                         rn_error *err);

/* A prefill chunk of a run: n > 1 positions [pos0, pos0 + n) that the
 * runtime computed in one forward call, so their accesses ran layer by
 * layer, head by head, then position by position (table prefill_chunks,
 * docs/trace-schema.md).  Positions in no chunk ran alone (a step). */
typedef struct {
    int64_t pos0;
    int32_t n;
} tr_chunk;

/* The run's prefill chunks by pos0 (malloc'd; free()); *n = 0 when every
 * position ran alone or the trace predates the table.  Overlapping chunks
 * or n < 2 are a corrupt trace (RN_EINPUT). */
int tr_load_chunks(tr_db *db, int64_t run_id, tr_chunk **chunks, int *n, rn_error *err);

/* Selection for bulk loads and iterators: layer/head -1 = all; ops an
 * RN_OPS_* set; pos range [pos_lo, pos_hi) with pos_hi < 0 meaning no upper
 * bound. */
typedef struct {
    int layer, head, ops;
    int64_t pos_lo, pos_hi;
} tr_filter;

static inline tr_filter tr_filter_all(void) { tr_filter f = { -1, -1, RN_OPS_BOTH, 0, -1 }; return f; }

/* Load every selected event of a run into a malloc'd array in canonical
 * order. */
int tr_load_events(tr_db *db, int64_t run_id, const tr_filter *f, tr_event **ev, size_t *n,
                   rn_error *err);

/* Count selected events without loading them. */
int tr_count_events(tr_db *db, int64_t run_id, const tr_filter *f, int64_t *n, rn_error *err);

/* Events of every (layer, head) of a run in one pass over the block index:
 * per_head[layer · n_heads + head] for the run's config (n_layers ·
 * n_heads entries, written whole; untraced heads 0).  Blocks naming a
 * head outside the config are not counted (tr_check_block_heads). */
int tr_count_events_by_head(tr_db *db, int64_t run_id, int64_t *per_head, rn_error *err);

/* RN_EINPUT ("corrupt trace") when a block of the run names a layer or
 * head that is not an integer inside the run's config.  Readers that open
 * one iterator per (layer, head) call it first: such a block is in no
 * head's selection, so no iterator would see it.  Reads the block index
 * only. */
int tr_check_block_heads(tr_db *db, int64_t run_id, rn_error *err);

/* RN_EINPUT ("corrupt trace", one line that names `ramtrace repair`) when a
 * finished run (complete or interrupted) holds other rows than its counts
 * say: its tokens rows must be positions 0..n_tokens-1; every traced head
 * (the run's `heads` rows) must have blocks that cover positions
 * 0..n_tokens-1 once each, without a gap, each with the run's traced ops;
 * no block may belong to another head; and the blocks' events must add up
 * to n_events.  So a run that lost a block, the tail of one or a tokens row,
 * or holds a block twice, is refused instead of analysed short.  A running
 * run is not checked (it grows).  Reads the block headers, not the BLOBs;
 * calls tr_check_block_heads first. */
int tr_check_run(tr_db *db, const tr_run_info *run, rn_error *err);

/* Streaming iterator over selected events in canonical order (memory O(1)). */
typedef struct tr_iter tr_iter;
int tr_iter_open(tr_db *db, int64_t run_id, const tr_filter *f, tr_iter **it, rn_error *err);
/* Returns 1 and fills *ev, 0 at the end, or an error code. */
int tr_iter_next(tr_iter *it, tr_event *ev, rn_error *err);
void tr_iter_close(tr_iter *it);

/* Event columns for tr_iter_read: arrays of at least cap entries; a NULL
 * array is not filled. */
typedef struct {
    int32_t *layer, *head, *pos, *op, *rank;
    uint32_t *slot, *addr;
    float *weight;
} tr_columns;

/* The next events (the ones tr_iter_next would return, checked alike), up
 * to cap of them, into the columns, decoded K entries at a time; *n of
 * them (0 at the end).  RN_OK, or an error code with *n 0.  For readers
 * that want events in bulk (the Parquet export): no call per event. */
int tr_iter_read(tr_iter *it, const tr_columns *c, size_t cap, size_t *n, rn_error *err);

#endif
