/* an_simrun.h — a policy × capacity grid of cache simulations over a
 * scope's streams (`ramtrace simulate`), and its printing.  The results are
 * plain arrays so plots can draw hit ratio against capacity per policy. */
#ifndef AN_SIMRUN_H
#define AN_SIMRUN_H

#include <stdint.h>
#include <stdio.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_spill.h"

typedef struct {
    int n_policies, n_capacities;
    const rn_policy **policy;     /* [n_policies] */
    uint64_t *capacity;           /* [n_capacities] keys per cache */
    an_sim_result *result;        /* [p·n_capacities + c] summed over the scope's caches */
    uint64_t slot_bytes;          /* (d_v + 1)·4 */
} an_simgrid;

/* Capacities 1, 2, 4, ... up to the largest stream's distinct keys (the
 * last one included), as --sweep uses.  Returns the count (<= cap). */
int an_sweep_capacities(const an_streams *ss, uint64_t *out, int cap);
/* The same up to top distinct keys. */
int an_sweep_capacities_upto(uint64_t top, uint64_t *out, int cap);

/* Progress callback (may be NULL): done of total simulations; return
 * non-zero to stop (RN_EINTR). */
typedef int (*an_progress_fn)(void *user, int done, int total);

/* Run every (policy, capacity) over every stream, counting accesses at
 * positions >= warmup: an_simgrid_run_spill over ss held resident
 * (an_spill_resident).  Fills g (arrays allocated; an_simgrid_free). */
int an_simgrid_run(const an_streams *ss, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                   int32_t warmup, uint64_t slot_bytes, an_progress_fn progress, void *user,
                   an_simgrid *g, rn_error *err);
void an_simgrid_free(an_simgrid *g);

/* The grid over spilled streams (an_spill.h), the one simulation pipeline:
 * each simulation reads its stream's keys (and next uses, computed first
 * when a policy needs them) from the temporary files, or a resident
 * spill's memory, in chunks, so memory is one cache and a chunk, whatever
 * the stream's length; the warm-up is the spill's. */
int an_simgrid_run_spill(an_spill *sp, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                         uint64_t slot_bytes, an_progress_fn progress, void *user, an_simgrid *g,
                         rn_error *err);

/* Print as a table / CSV / JSON (RN_FMT_*, core/base/rn_rows.h); with mrc, an
 * "lru-exact" row per capacity from the exact LRU curve ("lru-shards" for a
 * sampled one).  RN_EIO when
 * writing fails. */
int an_simgrid_print(FILE *f, int fmt, const an_simgrid *g, const an_mrc *mrc, rn_error *err);

/* Write the whole exact LRU curve as CSV (capacity,misses,miss_ratio,hit_ratio). */
int an_mrc_print_csv(FILE *f, const an_mrc *m, rn_error *err);

#endif
