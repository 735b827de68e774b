/* rn_keyids.h — a key-to-id map with a bounded id universe, so a cache
 * policy's per-key arrays (rn_cache.h) follow what it remembers, not the
 * size of the key universe.
 *
 * The caller numbers each accessed key by rn_keyids_get before passing it
 * to the policy, and hands the ids the policy forgets (rn_victims.forget)
 * back by rn_keyids_release; a released id goes to the next key that has
 * none.  A policy decides by access order and key identity only, and its
 * state for a forgotten id is that of a key never seen, so the policy over
 * ids gives the same hits, misses and victims (mapped back by
 * rn_keyids_key) as over the keys themselves.  With rn_policy_ids ids, a
 * key that has none always finds a free one.
 *
 * The map is the key hash table of rn_keytab.h (at most half full) of
 * (key, id) pairs, a stack of free ids and an id -> key array,
 * all allocated by rn_keyids_new: get and release never allocate. */
#ifndef RN_KEYIDS_H
#define RN_KEYIDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct rn_keyids rn_keyids;

/* A map of n_ids ids (1 <= n_ids < 2^32 - 1), every one free; NULL when
 * out of memory. */
rn_keyids *rn_keyids_new(uint32_t n_ids);
void rn_keyids_free(rn_keyids *m);

/* Free every id (as new). */
void rn_keyids_clear(rn_keyids *m);

/* The id of key (key != UINT32_MAX): its current one, else a free one
 * taken for it; UINT32_MAX when it has none and none is free. */
uint32_t rn_keyids_get(rn_keyids *m, uint32_t key);

/* The id of key, UINT32_MAX when it has none (nothing taken). */
uint32_t rn_keyids_find(const rn_keyids *m, uint32_t key);

/* The key that id was last given to (it stays readable after release
 * until the id is given to another key). */
uint32_t rn_keyids_key(const rn_keyids *m, uint32_t id);

/* id is free again: its key has no id until the next get (an id not
 * held is left as it is). */
void rn_keyids_release(rn_keyids *m, uint32_t id);

/* Ids held now, and the most held at once since new or clear. */
uint32_t rn_keyids_used(const rn_keyids *m);
uint32_t rn_keyids_peak(const rn_keyids *m);

/* Bytes rn_keyids_new(n_ids) allocates. */
size_t rn_keyids_bytes(uint32_t n_ids);

#endif
