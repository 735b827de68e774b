/* rn_rowio_threads.c — the threads engine of the tiered state's row I/O
 * (rn_rowio.h): rewrites of rows go to write-behind threads (one pwrite
 * per row, a key always to the same thread, so its writes stay in order);
 * rows the scan will miss are read by a pool of read-ahead threads, so the
 * reads it will need run in parallel (at a queue depth above 1) while it
 * works; append blocks are written by the caller.
 *
 * The read-ahead pool: a fixed number of slots, each one row; issue fills
 * a free slot and hands it to the threads; take copies a slot's row out
 * and frees it (or reads it itself when no thread has started it, so a
 * busy machine's scheduling delays cost no more than reading it without
 * read-ahead); drop waits for the reads under way and frees every slot.
 * The environment variable RAMTRACE_PREFETCH_IDLE starts no read-ahead
 * thread: every take then reads its row itself (the test of the store's
 * "read ahead" count). */
#include "rn_rowio.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define DIRECT_ALIGN 4096
#define WB_THREADS 16  /* write-behind threads (the writes' queue depth); a key always goes to
                        * thread key % WB_THREADS */
#define WB_ROWS 32     /* rows queued per thread */
#define PF_THREADS 16  /* read-ahead threads: the queue depth of the reads */
#define PF_SLOTS 256   /* rows read ahead at most (a step's layer touches H·2K rows) */

/* One write-behind queue: rows written back wait here, oldest first, until
 * its thread has written them; an entry leaves only after its pwrite, so a
 * row is always in the queue or in the file. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started, stop;
    rn_rowio *io;
    char *buf;                /* [WB_ROWS][row] */
    uint32_t key[WB_ROWS];
    uint64_t pos[WB_ROWS];    /* the rows' positions in the file */
    int head, count;
    rn_error err;             /* the thread's first failure */
} wb_queue;

enum { S_FREE = 0, S_QUEUED, S_READING, S_DONE, S_FAILED, S_TAKEN /* read by take itself */ };

/* The read-ahead pool. */
typedef struct {
    int made;               /* mu and the conditions are initialised */
    int n_threads, n_used;
    char *buf;              /* [PF_SLOTS][row], aligned for O_DIRECT */
    /* the caller's thread only */
    uint32_t key[PF_SLOTS]; /* the slot's key, UINT32_MAX when free */
    int free_stack[PF_SLOTS];
    uint64_t taken;         /* rows taken from a read ahead (not read by take itself) */
    /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    uint8_t state[PF_SLOTS]; /* S_* */
    off_t off[PF_SLOTS];
    int ring[PF_SLOTS], rhead, rcount; /* slots queued for a thread, oldest first */
    int stop, in_flight;    /* in_flight: S_READING slots */
    int err_no;             /* errno of the last failed read */
    pthread_t th[PF_THREADS];
} ra_pool;

typedef struct {
    rn_rowio io;
    wb_queue wb[WB_THREADS];
    char *wb_mem;
    ra_pool ra;             /* used when io.ahead */
} threads_io;

