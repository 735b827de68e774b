/* rn_cache.h — the cache-policy interface, shared by the trace simulator
 * (analysis/an_cache.h replays a traced access stream through a policy) and
 * the tiered memory state (rn_state.h keeps a policy's cached slots in RAM).
 *
 * A policy is one file, core/cache/rn_cache_NAME.c, that defines
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
 *
 * Forgetting.  An online policy remembers a bounded number of keys: the
 * cached ones and, for ARC and S3-FIFO, ghost entries of keys evicted
 * recently.  remembers(capacity) is that bound, after any access.  When a
 * key loses all its cached and ghost state the policy calls victims->forget
 * (when not NULL), after any victims->fn for the same key, and never for
 * the key being accessed.  The policy's state for a forgotten key is then
 * the same as for a key never seen, so a caller may hand its number to
 * another key: with keys numbered by a key-to-id map that reuses only
 * forgotten ids (rn_keyids.h) the policy runs over remembers(capacity) + 1
 * ids whatever the key universe, with the same hits, misses and victims.
 */
#ifndef RN_CACHE_H
#define RN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

#define RN_CACHE_NONE UINT32_MAX /* "no key" / "never again" */
/* Where a policy reports the keys it evicts. */
typedef struct {
    void (*fn)(void *user, uint32_t key);     /* key left the cache */
    void *user;
    void (*forget)(void *user, uint32_t key); /* NULL, or: key left the policy's memory */
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
    /* The most keys it remembers (cached or ghost) after any access, for
     * this capacity; NULL: it needs the whole universe (OPT). */
    uint64_t (*remembers)(uint64_t capacity);
} rn_policy;

/* Note that key k left the cache (for the policy files). */
static inline void rn_victim(rn_victims *v, uint32_t k)
{
    if (v) v->fn(v->user, k);
}

/* Note that key k left the policy's memory (cached and ghost). */
static inline void rn_forget(rn_victims *v, uint32_t k)
{
    if (v && v->forget) v->forget(v->user, k);
}

/* The ids a policy needs over a universe of n_keys keys numbered through
 * rn_keyids: remembers(capacity) + 1 (the key an access brings in), at
 * most n_keys; n_keys when the policy has no bound. */
uint64_t rn_policy_ids(const rn_policy *p, uint64_t capacity, uint64_t n_keys);

/* Every policy, by name (NULL when unknown), and the whole table. */
const rn_policy *rn_policy_find(const char *name);
int rn_policy_count(void);
const rn_policy *rn_policy_at(int i);

/* The names of every policy (online_only: of those that do not need the
 * future accesses), "arc, clock, ...", truncated to cap. */
void rn_policy_names(char *buf, size_t cap, int online_only);

/* Parse a comma-separated list of policy names ("all" = every policy) into
 * out[] (at most cap), without repeats; RN_EINPUT, "--policy: ...", naming
 * an unknown policy and the known ones. */
int rn_policy_parse_list(const char *list, const rn_policy **out, int cap, int *n, rn_error *err);

#endif
