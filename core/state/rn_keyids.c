/* rn_keyids.c — the key-to-id map (rn_keyids.h) over the key hash table
 * (rn_keytab.h). */
#include "rn_keyids.h"

#include <stdlib.h>
#include <string.h>

#include "rn_keytab.h"

struct rn_keyids {
    uint32_t n_ids, n_free, peak;
    rn_keytab tab;      /* key -> id, >= 2·n_ids entries */
    uint32_t *id_key;   /* [n_ids] */
    uint32_t *free_ids; /* [n_ids]: the free ids, a stack */
};

size_t rn_keyids_bytes(uint32_t n_ids)
{
    return sizeof(rn_keyids) + rn_keytab_size(2 * (uint64_t)n_ids) * sizeof(rn_keytab_entry) +
           2 * (size_t)n_ids * sizeof(uint32_t);
}

rn_keyids *rn_keyids_new(uint32_t n_ids)
{
    if (n_ids == 0 || n_ids == UINT32_MAX) return NULL;
    rn_keyids *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->n_ids = n_ids;
    m->id_key = malloc((size_t)n_ids * sizeof *m->id_key);
    m->free_ids = malloc((size_t)n_ids * sizeof *m->free_ids);
    if (rn_keytab_init(&m->tab, rn_keytab_size(2 * (uint64_t)n_ids)) || !m->id_key || !m->free_ids) {
        rn_keyids_free(m);
        return NULL;
    }
    rn_keyids_clear(m);
    return m;
}

void rn_keyids_free(rn_keyids *m)
{
    if (!m) return;
    rn_keytab_free(&m->tab);
    free(m->id_key); free(m->free_ids); free(m);
}

void rn_keyids_clear(rn_keyids *m)
{
    rn_keytab_clear(&m->tab);
    memset(m->id_key, 0xff, (size_t)m->n_ids * sizeof *m->id_key);
    /* id 0 on top, so ids are taken in order 0, 1, 2, ... at first */
    for (uint32_t i = 0; i < m->n_ids; i++) m->free_ids[i] = m->n_ids - 1 - i;
    m->n_free = m->n_ids;
    m->peak = 0;
}

uint32_t rn_keyids_get(rn_keyids *m, uint32_t key)
{
    uint64_t i = rn_keytab_slot(&m->tab, key);
    if (m->tab.e[i].key == key) return m->tab.e[i].val;
    if (!m->n_free) return UINT32_MAX;
    uint32_t id = m->free_ids[--m->n_free];
    rn_keytab_put(&m->tab, i, key, id);
    m->id_key[id] = key;
    if (m->n_ids - m->n_free > m->peak) m->peak = m->n_ids - m->n_free;
    return id;
}

uint32_t rn_keyids_find(const rn_keyids *m, uint32_t key) { return rn_keytab_find(&m->tab, key); }

uint32_t rn_keyids_key(const rn_keyids *m, uint32_t id) { return m->id_key[id]; }

void rn_keyids_release(rn_keyids *m, uint32_t id)
{
    if (rn_keytab_remove(&m->tab, m->id_key[id])) m->free_ids[m->n_free++] = id;
}

uint32_t rn_keyids_used(const rn_keyids *m) { return m->n_ids - m->n_free; }

uint32_t rn_keyids_peak(const rn_keyids *m) { return m->peak; }
