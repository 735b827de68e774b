/* rn_state.h — the runtime's per-head slot state (S rows and z, DESIGN.md
 * §2 PDMA) behind one small interface, with two stores:
 *
 *   dense:  all L·H·M·(d_v+1) floats in memory (the default);
 *   tiered: a fixed budget of slot rows in memory, chosen by a cache policy
 *           of core/cache/rn_cache_*.c (the same code `ramtrace simulate` runs),
 *           and the full state in a file: a row is written back when it
 *           is evicted dirty, the first time to the next position of the
 *           file's packed data region (fresh rows fill an append block,
 *           written whole; the file is preallocated ahead in chunks of
 *           RN_STATE_PREALLOC), later over that position; a row directory
 *           (key -> position, rn_rowdir.h) says where; a row is read on a
 *           miss when it has a position (an untouched slot is S = 0,
 *           z = 1/M without any I/O).  How (enum rn_state_io, one engine of
 *           rn_rowio.h chosen at create): through the page cache, one
 *           pread/pwrite in the scan (the default) or from write-behind
 *           and read-ahead threads (a miss on a queued row copies it from
 *           the queue); with O_DIRECT (no page cache), in batches of Linux
 *           native AIO (core/state/rn_aio.h), one io_submit for many rows, or the
 *           threads when the kernel refuses io_setup.
 *
 * Both compute with the same per-slot arithmetic (rn_pdma_write and
 * rn_pdma_read_acc on one row at a time, in rank order), so their outputs
 * are bit-identical.  The tiered store visits heads one after another: in a
 * chunk of n rows, layer by layer, head by head, and for each position its K
 * writes then its K reads by rank: the order a traced run's probe reports
 * (rn_probe.h), which the trace records (its prefill chunks) and `simulate`
 * replays, so the counters equal `simulate --scope model` at the same
 * capacity and policy (docs/tiered-state.md).
 *
 * Everything is allocated by rn_state_create; nothing allocates per token.
 */
#ifndef RN_STATE_H
#define RN_STATE_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_real.h"
#include "rn_rowio.h" /* enum rn_state_io */
#include "rn_scope.h"

/* Bytes of the state file preallocated at a time (fallocate) ahead of the
 * fresh rows appended: the disk a file uses beyond its rows and directory
 * is less than this. */
#define RN_STATE_PREALLOC (2u << 20)

typedef struct {
    uint64_t budget;      /* bytes of slot rows kept in memory; 0: dense store */
    const char *file;     /* the state file (tiered: required) */
    const char *policy;   /* cache policy name (rn_policy_find); NULL: "lru" */
    int direct;           /* 1: open the file with O_DIRECT */
    int scope;            /* enum rn_scope: one cache (and budget) per head, layer or model;
                           * callers set it (0 is RN_CACHE_SCOPE_HEAD; the commands'
                           * default is RN_CACHE_SCOPE_MODEL) */
    int discard;          /* 1: replace the file even when it is dirty or not a state file */
    int no_prefetch;      /* 1: fetch each missing row only when it is accessed */
    int io;               /* enum rn_state_io: how O_DIRECT rows reach the file */
    int resume;           /* 1: the file must be a clean state file of this model (row size
                           * included); rn_state_resume then continues from it */
} rn_state_opts;


typedef struct {
    uint64_t capacity;    /* slot rows held in memory per cache (budget / row bytes, at most
                           * the keys of the cache: L·H·M, H·M or M by scope) */
    uint64_t caches;      /* 1, L or L·H by scope */
    uint64_t row_bytes;   /* bytes of one row: (d_v+1)·4, rounded up to the O_DIRECT alignment */
    uint64_t accesses, hits, misses;
    uint64_t bytes_read, bytes_written; /* pread / pwrite bytes to the state file */
    uint64_t evictions;   /* rows that left memory (written back when dirty) */
    uint64_t prefetched;  /* misses whose row had been read ahead (rn_state_layer); counted in
                           * misses and bytes_read as any other */
    int aio;              /* 1: the file's rows go through native AIO batches (rn_aio.h) */
    int aio_errno;        /* RN_STATE_IO_AUTO with O_DIRECT fell back to threads: io_setup's errno */
} rn_state_counters;

