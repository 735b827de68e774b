/* rn_aio.c — queued row I/O in batches of Linux native AIO (rn_aio.h). */
#include "rn_aio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 4096

enum { E_FREE = 0, E_QUEUED, E_BUSY, E_DONE, E_FAILED };

/* A write: one block whole (full) or one row of it. */
typedef struct {
    int state;        /* E_FREE, E_QUEUED, E_BUSY */
    int full;
    uint64_t block;   /* block index from base */
    uint64_t mask;    /* rows of the block the buffer holds (bit = row in block) */
    char *buf;        /* [blk]; a row write uses its first row */
    struct iocb cb;
} wentry;

typedef struct {
    int state;        /* E_FREE, E_QUEUED, E_BUSY, E_DONE, E_FAILED */
    uint32_t key;     /* UINT32_MAX when free */
    char *buf;        /* [row] */
    struct iocb cb;
} rslot;

struct rn_aio {
    aio_context_t ctx;
    int fd;
    char *path;
    size_t row, blk;
    uint64_t base, rpb; /* rows per block */
    int nw, nr, batch;
    wentry *w;
    int *wfree, n_wfree;
    int w_queued;           /* writes queued, not yet submitted */
    rslot *r;
    int *rfree, n_rfree;
    struct iocb **pend;     /* [nw + nr]: queued requests, oldest first */
    struct iocb **scratch; /* [nw + nr]: scratch for reordering pend */
    int n_pend;
    struct io_event *ev;    /* [nw + nr] */
    char *mem;
    uint64_t taken, submits, requests;
    int err_no;             /* errno of the last failed read */
    rn_error err;           /* the first failed write */
};

/* The request tag (iocb.aio_data): index, reads offset by nw. */
static void reap(rn_aio *a, int min)
{
    const int n = a->nw + a->nr;
    for (;;) {
        struct timespec zero = { 0, 0 };
        long got = syscall(SYS_io_getevents, a->ctx, (long)min, (long)n, a->ev, min ? NULL : &zero);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            /* cannot happen with a valid context: fail everything under way
             * rather than wait for it forever */
            if (!a->err.code) rn_seterr(&a->err, RN_EIO, "--state-file: %s: io_getevents: %s", a->path, strerror(errno));
            a->err_no = errno;
            for (int i = 0; i < a->nw; i++)
                if (a->w[i].state == E_BUSY) {
                    a->w[i].state = E_FREE;
                    a->wfree[a->n_wfree++] = i;
                }
            for (int i = 0; i < a->nr; i++)
                if (a->r[i].state == E_BUSY) a->r[i].state = E_FAILED;
            return;
        }
        for (long i = 0; i < got; i++) {
            uint64_t tag = a->ev[i].data;
            int64_t res = a->ev[i].res;
            if (tag < (uint64_t)a->nw) {
                wentry *e = &a->w[tag];
                if (res != (int64_t)e->cb.aio_nbytes && !a->err.code)
                    rn_seterr(&a->err, RN_EIO, "--state-file: %s: write at offset %lld: %s", a->path,
                              (long long)e->cb.aio_offset, res < 0 ? strerror((int)-res) : "short write");
                e->state = E_FREE;
                a->wfree[a->n_wfree++] = (int)tag;
            } else {
                rslot *s = &a->r[tag - (uint64_t)a->nw];
                if (res != (int64_t)a->row) {
                    s->state = E_FAILED;
                    a->err_no = res < 0 ? (int)-res : EIO;
                } else
                    s->state = E_DONE;
            }
        }
        return;
    }
}

/* Mark a queued request as under way (after io_submit took it). */
static void started(rn_aio *a, struct iocb *cb)
{
    if (cb->aio_data < (uint64_t)a->nw) a->w[cb->aio_data].state = E_BUSY;
    else a->r[cb->aio_data - (uint64_t)a->nw].state = E_BUSY;
}

