/* an_simrun.c — policy × capacity simulation grids (an_simrun.h), printed
 * through the row writer (core/base/rn_rows.h).
 *
 * The cells of a grid replay the same stream into independent caches, so
 * they run in parallel (OpenMP, up to omp_get_max_threads() threads):
 * stream by stream, every cell of the stream at once, each cell its own
 * cache and its own result.  A cell's result is added to stream by stream
 * in stream order whatever thread ran it, so the results do not depend on
 * the thread count. */
#include "an_simrun.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rn_rows.h"

int an_sweep_capacities(const an_streams *ss, uint64_t *out, int cap)
{
    return an_sweep_capacities_upto(an_streams_max_keys(ss), out, cap);
}

int an_sweep_capacities_upto(uint64_t top, uint64_t *out, int cap)
{
    int n = 0;
    for (uint64_t c = 1; c < top && n < cap; c *= 2) out[n++] = c;
    if (n < cap && top >= 1) out[n++] = top;
    return n;
}

void an_simgrid_free(an_simgrid *g)
{
    free(g->policy); free(g->capacity); free(g->result);
    memset(g, 0, sizeof *g);
}

/* Threads for a grid of ncell cells: at most one per cell. */
static int grid_threads(int ncell)
{
    int nt = omp_get_max_threads();
    return nt < ncell ? nt : ncell > 0 ? ncell : 1;
}

/* What the cells of a grid share: their errors (the first cell's in cell
 * order is reported), the progress count, the stop flag. */
typedef struct {
    int ncell, done, total;
    volatile int stop;
    int *rc;           /* [ncell] */
    rn_error *err;     /* [ncell] */
    an_progress_fn progress;
    void *user;
} grid_state;

static int grid_state_init(grid_state *st, int ncell, int total, an_progress_fn progress, void *user)
{
    memset(st, 0, sizeof *st);
    st->ncell = ncell;
    st->total = total;
    st->progress = progress;
    st->user = user;
    st->rc = calloc((size_t)(ncell > 0 ? ncell : 1), sizeof *st->rc);
    st->err = calloc((size_t)(ncell > 0 ? ncell : 1), sizeof *st->err);
    if (!st->rc || !st->err) { free(st->rc); free(st->err); return -1; }
    return 0;
}

/* Cell k finished one stream with rc: record an error, or count it and
 * report progress (one thread at a time); either can stop the grid. */
static void grid_cell_done(grid_state *st, int k, int rc)
{
    if (rc) {
        st->rc[k] = rc;
        st->stop = 1;
        return;
    }
    #pragma omp critical(an_simgrid_progress)
    {
        ++st->done;
        if (st->progress && !st->stop && st->progress(st->user, st->done, st->total)) {
            st->rc[k] = rn_seterr(&st->err[k], RN_EINTR, "simulate: interrupted");
            st->stop = 1;
        }
    }
}

/* The first error in cell order (into err), or RN_OK; frees st. */
static int grid_state_end(grid_state *st, rn_error *err)
{
    int rc = RN_OK;
    for (int k = 0; k < st->ncell && !rc; k++)
        if (st->rc[k]) {
            rc = st->rc[k];
            if (err) *err = st->err[k];
        }
    free(st->rc); free(st->err);
    return rc;
}

int an_simgrid_run(const an_streams *ss, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                   int32_t warmup, uint64_t slot_bytes, an_progress_fn progress, void *user,
                   an_simgrid *g, rn_error *err)
{
    an_spill sp;
    memset(g, 0, sizeof *g);
    int rc = an_spill_resident(ss, warmup, &sp, err);
    if (!rc) rc = an_simgrid_run_spill(&sp, pol, np, caps, nc, slot_bytes, progress, user, g, err);
    an_spill_free(&sp);
    return rc;
}

#define SIM_CHUNK (1u << 20) /* accesses read at a time */

/* Replay stream si of sp through a fresh cache of policy p and capacity
 * cap, adding into *r; key/nxt are buffers of chunk accesses. */
static int simulate_spilled(const an_spill *sp, int si, const rn_policy *p, uint64_t cap, uint32_t *key,
                            uint32_t *nxt, size_t chunk, an_sim_result *r, rn_error *err)
{
    const an_spill_stream *s = &sp->s[si];
    if (cap == 0) return rn_seterr(err, RN_EINPUT, "--capacity: must be at least 1");
    if (s->n == 0) return RN_OK;
    void *c = p->init(cap, s->n_keys);
    if (!c) return rn_seterr(err, RN_ENOMEM, "out of memory for a %s cache of %llu keys", p->name,
                             (unsigned long long)cap);
    uint64_t hits = 0, counted = s->n - s->n_warm;
    int rc = RN_OK;
    for (uint64_t i0 = 0; i0 < s->n; i0 += chunk) {
        size_t m = s->n - i0 < chunk ? (size_t)(s->n - i0) : chunk;
        uint32_t *cn = p->needs_next ? nxt : NULL;
        if ((rc = an_spill_read(sp, si, i0, m, key, cn, err))) break;
        /* accesses before n_warm warm the cache uncounted */
        hits += an_cache_replay(p, c, key, cn, m, i0 < s->n_warm ? (size_t)(s->n_warm - i0) : 0);
    }
    p->free(c);
    if (rc) return rc;
    r->accesses += counted;
    r->hits += hits;
    r->misses += counted - hits;
    return RN_OK;
}

