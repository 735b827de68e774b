/* tr_writer.h — recording a run of the model as a trace database
 * (DESIGN.md §3, docs/trace-schema.md).
 *
 * A writer creates (or appends to) a trace database, starts one run with its
 * metadata, and hands out an rn_probe.  The probe encodes each selected
 * (layer, head, pos, op) group of K accesses into its head's open block of
 * positions (tr_block.h); full blocks go into a bounded queue of batches,
 * and a writer thread inserts each batch in one transaction, so the model
 * does not wait on SQLite unless the queue is full (memory stays bounded).
 * A batch is handed over when full or once every traced head has sealed
 * the same block of positions (with their tokens rows): the file lags the
 * model by at most block_positions positions plus the batches in flight.  tr_writer_finish flushes everything and records the status.
 * The probe is also told the runtime's forward calls (rn_probe.chunk): the
 * calls of several rows are recorded as the run's prefill chunks.
 *
 * Typical use:
 *
 *   tr_select sel; tr_select_all(&sel);
 *   tr_run_meta meta = { .command = "run", .model_path = path, ... };
 *   tr_writer *w;
 *   if (tr_writer_open("out.db", &meta, &sel, NULL, &w, &err)) ...
 *   rn_runtime_set_probe(rt, tr_writer_probe(w));
 *   ... rn_prefill / rn_step, tr_writer_add_token for every position ...
 *   rc = tr_writer_finish(w, TR_STATUS_COMPLETE, &err);   (frees w)
 */
#ifndef TR_WRITER_H
#define TR_WRITER_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_probe.h"
#include "rn_state.h"
#include "tr_select.h"

enum { TR_STATUS_RUNNING = 0, TR_STATUS_COMPLETE = 1, TR_STATUS_INTERRUPTED = 2 };

/* Run metadata recorded in the runs row.  Strings may be NULL. */
typedef struct {
    const char *name;        /* user's label for the run */
    const char *command;     /* "run", "trace", ... */
    const char *model_path;
    uint64_t model_hash;     /* rn_model_checksum; stored as 16 hex digits */
    const rn_config *cfg;    /* required: stored as rn_config_format text */
    const char *prompt;      /* prompt text (run) */
    const char *input_path;  /* input file (trace) */
    const char *sampling;    /* e.g. "temperature=0.8 top_p=0.95 seed=1 max_new=64" */
    const char *const *interventions; /* specs applied to the run (core/infer/rn_intervene.h), */
    int n_interventions;     /* recorded in the table interventions(run_id, i, spec) */
} tr_run_meta;

/* Tuning knobs; NULL means defaults. */
typedef struct {
    int queue_batches;       /* batches in the bounded queue (default 4) */
    int batch_groups;        /* groups of K events per batch (default: about
                                4 MiB of encoded events) */
    int build_index;         /* ignored since schema v2: the block index is
                                kept while loading */
    int weights;             /* TR_WEIGHTS_* of tr_block.h (default f32, exact) */
    int block_positions;     /* positions per stored block (default
                                TR_BLOCK_POSITIONS) */
    int durability;          /* TR_DURABILITY_* of tr_schema.h (default 0:
                                WAL, synchronous=NORMAL) */
} tr_writer_opts;

typedef struct tr_writer tr_writer;

/* Open or create the database at path (an existing file must be a trace of
 * this schema version), insert the runs row (status running) and the heads
 * rows, and start the writer thread. */
int tr_writer_open(const char *path, const tr_run_meta *meta, const tr_select *sel,
                   const tr_writer_opts *opts, tr_writer **out, rn_error *err);

/* The probe to attach with rn_runtime_set_probe (valid until finish). */
const rn_probe *tr_writer_probe(tr_writer *w);

int64_t tr_writer_run_id(const tr_writer *w);

/* Record one traced position (call in increasing pos; piece may be NULL). */
void tr_writer_add_token(tr_writer *w, int64_t pos, int token_id, const char *piece,
                         int generated);

/* Non-zero once the writer thread has failed (e.g. disk full): err gets the
 * message.  Callers may poll it to stop the model early; events produced
 * after a failure are dropped and finish reports the error. */
int tr_writer_failed(tr_writer *w, rn_error *err);

typedef struct {
    int64_t events;          /* events produced (selected and queued) */
    int64_t groups;          /* (layer, head, pos, op) groups */
    int64_t tokens;          /* tokens produced */
    int64_t committed_events; /* events and tokens committed to the file (less */
    int64_t committed_tokens; /* than produced when the writer failed) */
    double producer_wait_s;  /* time the model waited for a free batch */
    double insert_s;         /* writer thread time inside SQLite */
    double index_s;          /* time finish spent making sure the block index
                                exists (about 0 since schema v2) */
} tr_writer_stats;

void tr_writer_get_stats(const tr_writer *w, tr_writer_stats *st);

/* Seal every open block, flush every queued event, stop the thread, set
 * status (TR_STATUS_COMPLETE or TR_STATUS_INTERRUPTED), end time and
 * counts, and close.  Frees w in every case (st, if non-NULL, receives the
 * final statistics).  Returns the first error of the whole run. */
int tr_writer_finish(tr_writer *w, int status, tr_writer_stats *st, rn_error *err);

/* The tiered memory state of the run (rn_state.h) and its counters, kept
 * by the writer and recorded by tr_writer_finish as the run's row of the
 * table state_counters (docs/trace-schema.md).  Call before finish. */
typedef struct {
    const char *policy;        /* copied */
    uint64_t budget;           /* --state-budget bytes */
    int direct;                /* O_DIRECT */
    int chunk;                 /* prefill rows per chunk: the access order */
    int scope;                 /* enum rn_scope */
    rn_state_counters c;
} tr_state_row;
void tr_writer_set_state(tr_writer *w, const tr_state_row *row);

/* Make sure the block index of an existing database exists (every v2
 * file has it from creation; kept for callers of schema v1's per-run
 * index).  Idempotent. */
int tr_build_indexes(const char *path, int64_t run_id, rn_error *err);

#endif