void rn_aio_submit(rn_aio *a)
{
    if (!a->n_pend) return;
    reap(a, 0);
    /* reads first: the scan is waiting for the reads, not the writes */
    int k = 0;
    for (int i = 0; i < a->n_pend; i++)
        if (a->pend[i]->aio_lio_opcode == IOCB_CMD_PREAD) a->scratch[k++] = a->pend[i];
    for (int i = 0; i < a->n_pend; i++)
        if (a->pend[i]->aio_lio_opcode != IOCB_CMD_PREAD) a->scratch[k++] = a->pend[i];
    memcpy(a->pend, a->scratch, sizeof *a->pend * (size_t)a->n_pend);
    int done = 0;
    while (done < a->n_pend) {
        long r = syscall(SYS_io_submit, a->ctx, (long)(a->n_pend - done), a->pend + done);
        if (r > 0) {
            a->submits++;
            a->requests += (uint64_t)r;
            for (long i = 0; i < r; i++) started(a, a->pend[done + i]);
            done += (int)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && errno == EAGAIN) {
            reap(a, 1); /* the kernel's queue is full: let some finish */
        } else {
            /* the first request was refused: fail it, go on with the rest */
            struct iocb *cb = a->pend[done++];
            int e = r < 0 ? errno : EIO;
            if (cb->aio_data < (uint64_t)a->nw) {
                if (!a->err.code)
                    rn_seterr(&a->err, RN_EIO, "--state-file: %s: io_submit: %s", a->path, strerror(e));
                a->w[cb->aio_data].state = E_FREE;
                a->wfree[a->n_wfree++] = (int)cb->aio_data;
            } else {
                a->r[cb->aio_data - (uint64_t)a->nw].state = E_FAILED;
                a->err_no = e;
            }
        }
    }
    a->n_pend = 0;
    a->w_queued = 0;
}

void rn_aio_free(rn_aio *a)
{
    if (!a) return;
    if (a->ctx) {
        int busy = 0;
        do {
            busy = 0;
            for (int i = 0; i < a->nw; i++) busy += a->w[i].state == E_BUSY;
            for (int i = 0; i < a->nr; i++) busy += a->r[i].state == E_BUSY;
            if (busy) reap(a, 1);
        } while (busy && !a->err.code);
        syscall(SYS_io_destroy, a->ctx); /* waits for what is still under way */
    }
    free(a->path); free(a->w); free(a->wfree); free(a->r); free(a->rfree); free(a->pend); free(a->scratch); free(a->ev);
    free(a->mem);
    free(a);
}

int rn_aio_create(int fd, const char *path, size_t row, size_t blk, uint64_t base, int wslots, int rslots,
                  int batch, rn_aio **out, int *sys_errno, rn_error *err)
{
    *out = NULL;
    *sys_errno = 0;
    if (!row || blk % row || blk / row > 64 || wslots < 1 || rslots < 1 || batch < 1)
        return rn_seterr(err, RN_EINTERNAL, "aio: rows of %zu bytes in blocks of %zu", row, blk);
    rn_aio *a = calloc(1, sizeof *a);
    if (!a) return rn_seterr(err, RN_ENOMEM, "out of memory for the AIO queue");
    a->fd = fd;
    a->row = row;
    a->blk = blk;
    a->base = base;
    a->rpb = blk / row;
    a->nw = wslots;
    a->nr = rslots;
    a->batch = batch < wslots ? batch : wslots;
    const int n = wslots + rslots;
    a->path = strdup(path);
    a->w = calloc((size_t)wslots, sizeof *a->w);
    a->wfree = malloc(sizeof *a->wfree * (size_t)wslots);
    a->r = calloc((size_t)rslots, sizeof *a->r);
    a->rfree = malloc(sizeof *a->rfree * (size_t)rslots);
    a->pend = malloc(sizeof *a->pend * (size_t)n);
    a->scratch = malloc(sizeof *a->scratch * (size_t)n);
    a->ev = malloc(sizeof *a->ev * (size_t)n);
    size_t bytes = ((size_t)wslots * blk + (size_t)rslots * row + ALIGN - 1) / ALIGN * ALIGN;
    a->mem = aligned_alloc(ALIGN, bytes);
    if (!a->path || !a->w || !a->wfree || !a->r || !a->rfree || !a->pend || !a->scratch || !a->ev || !a->mem) {
        rn_aio_free(a);
        return rn_seterr(err, RN_ENOMEM, "out of memory for the AIO queue");
    }
    for (int i = 0; i < wslots; i++) {
        a->w[i].buf = a->mem + (size_t)i * blk;
        a->wfree[i] = wslots - 1 - i;
    }
    a->n_wfree = wslots;
    for (int i = 0; i < rslots; i++) {
        a->r[i].buf = a->mem + (size_t)wslots * blk + (size_t)i * row;
        a->r[i].key = UINT32_MAX;
        a->rfree[i] = rslots - 1 - i;
    }
    a->n_rfree = rslots;
    int e = 0;
    if (getenv("RAMTRACE_AIO_FAIL")) e = EAGAIN;
    else if (syscall(SYS_io_setup, (long)n, &a->ctx) < 0) e = errno;
    if (e) {
        a->ctx = 0;
        rn_aio_free(a);
        *sys_errno = e;
        return rn_seterr(err, RN_EIO, "io_setup: %s", strerror(e));
    }
    *out = a;
    return RN_OK;
}