/* A write-behind thread: write its queue's oldest row, then drop it. */
static void *wb_main(void *arg)
{
    wb_queue *q = arg;
    rn_rowio *io = q->io;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->count && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->count) break;
        int i = q->head;
        pthread_mutex_unlock(&q->mu);
        rn_error e = { 0 };
        rn_rowio_pio(io->fd, io->path, 1, io->base + q->pos[i] * io->row, io->row, q->buf + (size_t)i * io->row, &e);
        pthread_mutex_lock(&q->mu);
        if (e.code && !q->err.code) q->err = e;
        q->head = (q->head + 1) % WB_ROWS;
        q->count--;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static void th_write(rn_rowio *io, uint32_t key, uint64_t pos, const void *row, rn_error *err)
{
    (void)err; /* a failure is the thread's (th_error) */
    wb_queue *q = &((threads_io *)io)->wb[key % WB_THREADS];
    pthread_mutex_lock(&q->mu);
    while (q->count == WB_ROWS) pthread_cond_wait(&q->cv, &q->mu);
    int i = (q->head + q->count) % WB_ROWS;
    memcpy(q->buf + (size_t)i * io->row, row, io->row);
    q->key[i] = key;
    q->pos[i] = pos;
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* One pwrite here: the queues hold only rewrites of rows in blocks
 * written before, never one of an open block's. */
static void th_write_block(rn_rowio *io, uint64_t b, const void *buf, rn_error *err)
{
    rn_rowio_pio(io->fd, io->path, 1, io->base + b * io->blk, io->blk, (void *)buf, err);
}

/* The newest queued copy of key's row. */
static int th_pending(rn_rowio *io, uint32_t key, uint64_t pos, void *dst)
{
    (void)pos;
    wb_queue *q = &((threads_io *)io)->wb[key % WB_THREADS];
    int found = 0;
    pthread_mutex_lock(&q->mu);
    for (int n = q->count - 1; n >= 0 && !found; n--) {
        int i = (q->head + n) % WB_ROWS;
        if (q->key[i] == key) {
            found = 1;
            if (dst) memcpy(dst, q->buf + (size_t)i * io->row, io->row);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return found;
}

static void th_read(rn_rowio *io, uint32_t key, uint64_t pos, void *dst, rn_error *err)
{
    if (!th_pending(io, key, pos, dst)) rn_rowio_pio(io->fd, io->path, 0, io->base + pos * io->row, io->row, dst, err);
}

/* A read-ahead thread: read the oldest queued slot's row. */
static void *ra_main(void *arg)
{
    threads_io *t = arg;
    ra_pool *p = &t->ra;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->rcount && !p->stop) pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->stop) break;
        int s = p->ring[p->rhead];
        p->rhead = (p->rhead + 1) % PF_SLOTS;
        p->rcount--;
        if (p->state[s] != S_QUEUED) continue; /* taken over by its caller (th_ahead_take) */
        p->state[s] = S_READING;
        p->in_flight++;
        off_t off = p->off[s];
        pthread_mutex_unlock(&p->mu);
        int e = rn_rowio_full(t->io.fd, 0, (uint64_t)off, t->io.row, p->buf + (size_t)s * t->io.row);
        pthread_mutex_lock(&p->mu);
        p->state[s] = e ? S_FAILED : S_DONE;
        if (e) p->err_no = e < 0 ? EIO : e;
        p->in_flight--;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int th_ahead_full(const rn_rowio *io) { return ((const threads_io *)io)->ra.n_used == PF_SLOTS; }

/* Start reading key's row into a free slot (a full pool ignores it). */
static void th_ahead_issue(rn_rowio *io, uint32_t key, uint64_t pos)
{
    ra_pool *p = &((threads_io *)io)->ra;
    if (p->n_used == PF_SLOTS) return;
    int s = p->free_stack[PF_SLOTS - 1 - p->n_used++];
    p->key[s] = key;
    pthread_mutex_lock(&p->mu);
    p->state[s] = S_QUEUED;
    p->off[s] = (off_t)(io->base + pos * io->row);
    p->ring[(p->rhead + p->rcount) % PF_SLOTS] = s;
    p->rcount++;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

static int th_ahead_find(const rn_rowio *io, uint32_t key)
{
    const ra_pool *p = &((const threads_io *)io)->ra;
    if (!p->n_used) return -1;
    for (int i = 0; i < PF_SLOTS; i++)
        if (p->key[i] == key) return i;
    return -1;
}

/* Free slot s (mu held; the caller's thread). */
static void ra_release(ra_pool *p, int s)
{
    p->state[s] = S_FREE;
    p->key[s] = UINT32_MAX;
    p->free_stack[PF_SLOTS - p->n_used--] = s;
}

/* Slot s's row into dst: copied once its read is done (waiting for a read
 * under way), or read here when no thread has started it. */
static int th_ahead_take(rn_rowio *io, int s, void *dst, rn_error *err)
{
    ra_pool *p = &((threads_io *)io)->ra;
    rn_error e = { 0 };
    pthread_mutex_lock(&p->mu);
    if (p->state[s] == S_QUEUED) {
        /* no thread got to it yet: read it here rather than wait for one to
         * be scheduled (its ring entry is skipped) */
        p->state[s] = S_TAKEN;
        off_t off = p->off[s];
        pthread_mutex_unlock(&p->mu);
        int r = rn_rowio_full(io->fd, 0, (uint64_t)off, io->row, dst);
        pthread_mutex_lock(&p->mu);
        ra_release(p, s);
        pthread_mutex_unlock(&p->mu);
        if (r) rn_seterr(&e, RN_EIO, "--state-file: %s: read: %s", io->path, strerror(r < 0 ? EIO : r));
        if (e.code && !err->code) *err = e;
        return 0;
    }
    while (p->state[s] == S_READING) pthread_cond_wait(&p->cv_done, &p->mu);
    int failed = p->state[s] == S_FAILED, en = p->err_no;
    if (!failed) memcpy(dst, p->buf + (size_t)s * io->row, io->row);
    ra_release(p, s);
    pthread_mutex_unlock(&p->mu);
    p->taken++;
    if (failed) rn_seterr(&e, RN_EIO, "--state-file: %s: read ahead: %s", io->path, strerror(en));
    if (e.code && !err->code) *err = e;
    return 1;
}

/* Forget the reads not taken: queued ones are not started, so take them
 * back, then wait for the rest. */
static void th_ahead_drop(rn_rowio *io)
{
    ra_pool *p = &((threads_io *)io)->ra;
    pthread_mutex_lock(&p->mu);
    p->rcount = 0;
    while (p->in_flight) pthread_cond_wait(&p->cv_done, &p->mu);
    for (int i = 0; i < PF_SLOTS; i++)
        if (p->state[i] != S_FREE) ra_release(p, i);
    pthread_mutex_unlock(&p->mu);
}

static void th_kick(rn_rowio *io) { (void)io; }

/* Wait until every queued row is in the file. */
static void th_drain(rn_rowio *io)
{
    threads_io *t = (threads_io *)io;
    for (int i = 0; i < WB_THREADS; i++) {
        wb_queue *q = &t->wb[i];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        while (q->count) pthread_cond_wait(&q->cv, &q->mu);
        pthread_mutex_unlock(&q->mu);
    }
}

static int th_error(rn_rowio *io, rn_error *err)
{
    threads_io *t = (threads_io *)io;
    int rc = RN_OK;
    for (int i = 0; i < WB_THREADS && !rc; i++) {
        wb_queue *q = &t->wb[i];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        if ((rc = q->err.code) && err) *err = q->err;
        pthread_mutex_unlock(&q->mu);
    }
    return rc;
}

static void th_clear_error(rn_rowio *io)
{
    threads_io *t = (threads_io *)io;
    for (int i = 0; i < WB_THREADS; i++) memset(&t->wb[i].err, 0, sizeof t->wb[i].err);
}

static void th_stats(const rn_rowio *io, rn_rowio_stats *out)
{
    (void)io;
    *out = (rn_rowio_stats){ 0 };
}

/* Stop the read-ahead (its threads read the file), then the write-behind
 * threads once their queues are written. */
static void th_close(rn_rowio *io, rn_error *err)
{
    threads_io *t = (threads_io *)io;
    ra_pool *p = &t->ra;
    if (p->made) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->cv_work);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n_threads; i++) pthread_join(p->th[i], NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv_work);
        pthread_cond_destroy(&p->cv_done);
    }
    free(p->buf);
    for (int i = 0; i < WB_THREADS; i++) {
        wb_queue *q = &t->wb[i];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->thread, NULL);
        if (q->err.code && !err->code) *err = q->err;
        q->started = 0;
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
    }
    free(t->wb_mem);
    free(t);
}

