/* an_cache.c — the stream simulator (an_cache.h). */
#include "an_cache.h"

int an_simulate(const an_stream *s, const rn_policy *p, uint64_t capacity, int32_t warmup,
                const uint32_t *nxt, an_sim_result *r, rn_error *err)
{
    if (capacity == 0) return rn_seterr(err, RN_EINPUT, "--capacity: must be at least 1");
    if (p->needs_next && !nxt)
        return rn_seterr(err, RN_EINTERNAL, "policy %s needs next-use indices", p->name);
    if (s->n == 0) return RN_OK;
    void *c = p->init(capacity, s->n_keys);
    if (!c) return rn_seterr(err, RN_ENOMEM, "out of memory for a %s cache of %llu keys", p->name,
                             (unsigned long long)capacity);
    uint64_t hits = 0, counted = 0;
    const uint32_t *key = s->key;
    int (*access)(void *, uint32_t, uint32_t, rn_victims *) = p->access;
    if (!s->pos || warmup <= 0) {
        if (nxt)
            for (size_t i = 0; i < s->n; i++) hits += (uint64_t)access(c, key[i], nxt[i], NULL);
        else
            for (size_t i = 0; i < s->n; i++) hits += (uint64_t)access(c, key[i], AN_NONE, NULL);
        counted = s->n;
    } else {
        for (size_t i = 0; i < s->n; i++) {
            int h = access(c, key[i], nxt ? nxt[i] : AN_NONE, NULL);
            if (s->pos[i] >= warmup) { hits += (uint64_t)h; counted++; }
        }
    }
    p->free(c);
    r->accesses += counted;
    r->hits += hits;
    r->misses += counted - hits;
    return RN_OK;
}