int an_simgrid_run_spill(an_spill *sp, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                         uint64_t slot_bytes, an_progress_fn progress, void *user, an_simgrid *g,
                         rn_error *err)
{
    memset(g, 0, sizeof *g);
    g->n_policies = np;
    g->n_capacities = nc;
    g->slot_bytes = slot_bytes;
    g->policy = malloc(sizeof *g->policy * (size_t)(np ? np : 1));
    g->capacity = malloc(sizeof *g->capacity * (size_t)(nc ? nc : 1));
    g->result = calloc((size_t)(np * nc > 0 ? np * nc : 1), sizeof *g->result);
    int ncell = np * nc;
    grid_state st;
    if (!g->policy || !g->capacity || !g->result || grid_state_init(&st, ncell, sp->n * ncell, progress, user)) {
        an_simgrid_free(g);
        return rn_seterr(err, RN_ENOMEM, "out of memory for the simulation");
    }
    memcpy(g->policy, pol, sizeof *pol * (size_t)np);
    memcpy(g->capacity, caps, sizeof *caps * (size_t)nc);
    int need_next = 0;
    for (int p = 0; p < np; p++) need_next |= pol[p]->needs_next;
    int rc = need_next ? an_spill_next_use(sp, err) : RN_OK;
    if (rc) st.stop = 1;
    /* each thread its own chunk buffers, for all the cells it runs */
    const size_t chunk = an_spill_chunk_for(sp, SIM_CHUNK);
    #pragma omp parallel num_threads(grid_threads(ncell))
    {
        uint32_t *key = malloc(chunk * sizeof *key), *nxt = malloc(chunk * sizeof *nxt);
        for (int i = 0; i < sp->n; i++) {
            #pragma omp for schedule(dynamic, 1)
            for (int k = 0; k < ncell; k++) {
                if (st.stop) continue;
                int crc = key && nxt ? simulate_spilled(sp, i, pol[k / nc], caps[k % nc], key, nxt, chunk, &g->result[k],
                                                        &st.err[k])
                                     : rn_seterr(&st.err[k], RN_ENOMEM, "out of memory for the simulation");
                grid_cell_done(&st, k, crc);
            }
        }
        free(key); free(nxt);
    }
    int grc = grid_state_end(&st, rc ? NULL : err);
    if (!rc) rc = grc;
    if (rc) an_simgrid_free(g);
    return rc;
}

/* One result row: CSV and JSON print the hit ratio as %.6f, the table as
 * %.4f. */
static int row(rn_rows *w, int fmt, const char *name, uint64_t cap, uint64_t acc, uint64_t hits,
               uint64_t misses, uint64_t bytes)
{
    double hr = acc ? (double)hits / (double)acc : 0.0;
    const rn_cell c[7] = { rn_cell_text(name), rn_cell_uint(cap), rn_cell_uint(acc), rn_cell_uint(hits),
                           rn_cell_uint(misses), rn_cell_real(hr, fmt == RN_FMT_TABLE ? "%.4f" : "%.6f"),
                           rn_cell_uint(bytes) };
    return rn_rows_add(w, c);
}

int an_simgrid_print(FILE *f, int fmt, const an_simgrid *g, const an_mrc *mrc, rn_error *err)
{
    static const char *const cols[7] = { "policy", "capacity", "accesses", "hits", "misses", "hit_ratio",
                                         "bytes_moved" };
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, 7, cols, NULL, err);
    if (rc) return rc;
    for (int p = 0; p < g->n_policies; p++)
        for (int c = 0; c < g->n_capacities; c++) {
            const an_sim_result *r = &g->result[p * g->n_capacities + c];
            row(&w, fmt, g->policy[p]->name, g->capacity[c], r->accesses, r->hits, r->misses,
                r->misses * g->slot_bytes);
        }
    if (mrc)
        for (int c = 0; c < g->n_capacities; c++) {
            uint64_t m = an_mrc_misses_at(mrc, g->capacity[c]);
            row(&w, fmt, mrc->sample_rate > 0 ? "lru-shards" : "lru-exact", g->capacity[c], mrc->accesses,
                mrc->accesses - m, m, m * g->slot_bytes);
        }
    return rn_rows_end(&w, err);
}

int an_mrc_print_csv(FILE *f, const an_mrc *m, rn_error *err)
{
    static const char *const cols[4] = { "capacity", "misses", "miss_ratio", "hit_ratio" };
    rn_rows w;
    int rc = rn_rows_begin(&w, f, RN_FMT_CSV, 4, cols, NULL, err);
    if (rc) return rc;
    for (int64_t i = 0; i < m->n; i++) {
        const rn_cell c[4] = { rn_cell_uint(m->capacity[i]), rn_cell_uint(m->misses[i]),
                               rn_cell_real(m->miss_ratio[i], "%.6f"), rn_cell_real(m->hit_ratio[i], "%.6f") };
        rn_rows_add(&w, c);
    }
    return rn_rows_end(&w, err);
}
