/* rn_prefetch.c — a pool of row reads under way (rn_prefetch.h). */
#include "rn_prefetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 4096
#define MAX_THREADS 64

enum { S_FREE = 0, S_QUEUED, S_READING, S_DONE, S_FAILED, S_TAKEN /* read by rn_prefetch_take itself */ };

struct rn_prefetch {
    int fd;
    char *path;
    size_t row;
    int n_slots, n_threads, n_used;
    char *buf;              /* [n_slots][row] */
    /* the caller's thread only */
    uint32_t *key;          /* [n_slots]: the slot's key, UINT32_MAX when free */
    int *free_stack;        /* [n_slots] */
    uint64_t taken;
    /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    uint8_t *state;         /* [n_slots] S_* */
    off_t *off;             /* [n_slots] */
    int *ring, rhead, rcount; /* slots queued for a thread, oldest first */
    int stop, in_flight;    /* in_flight: S_READING slots */
    int err_no;             /* errno of the last failed read */
    pthread_t th[MAX_THREADS];
};

static void *pf_main(void *arg)
{
    rn_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->rcount && !p->stop) pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->stop) break;
        int s = p->ring[p->rhead];
        p->rhead = (p->rhead + 1) % p->n_slots;
        p->rcount--;
        if (p->state[s] != S_QUEUED) continue; /* taken over by its caller (rn_prefetch_take) */
        p->state[s] = S_READING;
        p->in_flight++;
        off_t off = p->off[s];
        pthread_mutex_unlock(&p->mu);
        char *b = p->buf + (size_t)s * p->row;
        size_t done = 0;
        int e = 0;
        while (done < p->row) {
            ssize_t r = pread(p->fd, b + done, p->row - done, off + (off_t)done);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { e = r < 0 ? errno : EIO; break; }
            done += (size_t)r;
        }
        pthread_mutex_lock(&p->mu);
        p->state[s] = e ? S_FAILED : S_DONE;
        if (e) p->err_no = e;
        p->in_flight--;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void rn_prefetch_free(rn_prefetch *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int t = 0; t < p->n_threads; t++) pthread_join(p->th[t], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    free(p->buf); free(p->key); free(p->free_stack); free(p->state); free(p->off); free(p->ring);
    free(p->path);
    free(p);
}

int rn_prefetch_create(int fd, const char *path, size_t row_bytes, int threads, int slots, rn_prefetch **out,
                       rn_error *err)
{
    *out = NULL;
    if (threads < 1 || threads > MAX_THREADS || slots < 1)
        return rn_seterr(err, RN_EINTERNAL, "prefetch: %d threads, %d slots", threads, slots);
    rn_prefetch *p = calloc(1, sizeof *p);
    if (!p) return rn_seterr(err, RN_ENOMEM, "out of memory for the prefetch pool");
    p->fd = fd;
    p->row = row_bytes;
    p->n_slots = slots;
    size_t bytes = ((size_t)slots * row_bytes + ALIGN - 1) / ALIGN * ALIGN;
    p->buf = aligned_alloc(ALIGN, bytes);
    p->path = strdup(path);
    p->key = malloc(sizeof *p->key * (size_t)slots);
    p->free_stack = malloc(sizeof *p->free_stack * (size_t)slots);
    p->state = calloc((size_t)slots, 1);
    p->off = malloc(sizeof *p->off * (size_t)slots);
    p->ring = malloc(sizeof *p->ring * (size_t)slots);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    if (!p->buf || !p->path || !p->key || !p->free_stack || !p->state || !p->off || !p->ring) {
        rn_prefetch_free(p);
        return rn_seterr(err, RN_ENOMEM, "out of memory for the prefetch pool");
    }
    for (int i = 0; i < slots; i++) { p->free_stack[i] = slots - 1 - i; p->key[i] = UINT32_MAX; }
    /* RAMTRACE_PREFETCH_IDLE: no thread, so every take reads its row
     * itself (the test that such rows are not counted as read ahead) */
    if (getenv("RAMTRACE_PREFETCH_IDLE")) threads = 0;
    for (int t = 0; t < threads; t++) {
        if (pthread_create(&p->th[t], NULL, pf_main, p)) {
            rn_prefetch_free(p);
            return rn_seterr(err, RN_ENOMEM, "tiered memory state: cannot start a prefetch thread");
        }
        p->n_threads++;
    }
    *out = p;
    return RN_OK;
}

int rn_prefetch_full(const rn_prefetch *p) { return p->n_used == p->n_slots; }

void rn_prefetch_issue(rn_prefetch *p, uint32_t key, off_t off)
{
    if (p->n_used == p->n_slots) return;
    int s = p->free_stack[p->n_slots - 1 - p->n_used++];
    p->key[s] = key;
    pthread_mutex_lock(&p->mu);
    p->state[s] = S_QUEUED;
    p->off[s] = off;
    p->ring[(p->rhead + p->rcount) % p->n_slots] = s;
    p->rcount++;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

int rn_prefetch_find(const rn_prefetch *p, uint32_t key)
{
    if (!p->n_used) return -1;
    for (int i = 0; i < p->n_slots; i++)
        if (p->key[i] == key) return i;
    return -1;
}

/* Free slot s (mu held; the caller's thread). */
static void release(rn_prefetch *p, int s)
{
    p->state[s] = S_FREE;
    p->key[s] = UINT32_MAX;
    p->free_stack[p->n_slots - p->n_used--] = s;
}

int rn_prefetch_take(rn_prefetch *p, int s, void *dst, rn_error *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->state[s] == S_QUEUED) {
        /* no thread got to it yet: read it here rather than wait for one to
         * be scheduled (its ring entry is skipped) */
        p->state[s] = S_TAKEN;
        off_t off = p->off[s];
        pthread_mutex_unlock(&p->mu);
        size_t done = 0;
        int e = 0;
        while (done < p->row) {
            ssize_t r = pread(p->fd, (char *)dst + done, p->row - done, off + (off_t)done);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { e = r < 0 ? errno : EIO; break; }
            done += (size_t)r;
        }
        pthread_mutex_lock(&p->mu);
        release(p, s);
        pthread_mutex_unlock(&p->mu);
        if (e) return rn_seterr(err, RN_EIO, "--state-file: %s: read: %s", p->path, strerror(e));
        return RN_OK;
    }
    while (p->state[s] == S_READING) pthread_cond_wait(&p->cv_done, &p->mu);
    int failed = p->state[s] == S_FAILED, e = p->err_no;
    if (!failed) memcpy(dst, p->buf + (size_t)s * p->row, p->row);
    release(p, s);
    pthread_mutex_unlock(&p->mu);
    p->taken++;
    if (failed)
        return rn_seterr(err, RN_EIO, "--state-file: %s: read ahead: %s", p->path, strerror(e));
    return RN_OK;
}

void rn_prefetch_drop(rn_prefetch *p)
{
    pthread_mutex_lock(&p->mu);
    /* queued reads are not started: take them back, then wait for the rest */
    p->rcount = 0;
    while (p->in_flight) pthread_cond_wait(&p->cv_done, &p->mu);
    for (int i = 0; i < p->n_slots; i++)
        if (p->state[i] != S_FREE) release(p, i);
    pthread_mutex_unlock(&p->mu);
}

uint64_t rn_prefetch_taken(const rn_prefetch *p) { return p->taken; }
