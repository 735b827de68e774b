/* rn_cache.h — the cache-policy interface, shared by the trace simulator
 * (analysis/an_cache.h replays a traced access stream through a policy) and
 * the tiered memory state (rn_state.h keeps a policy's cached slots in RAM).
 *
 * A policy is one file, core/rn_cache_NAME.c, that defines
 * `const rn_policy rn_cache_NAME`; the registry (rn_policy_find) is
 * generated from the file names by mk/core.mk, so adding a policy touches
 * one file.  A policy caches dense keys 0..n_keys-1 and allocates
 * everything in init: access never allocates.  Its decisions depend only on
 * the order of accesses and on key identity, never on key values, so any
 * one-to-one numbering of the same objects gives the same hits and misses.
 *
 * Victims.  When an access makes keys leave the cache, the policy calls
 * victims->fn for each (when the caller passes victims; the simulator
 * passes NULL), before access returns.  A key admitted on a miss stays
 * cached at least until the next access.  One access may evict several
 * keys (S3-FIFO: each small-queue key promoted to a full main queue pushes
 * one out of main), never more than the capacity.
 */
#ifndef RN_CACHE_H
#define RN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define RN_CACHE_NONE UINT32_MAX /* "no key" / "never again" */
/* Where a policy reports the keys it evicts. */
typedef struct {
    void (*fn)(void *user, uint32_t key);
    void *user;
} rn_victims;

typedef struct {
    const char *name;     /* as given to --policy / --state-policy */
    const char *summary;  /* one line for --help */
    int needs_next;       /* 1: access wants the next-use index (OPT; offline only) */
    /* Allocate a cache of `capacity` keys over the key universe
     * 0..n_keys-1; NULL when out of memory.  capacity >= 1. */
    void *(*init)(uint64_t capacity, uint32_t n_keys);
    /* Access key; `next` is the stream index of key's next access
     * (RN_CACHE_NONE if none; only meaningful when needs_next).  Returns 1
     * hit, 0 miss.  victims: NULL, or told each key evicted; on a miss the
     * key is cached afterwards unless needs_next. */
    int (*access)(void *cache, uint32_t key, uint32_t next, rn_victims *victims);
    void (*free)(void *cache);
} rn_policy;

/* Note that key k left the cache (for the policy files). */
static inline void rn_victim(rn_victims *v, uint32_t k)
{
    if (v) v->fn(v->user, k);
}

/* Every policy, by name (NULL when unknown), and the whole table. */
const rn_policy *rn_policy_find(const char *name);
int rn_policy_count(void);
const rn_policy *rn_policy_at(int i);

#endif
