/* an_runset.h — the runs of one or more trace files analysed as one study
 * (shards of it: one trace file per rank, per document, per shard).
 *
 * Selection, for every file given: run R (`--run R`), every run
 * (`--all-runs`), or by default the latest run.  The runs are ordered by
 * file (in the order given), then by run id within a file; their index in
 * that order (0, 1, ...) is the *sequence number* that keeps runs of
 * different files apart wherever they meet (the export's `run` column is
 * sequence + 1; oracleGeneral object ids carry it in their top 16 bits).
 *
 * Every run is opened and checked (an_run_open: it exists and is not still
 * running) before any is read, and all of them must come from one model:
 * the same model_hash and the same config shape (layers, heads, M, top-K,
 * d_v, CAPE heads) — a run of another model is refused in one line
 * (RN_EINPUT) naming both files. */
#ifndef AN_RUNSET_H
#define AN_RUNSET_H

#include "an_load.h"

/* Most runs in one set: the sequence number fits in 16 bits. */
#define AN_RUNSET_MAX 65535

typedef struct {
    an_run *r;   /* [n] open runs in sequence order */
    int n;
    int files;   /* trace files they came from */
    tr_db **db;  /* [files] one connection per file, shared by its runs
                    (r[i].db), so many runs cost no more descriptors than
                    their files */
} an_runset;

/* Which runs of each file: run_id > 0 that run, all != 0 every run, else
 * the latest. */
typedef struct {
    int64_t run_id;
    int all;
} an_runsel;

/* Open the selected runs of paths[0..npaths) (npaths >= 1).  With
 * check_model, refuse runs of different models (above). */
int an_runset_open(const char *const *paths, int npaths, an_runsel sel, int check_model, an_runset *rs,
                   rn_error *err);
void an_runset_close(an_runset *rs);

/* RN_EINPUT unless (layer, head) (-1: any) was traced in every run. */
int an_runset_check_head(const an_runset *rs, int layer, int head, rn_error *err);

/* "run 3" for one run, "3 runs of 2 traces" for several, into buf. */
const char *an_runset_describe(const an_runset *rs, char *buf, size_t len);

#endif
