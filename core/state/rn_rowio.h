/* rn_rowio.h — how the tiered state's rows reach its file: one table of
 * operations (read, write, pending, read-ahead, drain, stats) with one
 * engine behind it, chosen once by rn_rowio_open from --state-io and
 * O_DIRECT (docs/tiered-state.md):
 *
 *   sync     one pread/pwrite per row when the scan needs it, no threads,
 *            no read-ahead (rn_rowio_sync.c);
 *   threads  write-behind threads for rewrites and a pool of read-ahead
 *            threads (rn_rowio_threads.c);
 *   aio      batches of Linux native AIO (rn_aio.h), one io_submit for many
 *            rows (rn_rowio_aio.c).
 *
 * The store (rn_state.c) keeps frames, policy, victims, the row directory
 * (rn_rowdir.h), flush and resume; an engine only moves rows: a row is
 * `row` bytes at byte base + pos · row of the file, pos its position, and
 * an append block b is the blk bytes at base + b · blk.  A new engine is
 * one file defining an rn_rowio_ops and an open function, and one line of
 * rn_rowio_open.
 *
 * Failures: an operation given an rn_error sets it (unless it holds one
 * already) when it fails there and then; a failure of a write under way in
 * the background is kept by the engine and reported by `error`.  One
 * thread uses an engine.  Nothing allocates after open.
 */
#ifndef RN_ROWIO_H
#define RN_ROWIO_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

/* RN_STATE_IO_AUTO: with O_DIRECT, batches of Linux native AIO (rn_aio.h),
 * or the threads when io_setup fails (rn_state_counters.aio_errno says
 * why); without O_DIRECT, RN_STATE_IO_SYNC.  RN_STATE_IO_THREADS: always the
 * write-behind and read-ahead threads (one pread/pwrite per row).
 * RN_STATE_IO_SYNC: no threads, no AIO: each row read and written by one
 * pread/pwrite when the scan needs it (no read-ahead). */
enum rn_state_io { RN_STATE_IO_AUTO = 0, RN_STATE_IO_THREADS = 1, RN_STATE_IO_SYNC = 2 };

typedef struct rn_rowio rn_rowio;

/* What an engine did since open (for the counters and the bench). */
typedef struct {
    int batched;          /* 1: native AIO batches (rn_state_counters.aio) */
    uint64_t submits;     /* io_submit calls (aio; 0 otherwise) */
    uint64_t requests;    /* requests submitted (aio; 0 otherwise) */
} rn_rowio_stats;

typedef struct {
    const char *name;
    /* Write the row at position pos (a rewrite of a row in a block
     * written before; key is the row's key): now, or queued (bytes
     * copied), waiting while the queue is full. */
    void (*write)(rn_rowio *io, uint32_t key, uint64_t pos, const void *row, rn_error *err);
    /* Write append block b whole (blk bytes of buf). */
    void (*write_block)(rn_rowio *io, uint64_t b, const void *buf, rn_error *err);
    /* 1 when a queued or under-way write holds key's row at pos (its
     * bytes copied into dst unless NULL): the file does not hold it yet. */
    int (*pending)(rn_rowio *io, uint32_t key, uint64_t pos, void *dst);
    /* key's row at pos into dst: its newest copy (a pending write's, else
     * the file's). */
    void (*read)(rn_rowio *io, uint32_t key, uint64_t pos, void *dst, rn_error *err);
    /* Read-ahead (only when rn_rowio_ahead): 1 when no read slot is free;
     * start reading key's row at pos into a free slot (the caller
     * guarantees the row's bytes in the file do not change until it is
     * taken); the slot holding key's row or -1; slot s's row into dst and
     * the slot freed (returns 1 when the row came from a read ahead, 0
     * when take read it itself); forget every read not taken. */
    int (*ahead_full)(const rn_rowio *io);
    void (*ahead_issue)(rn_rowio *io, uint32_t key, uint64_t pos);
    int (*ahead_find)(const rn_rowio *io, uint32_t key);
    int (*ahead_take)(rn_rowio *io, int s, void *dst, rn_error *err);
    void (*ahead_drop)(rn_rowio *io);
    /* Hand what is queued to the kernel without waiting (where the scan
     * starts a layer, keeps its reads busy, or ends a layer); may be a
     * no-op. */
    void (*kick)(rn_rowio *io);
    /* Wait until every queued write is in the file (and every read is
     * done); a failure stays for `error`. */
    void (*drain)(rn_rowio *io);
    /* The first background failure (RN_OK when none) into err unless
     * NULL; clear_error forgets it. */
    int (*error)(rn_rowio *io, rn_error *err);
    void (*clear_error)(rn_rowio *io);
    void (*stats)(const rn_rowio *io, rn_rowio_stats *out);
    /* Drain, stop, free; a failure meanwhile into err (unless set). */
    void (*close)(rn_rowio *io, rn_error *err);
} rn_rowio_ops;

