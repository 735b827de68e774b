/* an_pq_export.h — trace runs as a hive-partitioned Parquet dataset, for
 * DuckDB, Spark, Polars and other engines that read Parquet natively
 * (`ramtrace export --format parquet`, docs/analysis.md).
 *
 * Layout of DIR (written as DIR.tmp.<pid> and renamed to DIR when complete,
 * so DIR appears whole or not at all):
 *   DIR/events/run=R/layer=L/part-0.parquet
 *       head, pos, op, rank, slot, addr, weight, token — one row per event,
 *       in canonical order (head, pos, op, rank); `run` and `layer` are the
 *       partition columns of the path, as Spark's partitionBy writes them
 *   DIR/runs/runs.parquet
 *       one row per exported run: run (the dataset's run number), trace
 *       (the file it came from, as given), run_id (its id in that file),
 *       name, status, model_hash, n_layers, n_heads, n_slots, top_k, d_v,
 *       n_tokens, n_events (events exported), weight_format
 * Runs are numbered 1, 2, ... over the traces in the order given, each
 * trace's runs by id, so several trace files make one dataset. */
#ifndef AN_PQ_EXPORT_H
#define AN_PQ_EXPORT_H

#include <stdint.h>

#include "rn_error.h"

typedef struct {
    int64_t run;     /* run id in each trace (0: every run of every trace) */
    int layer, head; /* -1: all */
    int ops;         /* RN_OPS_* */
    int threads;     /* layer files written at once */
} an_pq_export_opts;

typedef struct {
    int64_t runs, events, files;
    uint64_t bytes;  /* of the Parquet files */
} an_pq_export_result;

/* Export the runs of the ntraces trace files to a new dataset DIR.  DIR
 * must not exist (RN_EINPUT).  Every run is opened and checked before
 * anything is written.  On any failure (a full disk: RN_EIO; stop raised:
 * RN_EINTR) the partial dataset is removed and DIR is not created. */
int an_pq_export(const char *const *traces, int ntraces, const char *dir, const an_pq_export_opts *o,
                 const volatile int *stop, an_pq_export_result *res, rn_error *err);

#endif
