/* rn_rowio_aio.c — the aio engine of the tiered state's row I/O
 * (rn_rowio.h): writes and reads of rows in batches of Linux native AIO
 * (rn_aio.h), handed to the kernel by one io_submit where the scan starts
 * a layer, keeps its reads busy and ends a layer; for a file opened with
 * O_DIRECT. */
#include "rn_rowio.h"

#include <stdlib.h>

#include "rn_aio.h"
#include "rn_statefile.h"

#define AIO_READS 256  /* rows read ahead at most (a step's layer touches H·2K rows) */
#define AIO_WRITES 512 /* writes queued or under way at most (one file block each) */
#define AIO_BATCH 128  /* writes queued before they are submitted without waiting for the
                        * layer's end */

typedef struct {
    rn_rowio io;
    rn_aio *a;
} aio_io;

static rn_aio *q(const rn_rowio *io) { return ((const aio_io *)io)->a; }

static void aio_write(rn_rowio *io, uint32_t key, uint64_t pos, const void *row, rn_error *err)
{
    (void)key; (void)err; /* a failure is the queue's (aio_error) */
    rn_aio_write(q(io), pos, row);
}

static void aio_write_block(rn_rowio *io, uint64_t b, const void *buf, rn_error *err)
{
    (void)err;
    rn_aio_write_block(q(io), b, buf);
}

static int aio_pending(rn_rowio *io, uint32_t key, uint64_t pos, void *dst)
{
    (void)key;
    return rn_aio_written(q(io), pos, dst);
}

static void aio_read(rn_rowio *io, uint32_t key, uint64_t pos, void *dst, rn_error *err)
{
    (void)key;
    if (!rn_aio_written(q(io), pos, dst)) rn_rowio_pio(io->fd, io->path, 0, io->base + pos * io->row, io->row, dst, err);
}

static int aio_ahead_full(const rn_rowio *io) { return rn_aio_read_full(q(io)); }

static void aio_ahead_issue(rn_rowio *io, uint32_t key, uint64_t pos) { rn_aio_read_issue(q(io), key, pos); }

static int aio_ahead_find(const rn_rowio *io, uint32_t key) { return rn_aio_read_find(q(io), key); }

static int aio_ahead_take(rn_rowio *io, int s, void *dst, rn_error *err)
{
    rn_error e = { 0 };
    if (rn_aio_read_take(q(io), s, dst, &e) && !err->code) *err = e;
    return 1;
}

static void aio_ahead_drop(rn_rowio *io) { rn_aio_read_drop(q(io)); }

static void aio_kick(rn_rowio *io) { rn_aio_submit(q(io)); }

static void aio_drain(rn_rowio *io) { rn_aio_drain(q(io), NULL); /* a failure stays in the queue (aio_error) */ }

static int aio_error(rn_rowio *io, rn_error *err) { return rn_aio_error(q(io), err); }

static void aio_clear_error(rn_rowio *io) { rn_aio_clear_error(q(io)); }

static void aio_stats(const rn_rowio *io, rn_rowio_stats *out)
{
    *out = (rn_rowio_stats){ .batched = 1 };
    rn_aio_stats(q(io), &out->submits, &out->requests);
}

static void aio_close(rn_rowio *io, rn_error *err)
{
    rn_error e = { 0 };
    if (rn_aio_drain(q(io), &e) && !err->code) *err = e;
    rn_aio_free(q(io));
    free(io);
}

static const rn_rowio_ops aio_ops = {
    .name = "aio", .write = aio_write, .write_block = aio_write_block, .pending = aio_pending, .read = aio_read,
    .ahead_full = aio_ahead_full, .ahead_issue = aio_ahead_issue, .ahead_find = aio_ahead_find,
    .ahead_take = aio_ahead_take, .ahead_drop = aio_ahead_drop, .kick = aio_kick, .drain = aio_drain,
    .error = aio_error, .clear_error = aio_clear_error, .stats = aio_stats, .close = aio_close,
};

double rn_rowio_aio_bytes(void) { return AIO_WRITES * (double)RN_STATEFILE_BLOCK; }

int rn_rowio_aio_open(const rn_rowio_conf *conf, rn_rowio **out, int *sys_errno, rn_error *err)
{
    aio_io *t = calloc(1, sizeof *t);
    if (!t) return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    int rc = rn_aio_create(conf->fd, conf->path, conf->row, conf->blk, conf->base, AIO_WRITES, AIO_READS, AIO_BATCH,
                           &t->a, sys_errno, err);
    if (rc) {
        free(t);
        return rc;
    }
    t->io = (rn_rowio){ &aio_ops, conf->fd, conf->path, conf->row, conf->blk, conf->base, !conf->no_prefetch };
    *out = &t->io;
    return RN_OK;
}
