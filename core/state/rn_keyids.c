/* rn_keyids.c — the key-to-id map (rn_keyids.h). */
#include "rn_keyids.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY UINT32_MAX

typedef struct {
    uint32_t key, id; /* key EMPTY: a free slot */
} slot;

struct rn_keyids {
    uint32_t n_ids, n_free, peak;
    int shift;          /* 64 - log2(table size) */
    uint64_t mask;      /* table size - 1 */
    slot *table;        /* [mask + 1] >= 2·n_ids */
    uint32_t *id_key;   /* [n_ids] */
    uint32_t *free_ids; /* [n_ids]: the free ids, a stack */
};

static uint64_t table_size(uint32_t n_ids)
{
    uint64_t t = 2;
    while (t < 2 * (uint64_t)n_ids) t *= 2;
    return t;
}

size_t rn_keyids_bytes(uint32_t n_ids)
{
    return sizeof(rn_keyids) + table_size(n_ids) * sizeof(slot) + 2 * (size_t)n_ids * sizeof(uint32_t);
}

rn_keyids *rn_keyids_new(uint32_t n_ids)
{
    if (n_ids == 0 || n_ids == UINT32_MAX) return NULL;
    rn_keyids *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    uint64_t t = table_size(n_ids);
    m->n_ids = n_ids;
    m->mask = t - 1;
    m->shift = 64;
    while (t > 1) { t /= 2; m->shift--; }
    m->table = malloc((m->mask + 1) * sizeof *m->table);
    m->id_key = malloc((size_t)n_ids * sizeof *m->id_key);
    m->free_ids = malloc((size_t)n_ids * sizeof *m->free_ids);
    if (!m->table || !m->id_key || !m->free_ids) { rn_keyids_free(m); return NULL; }
    rn_keyids_clear(m);
    return m;
}

void rn_keyids_free(rn_keyids *m)
{
    if (!m) return;
    free(m->table); free(m->id_key); free(m->free_ids); free(m);
}

void rn_keyids_clear(rn_keyids *m)
{
    memset(m->table, 0xff, (m->mask + 1) * sizeof *m->table);
    memset(m->id_key, 0xff, (size_t)m->n_ids * sizeof *m->id_key);
    /* id 0 on top, so ids are taken in order 0, 1, 2, ... at first */
    for (uint32_t i = 0; i < m->n_ids; i++) m->free_ids[i] = m->n_ids - 1 - i;
    m->n_free = m->n_ids;
    m->peak = 0;
}

/* Fibonacci hashing: the top bits of key·2^64/φ. */
static inline uint64_t home(const rn_keyids *m, uint32_t key)
{
    return (uint64_t)key * 0x9E3779B97F4A7C15ull >> m->shift;
}

uint32_t rn_keyids_get(rn_keyids *m, uint32_t key)
{
    uint64_t i = home(m, key);
    for (;; i = (i + 1) & m->mask) {
        if (m->table[i].key == key) return m->table[i].id;
        if (m->table[i].key == EMPTY) break;
    }
    if (!m->n_free) return UINT32_MAX;
    uint32_t id = m->free_ids[--m->n_free];
    m->table[i] = (slot){ key, id };
    m->id_key[id] = key;
    if (m->n_ids - m->n_free > m->peak) m->peak = m->n_ids - m->n_free;
    return id;
}

uint32_t rn_keyids_find(const rn_keyids *m, uint32_t key)
{
    for (uint64_t i = home(m, key);; i = (i + 1) & m->mask) {
        if (m->table[i].key == key) return m->table[i].id;
        if (m->table[i].key == EMPTY) return UINT32_MAX;
    }
}

uint32_t rn_keyids_key(const rn_keyids *m, uint32_t id) { return m->id_key[id]; }

/* Remove id's entry, shifting back the entries after it that would
 * otherwise be cut off from their home slot (no tombstones, so lookups
 * stay short however many keys come and go). */
void rn_keyids_release(rn_keyids *m, uint32_t id)
{
    uint32_t key = m->id_key[id];
    uint64_t i = home(m, key);
    for (; m->table[i].key != key; i = (i + 1) & m->mask)
        if (m->table[i].key == EMPTY) return; /* not held: nothing to free */
    for (uint64_t j = i;;) {
        j = (j + 1) & m->mask;
        if (m->table[j].key == EMPTY) break;
        uint64_t h = home(m, m->table[j].key);
        /* entry j may fill the hole at i when its home is not in (i, j] (cyclically) */
        if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
            m->table[i] = m->table[j];
            i = j;
        }
    }
    m->table[i].key = EMPTY;
    m->free_ids[m->n_free++] = id;
}

uint32_t rn_keyids_used(const rn_keyids *m) { return m->n_ids - m->n_free; }

uint32_t rn_keyids_peak(const rn_keyids *m) { return m->peak; }
