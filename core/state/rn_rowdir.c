/* rn_rowdir.c — the tiered state's row directory (rn_rowdir.h). */
#include "rn_rowdir.h"

#include <stdlib.h>
#include <string.h>

#define DIRECT_ALIGN 4096
#define DIR_ENTRIES0 1024 /* the table's first size (entries); it doubles as rows are written */

size_t rn_rowdir_pos_bytes(uint64_t n)
{
    return (size_t)((n * sizeof(uint32_t) + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
}

int rn_rowdir_init(rn_rowdir *d, rn_error *err)
{
    memset(d, 0, sizeof *d);
    d->pos_cap = DIR_ENTRIES0 / 2;
    d->pos_key = aligned_alloc(DIRECT_ALIGN, rn_rowdir_pos_bytes(d->pos_cap));
    if (!d->pos_key || rn_keytab_init(&d->tab, DIR_ENTRIES0)) {
        rn_rowdir_free(d);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    return RN_OK;
}

void rn_rowdir_free(rn_rowdir *d)
{
    rn_keytab_free(&d->tab);
    free(d->pos_key);
    d->pos_key = NULL;
}

void rn_rowdir_clear(rn_rowdir *d)
{
    rn_keytab_clear(&d->tab);
    d->n_pos = 0;
}

int rn_rowdir_room(rn_rowdir *d, uint64_t more, rn_error *err)
{
    const uint64_t need = d->n_pos + more;
    uint64_t n = d->tab.mask + 1;
    while (2 * need > n) n *= 2;
    if (n != d->tab.mask + 1) {
        rn_keytab t;
        if (rn_keytab_init(&t, n)) {
            if (!err->code)
                rn_seterr(err, RN_ENOMEM, "out of memory growing the state file's row directory to %llu entries",
                          (unsigned long long)n);
            return RN_ENOMEM;
        }
        rn_keytab_free(&d->tab);
        d->tab = t;
        rn_rowdir_load(d, d->n_pos); /* rehash: every entry is (pos_key[p], p) */
    }
    if (need > d->pos_cap) {
        uint64_t c = d->pos_cap;
        while (c < need) c *= 2;
        uint32_t *k = aligned_alloc(DIRECT_ALIGN, rn_rowdir_pos_bytes(c));
        if (!k) {
            if (!err->code) rn_seterr(err, RN_ENOMEM, "out of memory growing the state file's row directory");
            return RN_ENOMEM;
        }
        memcpy(k, d->pos_key, d->n_pos * sizeof *k);
        free(d->pos_key);
        d->pos_key = k;
        d->pos_cap = c;
    }
    return RN_OK;
}

static int has_room(const rn_rowdir *d) { return 2 * (d->n_pos + 1) <= d->tab.mask + 1 && d->n_pos + 1 <= d->pos_cap; }

uint64_t rn_rowdir_add(rn_rowdir *d, uint32_t key, rn_error *err)
{
    if (!has_room(d)) rn_rowdir_room(d, 1, err); /* not reached: the room was made before the scan */
    if (!has_room(d)) return d->n_pos - 1;       /* out of memory: err says so */
    uint64_t p = d->n_pos++;
    rn_keytab_put(&d->tab, rn_keytab_slot(&d->tab, key), key, (uint32_t)p);
    d->pos_key[p] = key;
    return p;
}

void rn_rowdir_load(rn_rowdir *d, uint64_t n)
{
    for (uint64_t p = 0; p < n; p++) {
        uint32_t key = d->pos_key[p];
        uint64_t i = rn_keytab_slot(&d->tab, key);
        if (d->tab.e[i].key != key) rn_keytab_put(&d->tab, i, key, (uint32_t)p); /* a key twice: its first */
    }
    d->n_pos = n;
}