static void prep(rn_aio *a, struct iocb *cb, int write, uint64_t tag, void *buf, size_t len, uint64_t off)
{
    memset(cb, 0, sizeof *cb);
    cb->aio_data = tag;
    cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
    cb->aio_fildes = (uint32_t)a->fd;
    cb->aio_buf = (uint64_t)(uintptr_t)buf;
    cb->aio_nbytes = len;
    cb->aio_offset = (int64_t)off;
    a->pend[a->n_pend++] = cb;
}

/* A write queued or under way of block b (any of its rows), or -1. */
static int wfind(const rn_aio *a, uint64_t b)
{
    if (a->n_wfree == a->nw) return -1;
    for (int i = 0; i < a->nw; i++)
        if (a->w[i].state != E_FREE && a->w[i].block == b) return i;
    return -1;
}

/* The write queued or under way that covers the row at position pos (its
 * block's whole write or the row's own: at most one), or -1. */
static int wfind_row(const rn_aio *a, uint64_t pos)
{
    if (a->n_wfree == a->nw) return -1;
    const uint64_t b = pos / a->rpb, bit = 1ull << (pos % a->rpb);
    for (int i = 0; i < a->nw; i++)
        if (a->w[i].state != E_FREE && a->w[i].block == b && (a->w[i].mask & bit)) return i;
    return -1;
}

/* Wait until write i is done (submitting it first if it is only queued). */
static void wwait(rn_aio *a, int i)
{
    if (a->w[i].state == E_QUEUED) rn_aio_submit(a);
    while (a->w[i].state != E_FREE) reap(a, 1);
}

/* A free write slot for block b, queued (waiting for any when all are
 * busy). */
static wentry *wtake(rn_aio *a, uint64_t b)
{
    while (!a->n_wfree) { /* every slot queued or under way: submit, then wait for one */
        rn_aio_submit(a);
        if (!a->n_wfree) reap(a, 1);
    }
    wentry *e = &a->w[a->wfree[--a->n_wfree]];
    e->state = E_QUEUED;
    e->block = b;
    return e;
}

void rn_aio_write(rn_aio *a, uint64_t pos, const void *row)
{
    const uint64_t b = pos / a->rpb, at = pos % a->rpb, bit = 1ull << at;
    int i = wfind_row(a, pos);
    if (i >= 0 && a->w[i].state == E_QUEUED) { /* not handed over yet: the new bytes join it */
        memcpy(a->w[i].buf + (a->w[i].full ? at * a->row : 0), row, a->row);
        return;
    }
    if (i >= 0) wwait(a, i); /* never two writes of one row at once; other rows of the block may go on */
    wentry *e = wtake(a, b);
    e->mask = bit;
    e->full = 0;
    memcpy(e->buf, row, a->row);
    prep(a, &e->cb, 1, (uint64_t)(e - a->w), e->buf, a->row, a->base + pos * a->row);
    if (++a->w_queued >= a->batch) rn_aio_submit(a);
}

