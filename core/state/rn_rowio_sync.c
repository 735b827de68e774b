/* rn_rowio_sync.c — the sync engine of the tiered state's row I/O
 * (rn_rowio.h): every row read and written by one pread/pwrite when the
 * scan needs it; no threads, no queue, no read-ahead. */
#include "rn_rowio.h"

#include <stdlib.h>

static void sync_write(rn_rowio *io, uint32_t key, uint64_t pos, const void *row, rn_error *err)
{
    (void)key;
    rn_rowio_pio(io->fd, io->path, 1, io->base + pos * io->row, io->row, (void *)row, err);
}

static void sync_write_block(rn_rowio *io, uint64_t b, const void *buf, rn_error *err)
{
    rn_rowio_pio(io->fd, io->path, 1, io->base + b * io->blk, io->blk, (void *)buf, err);
}

static int sync_pending(rn_rowio *io, uint32_t key, uint64_t pos, void *dst)
{
    (void)io; (void)key; (void)pos; (void)dst;
    return 0;
}

static void sync_read(rn_rowio *io, uint32_t key, uint64_t pos, void *dst, rn_error *err)
{
    (void)key;
    rn_rowio_pio(io->fd, io->path, 0, io->base + pos * io->row, io->row, dst, err);
}

static void sync_nothing(rn_rowio *io) { (void)io; }

static int sync_error(rn_rowio *io, rn_error *err)
{
    (void)io; (void)err;
    return RN_OK;
}

static void sync_stats(const rn_rowio *io, rn_rowio_stats *out)
{
    (void)io;
    *out = (rn_rowio_stats){ 0 };
}

static void sync_close(rn_rowio *io, rn_error *err)
{
    (void)err;
    free(io);
}

static const rn_rowio_ops sync_ops = {
    .name = "sync", .write = sync_write, .write_block = sync_write_block, .pending = sync_pending,
    .read = sync_read, .kick = sync_nothing, .drain = sync_nothing, .error = sync_error,
    .clear_error = sync_nothing, .stats = sync_stats, .close = sync_close,
};

int rn_rowio_sync_open(const rn_rowio_conf *conf, rn_rowio **out, rn_error *err)
{
    rn_rowio *io = calloc(1, sizeof *io);
    if (!io) return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    *io = (rn_rowio){ &sync_ops, conf->fd, conf->path, conf->row, conf->blk, conf->base, 0 };
    *out = io;
    return RN_OK;
}
