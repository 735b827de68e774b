/* rn_rowio_threads.c — the threads engine of the tiered state's row I/O
 * (rn_rowio.h): rewrites of rows go to write-behind threads (one
 * pread/pwrite per row, a key always to the same thread, so its writes
 * stay in order), rows the scan will miss are read ahead by a pool of
 * threads (rn_prefetch.h), append blocks are written by the caller. */
#include "rn_rowio.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rn_prefetch.h"

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

typedef struct {
    rn_rowio io;
    wb_queue wb[WB_THREADS];
    char *wb_mem;
    rn_prefetch *pf;          /* NULL: no read-ahead */
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

static int th_ahead_full(const rn_rowio *io) { return rn_prefetch_full(((const threads_io *)io)->pf); }

static void th_ahead_issue(rn_rowio *io, uint32_t key, uint64_t pos)
{
    rn_prefetch_issue(((threads_io *)io)->pf, key, (off_t)(io->base + pos * io->row));
}

static int th_ahead_find(const rn_rowio *io, uint32_t key) { return rn_prefetch_find(((const threads_io *)io)->pf, key); }

static int th_ahead_take(rn_rowio *io, int s, void *dst, rn_error *err)
{
    rn_prefetch *pf = ((threads_io *)io)->pf;
    rn_error e = { 0 };
    uint64_t t0 = rn_prefetch_taken(pf);
    if (rn_prefetch_take(pf, s, dst, &e) && !err->code) *err = e;
    return (int)(rn_prefetch_taken(pf) - t0); /* 0: it read the row itself */
}

static void th_ahead_drop(rn_rowio *io) { rn_prefetch_drop(((threads_io *)io)->pf); }

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
    rn_prefetch_free(t->pf);
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

int rn_rowio_threads_open(const rn_rowio_conf *conf, rn_rowio **out, rn_error *err)
{
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
    int rc;
    if (io->ahead && (rc = rn_prefetch_create(conf->fd, conf->path, conf->row, PF_THREADS, PF_SLOTS, &t->pf, err))) {
        th_close(io, &none);
        return rc;
    }
    *out = io;
    return RN_OK;
}
