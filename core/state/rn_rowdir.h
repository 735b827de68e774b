/* rn_rowdir.h — the tiered state's row directory: the position (row index
 * in the state file's data region) of every key written back since it was
 * cleared, given at its first write-back in the order of write-backs.
 *
 * A key hash table (rn_keytab.h, at most half full) maps key -> position;
 * pos_key lists the key of each position, which is what a flush writes
 * after the rows (rn_statefile.h) and a resume reads back.  Both grow by
 * doubling in rn_rowdir_room, which the store calls where a scan or a
 * flush starts, so adding a key in the scan never allocates. */
#ifndef RN_ROWDIR_H
#define RN_ROWDIR_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "rn_keytab.h"

#define RN_ROWDIR_NONE RN_KEYTAB_NONE /* find: the key has no position */

typedef struct {
    rn_keytab tab;        /* key -> position */
    uint32_t *pos_key;    /* [pos_cap], 4096-byte aligned and whole blocks (written with O_DIRECT) */
    uint64_t n_pos, pos_cap; /* positions given; pos_key's room */
} rn_rowdir;

/* An empty directory; RN_ENOMEM in err when out of memory. */
int rn_rowdir_init(rn_rowdir *d, rn_error *err);
void rn_rowdir_free(rn_rowdir *d);
/* Empty (positions start again at 0); the room stays. */
void rn_rowdir_clear(rn_rowdir *d);

/* key's position, or RN_ROWDIR_NONE. */
static inline uint32_t rn_rowdir_find(const rn_rowdir *d, uint32_t key) { return rn_keytab_find(&d->tab, key); }

/* Room for `more` positions beyond n_pos; RN_ENOMEM in err (unless it
 * holds a failure) when out of memory. */
int rn_rowdir_room(rn_rowdir *d, uint64_t more, rn_error *err);

/* Give key (not in the directory) the next position; out of memory (the
 * room was not made first): n_pos - 1 and err set. */
uint64_t rn_rowdir_add(rn_rowdir *d, uint32_t key, rn_error *err);

/* The directory of the n keys in pos_key (read from a file after
 * rn_rowdir_room(d, n) on an empty directory): key pos_key[p] at p. */
void rn_rowdir_load(rn_rowdir *d, uint64_t n);

/* Bytes of pos_key for n positions: whole 4096-byte blocks. */
size_t rn_rowdir_pos_bytes(uint64_t n);

#endif
