/* rn_rowio.c — the choice of the tiered state's I/O engine, made once
 * (rn_rowio.h), and the full pread/pwrite every engine shares. */
#include "rn_rowio.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <stddef.h>

int rn_rowio_open(const rn_rowio_conf *conf, rn_rowio **out, int *aio_errno, rn_error *err)
{
    *out = NULL;
    *aio_errno = 0;
    /* the page cache: a row's pwrite is a copy into memory, so threads and
     * read-ahead cost more wake-ups than they save (docs/tiered-state.md) */
    if (conf->io == RN_STATE_IO_SYNC || (!conf->direct && conf->io == RN_STATE_IO_AUTO))
        return rn_rowio_sync_open(conf, out, err);
    if (conf->direct && conf->io == RN_STATE_IO_AUTO) {
        rn_error e = { 0 };
        int rc = rn_rowio_aio_open(conf, out, aio_errno, &e);
        if (rc != RN_OK && !*aio_errno) { /* out of memory: not a reason to run slower */
            *err = e;
            return rc;
        }
        if (rc == RN_OK) return RN_OK;
        /* the kernel refused io_setup: the threads */
    }
    return rn_rowio_threads_open(conf, out, err);
}

void rn_rowio_close(rn_rowio *io, rn_error *err)
{
    if (io) io->ops->close(io, err);
}

double rn_rowio_bytes(uint64_t row, int direct)
{
    return rn_rowio_threads_bytes(row) + (direct ? rn_rowio_aio_bytes() : 0);
}

int rn_rowio_full(int fd, int wr, uint64_t off, size_t len, void *buf)
{
    char *b = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t r = wr ? pwrite(fd, b + done, len - done, (off_t)(off + done))
                       : pread(fd, b + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r < 0 ? errno : -1;
        done += (size_t)r;
    }
    return 0;
}

int rn_rowio_pio(int fd, const char *path, int wr, uint64_t off, size_t len, void *buf, rn_error *err)
{
    int e = rn_rowio_full(fd, wr, off, len, buf);
    if (!e) return RN_OK;
    if (!err->code)
        rn_seterr(err, RN_EIO, "--state-file: %s: %s at offset %lld: %s", path, wr ? "write" : "read", (long long)off,
                  e > 0 ? strerror(e) : "end of file");
    return RN_EIO;
}