static const rn_rowio_ops threads_ops = {
    .name = "threads", .write = th_write, .write_block = th_write_block, .pending = th_pending, .read = th_read,
    .ahead_full = th_ahead_full, .ahead_issue = th_ahead_issue, .ahead_find = th_ahead_find,
    .ahead_take = th_ahead_take, .ahead_drop = th_ahead_drop, .kick = th_kick, .drain = th_drain,
    .error = th_error, .clear_error = th_clear_error, .stats = th_stats, .close = th_close,
};

double rn_rowio_threads_bytes(uint64_t row) { return (WB_THREADS * WB_ROWS + PF_SLOTS) * ((double)row + 9); }

/* The read-ahead pool's buffers and threads (none with
 * RAMTRACE_PREFETCH_IDLE). */
static int ra_open(threads_io *t, rn_error *err)
{
    ra_pool *p = &t->ra;
    size_t bytes = ((size_t)PF_SLOTS * t->io.row + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
    if (!(p->buf = aligned_alloc(DIRECT_ALIGN, bytes))) return rn_seterr(err, RN_ENOMEM, "out of memory for the prefetch pool");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->made = 1;
    for (int i = 0; i < PF_SLOTS; i++) { p->free_stack[i] = PF_SLOTS - 1 - i; p->key[i] = UINT32_MAX; }
    /* RAMTRACE_PREFETCH_IDLE: no thread, so every take reads its row
     * itself (the test that such rows are not counted as read ahead) */
    for (int i = 0; i < PF_THREADS && !getenv("RAMTRACE_PREFETCH_IDLE"); i++) {
        if (pthread_create(&p->th[i], NULL, ra_main, t))
            return rn_seterr(err, RN_ENOMEM, "tiered memory state: cannot start a prefetch thread");
        p->n_threads++;
    }
    return RN_OK;
}

int rn_rowio_threads_open(const rn_rowio_conf *conf, rn_rowio **out, rn_error *err)
{
    int rc;
    threads_io *t = calloc(1, sizeof *t);
    size_t wbb = (size_t)WB_THREADS * WB_ROWS * conf->row;
    if (!t || !(t->wb_mem = aligned_alloc(DIRECT_ALIGN, (wbb + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN))) {
        free(t);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    rn_rowio *io = &t->io;
    *io = (rn_rowio){ &threads_ops, conf->fd, conf->path, conf->row, conf->blk, conf->base, !conf->no_prefetch };
    rn_error none = { 0 };
    for (int i = 0; i < WB_THREADS; i++) {
        wb_queue *q = &t->wb[i];
        q->io = io;
        q->buf = t->wb_mem + (size_t)i * WB_ROWS * conf->row;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        if (pthread_create(&q->thread, NULL, wb_main, q)) {
            pthread_mutex_destroy(&q->mu);
            pthread_cond_destroy(&q->cv);
            th_close(io, &none);
            return rn_seterr(err, RN_ENOMEM, "tiered memory state: cannot start a write-behind thread");
        }
        q->started = 1;
    }
    if (io->ahead && (rc = ra_open(t, err))) {
        th_close(io, &none);
        return rc;
    }
    *out = io;
    return RN_OK;
}
