/* rn_keytab.c — the key hash table (rn_keytab.h). */
#include "rn_keytab.h"

#include <stdlib.h>
#include <string.h>

uint64_t rn_keytab_size(uint64_t n)
{
    uint64_t t = 2;
    while (t < n) t *= 2;
    return t;
}

int rn_keytab_init(rn_keytab *t, uint64_t entries)
{
    t->e = malloc(entries * sizeof *t->e);
    if (!t->e) return -1;
    t->mask = entries - 1;
    t->shift = 64;
    for (uint64_t n = entries; n > 1; n /= 2) t->shift--;
    rn_keytab_clear(t);
    return 0;
}

void rn_keytab_free(rn_keytab *t)
{
    free(t->e);
    t->e = NULL;
}

void rn_keytab_clear(rn_keytab *t) { memset(t->e, 0xff, (t->mask + 1) * sizeof *t->e); }

/* Remove key's entry, shifting back the entries after it that would
 * otherwise be cut off from their home entry. */
int rn_keytab_remove(rn_keytab *t, uint32_t key)
{
    uint64_t i = rn_keytab_slot(t, key);
    if (t->e[i].key != key) return 0;
    for (uint64_t j = i;;) {
        j = (j + 1) & t->mask;
        if (t->e[j].key == RN_KEYTAB_NONE) break;
        uint64_t h = rn_keytab_home(t, t->e[j].key);
        /* entry j may fill the hole at i when its home is not in (i, j] (cyclically) */
        if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
            t->e[i] = t->e[j];
            i = j;
        }
    }
    t->e[i].key = RN_KEYTAB_NONE;
    return 1;
}
