/* an_simrun.c — policy × capacity simulation grids (an_simrun.h). */
#include "an_simrun.h"

#include <stdlib.h>
#include <string.h>

#include "an_stats.h" /* AN_FMT_* */

int an_sweep_capacities(const an_streams *ss, uint64_t *out, int cap)
{
    uint64_t top = an_streams_max_keys(ss);
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

int an_simgrid_run(const an_streams *ss, const an_policy **pol, int np, const uint64_t *caps, int nc,
                   int32_t warmup, uint64_t slot_bytes, an_progress_fn progress, void *user,
                   an_simgrid *g, rn_error *err)
{
    memset(g, 0, sizeof *g);
    g->n_policies = np;
    g->n_capacities = nc;
    g->slot_bytes = slot_bytes;
    g->policy = malloc(sizeof *g->policy * (size_t)(np ? np : 1));
    g->capacity = malloc(sizeof *g->capacity * (size_t)(nc ? nc : 1));
    g->result = calloc((size_t)(np * nc > 0 ? np * nc : 1), sizeof *g->result);
    size_t nmax = 0;
    uint32_t kmax = 0;
    for (int i = 0; i < ss->n; i++) {
        if (ss->s[i].n > nmax) nmax = ss->s[i].n;
        if (ss->s[i].n_keys > kmax) kmax = ss->s[i].n_keys;
    }
    int need_next = 0;
    for (int p = 0; p < np; p++) need_next |= pol[p]->needs_next;
    uint32_t *nxt = need_next ? malloc((nmax ? nmax : 1) * sizeof *nxt) : NULL;
    uint32_t *last = need_next ? malloc(((size_t)kmax + 1) * sizeof *last) : NULL;
    if (!g->policy || !g->capacity || !g->result || (need_next && (!nxt || !last))) {
        free(nxt); free(last); an_simgrid_free(g);
        return rn_seterr(err, RN_ENOMEM, "out of memory for the simulation");
    }
    memcpy(g->policy, pol, sizeof *pol * (size_t)np);
    memcpy(g->capacity, caps, sizeof *caps * (size_t)nc);
    int rc = RN_OK, done = 0, total = ss->n * np * nc;
    for (int i = 0; i < ss->n && !rc; i++) {
        if (need_next) an_next_use(&ss->s[i], nxt, last);
        for (int p = 0; p < np && !rc; p++)
            for (int c = 0; c < nc && !rc; c++) {
                rc = an_simulate(&ss->s[i], pol[p], caps[c], warmup, pol[p]->needs_next ? nxt : NULL,
                                 &g->result[p * nc + c], err);
                if (!rc && progress && progress(user, ++done, total))
                    rc = rn_seterr(err, RN_EINTR, "simulate: interrupted");
            }
    }
    free(nxt); free(last);
    if (rc) an_simgrid_free(g);
    return rc;
}

static void row(FILE *f, int fmt, int first, const char *name, uint64_t cap, uint64_t acc, uint64_t hits,
                uint64_t misses, uint64_t bytes)
{
    double hr = acc ? (double)hits / (double)acc : 0.0;
    if (fmt == AN_FMT_CSV)
        fprintf(f, "%s,%llu,%llu,%llu,%llu,%.6f,%llu\n", name, (unsigned long long)cap,
                (unsigned long long)acc, (unsigned long long)hits, (unsigned long long)misses, hr,
                (unsigned long long)bytes);
    else if (fmt == AN_FMT_JSON)
        fprintf(f, "%s\n  {\"policy\": \"%s\", \"capacity\": %llu, \"accesses\": %llu, \"hits\": %llu, "
                   "\"misses\": %llu, \"hit_ratio\": %.6f, \"bytes_moved\": %llu}",
                first ? "" : ",", name, (unsigned long long)cap, (unsigned long long)acc,
                (unsigned long long)hits, (unsigned long long)misses, hr, (unsigned long long)bytes);
    else
        fprintf(f, "%-10s %10llu %12llu %12llu %12llu %9.4f %14llu\n", name, (unsigned long long)cap,
                (unsigned long long)acc, (unsigned long long)hits, (unsigned long long)misses, hr,
                (unsigned long long)bytes);
}

void an_simgrid_print(FILE *f, int fmt, const an_simgrid *g, const an_mrc *mrc)
{
    if (fmt == AN_FMT_CSV) fprintf(f, "policy,capacity,accesses,hits,misses,hit_ratio,bytes_moved\n");
    else if (fmt == AN_FMT_JSON) fprintf(f, "[");
    else fprintf(f, "%-10s %10s %12s %12s %12s %9s %14s\n", "policy", "capacity", "accesses", "hits",
                 "misses", "hit_ratio", "bytes_moved");
    int first = 1;
    for (int p = 0; p < g->n_policies; p++)
        for (int c = 0; c < g->n_capacities; c++) {
            const an_sim_result *r = &g->result[p * g->n_capacities + c];
            row(f, fmt, first, g->policy[p]->name, g->capacity[c], r->accesses, r->hits, r->misses,
                r->misses * g->slot_bytes);
            first = 0;
        }
    if (mrc)
        for (int c = 0; c < g->n_capacities; c++) {
            uint64_t m = an_mrc_misses_at(mrc, g->capacity[c]);
            row(f, fmt, first, "lru-exact", g->capacity[c], mrc->accesses, mrc->accesses - m, m,
                m * g->slot_bytes);
            first = 0;
        }
    if (fmt == AN_FMT_JSON) fprintf(f, "\n]\n");
}

void an_mrc_print_csv(FILE *f, const an_mrc *m)
{
    fprintf(f, "capacity,misses,miss_ratio,hit_ratio\n");
    for (int64_t i = 0; i < m->n; i++)
        fprintf(f, "%llu,%llu,%.6f,%.6f\n", (unsigned long long)m->capacity[i],
                (unsigned long long)m->misses[i], m->miss_ratio[i], m->hit_ratio[i]);
}
