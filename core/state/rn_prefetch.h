/* rn_prefetch.h — rows of a file read ahead by a few threads, so that the
 * reads a computation will need run in parallel (at a queue depth above 1)
 * while it works, instead of one at a time when it gets to them.
 *
 * The tiered state (core/state/rn_state.c) knows a layer's addresses before it
 * scans them; for each row it will miss that lies in its file it issues a
 * read here, and when it gets to the miss it takes the row (waiting only
 * for a read still under way) instead of calling pread itself.
 *
 * A fixed number of slots, each one row: issue fills a free slot and hands
 * it to the threads; take copies a slot's row out and frees it; drop waits
 * for the reads under way and frees every slot.  The caller guarantees a
 * row's bytes in the file do not change between its issue and its take.
 * issue, find, take and drop are called from one thread.  Nothing
 * allocates after create.
 */
#ifndef RN_PREFETCH_H
#define RN_PREFETCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_error.h"

typedef struct rn_prefetch rn_prefetch;

/* Slots of row_bytes (buffers aligned to 4096 bytes for O_DIRECT) read
 * from fd (named path, for messages) by `threads` threads; none when the
 * environment variable RAMTRACE_PREFETCH_IDLE is set (then every
 * rn_prefetch_take reads its row itself and rn_prefetch_taken stays 0: the
 * test of the callers' "read ahead" count). */
int rn_prefetch_create(int fd, const char *path, size_t row_bytes, int threads, int slots, rn_prefetch **out,
                       rn_error *err);
void rn_prefetch_free(rn_prefetch *p);

/* 1 when no slot is free. */
int rn_prefetch_full(const rn_prefetch *p);

/* Start reading the row of key at offset off into a free slot (the caller
 * checks rn_prefetch_full first; a full pool ignores the call). */
void rn_prefetch_issue(rn_prefetch *p, uint32_t key, off_t off);

/* The slot holding (or reading) key's row, or -1. */
int rn_prefetch_find(const rn_prefetch *p, uint32_t key);

/* Slot s's row into dst, and free the slot: copied once its read is done
 * (waiting for a read under way), or read here when no thread has started
 * it (so a busy machine's scheduling delays cost no more than reading it
 * without read-ahead).  RN_EIO (naming the file) when the read failed. */
int rn_prefetch_take(rn_prefetch *p, int s, void *dst, rn_error *err);

/* Wait for every read under way and free every slot. */
void rn_prefetch_drop(rn_prefetch *p);

/* Rows taken from a read ahead (not read by rn_prefetch_take itself) since create. */
uint64_t rn_prefetch_taken(const rn_prefetch *p);

#endif
