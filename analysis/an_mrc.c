/* an_mrc.c — exact LRU miss-ratio curves from stack distances (an_mrc.h). */
#include "an_mrc.h"

#include <stdlib.h>
#include <string.h>

#include "an_reuse.h"

void an_mrc_free(an_mrc *m)
{
    if (!m) return;
    free(m->capacity); free(m->misses); free(m->miss_ratio); free(m->hit_ratio);
    memset(m, 0, sizeof *m);
}

int an_mrc_build(const an_streams *ss, int32_t warmup, an_mrc *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    uint32_t nmax = an_streams_max_keys(ss);
    size_t nlong = 0;
    for (int i = 0; i < ss->n; i++) if (ss->s[i].n > nlong) nlong = ss->s[i].n;
    int64_t n = nmax;
    /* hist[d] (d = 1..n) counted accesses at distance d, summed over streams;
     * misses(C) = cold + Σ_{d > C} hist[d]. */
    uint64_t *hist = calloc((size_t)n + 2, sizeof *hist);
    uint32_t *dist = malloc((nlong ? nlong : 1) * sizeof *dist);
    out->capacity = malloc((n ? n : 1) * sizeof *out->capacity);
    out->misses = malloc((n ? n : 1) * sizeof *out->misses);
    out->miss_ratio = malloc((n ? n : 1) * sizeof *out->miss_ratio);
    out->hit_ratio = malloc((n ? n : 1) * sizeof *out->hit_ratio);
    if (!hist || !dist || !out->capacity || !out->misses || !out->miss_ratio || !out->hit_ratio) {
        free(hist); free(dist); an_mrc_free(out);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a miss-ratio curve of %lld points",
                         (long long)n);
    }
    for (int i = 0; i < ss->n; i++) {
        const an_stream *s = &ss->s[i];
        int rc = an_stack_distances(s, dist, err);
        if (rc) { free(hist); free(dist); an_mrc_free(out); return rc; }
        for (size_t j = 0; j < s->n; j++) {
            if (s->pos && s->pos[j] < warmup) continue;
            out->accesses++;
            if (dist[j] == AN_COLD) out->cold++;
            else hist[dist[j]]++;
        }
    }
    uint64_t above = 0; /* Σ_{d > C} hist[d] */
    for (int64_t C = n; C >= 1; C--) {
        out->capacity[C - 1] = (uint64_t)C;
        out->misses[C - 1] = out->cold + above;
        double mr = out->accesses ? (double)out->misses[C - 1] / (double)out->accesses : 0.0;
        out->miss_ratio[C - 1] = mr;
        out->hit_ratio[C - 1] = out->accesses ? 1.0 - mr : 0.0;
        above += hist[C];
    }
    out->n = n;
    free(hist); free(dist);
    return RN_OK;
}

uint64_t an_mrc_misses_at(const an_mrc *m, uint64_t C)
{
    if (m->n == 0) return m->cold;
    if (C == 0) return m->accesses;
    if (C > (uint64_t)m->n) return m->cold;
    return m->misses[C - 1];
}