/* The part every engine starts with (its own state follows). */
struct rn_rowio {
    const rn_rowio_ops *ops;
    int fd;
    const char *path;     /* the file's name, for messages (the caller's string) */
    size_t row, blk;      /* bytes of a row and of an append block (a multiple of row) */
    uint64_t base;        /* file offset of position 0 */
    int ahead;            /* 1: the ahead_* operations read ahead */
};

/* How the store opens its engine (enum rn_state_io as `io`). */
typedef struct {
    int fd;
    const char *path;
    size_t row, blk;
    uint64_t base;
    int direct;           /* the file is open with O_DIRECT */
    int io;               /* enum rn_state_io */
    int no_prefetch;      /* 1: no read-ahead */
} rn_rowio_conf;

/* The engine of conf: sync for RN_STATE_IO_SYNC and for RN_STATE_IO_AUTO
 * without O_DIRECT; aio for RN_STATE_IO_AUTO with O_DIRECT, or threads
 * when the kernel refuses io_setup (*aio_errno: why; else 0); threads for
 * RN_STATE_IO_THREADS.  RN_ENOMEM (or a thread that cannot start) fails. */
int rn_rowio_open(const rn_rowio_conf *conf, rn_rowio **out, int *aio_errno, rn_error *err);
/* rn_rowio's close (NULL: nothing). */
void rn_rowio_close(rn_rowio *io, rn_error *err);

/* Bytes the engines may allocate for rows of `row` bytes (the threads'
 * queues and read slots, and with O_DIRECT the AIO queue's), for the
 * memory limit. */
double rn_rowio_bytes(uint64_t row, int direct);

/* Full pread (wr 0) or pwrite (wr 1) of len bytes at off, short transfers
 * and EINTR retried: 0, the errno of a failure, or -1 at the end of the
 * file. */
int rn_rowio_full(int fd, int wr, uint64_t off, size_t len, void *buf);
/* rn_rowio_full, its failure as RN_EIO in err (unless it holds one)
 * naming the file and the offset.  The engines' and the store's I/O. */
int rn_rowio_pio(int fd, const char *path, int wr, uint64_t off, size_t len, void *buf, rn_error *err);

/* The engines (rn_rowio_sync.c, rn_rowio_threads.c, rn_rowio_aio.c):
 * conf's engine or RN_EIO with *sys_errno set (aio: io_setup refused). */
int rn_rowio_sync_open(const rn_rowio_conf *conf, rn_rowio **out, rn_error *err);
int rn_rowio_threads_open(const rn_rowio_conf *conf, rn_rowio **out, rn_error *err);
int rn_rowio_aio_open(const rn_rowio_conf *conf, rn_rowio **out, int *sys_errno, rn_error *err);
double rn_rowio_threads_bytes(uint64_t row);
double rn_rowio_aio_bytes(void);

#endif
