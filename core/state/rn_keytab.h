/* rn_keytab.h — the hash table under the tiered state's key maps: 32-bit
 * keys to 32-bit values, open addressing with linear probing from a
 * Fibonacci hash, kept at most half full by its users, removal by backward
 * shift (no tombstones, so probes stay short however many keys come and
 * go).  rn_keyids (key -> policy id) and rn_rowdir (key -> file position)
 * are this table with their own bookkeeping beside it.
 *
 * Key UINT32_MAX marks an empty entry (no key takes it).  The lookups are
 * inline: they run on every access of the scan. */
#ifndef RN_KEYTAB_H
#define RN_KEYTAB_H

#include <stddef.h>
#include <stdint.h>

#define RN_KEYTAB_NONE UINT32_MAX /* an empty entry's key; find's "absent" */

typedef struct {
    uint32_t key, val;
} rn_keytab_entry;

typedef struct {
    rn_keytab_entry *e;   /* [mask + 1] */
    uint64_t mask;        /* entries - 1 (a power of two) */
    int shift;            /* 64 - log2(entries) */
} rn_keytab;

/* A table of `entries` (a power of two, at least 2), empty; -1 when out of
 * memory (t then holds nothing to free). */
int rn_keytab_init(rn_keytab *t, uint64_t entries);
void rn_keytab_free(rn_keytab *t);
void rn_keytab_clear(rn_keytab *t);

/* The smallest power of two >= 2 and >= n entries. */
uint64_t rn_keytab_size(uint64_t n);

/* Remove key's entry: 1, or 0 when it has none. */
int rn_keytab_remove(rn_keytab *t, uint32_t key);

/* key's home entry: the top bits of key·2^64/φ. */
static inline uint64_t rn_keytab_home(const rn_keytab *t, uint32_t key)
{
    return (uint64_t)key * 0x9E3779B97F4A7C15ull >> t->shift;
}

/* The entry holding key, or the empty entry where it would go. */
static inline uint64_t rn_keytab_slot(const rn_keytab *t, uint32_t key)
{
    uint64_t i = rn_keytab_home(t, key);
    while (t->e[i].key != key && t->e[i].key != RN_KEYTAB_NONE) i = (i + 1) & t->mask;
    return i;
}

/* key's value, or RN_KEYTAB_NONE when absent. */
static inline uint32_t rn_keytab_find(const rn_keytab *t, uint32_t key)
{
    const rn_keytab_entry *e = &t->e[rn_keytab_slot(t, key)];
    return e->key == key ? e->val : RN_KEYTAB_NONE;
}

/* Put (key, val) at entry i (rn_keytab_slot's for an absent key). */
static inline void rn_keytab_put(rn_keytab *t, uint64_t i, uint32_t key, uint32_t val)
{
    t->e[i] = (rn_keytab_entry){ key, val };
}

#endif