typedef struct rn_state rn_state;

/* Check opts against the config (policy name, budget of at least one row,
 * a file when tiered, at most 2^32 - 1 keys): RN_EINPUT naming the option. */
int rn_state_check(const rn_config *c, const rn_state_opts *o, rn_error *err);

/* Bytes of memory the store will allocate (for the memory limit).  o may be
 * NULL (dense). */
double rn_state_bytes(const rn_config *c, const rn_state_opts *o);

/* Create a store at the initial state (S = 0, z = 1/M); o NULL or budget 0:
 * dense.  Tiered: creates (or replaces, keeping its blocks) the file, with a header marked
 * dirty (core/state/rn_statefile.h); an existing file that is dirty (left by a
 * killed run), damaged (rn_statefile_check) or not a state file is refused
 * (RN_EINPUT naming it) unless o->discard.  With o->resume the file is not
 * written until rn_state_resume has taken it up. */
int rn_state_create(const rn_config *c, const rn_state_opts *o, rn_state **out, rn_error *err);
/* Tiered: the file is marked closed (not a state, but nothing cut short)
 * unless it is clean or an I/O error happened. */
void rn_state_free(rn_state *st);

int rn_state_tiered(const rn_state *st);

/* Back to the initial state; tiered: the file's rows are emptied (the row
 * directory is cleared and positions start again at 0, over the blocks of
 * the rows before, which are kept, not freed), the
 * cache and the counters start over.  A failure is kept (rn_state_error). */
void rn_state_reset(rn_state *st);

/* Dense only: head (l, h)'s S [M, d_v] and z [M]; RN_EINPUT on a tiered store. */
int rn_state_head(rn_state *st, int l, int h, rn_real **S, rn_real **z, rn_error *err);

/* Layer l's addresses (slots [n, H, K], valid until the layer's last
 * rn_state_scan), before its heads are scanned: the tiered store starts
 * reading the rows of the file it will miss, several at a time (read-ahead
 * threads; off with rn_state_opts.no_prefetch).  Dense: nothing. */
void rn_state_layer(rn_state *st, int l, const uint32_t *wslot, const uint32_t *rslot, int n);

/* One head's memory scan over n positions (rn_pdma_scan_forward's layout:
 * o, v [n, H·d_v]; slots and weights [n, H, K]).  An I/O failure of the
 * tiered store is kept and reported by rn_state_error. */
void rn_state_scan(rn_state *st, int l, int h, rn_real *o, const rn_real *v,
                   const uint32_t *wslot, const rn_real *ww, const uint32_t *rslot,
                   const rn_real *rw, int n);

/* The first failure since create/reset (RN_OK when none), copied into err. */
int rn_state_error(rn_state *st, rn_error *err);

/* Tiered: write every dirty row back and the open append block, then the
 * row directory after the data, fsync,
 * and mark the file clean, so it holds the whole state; rows stay cached
 * (the next write-back marks it dirty again).  Dense: nothing. */
int rn_state_flush(rn_state *st, rn_error *err);

/* Tiered: the sequence position a flush records in the header (the
 * runtime sets it before rn_state_flush). */
void rn_state_set_position(rn_state *st, int64_t pos);

/* Tiered, created with opts.resume: take up the state the file held when
 * it was opened (its row directory, the rows stay in the file and are read
 * on their misses; the open append block read back and its rows' checksums
 * checked), after create's and the runtime's reset, then mark the file
 * dirty; *pos: the position recorded at its flush.  RN_EINPUT when the
 * store was not created for resuming, or the file is damaged (then it is
 * left as it was).  Every row read back later is checked too: one that
 * fails its checksum is an RN_EINPUT failure of the scan (rn_state_error). */
int rn_state_resume(rn_state *st, int64_t *pos, rn_error *err);

/* Counters since create/reset (all 0 for a dense store). */
void rn_state_get_counters(const rn_state *st, rn_state_counters *out);

#endif
