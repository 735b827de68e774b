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

/* Allocate out's arrays for capacities 1..n and the distance histogram. */
static int mrc_alloc(an_mrc *out, int64_t n, uint64_t **hist, rn_error *err)
{
    memset(out, 0, sizeof *out);
    *hist = calloc((size_t)n + 2, sizeof **hist);
    out->capacity = malloc((n ? n : 1) * sizeof *out->capacity);
    out->misses = malloc((n ? n : 1) * sizeof *out->misses);
    out->miss_ratio = malloc((n ? n : 1) * sizeof *out->miss_ratio);
    out->hit_ratio = malloc((n ? n : 1) * sizeof *out->hit_ratio);
    if (!*hist || !out->capacity || !out->misses || !out->miss_ratio || !out->hit_ratio) {
        free(*hist); *hist = NULL; an_mrc_free(out);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a miss-ratio curve of %lld points",
                         (long long)n);
    }
    return RN_OK;
}

/* The curve from hist[d] (d = 1..n), the accesses counted at distance d
 * summed over streams: misses(C) = cold + sum over d > C of hist[d]. */
static void mrc_finish(an_mrc *out, int64_t n, const uint64_t *hist)
{
    uint64_t above = 0;
    for (int64_t C = n; C >= 1; C--) {
        out->capacity[C - 1] = (uint64_t)C;
        out->misses[C - 1] = out->cold + above;
        double mr = out->accesses ? (double)out->misses[C - 1] / (double)out->accesses : 0.0;
        out->miss_ratio[C - 1] = mr;
        out->hit_ratio[C - 1] = out->accesses ? 1.0 - mr : 0.0;
        above += hist[C];
    }
    out->n = n;
}

int an_mrc_build(const an_streams *ss, int32_t warmup, an_mrc *out, rn_error *err)
{
    an_spill sp;
    memset(out, 0, sizeof *out);
    int rc = an_spill_resident(ss, warmup, &sp, err);
    if (!rc) rc = an_mrc_build_spill(&sp, out, err);
    an_spill_free(&sp);
    return rc;
}

#define MRC_CHUNK (1u << 20)

int an_mrc_build_spill(const an_spill *sp, an_mrc *out, rn_error *err)
{
    int64_t n = an_spill_max_keys(sp);
    uint64_t *hist;
    int rc = mrc_alloc(out, n, &hist, err);
    if (rc) return rc;
    const size_t chunk = an_spill_chunk_for(sp, MRC_CHUNK);
    uint32_t *key = malloc(chunk * sizeof *key), *dist = malloc(chunk * sizeof *dist);
    if (!key || !dist) rc = rn_seterr(err, RN_ENOMEM, "out of memory for a miss-ratio curve");
    for (int i = 0; i < sp->n && !rc; i++) {
        const an_spill_stream *s = &sp->s[i];
        an_sd sd;
        if ((rc = an_sd_init(&sd, s->n_keys, err))) break;
        for (uint64_t i0 = 0; i0 < s->n && !rc; i0 += chunk) {
            size_t m = s->n - i0 < chunk ? (size_t)(s->n - i0) : chunk;
            if ((rc = an_spill_read(sp, i, i0, m, key, NULL, err))) break;
            an_sd_feed(&sd, key, m, dist);
            for (size_t j = 0; j < m; j++) {
                if (i0 + j < s->n_warm) continue;
                out->accesses++;
                if (dist[j] == AN_COLD) out->cold++;
                else hist[dist[j]]++;
            }
        }
        an_sd_free(&sd);
    }
    free(key); free(dist);
    if (rc) { free(hist); an_mrc_free(out); return rc; }
    mrc_finish(out, n, hist);
    free(hist);
    return RN_OK;
}

uint64_t an_mrc_misses_at(const an_mrc *m, uint64_t C)
{
    if (m->n == 0) return m->cold;
    if (C == 0) return m->accesses;
    if (C > (uint64_t)m->n) return m->cold;
    return m->misses[C - 1];
}
