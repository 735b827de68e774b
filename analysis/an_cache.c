/* an_cache.c — the policy registry and the stream simulator (an_cache.h). */
#include "an_cache.h"

#include <stdlib.h>
#include <string.h>


int an_policy_count(void) { return rn_policy_count(); }

const an_policy *an_policy_at(int i) { return rn_policy_at(i); }

const an_policy *an_policy_find(const char *name)
{
    return rn_policy_find(name);
}

int an_policy_parse_list(const char *list, const an_policy **out, int cap, int *n, rn_error *err)
{
    *n = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; i < an_policy_count() && *n < cap; i++) out[(*n)++] = an_policy_at(i);
        return RN_OK;
    }
    const char *p = list;
    while (1) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof name)
            return rn_seterr(err, RN_EINPUT, "--policy: bad policy list '%s'", list);
        memcpy(name, p, len);
        name[len] = 0;
        const an_policy *pol = an_policy_find(name);
        if (!pol) {
            char known[256] = "";
            for (int i = 0; i < an_policy_count(); i++) {
                if (i) strncat(known, ", ", sizeof known - strlen(known) - 1);
                strncat(known, an_policy_at(i)->name, sizeof known - strlen(known) - 1);
            }
            return rn_seterr(err, RN_EINPUT, "--policy: unknown policy '%s' (known: %s)", name, known);
        }
        int dup = 0;
        for (int i = 0; i < *n; i++) dup |= out[i] == pol;
        if (!dup) {
            if (*n >= cap) return rn_seterr(err, RN_EINPUT, "--policy: too many policies");
            out[(*n)++] = pol;
        }
        if (!e) break;
        p = e + 1;
    }
    return RN_OK;
}

int an_simulate(const an_stream *s, const an_policy *p, uint64_t capacity, int32_t warmup,
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
