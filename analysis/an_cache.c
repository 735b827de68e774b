/* an_cache.c — the stream simulator (an_cache.h). */
#include "an_cache.h"

uint64_t an_cache_replay(const rn_policy *p, void *c, const uint32_t *key, const uint32_t *nxt, size_t n,
                         size_t from)
{
    int (*access)(void *, uint32_t, uint32_t, rn_victims *) = p->access;
    size_t i = 0;
    for (; i < from && i < n; i++) access(c, key[i], nxt ? nxt[i] : RN_CACHE_NONE, NULL);
    uint64_t hits = 0;
    if (nxt)
        for (; i < n; i++) hits += (uint64_t)access(c, key[i], nxt[i], NULL);
    else
        for (; i < n; i++) hits += (uint64_t)access(c, key[i], RN_CACHE_NONE, NULL);
    return hits;
}

int an_simulate(const an_stream *s, const rn_policy *p, uint64_t capacity, int32_t warmup,
                const uint32_t *nxt, an_sim_result *r, rn_error *err)
{
    if (capacity == 0) return rn_seterr(err, RN_EINPUT, "--capacity: must be at least 1");
    if (p->needs_next && !nxt)
        return rn_seterr(err, RN_EINTERNAL, "policy %s needs next-use indices", p->name);
    size_t from;
    int rc = an_stream_warm(s, warmup, &from, err);
    if (rc || s->n == 0) return rc;
    void *c = p->init(capacity, s->n_keys);
    if (!c) return rn_seterr(err, RN_ENOMEM, "out of memory for a %s cache of %llu keys", p->name,
                             (unsigned long long)capacity);
    uint64_t hits = an_cache_replay(p, c, s->key, nxt, s->n, from);
    p->free(c);
    r->accesses += s->n - from;
    r->hits += hits;
    r->misses += s->n - from - hits;
    return RN_OK;
}
