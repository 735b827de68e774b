/* rn_statefile.h — the header of a tiered state file (core/rn_state.h):
 * what the file holds, and whether a crash may have left it inconsistent.
 *
 * Layout: one 4096-byte header block at offset 0, then the rows (row key at
 * RN_STATEFILE_DATA + key · row_bytes; RN_STATEFILE_DATA keeps them aligned
 * for O_DIRECT), then, after a full flush, the bitmap of rows ever written
 * (bit key of byte key / 8; the other rows are the initial state).
 *
 * The header says one of
 *   DIRTY  — a run is writing the rows, or was killed while it did: the
 *            rows on disk are a mixture of moments, not a state;
 *   CLEAN  — a full flush (every row, the bitmap, fsync, then the header)
 *            finished: the file holds the whole state after `generation`
 *            flushes, and no row was written since;
 *   CLOSED — a run ended normally without a final flush: not a state, but
 *            nothing was cut short (the file may be replaced freely).
 * The store marks the file DIRTY (synced to disk) before the first row
 * write after creating or flushing it, so after a crash, a kill or a power
 * loss the header is DIRTY whenever the rows may be inconsistent.
 *
 * Fields are native-endian (the file is scratch of one machine).
 */
#ifndef RN_STATEFILE_H
#define RN_STATEFILE_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"

#define RN_STATEFILE_DATA 4096u   /* header bytes: the rows' offset (any O_DIRECT alignment divides it) */
#define RN_STATEFILE_VERSION 1u

enum { RN_STATEFILE_DIRTY = 1, RN_STATEFILE_CLEAN = 2, RN_STATEFILE_CLOSED = 3 };

typedef struct {
    uint32_t state;        /* RN_STATEFILE_* */
    uint64_t generation;   /* full flushes since the file was created */
    uint64_t shape;        /* rn_statefile_shape of the model */
    uint64_t row_bytes;    /* bytes per row in the file */
    uint64_t n_keys;       /* rows: L·H·M */
    uint64_t bitmap_off;   /* the written-rows bitmap (CLEAN only; else 0) */
} rn_statefile_info;

/* A hash of the model's state shape (L, H, M, d_v). */
uint64_t rn_statefile_shape(const rn_config *c);

/* Encode info into the 4096-byte block buf (magic, version, checksum). */
void rn_statefile_encode(const rn_statefile_info *info, void *buf);

/* Decode a header block: 1 with *info when buf holds a valid header of
 * this version, 0 otherwise. */
int rn_statefile_decode(const void *buf, rn_statefile_info *info);

/* May a run replace the file open at fd (named path)?  An empty file, or a
 * state file that is CLEAN or CLOSED: yes.  A DIRTY state file or anything
 * else: RN_EINPUT with a one-line message naming the file, unless discard.
 * buf: a 4096-byte block aligned for O_DIRECT (scratch). */
int rn_statefile_check(int fd, const char *path, int discard, void *buf, rn_error *err);

/* The offset and length alignment O_DIRECT needs on fd's file: statx's
 * STATX_DIOALIGN (Linux 6.1+), else the logical block size of the device
 * (/sys/dev/block/MAJ:MIN), else 4096; at least the memory alignment, at
 * most 4096. */
uint32_t rn_statefile_dio_align(int fd);

/* Write info's header at offset 0 and fdatasync; RN_EIO naming path. */
int rn_statefile_write(int fd, const char *path, const rn_statefile_info *info, void *buf, rn_error *err);

#endif