void rn_aio_write_block(rn_aio *a, uint64_t b, const void *buf)
{
    for (int i; (i = wfind(a, b)) >= 0;) wwait(a, i); /* a block write overlaps every write of the block */
    wentry *e = wtake(a, b);
    e->mask = a->rpb == 64 ? ~0ull : (1ull << a->rpb) - 1;
    e->full = 1;
    memcpy(e->buf, buf, a->blk);
    prep(a, &e->cb, 1, (uint64_t)(e - a->w), e->buf, a->blk, a->base + b * a->blk);
    if (++a->w_queued >= a->batch) rn_aio_submit(a);
}

int rn_aio_written(const rn_aio *a, uint64_t pos, void *dst)
{
    int i = wfind_row(a, pos);
    if (i < 0) return 0;
    if (dst) memcpy(dst, a->w[i].buf + (a->w[i].full ? pos % a->rpb * a->row : 0), a->row);
    return 1;
}

int rn_aio_read_full(const rn_aio *a) { return !a->n_rfree; }

void rn_aio_read_issue(rn_aio *a, uint32_t key, uint64_t pos)
{
    if (!a->n_rfree) return;
    int s = a->rfree[--a->n_rfree];
    a->r[s].state = E_QUEUED;
    a->r[s].key = key;
    prep(a, &a->r[s].cb, 0, (uint64_t)(a->nw + s), a->r[s].buf, a->row, a->base + pos * a->row);
}

int rn_aio_read_find(const rn_aio *a, uint32_t key)
{
    if (a->n_rfree == a->nr) return -1;
    for (int i = 0; i < a->nr; i++)
        if (a->r[i].key == key) return i;
    return -1;
}

static void rfree_slot(rn_aio *a, int s)
{
    a->r[s].state = E_FREE;
    a->r[s].key = UINT32_MAX;
    a->rfree[a->n_rfree++] = s;
}

int rn_aio_read_take(rn_aio *a, int s, void *dst, rn_error *err)
{
    rslot *r = &a->r[s];
    if (r->state == E_QUEUED) rn_aio_submit(a);
    while (r->state == E_BUSY) reap(a, 1);
    int failed = r->state != E_DONE;
    if (!failed) memcpy(dst, r->buf, a->row);
    rfree_slot(a, s);
    a->taken++;
    if (failed) return rn_seterr(err, RN_EIO, "--state-file: %s: read ahead: %s", a->path, strerror(a->err_no));
    return RN_OK;
}

void rn_aio_read_drop(rn_aio *a)
{
    /* queued reads leave the submission list; those under way are waited for */
    int k = 0;
    for (int i = 0; i < a->n_pend; i++)
        if (a->pend[i]->aio_data < (uint64_t)a->nw) a->pend[k++] = a->pend[i];
    a->n_pend = k;
    for (int s = 0; s < a->nr; s++) {
        while (a->r[s].state == E_BUSY) reap(a, 1);
        if (a->r[s].state != E_FREE) rfree_slot(a, s);
    }
}

uint64_t rn_aio_taken(const rn_aio *a) { return a->taken; }

int rn_aio_drain(rn_aio *a, rn_error *err)
{
    rn_aio_submit(a);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < a->nw && !busy; i++) busy = a->w[i].state == E_BUSY;
        for (int i = 0; i < a->nr && !busy; i++) busy = a->r[i].state == E_BUSY;
        if (!busy) break;
        reap(a, 1);
    }
    return rn_aio_error(a, err);
}

int rn_aio_error(const rn_aio *a, rn_error *err)
{
    if (a->err.code && err) *err = a->err;
    return a->err.code;
}

void rn_aio_clear_error(rn_aio *a) { memset(&a->err, 0, sizeof a->err); }

void rn_aio_stats(const rn_aio *a, uint64_t *submits, uint64_t *requests)
{
    *submits = a->submits;
    *requests = a->requests;
}
