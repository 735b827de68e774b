/* rn_aio.h — the tiered state's file I/O in batches of Linux native AIO
 * (io_setup / io_submit / io_getevents through syscall(2), the kernel ABI of
 * <linux/aio_abi.h>; no library), for a file opened with O_DIRECT.
 *
 * Writes and reads of rows (one row: `row` bytes at base + pos · row, pos
 * a row's position in the file) are queued, then handed to the kernel
 * together by one io_submit (rn_aio_submit, or by the queue when `batch`
 * writes are waiting); completions are reaped without waiting at each
 * submission, and waited for only when a request's result is needed (a read
 * taken, a write slot or a block still busy, a drain).
 *
 * Writes: whole blocks (`blk` bytes, a multiple of row: the caller's
 * append blocks of fresh rows, rn_aio_write_block) and single rows
 * (rewrites of a row in a block written before, rn_aio_write).  At most one
 * write per row is queued or under way: a row whose write (its own or its
 * block's) is still queued joins it; one whose write is under way waits for
 * it; a block's write waits for every write of the block.  So writes that
 * overlap never race, while rows of one block (written back at nearby
 * times, so often evicted together again) go to the kernel together.  A queued or in-flight write keeps its bytes until it completes:
 * rn_aio_written gives them to a miss on that row.  The file's space is the
 * caller's to allocate (fallocate ahead): every write here goes to
 * allocated blocks, which ext4 takes in batches without allocating inside
 * io_submit.
 *
 * Reads: a fixed number of slots of one row each, issued, found and taken
 * like the threads engine's read-ahead pool (rn_rowio_threads.c; the
 * caller guarantees no write of the row is queued or under way while its
 * read is).
 *
 * One thread uses a queue.  Nothing allocates after create.
 */
#ifndef RN_AIO_H
#define RN_AIO_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

typedef struct rn_aio rn_aio;

/* A queue over fd (named path, for messages): rows of `row` bytes from file
 * offset base; blocks of blk bytes (a multiple of row, at most 64 rows; block
 * b at base + b · blk); wslots writes and rslots reads queued or
 * under way at most; writes are submitted once `batch` are waiting.
 * io_setup failing (a kernel without AIO, /proc/sys/fs/aio-max-nr reached)
 * returns RN_EIO with *sys_errno; so does the environment variable
 * RAMTRACE_AIO_FAIL (set: act as if io_setup failed with EAGAIN; the test
 * of the callers' fallback). */
int rn_aio_create(int fd, const char *path, size_t row, size_t blk, uint64_t base, int wslots, int rslots,
                  int batch, rn_aio **out, int *sys_errno, rn_error *err);
/* Wait for everything under way, then free (queued requests are dropped:
 * rn_aio_drain first to keep them). */
void rn_aio_free(rn_aio *a);

/* Queue the row at position pos (copied) for writing.  May wait for a
 * write slot or for the block's write under way. */
void rn_aio_write(rn_aio *a, uint64_t pos, const void *row);

/* Queue block b whole (blk bytes copied from buf).  May wait likewise. */
void rn_aio_write_block(rn_aio *a, uint64_t b, const void *buf);

/* 1 when a queued or under-way write holds the row at position pos (its
 * bytes copied into dst unless NULL), else 0. */
int rn_aio_written(const rn_aio *a, uint64_t pos, void *dst);

/* Reads: 1 when no read slot is free. */
int rn_aio_read_full(const rn_aio *a);
/* Queue a read of key's row, at position pos, into a free slot (ignored
 * when full); it goes to the kernel at the next rn_aio_submit. */
void rn_aio_read_issue(rn_aio *a, uint32_t key, uint64_t pos);
/* The slot holding (or reading) key's row, or -1. */
int rn_aio_read_find(const rn_aio *a, uint32_t key);
/* Slot s's row into dst (submitting or waiting for it as needed), and free
 * the slot; RN_EIO naming the file when the read failed. */
int rn_aio_read_take(rn_aio *a, int s, void *dst, rn_error *err);
/* Forget the reads not taken (waiting for those under way). */
void rn_aio_read_drop(rn_aio *a);
/* Rows taken with rn_aio_read_take since create. */
uint64_t rn_aio_taken(const rn_aio *a);

/* Hand every queued request to the kernel (one io_submit, more only when it
 * takes part of them), after reaping finished ones without waiting. */
void rn_aio_submit(rn_aio *a);

/* Submit and wait until every write and read is done: the file then holds
 * every write queued before.  Returns rn_aio_error's code. */
int rn_aio_drain(rn_aio *a, rn_error *err);

/* The first write failure since create or rn_aio_clear_error (RN_OK when
 * none), copied into err unless NULL. */
int rn_aio_error(const rn_aio *a, rn_error *err);
void rn_aio_clear_error(rn_aio *a);

/* io_submit calls and requests submitted since create (for the bench). */
void rn_aio_stats(const rn_aio *a, uint64_t *submits, uint64_t *requests);

#endif
