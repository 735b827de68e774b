/* rn_statefile.h — the header of a tiered state file (core/state/rn_state.h):
 * what the file holds, and whether a crash may have left it inconsistent.
 *
 * Layout (version 3): one 4096-byte header block at offset 0, then the data
 * region: packed rows, the row at position p at RN_STATEFILE_DATA +
 * p · row_bytes (RN_STATEFILE_DATA keeps them aligned for O_DIRECT), a
 * position given to a key the first time its row is written back, in the
 * order of write-backs; then, after a full flush, the row directory at
 * dir_off (a multiple of 4096 after the data): dir_count uint32 keys, the
 * key of each position 0 .. dir_count-1, with its checksum dir_check in the
 * header.  A key not in the directory holds the initial state.  A row is
 * d_v floats of S, z, then a uint32 checksum of those bytes and its key
 * (rn_statefile_row_check), then zeros up to row_bytes (the O_DIRECT
 * padding); a row is verified whenever it is read back.  Version 1 (row
 * key at RN_STATEFILE_DATA + key · row_bytes, a bitmap of written rows)
 * and version 2 (this layout, rows without checksums) are recognised only
 * to be refused.
 *
 * The header says one of
 *   DIRTY  — a run is writing the rows, or was killed while it did: the
 *            rows on disk are a mixture of moments, not a state;
 *   CLEAN  — a full flush (every row, the row directory, fsync, then the
 *            header with the directory's place and checksum)
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
#define RN_STATEFILE_VERSION 3u
#define RN_STATEFILE_BLOCK 4096u  /* rows are written in blocks of max(1, this / row_bytes) rows */
#define RN_STATEFILE_ROW_CHECK 4u  /* bytes of a row's checksum, after its d_v + 1 floats */
#define RN_STATEFILE_ROW_MAX (1u << 24) /* row_bytes at most (d_v below 4 million) */
#define RN_STATEFILE_POS_MAX 2147483647u /* a position the runtime can continue from (INT32_MAX) */

enum { RN_STATEFILE_DIRTY = 1, RN_STATEFILE_CLEAN = 2, RN_STATEFILE_CLOSED = 3 };

typedef struct {
    uint32_t state;        /* RN_STATEFILE_* */
    uint64_t generation;   /* full flushes since the file was created */
    uint64_t shape;        /* rn_statefile_shape of the model */
    uint64_t row_bytes;    /* bytes per row in the file */
    uint64_t n_keys;       /* rows: L·H·M */
    uint64_t dir_off;      /* the row directory (CLEAN only; else 0) */
    uint64_t dir_count;    /* positions in the data region = keys in the directory (CLEAN only) */
    uint64_t dir_check;    /* rn_statefile_dir_check of the directory (CLEAN only) */
    uint64_t position;     /* the sequence's next position at the flush (CLEAN only): where a
                            * resumed run goes on */
} rn_statefile_info;

/* The checksum of a directory of n keys (FNV-1a over their bytes). */
uint64_t rn_statefile_dir_check(const uint32_t *keys, uint64_t n);

/* The checksum of key's row: rn_checksum64 over its first `bytes` bytes
 * (the d_v + 1 floats), folded to 32 bits, xor a bijection of the key (a
 * row read at another key's position never passes). */
uint32_t rn_statefile_row_check(uint32_t key, const void *row, size_t bytes);

/* A hash of the model's state shape (L, H, M, d_v). */
uint64_t rn_statefile_shape(const rn_config *c);

/* Encode info into the 4096-byte block buf (magic, version, checksum). */
void rn_statefile_encode(const rn_statefile_info *info, void *buf);

/* Decode a header block: 1 with *info when buf holds a valid header of
 * this version (magic, version, its checksum, a known state), 0 otherwise,
 * with *why (unless why is NULL) saying what is wrong: "not a ramtrace
 * state file" (no magic), "another format version", "its header fails its
 * checksum", "its header is malformed". */
int rn_statefile_decode(const void *buf, rn_statefile_info *info, const char **why);

/* Check a decoded header's fields against each other and against the
 * file's size: row_bytes in [12, RN_STATEFILE_ROW_MAX] and a multiple of 4,
 * n_keys in [1, 2^32 - 2], position at most RN_STATEFILE_POS_MAX; clean:
 * dir_count <= n_keys, the directory (dir_count keys in whole 4096-byte
 * blocks) at a multiple of 4096 after the rows' blocks (whole blocks of
 * RN_STATEFILE_BLOCK) and inside the file;
 * otherwise no directory.  NULL when they hold, else what fails (a phrase
 * for a message).  Nothing sized by a field is allocated before this. */
const char *rn_statefile_invalid(const rn_statefile_info *info, uint64_t file_size);

/* The format version of a header block that starts with the state file's
 * magic (valid or not), else 0. */
uint32_t rn_statefile_version(const void *buf);

/* Read the directory of a CLEAN file (info from its header) into keys
 * ([dir_count rounded up to 1024], aligned to 4096 for O_DIRECT) and check
 * it: the header's fields against the file (rn_statefile_invalid), its
 * checksum, every key below n_keys.  RN_EINPUT naming the file when it
 * fails ("row directory"), RN_EIO when it cannot be read. */
int rn_statefile_read_dir(int fd, const char *path, const rn_statefile_info *info, uint32_t *keys, rn_error *err);

/* May a run replace the file open at fd (named path)?  An empty file, or a
 * state file of this version whose header passes its checksum and
 * rn_statefile_invalid, CLOSED, or CLEAN with a directory that passes
 * rn_statefile_read_dir: yes.  A DIRTY state file, one of another version,
 * a damaged header, a CLEAN one whose directory is damaged, or anything
 * else: RN_EINPUT with a one-line message naming the file, unless discard.
 * buf: a 4096-byte block aligned for O_DIRECT (scratch). */
int rn_statefile_check(int fd, const char *path, int discard, void *buf, rn_error *err);

/* The offset and length alignment O_DIRECT needs on fd's file: statx's
 * STATX_DIOALIGN (Linux 6.1+), else the logical block size of the device
 * (/sys/dev/block/MAJ:MIN), else 4096; at least the memory alignment, at
 * most 4096. */
uint32_t rn_statefile_dio_align(int fd);

/* The same for a state file about to be created or replaced at path,
 * before it is opened: that of the file when it exists, else that of the
 * device holding its directory; 4096 when neither can be opened.  (The
 * memory check sizes O_DIRECT frames with it before the store opens the
 * file.) */
uint32_t rn_statefile_dio_align_path(const char *path);

/* Write info's header at offset 0 and fdatasync; RN_EIO naming path. */
int rn_statefile_write(int fd, const char *path, const rn_statefile_info *info, void *buf, rn_error *err);

#endif
