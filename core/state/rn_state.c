/* rn_state.c — the dense and the tiered slot-state stores (rn_state.h). */
#include "rn_state.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_aio.h"
#include "rn_cache.h"
#include "rn_keyids.h"
#include "rn_layers.h"
#include "rn_prefetch.h"
#include "rn_statefile.h"

#define DIRECT_ALIGN 4096
#define WB_THREADS 16  /* write-behind threads (the writes' queue depth); a key always goes to
                        * thread key % WB_THREADS */
#define WB_ROWS 32     /* rows queued per thread */
#define PF_THREADS 16  /* read-ahead threads: the queue depth of the reads */
#define PF_SLOTS 256   /* rows read ahead at most (a step's layer touches H·2K rows) */
#define AIO_WRITES 512 /* AIO: writes queued or under way at most (one file block each) */
#define AIO_BATCH 128  /* AIO: writes queued before they are submitted without waiting for the
                        * layer's end */
#define APPEND_BLOCK RN_STATEFILE_BLOCK /* bytes of an append block at most: the rows of one file-system block */
#define DIR_EMPTY UINT64_MAX /* an empty entry of the row directory */

/* One write-behind queue: evicted dirty rows wait here, oldest first, until
 * its thread has written them; an entry leaves only after its pwrite, so a
 * row is always in the queue or in the file. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started, stop;
    struct rn_state *st;
    char *buf;                /* [WB_ROWS][stride] */
    uint32_t key[WB_ROWS];
    uint64_t pos[WB_ROWS];    /* the rows' positions in the file */
    int head, count;
    rn_error err;             /* the thread's first failure */
} wb_queue;

struct rn_state {
    rn_config c;
    int64_t M;
    int H, dv;
    /* dense: head (l, h) at S + (l·H + h)·M·d_v, z + (l·H + h)·M */
    rn_real *S, *z;
    /* tiered */
    int tiered, fd, direct;
    char *path;
    const rn_policy *pol;
    /* Cache g (of n_groups: 1, L or L·H by scope) holds the keys
     * [g·gkeys, (g+1)·gkeys) as its local keys 0..gkeys-1, and the frames
     * [g·cap, (g+1)·cap) with their free stack at free_frames + g·cap. */
    uint64_t n_groups, gkeys;
    void **caches;                /* [n_groups] */
    /* group g's policy sees its local keys as n_ids compact ids (ids[g],
     * rn_keyids.h), so its per-key arrays follow what it remembers, not
     * gkeys */
    rn_keyids **ids;              /* [n_groups] */
    uint64_t n_ids;
    uint64_t *n_free;             /* [n_groups] */
    uint64_t g;                   /* the group of the access under way (for evicted) */
    uint64_t cap, nf, n_keys, stride; /* cap per group; nf = cap·n_groups frames; stride: bytes per row */
    char *frames;                 /* [nf][stride]: d_v S values then z */
    /* the frame of each id's key (group g's ids at g·n_ids): RN_CACHE_NONE
     * when not cached (a ghost, or a free id) */
    uint32_t *id_frame;           /* [n_groups·n_ids] */
    uint32_t *frame_key;          /* [nf] */
    uint32_t *free_frames;        /* [nf]: per group, a stack of unused frames */
    uint8_t *dirty;               /* [nf] */
    uint64_t n_dirty;             /* frames dirty (bounds the directory's growth in a scan) */
    /* The row directory: the position (row index in the file's data region)
     * of every key written back since create/reset, given at its first
     * write-back in the order of write-backs.  dir: open addressing with
     * linear probing, entries key << 32 | position (DIR_EMPTY: empty), at
     * most half full (dir_room doubles it outside the scan's inner loop;
     * its size follows the rows written, from DIR_ENTRIES0 entries);
     * pos_key: the key of each position (what a flush writes). */
    uint64_t *dir, dir_mask;
    uint32_t *pos_key;            /* [pos_cap], aligned (written with O_DIRECT) */
    uint64_t n_pos, pos_cap;      /* positions given; pos_key's room */
    /* The append block: positions [ab_first, n_pos) are fresh rows not yet
     * written to the file as their block (apb rows, ablk); a miss there
     * copies from ablk.  The block is written whole when full and at a
     * flush (then it stays open until full). */
    char *ablk;                   /* [apb][stride], aligned; zeros after n_pos */
    uint64_t apb, ab_first;
    uint64_t alloc_end;           /* file bytes preallocated (fallocate) so far: [RN_STATEFILE_DATA, alloc_end) */
    int can_resume;               /* created with opts.resume: resume_info is the clean header it had */
    rn_statefile_info resume_info;
    int64_t position;             /* the sequence position a flush records */
    int no_falloc;                /* the file system refused fallocate */
    void *hdr_buf;                /* [RN_STATEFILE_DATA] aligned: header I/O */
    rn_statefile_info info;       /* the header as on disk */
    wb_queue wb[WB_THREADS];
    char *wb_mem;
    /* read-ahead of the layer being scanned (rn_state_layer): its accesses,
     * numbered in scan order, are examined up to pf_cur */
    rn_prefetch *pf;              /* NULL: no read-ahead (threads) */
    /* O_DIRECT: reads and writes in batches of native AIO instead of the
     * write-behind and read-ahead threads (NULL: threads) */
    rn_aio *aio;
    int aio_ahead;                /* read ahead through aio */
    int aio_errno;                /* why io_setup failed (0: not tried or fine) */
    int sync;                     /* RN_STATE_IO_SYNC: pread/pwrite in the scan, no threads */
    const uint32_t *pf_w, *pf_r;  /* the layer's write and read slots [n, H, K] */
    int pf_l, pf_n;               /* the layer (-1: none) and its positions */
    uint64_t pf_cur, pf_total;
    rn_state_counters cnt;
    int bad;                      /* a victim had no frame (set by evicted) */
    rn_error err;                 /* first failure since create/reset */
};

/* Bytes of a row in memory and in the file: (d_v+1)·4 and its checksum
 * (RN_STATEFILE_ROW_CHECK), rounded up to the file's O_DIRECT alignment
 * `align` (rn_statefile_dio_align; 0: no O_DIRECT). */
static uint64_t row_stride(const rn_config *c, uint32_t align)
{
    uint64_t b = sizeof(rn_real) * ((uint64_t)c->d_v + 1) + RN_STATEFILE_ROW_CHECK;
    return align ? (b + align - 1) / align * align : b;
}

static int is_tiered(const rn_state_opts *o) { return o && o->budget; }

#define DIR_ENTRIES0 1024 /* the row directory's first size (entries); it doubles as rows are written */

/* Bytes of pos_key's array for room for n positions (whole 4096-byte
 * blocks: a flush writes it with O_DIRECT). */
static size_t pos_bytes(uint64_t n)
{
    return (size_t)((n * sizeof(uint32_t) + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
}

int rn_state_check(const rn_config *c, const rn_state_opts *o, rn_error *err)
{
    if (!is_tiered(o)) {
        if (o && o->resume) return rn_seterr(err, RN_EINPUT, "--state-resume: needs --state-budget and --state-file");
        if (o && o->file) return rn_seterr(err, RN_EINPUT, "--state-file: needs --state-budget");
        return RN_OK;
    }
    if (!o->file || !*o->file) return rn_seterr(err, RN_EINPUT, "--state-budget: needs --state-file PATH");
    if (o->io < RN_STATE_IO_AUTO || o->io > RN_STATE_IO_SYNC)
        return rn_seterr(err, RN_EINPUT, "--state-io: expected auto, threads or sync");
    if (o->resume && o->discard) return rn_seterr(err, RN_EINPUT, "--state-resume: not with --state-discard");
    if (o->scope < RN_CACHE_SCOPE_HEAD || o->scope > RN_CACHE_SCOPE_MODEL)
        return rn_seterr(err, RN_EINPUT, "--state-scope: expected model, layer or head");
    const char *name = o->policy ? o->policy : "lru";
    const rn_policy *p = rn_policy_find(name);
    if (!p) return rn_seterr(err, RN_EINPUT, "--state-policy: unknown policy '%s'", name);
    if (p->needs_next)
        return rn_seterr(err, RN_EINPUT, "--state-policy: %s needs the future accesses (simulate only)", name);
    uint64_t rb = sizeof(rn_real) * ((uint64_t)c->d_v + 1);
    if (o->budget < rb)
        return rn_seterr(err, RN_EINPUT, "--state-budget: %llu bytes hold no slot (one is %llu bytes)",
                         (unsigned long long)o->budget, (unsigned long long)rb);
    double keys = (double)c->n_layers * c->n_heads * (double)rn_config_slots(c);
    if (rn_config_slots(c) < 0 || keys >= (double)UINT32_MAX)
        return rn_seterr(err, RN_EINPUT, "--state-budget: the tiered state handles at most 2^32-1 slots in all (the model has %.0f)", keys);
    if (sizeof(rn_real) != sizeof(rn_real))
        return rn_seterr(err, RN_EINPUT, "--state-budget: float builds only");
    return RN_OK;
}

static uint64_t groups_of(const rn_config *c, const rn_state_opts *o)
{
    return rn_scope_caches(o->scope, c->n_layers, c->n_heads);
}

/* The capacity of one cache in rows: what the budget holds of
 * (d_v+1)·4-byte rows (the unit of `simulate --capacity`), at most every
 * key of the cache. */
static uint64_t capacity_of(const rn_config *c, const rn_state_opts *o, uint64_t n_keys)
{
    uint64_t cap = o->budget / (sizeof(rn_real) * ((uint64_t)c->d_v + 1));
    return cap < n_keys ? cap : n_keys;
}

double rn_state_bytes(const rn_config *c, const rn_state_opts *o)
{
    double keys = (double)c->n_layers * c->n_heads * (double)rn_config_slots(c);
    if (!is_tiered(o)) return sizeof(rn_real) * keys * (c->d_v + 1.0);
    double groups = (double)groups_of(c, o);
    const uint64_t gkeys = (uint64_t)(keys / groups), gcap = capacity_of(c, o, gkeys);
    double cap = groups * (double)gcap;
    const rn_policy *p = rn_policy_find(o->policy ? o->policy : "lru");
    uint64_t ids = p ? rn_policy_ids(p, gcap, gkeys) : gkeys;
    if (ids >= UINT32_MAX) ids = UINT32_MAX - 1; /* such a model is refused by rn_state_check */
    /* frames, the write-behind and read-ahead buffers and the frame tables,
     * the key -> id maps and per group the policy's per-id arrays (at most
     * 20 bytes an id: LFU) with the id -> frame array, the row directory for
     * as many rows as the frames (it grows with the rows written: 20 to 40
     * bytes a row; docs/tiered-state.md) and the append block */
    /* O_DIRECT frames are padded to the alignment of the disk the file will
     * be on (512 bytes on most: twice a 260-byte row), not to the largest */
    const uint64_t stride = row_stride(c, o->direct ? rn_statefile_dio_align_path(o->file) : 0);
    return (cap + WB_THREADS * WB_ROWS + PF_SLOTS) * ((double)stride + 9) +
           groups * (24.0 * (double)ids + (double)rn_keyids_bytes((uint32_t)ids)) + cap * 40 +
           3 * DIRECT_ALIGN + APPEND_BLOCK + (o->direct ? AIO_WRITES * (double)APPEND_BLOCK : 0);
}

static void wb_drain(rn_state *st);
static void *wb_main(void *arg);

void rn_state_free(rn_state *st)
{
    if (!st) return;
    rn_prefetch_free(st->pf); /* its threads read the file */
    for (int t = 0; t < WB_THREADS; t++) {
        wb_queue *q = &st->wb[t];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->thread, NULL);
        if (q->err.code && !st->err.code) st->err = q->err;
        q->started = 0;
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
    }
    free(st->wb_mem);
    if (st->aio) {
        rn_error e = { 0 };
        if (rn_aio_drain(st->aio, &e) && !st->err.code) st->err = e;
        rn_aio_free(st->aio);
        st->aio = NULL;
    }
    /* every queued row is written (the threads drain before they stop) */
    if (st->fd >= 0 && st->hdr_buf && st->info.state == RN_STATEFILE_DIRTY && !st->err.code) {
        st->info.state = RN_STATEFILE_CLOSED;
        rn_statefile_write(st->fd, st->path, &st->info, st->hdr_buf, &st->err);
    }
    free(st->hdr_buf);
    for (uint64_t g = 0; st->caches && g < st->n_groups; g++)
        if (st->caches[g]) st->pol->free(st->caches[g]);
    for (uint64_t g = 0; st->ids && g < st->n_groups; g++) rn_keyids_free(st->ids[g]);
    free(st->caches); free(st->ids); free(st->n_free);
    if (st->fd >= 0) close(st->fd);
    free(st->path);
    free(st->S); free(st->z);
    free(st->frames); free(st->id_frame); free(st->frame_key); free(st->free_frames);
    free(st->dirty); free(st->dir); free(st->pos_key); free(st->ablk);
    free(st);
}

int rn_state_create(const rn_config *c, const rn_state_opts *o, rn_state **out, rn_error *err)
{
    *out = NULL;
    int rc = rn_state_check(c, o, err);
    if (rc) return rc;
    rn_state *st = calloc(1, sizeof *st);
    if (!st) return rn_seterr(err, RN_ENOMEM, "out of memory");
    st->c = *c;
    st->M = rn_config_slots(c);
    st->H = c->n_heads;
    st->dv = c->d_v;
    st->fd = -1;
    const size_t heads = (size_t)c->n_layers * c->n_heads;
    if (!is_tiered(o)) {
        st->S = malloc(sizeof(rn_real) * heads * st->M * st->dv);
        st->z = malloc(sizeof(rn_real) * heads * st->M);
        if (!st->S || !st->z) {
            rn_state_free(st);
            return rn_seterr(err, RN_ENOMEM, "out of memory allocating the memory state");
        }
        rn_state_reset(st);
        *out = st;
        return RN_OK;
    }
    st->tiered = 1;
    st->direct = o->direct;
    st->pol = rn_policy_find(o->policy ? o->policy : "lru");
    st->n_keys = (uint64_t)heads * st->M;
    st->n_groups = groups_of(c, o);
    st->gkeys = st->n_keys / st->n_groups;
    st->cap = capacity_of(c, o, st->gkeys);
    st->n_ids = rn_policy_ids(st->pol, st->cap, st->gkeys);
    st->nf = st->cap * st->n_groups;
    st->path = strdup(o->file);
    st->hdr_buf = aligned_alloc(DIRECT_ALIGN, RN_STATEFILE_DATA);
    if (!st->path || !st->hdr_buf) {
        rn_state_free(st);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    st->fd = open(o->file, O_RDWR | O_CREAT | O_CLOEXEC | (o->direct ? O_DIRECT : 0), 0644);
    if (st->fd < 0) { /* the option's path: bad input, whatever the reason */
        int e = errno;
        rc = rn_seterr(err, RN_EINPUT, "--state-file: %s: %s%s", o->file, strerror(e),
                       e == EINVAL && o->direct ? " (the file system does not take O_DIRECT)" : "");
        rn_state_free(st);
        return rc;
    }
    if ((rc = rn_statefile_check(st->fd, o->file, o->discard, st->hdr_buf, err))) {
        close(st->fd);
        st->fd = -1;  /* the file is left as it is */
        rn_state_free(st);
        return rc;
    }
    /* under O_DIRECT a row takes whole blocks of the device's alignment (often 512 bytes) */
    st->stride = row_stride(c, o->direct ? rn_statefile_dio_align(st->fd) : 0);
    if (o->resume) { /* the header rn_statefile_check read (hdr_buf), before reset overwrites it */
        rn_statefile_info *ri = &st->resume_info;
        const char *why = !rn_statefile_decode(st->hdr_buf, ri, NULL) ? "it holds no state (empty or new)"
                        : ri->state != RN_STATEFILE_CLEAN ? "it was not flushed clean (a run ended without a flush)"
                        : ri->shape != rn_statefile_shape(c) || ri->n_keys != st->n_keys ? "it holds another model's state"
                        : ri->row_bytes != st->stride ? "its rows are another size (written with --state-direct, or without it)"
                        : NULL;
        if (why) {
            rc = rn_seterr(err, RN_EINPUT, "--state-resume: %s: %s", o->file, why);
            close(st->fd);
            st->fd = -1; /* the file is left as it is */
            rn_state_free(st);
            return rc;
        }
        st->can_resume = 1;
    }
    /* the page cache: a row's pwrite is a copy into memory, so threads and
     * read-ahead cost more wake-ups than they save (docs/tiered-state.md) */
    st->sync = o->io == RN_STATE_IO_SYNC || (!o->direct && o->io == RN_STATE_IO_AUTO);
    /* fresh rows are appended in blocks of apb rows (at least one): with
     * O_DIRECT's 512-byte rows, 8 rows a 4096-byte block */
    st->apb = st->stride < APPEND_BLOCK ? APPEND_BLOCK / st->stride : 1;
    if (o->direct && o->io == RN_STATE_IO_AUTO) {
        rn_error e = { 0 };
        if ((rc = rn_aio_create(st->fd, st->path, st->stride, st->apb * st->stride, RN_STATEFILE_DATA, AIO_WRITES,
                                PF_SLOTS, AIO_BATCH, &st->aio, &st->aio_errno, &e))) {
            if (!st->aio_errno) { /* out of memory: not a reason to run slower */
                *err = e;
                rn_state_free(st);
                return rc;
            }
            st->aio = NULL; /* the kernel refused io_setup: the threads below */
        }
        st->aio_ahead = st->aio && !o->no_prefetch;
    }
    st->frames = aligned_alloc(DIRECT_ALIGN, (st->nf * st->stride + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
    st->id_frame = malloc(st->n_groups * st->n_ids * sizeof *st->id_frame);
    st->frame_key = malloc(st->nf * sizeof *st->frame_key);
    st->free_frames = malloc(st->nf * sizeof *st->free_frames);
    st->dirty = malloc(st->nf);
    st->dir_mask = DIR_ENTRIES0 - 1;
    st->dir = malloc((st->dir_mask + 1) * sizeof *st->dir);
    st->pos_cap = (st->dir_mask + 1) / 2;
    st->pos_key = aligned_alloc(DIRECT_ALIGN, pos_bytes(st->pos_cap));
    st->ablk = aligned_alloc(DIRECT_ALIGN, (st->apb * st->stride + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
    st->caches = calloc(st->n_groups, sizeof *st->caches);
    st->ids = calloc(st->n_groups, sizeof *st->ids);
    st->n_free = calloc(st->n_groups, sizeof *st->n_free);
    int ids_ok = st->ids != NULL;
    for (uint64_t g = 0; ids_ok && g < st->n_groups; g++) ids_ok = !!(st->ids[g] = rn_keyids_new((uint32_t)st->n_ids));
    if (!st->frames || !st->id_frame || !st->frame_key || !st->free_frames || !st->dirty || !st->dir ||
        !st->pos_key || !st->ablk || !st->caches || !ids_ok || !st->n_free) {
        rn_state_free(st);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    st->info = (rn_statefile_info){ 0, st->can_resume ? st->resume_info.generation : 0, rn_statefile_shape(c),
                                    st->stride, st->n_keys, 0, 0, 0, 0 };
    size_t wbb = (size_t)WB_THREADS * WB_ROWS * st->stride;
    if (!(st->wb_mem = aligned_alloc(DIRECT_ALIGN, (wbb + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN))) {
        rn_state_free(st);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    for (int t = 0; t < WB_THREADS && !st->aio && !st->sync; t++) {
        wb_queue *q = &st->wb[t];
        q->st = st;
        q->buf = st->wb_mem + (size_t)t * WB_ROWS * st->stride;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        if (pthread_create(&q->thread, NULL, wb_main, q)) {
            pthread_mutex_destroy(&q->mu);
            pthread_cond_destroy(&q->cv);
            rn_state_free(st);
            return rn_seterr(err, RN_ENOMEM, "tiered memory state: cannot start a write-behind thread");
        }
        q->started = 1;
    }
    if (!o->no_prefetch && !st->aio && !st->sync && (rc = rn_prefetch_create(st->fd, st->path, st->stride, PF_THREADS, PF_SLOTS, &st->pf, err))) {
        rn_state_free(st);
        return rc;
    }
    st->pf_l = -1;
    rn_state_reset(st);
    if (st->err.code) {
        rc = rn_seterr(err, st->err.code, "%s", st->err.msg);
        rn_state_free(st);
        return rc;
    }
    *out = st;
    return RN_OK;
}

int rn_state_tiered(const rn_state *st) { return st->tiered; }

void rn_state_reset(rn_state *st)
{
    memset(&st->err, 0, sizeof st->err);
    if (!st->tiered) {
        int64_t heads = (int64_t)st->c.n_layers * st->H;
        for (int64_t i = 0; i < heads; i++)
            rn_pdma_reset(st->S + i * st->M * st->dv, st->z + i * st->M, st->M, st->dv);
        return;
    }
    if (st->pf) rn_prefetch_drop(st->pf);
    if (st->aio) rn_aio_read_drop(st->aio);
    st->pf_l = -1;
    wb_drain(st);
    if (st->aio) rn_aio_clear_error(st->aio);
    for (int t = 0; t < WB_THREADS; t++) memset(&st->wb[t].err, 0, sizeof st->wb[t].err);
    /* The rows are emptied by the directory alone: a row is read from the
     * file only once written since (it has a position), so the file's old
     * rows are never read, and positions start again at 0, over the old
     * rows' blocks, which are kept, not truncated (freeing them costs a
     * discard per extent on file systems mounted with discard: minutes for
     * 10^5 scattered rows).  The header says dirty before any row is
     * written.  Created for resuming, the file is left as it is until
     * rn_state_resume has checked what it holds and takes it up (so a
     * file refused there is not changed; rn_state_free writes nothing
     * while the state is not dirty). */
    st->info.state = st->can_resume ? RN_STATEFILE_CLEAN : RN_STATEFILE_DIRTY;
    st->info.dir_off = st->info.dir_count = st->info.dir_check = st->info.position = 0;
    if (!st->err.code && !st->can_resume) rn_statefile_write(st->fd, st->path, &st->info, st->hdr_buf, &st->err);
    for (uint64_t g = 0; g < st->n_groups; g++) {
        if (st->caches[g]) st->pol->free(st->caches[g]);
        st->caches[g] = st->pol->init(st->cap, (uint32_t)st->n_ids);
        rn_keyids_clear(st->ids[g]);
        if (!st->caches[g] && !st->err.code)
            rn_seterr(&st->err, RN_ENOMEM, "out of memory for a %s cache of %llu slots", st->pol->name,
                      (unsigned long long)st->cap);
        /* group g's frames, lowest on top of its stack */
        for (uint64_t i = 0; i < st->cap; i++)
            st->free_frames[g * st->cap + i] = (uint32_t)(g * st->cap + st->cap - 1 - i);
        st->n_free[g] = st->cap;
    }
    memset(st->id_frame, 0xff, st->n_groups * st->n_ids * sizeof *st->id_frame);
    memset(st->dir, 0xff, (st->dir_mask + 1) * sizeof *st->dir);
    st->n_pos = st->ab_first = 0;
    st->alloc_end = RN_STATEFILE_DATA;
    memset(st->ablk, 0, st->apb * st->stride);
    memset(st->dirty, 0, st->nf);
    st->n_dirty = 0;
    memset(&st->cnt, 0, sizeof st->cnt);
}

int rn_state_head(rn_state *st, int l, int h, rn_real **S, rn_real **z, rn_error *err)
{
    if (st->tiered)
        return rn_seterr(err, RN_EINPUT, "the memory state of a head is read from the dense store only (no --state-budget)");
    size_t i = (size_t)l * st->H + h;
    *S = st->S + i * st->M * st->dv;
    *z = st->z + i * st->M;
    return RN_OK;
}

/* Full pread/pwrite of n rows from position pos (short transfers
 * retried); a failure is set in *e unless one is there already. */
static int rows_io(rn_state *st, int wr, uint64_t pos, uint64_t n, char *buf, rn_error *e)
{
    off_t off = (off_t)(RN_STATEFILE_DATA + pos * st->stride);
    size_t done = 0, len = (size_t)(n * st->stride);
    while (done < len) {
        ssize_t r = wr ? pwrite(st->fd, buf + done, len - done, off + (off_t)done)
                       : pread(st->fd, buf + done, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (!e->code)
                rn_seterr(e, RN_EIO, "--state-file: %s: %s at offset %lld: %s", st->path,
                          wr ? "write" : "read", (long long)off, r < 0 ? strerror(errno) : "end of file");
            return RN_EIO;
        }
        done += (size_t)r;
    }
    return RN_OK;
}

static int row_io(rn_state *st, int wr, uint64_t pos, char *buf, rn_error *e)
{
    return rows_io(st, wr, pos, 1, buf, e);
}

/* A write-behind thread: write its queue's oldest row, then drop it. */
static void *wb_main(void *arg)
{
    wb_queue *q = arg;
    rn_state *st = q->st;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->count && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->count) break;
        int i = q->head;
        pthread_mutex_unlock(&q->mu);
        rn_error e = { 0 };
        row_io(st, 1, q->pos[i], q->buf + (size_t)i * st->stride, &e);
        pthread_mutex_lock(&q->mu);
        if (e.code && !q->err.code) q->err = e;
        q->head = (q->head + 1) % WB_ROWS;
        q->count--;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Wait until every queued row is in the file. */
static void wb_drain(rn_state *st)
{
    if (st->aio) rn_aio_drain(st->aio, NULL); /* a failure stays in the queue (rn_state_error) */
    for (int t = 0; t < WB_THREADS; t++) {
        wb_queue *q = &st->wb[t];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        while (q->count) pthread_cond_wait(&q->cv, &q->mu);
        pthread_mutex_unlock(&q->mu);
    }
}

static inline uint64_t dir_home(const rn_state *st, uint32_t key)
{
    return ((uint64_t)key * 0x9E3779B97F4A7C15ull >> 29) & st->dir_mask;
}

/* Key's position in the file, or RN_CACHE_NONE when it was never written
 * back (its row is the initial one). */
static uint32_t dir_find(const rn_state *st, uint32_t key)
{
    for (uint64_t i = dir_home(st, key);; i = (i + 1) & st->dir_mask) {
        uint64_t e = st->dir[i];
        if (e == DIR_EMPTY) return RN_CACHE_NONE;
        if ((uint32_t)(e >> 32) == key) return (uint32_t)e;
    }
}

/* Make room in the directory for `more` new positions beyond n_pos (the
 * table at most half full, pos_key long enough), doubling both as needed.
 * Called where a scan or a flush starts, so the inner loop never
 * allocates; a failure is kept in st->err. */
static void dir_room(rn_state *st, uint64_t more)
{
    const uint64_t need = st->n_pos + more;
    uint64_t n = st->dir_mask + 1;
    while (2 * need > n) n *= 2;
    if (n != st->dir_mask + 1) {
        uint64_t *d = malloc(n * sizeof *d);
        if (!d) {
            if (!st->err.code)
                rn_seterr(&st->err, RN_ENOMEM, "out of memory growing the state file's row directory to %llu entries",
                          (unsigned long long)n);
            return;
        }
        memset(d, 0xff, n * sizeof *d);
        for (uint64_t p = 0; p < st->n_pos; p++) { /* rehash: every entry is (pos_key[p], p) */
            uint64_t i = ((uint64_t)st->pos_key[p] * 0x9E3779B97F4A7C15ull >> 29) & (n - 1);
            while (d[i] != DIR_EMPTY) i = (i + 1) & (n - 1);
            d[i] = (uint64_t)st->pos_key[p] << 32 | p;
        }
        free(st->dir);
        st->dir = d;
        st->dir_mask = n - 1;
    }
    if (need > st->pos_cap) {
        uint64_t c = st->pos_cap;
        while (c < need) c *= 2;
        uint32_t *k = aligned_alloc(DIRECT_ALIGN, pos_bytes(c));
        if (!k) {
            if (!st->err.code) rn_seterr(&st->err, RN_ENOMEM, "out of memory growing the state file's row directory");
            return;
        }
        memcpy(k, st->pos_key, st->n_pos * sizeof *k);
        free(st->pos_key);
        st->pos_key = k;
        st->pos_cap = c;
    }
}

/* Give key the next position (key not in the directory). */
static uint64_t dir_add(rn_state *st, uint32_t key)
{
    if (2 * (st->n_pos + 1) > st->dir_mask + 1 || st->n_pos + 1 > st->pos_cap) dir_room(st, 1); /* not reached: dir_room ran before the scan */
    if (2 * (st->n_pos + 1) > st->dir_mask + 1 || st->n_pos + 1 > st->pos_cap) return st->n_pos - 1; /* out of memory: st->err says so */
    uint64_t i = dir_home(st, key), p = st->n_pos++;
    while (st->dir[i] != DIR_EMPTY) i = (i + 1) & st->dir_mask;
    st->dir[i] = (uint64_t)key << 32 | p;
    st->pos_key[p] = key;
    return p;
}

/* Preallocate the file up to byte `end` at least, in chunks of
 * RN_STATE_PREALLOC (fallocate, extending the file's size), so that the
 * writes of fresh rows never allocate a block themselves (ext4 allocates
 * one block at a time inside each write otherwise: docs/tiered-state.md).
 * A failure is harmless (the writes allocate); "not supported" stops
 * trying. */
static void prealloc(rn_state *st, uint64_t end)
{
    while (st->alloc_end < end && !st->no_falloc) {
        if (fallocate(st->fd, 0, (off_t)st->alloc_end, (off_t)RN_STATE_PREALLOC) &&
            (errno == EOPNOTSUPP || errno == ENOSYS)) {
            st->no_falloc = 1;
            break;
        }
        st->alloc_end += RN_STATE_PREALLOC;
    }
}

/* Write the open append block whole (apb rows, zeros after the last
 * fresh row): through AIO, else one pwrite here (the threads' queues hold
 * only rewrites of rows in blocks written before, never one of this
 * block's).  When it is full, the next block opens. */
static void append_write(rn_state *st)
{
    const uint64_t b = st->ab_first / st->apb, len = st->apb * st->stride;
    prealloc(st, RN_STATEFILE_DATA + (b + 1) * len);
    if (st->aio) rn_aio_write_block(st->aio, b, st->ablk);
    else rows_io(st, 1, st->ab_first, st->apb, st->ablk, &st->err);
    if (st->n_pos == st->ab_first + st->apb) {
        st->ab_first = st->n_pos;
        memset(st->ablk, 0, len);
    }
}

/* Write frame f's row back: a key without a position gets the next one and
 * its row goes into the append block; a row in the open append block is
 * updated there; any other is rewritten in place (synchronously, through
 * AIO or through its key's write-behind queue, waiting while it is full). */
static void write_back(rn_state *st, uint32_t f)
{
    uint32_t key = st->frame_key[f];
    char *src = st->frames + (size_t)f * st->stride;
    /* the row's checksum after its floats: every copy of the row from here
     * on (append block, queues, file) carries it */
    const size_t payload = sizeof(rn_real) * ((size_t)st->dv + 1);
    uint32_t check = rn_statefile_row_check(key, src, payload);
    memcpy(src + payload, &check, sizeof check);
    if (st->info.state != RN_STATEFILE_DIRTY) { /* the first row write since a flush */
        st->info.state = RN_STATEFILE_DIRTY;
        st->info.dir_off = st->info.dir_count = st->info.dir_check = 0;
        if (!st->err.code) rn_statefile_write(st->fd, st->path, &st->info, st->hdr_buf, &st->err);
    }
    uint32_t p = dir_find(st, key);
    uint64_t pos = p != RN_CACHE_NONE ? p : dir_add(st, key);
    if (pos >= st->ab_first) {
        memcpy(st->ablk + (pos - st->ab_first) * st->stride, src, st->stride);
        if (st->n_pos == st->ab_first + st->apb) append_write(st);
    } else if (st->sync) {
        row_io(st, 1, pos, src, &st->err);
    } else if (st->aio) {
        rn_aio_write(st->aio, pos, src);
    } else {
        wb_queue *q = &st->wb[key % WB_THREADS];
        pthread_mutex_lock(&q->mu);
        while (q->count == WB_ROWS) pthread_cond_wait(&q->cv, &q->mu);
        int i = (q->head + q->count) % WB_ROWS;
        memcpy(q->buf + (size_t)i * st->stride, src, st->stride);
        q->key[i] = key;
        q->pos[i] = pos;
        q->count++;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
    }
    st->dirty[f] = 0;
    st->n_dirty--;
    st->cnt.bytes_written += st->stride;
}

/* Read key's row (at position pos) into buf: from the open append block,
 * else the newest copy still queued for writing, else the file. */
static void read_back(rn_state *st, uint32_t key, uint64_t pos, char *buf)
{
    if (pos >= st->ab_first) {
        memcpy(buf, st->ablk + (pos - st->ab_first) * st->stride, st->stride);
        return;
    }
    if (st->aio || st->sync) {
        if (!st->aio || !rn_aio_written(st->aio, pos, buf)) row_io(st, 0, pos, buf, &st->err);
        return;
    }
    wb_queue *q = &st->wb[key % WB_THREADS];
    pthread_mutex_lock(&q->mu);
    for (int n = q->count - 1; n >= 0; n--) {
        int i = (q->head + n) % WB_ROWS;
        if (q->key[i] == key) {
            memcpy(buf, q->buf + (size_t)i * st->stride, st->stride);
            pthread_mutex_unlock(&q->mu);
            return;
        }
    }
    pthread_mutex_unlock(&q->mu);
    row_io(st, 0, pos, buf, &st->err);
}

/* Does key's row r, read back, pass its checksum?  When it does not, the
 * store fails (the file is damaged: RN_EINPUT naming it, unless a failure
 * came first, e.g. the read's own) and r is set to the initial row, so the
 * damaged bytes are never computed with, even in the rest of the layer
 * (whose outputs the runtime then drops). */
static int row_verify(rn_state *st, uint32_t key, uint64_t pos, char *r)
{
    const size_t payload = sizeof(rn_real) * ((size_t)st->dv + 1);
    uint32_t have;
    memcpy(&have, r + payload, sizeof have);
    if (have == rn_statefile_row_check(key, r, payload)) return 1;
    if (!st->err.code)
        rn_seterr(&st->err, RN_EINPUT, "--state-file: %s: the row of slot %u (position %llu) fails its checksum: the "
                  "file is damaged; --state-discard replaces it", st->path, key, (unsigned long long)pos);
    memset(r, 0, st->stride);
    ((rn_real *)r)[st->dv] = (rn_real)(1.0 / (double)st->M);
    return 0;
}

/* The frame of a cached key, or RN_CACHE_NONE: its group's id map says
 * its id, the id its frame. */
static uint32_t frame_of(const rn_state *st, uint32_t key)
{
    const uint64_t g = st->n_groups == 1 ? 0 : key / st->gkeys;
    uint32_t id = rn_keyids_find(st->ids[g], (uint32_t)(key - g * st->gkeys));
    return id == RN_CACHE_NONE ? RN_CACHE_NONE : st->id_frame[g * st->n_ids + id];
}

/* A key left the cache (the policy's victims callback, given its id):
 * write its row back when dirty and free its frame. */
static void evicted(void *user, uint32_t id)
{
    rn_state *st = user;
    const uint64_t g = st->g, key = g * st->gkeys + rn_keyids_key(st->ids[g], id);
    uint32_t f = st->id_frame[g * st->n_ids + id];
    if (f == RN_CACHE_NONE || st->frame_key[f] != key || st->n_free[g] >= st->cap) {
        st->bad = 1;
        return;
    }
    if (st->dirty[f]) write_back(st, f);
    st->id_frame[g * st->n_ids + id] = RN_CACHE_NONE;
    st->free_frames[g * st->cap + st->n_free[g]++] = f;
    st->cnt.evictions++;
}

/* The policy forgot a key entirely (cached and ghost): its id is free. */
static void forgotten(void *user, uint32_t id)
{
    rn_state *st = user;
    rn_keyids_release(st->ids[st->g], id);
}

/* The row of key in memory ([d_v] S values then z), through the policy:
 * a hit finds its frame; a miss frees the victims' frames (writing dirty
 * ones back), takes a frame and fills it from the file or with the initial
 * row.  `write`: the caller will modify it. */
static rn_real *row(rn_state *st, uint32_t key, int write)
{
    rn_victims v = { evicted, st, forgotten };
    const uint64_t g = st->n_groups == 1 ? 0 : key / st->gkeys;
    st->bad = 0;
    st->g = g;
    /* rn_policy_ids ids always leave one free for a key without one */
    uint32_t id = rn_keyids_get(st->ids[g], (uint32_t)(key - g * st->gkeys));
    int hit = id == RN_CACHE_NONE ? (st->bad = 1, 0) : st->pol->access(st->caches[g], id, RN_CACHE_NONE, &v);
    st->cnt.accesses++;
    uint32_t f = id == RN_CACHE_NONE ? RN_CACHE_NONE : st->id_frame[g * st->n_ids + id];
    int bad = st->bad || (hit ? f == RN_CACHE_NONE : f != RN_CACHE_NONE);
    if (hit) {
        st->cnt.hits++;
    } else if (!bad) {
        st->cnt.misses++;
        if (st->n_free[g]) {
            f = st->free_frames[g * st->cap + --st->n_free[g]];
            st->id_frame[g * st->n_ids + id] = f;
            st->frame_key[f] = key;
            st->dirty[f] = 0;
            rn_real *r = (rn_real *)(st->frames + (size_t)f * st->stride);
            uint32_t pos = dir_find(st, key);
            if (pos != RN_CACHE_NONE) {
                int s = st->pf ? rn_prefetch_find(st->pf, key) : st->aio_ahead ? rn_aio_read_find(st->aio, key) : -1;
                if (s >= 0 && !st->pf) {
                    rn_error e = { 0 };
                    if (rn_aio_read_take(st->aio, s, r, &e) && !st->err.code) st->err = e;
                    st->cnt.prefetched++;
                } else if (s >= 0) {
                    rn_error e = { 0 };
                    uint64_t t0 = rn_prefetch_taken(st->pf);
                    if (rn_prefetch_take(st->pf, s, r, &e) && !st->err.code) st->err = e;
                    st->cnt.prefetched += rn_prefetch_taken(st->pf) - t0; /* 0: it read the row itself */
                } else
                    read_back(st, key, pos, (char *)r);
                st->cnt.bytes_read += st->stride;
                row_verify(st, key, pos, (char *)r);
            } else {
                memset(r, 0, st->stride); /* the O_DIRECT padding too: the file gets zeros there */
                r[st->dv] = (rn_real)(1.0 / (double)st->M); /* as rn_pdma_reset */
            }
        } else
            bad = 1;
    }
    if (bad) {
        if (!st->err.code)
            rn_seterr(&st->err, RN_EINTERNAL, "tiered state: policy %s and the frame table disagree on slot key %u",
                      st->pol->name, key);
        f = 0; /* keep computing into frame 0; the run fails at the layer's end */
    }
    if (write && !st->dirty[f]) {
        st->dirty[f] = 1;
        st->n_dirty++;
    }
    return (rn_real *)(st->frames + (size_t)f * st->stride);
}

/* Is key's row (at position pos) in a write-behind queue (so the file
 * does not hold it yet)? */
static int queued(rn_state *st, uint32_t key, uint64_t pos)
{
    if (st->aio) return rn_aio_written(st->aio, pos, NULL);
    wb_queue *q = &st->wb[key % WB_THREADS];
    int found = 0;
    pthread_mutex_lock(&q->mu);
    for (int n = 0; n < q->count && !found; n++) found = q->key[(q->head + n) % WB_ROWS] == key;
    pthread_mutex_unlock(&q->mu);
    return found;
}

/* Read ahead: examine the layer's accesses from max(pf_cur, cur) on, in
 * scan order, and issue a read for each row that is neither in memory nor
 * in the open append block nor queued nor read already but is in the
 * file, while slots are free.  Such
 * a row stays out of memory until its own access (only an access brings a
 * row in), so its bytes in the file cannot change before that access takes
 * them: read ahead changes no hit, miss or byte count, only when the bytes
 * arrive.  Returns the reads issued (with AIO they go to the kernel at the
 * next rn_aio_submit). */
static int read_ahead(rn_state *st, uint64_t cur)
{
    if (st->pf_cur < cur) st->pf_cur = cur;
    const int H = st->H, K = st->c.top_k, n = st->pf_n;
    int issued = 0;
    while (st->pf_cur < st->pf_total && !(st->pf ? rn_prefetch_full(st->pf) : rn_aio_read_full(st->aio))) {
        uint64_t i = st->pf_cur++;
        int h = (int)(i / ((uint64_t)n * 2 * K));
        uint64_t rem = i % ((uint64_t)n * 2 * K);
        int t = (int)(rem / (2 * (uint64_t)K)), j = (int)(rem % (2 * (uint64_t)K));
        size_t a = ((size_t)t * H + h) * K;
        uint32_t slot = j < K ? st->pf_w[a + j] : st->pf_r[a + j - K];
        uint32_t key = (uint32_t)(((uint64_t)st->pf_l * H + h) * (uint64_t)st->M + slot);
        if (frame_of(st, key) != RN_CACHE_NONE) continue;
        uint32_t pos = dir_find(st, key);
        if (pos == RN_CACHE_NONE || pos >= st->ab_first ||
            (st->pf ? rn_prefetch_find(st->pf, key) : rn_aio_read_find(st->aio, key)) >= 0 || queued(st, key, pos))
            continue;
        if (st->pf) rn_prefetch_issue(st->pf, key, (off_t)(RN_STATEFILE_DATA + (uint64_t)pos * st->stride));
        else rn_aio_read_issue(st->aio, key, pos);
        issued++;
    }
    return issued;
}

void rn_state_layer(rn_state *st, int l, const uint32_t *wslot, const uint32_t *rslot, int n)
{
    if (!st->tiered) return;
    if (st->aio && !st->aio_ahead) {
        rn_aio_submit(st->aio); /* the writes queued since the last submission */
        return;
    }
    if (!st->pf && !st->aio_ahead) return;
    /* the last layer's reads not taken (none, normally) */
    if (st->pf) rn_prefetch_drop(st->pf);
    else rn_aio_read_drop(st->aio);
    st->pf_l = l;
    st->pf_w = wslot;
    st->pf_r = rslot;
    st->pf_n = n;
    st->pf_cur = 0;
    st->pf_total = (uint64_t)st->H * (uint64_t)n * 2 * (uint64_t)st->c.top_k;
    read_ahead(st, 0);
    if (st->aio) rn_aio_submit(st->aio); /* the layer's reads and the writes queued: one io_submit */
}

void rn_state_scan(rn_state *st, int l, int h, rn_real *o, const rn_real *v,
                   const uint32_t *wslot, const rn_real *ww, const uint32_t *rslot,
                   const rn_real *rw, int n)
{
    const int H = st->H, K = st->c.top_k, dv = st->dv;
    const rn_real gamma = st->c.gamma, eps = st->c.eps;
    if (!st->tiered) {
        size_t i = (size_t)l * H + h;
        rn_pdma_scan_forward(o, st->S + i * st->M * dv, st->z + i * st->M, v, wslot, ww, rslot, rw, n,
                             H, h, K, dv, gamma, eps);
        return;
    }
    const uint32_t base = (uint32_t)(((uint64_t)l * H + h) * (uint64_t)st->M), zero = 0;
    /* new positions in this scan: at most the rows dirty now and those it
     * writes */
    dir_room(st, st->n_dirty + (uint64_t)n * K);
    const int ahead = (st->pf || st->aio_ahead) && st->pf_l == l && st->pf_n == n && st->pf_w == wslot && st->pf_r == rslot;
    for (int t = 0; t < n; t++) {
        size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * dv + (size_t)h * dv;
        if (ahead && read_ahead(st, ((uint64_t)h * n + t) * 2 * K) && st->aio) /* keep the slots busy */
            rn_aio_submit(st->aio);
        for (int j = 0; j < K; j++) {
            rn_real *r = row(st, base + wslot[a + j], 1);
            rn_pdma_write(r, r + dv, dv, &zero, ww + a + j, 1, v + vv, gamma);
        }
        for (int i = 0; i < dv; i++) o[vv + i] = 0;
        for (int j = 0; j < K; j++) {
            const rn_real *r = row(st, base + rslot[a + j], 0);
            rn_pdma_read_acc(o + vv, r, r + dv, dv, &zero, rw + a + j, 1, eps);
        }
    }
    if (st->aio && h == H - 1) rn_aio_submit(st->aio); /* the layer's write-backs */
}

int rn_state_error(rn_state *st, rn_error *err)
{
    if (st->aio && !st->err.code) rn_aio_error(st->aio, &st->err);
    for (int t = 0; t < WB_THREADS && !st->err.code; t++) {
        wb_queue *q = &st->wb[t];
        if (!q->started) continue;
        pthread_mutex_lock(&q->mu);
        if (q->err.code) st->err = q->err;
        pthread_mutex_unlock(&q->mu);
    }
    if (st->err.code && err) *err = st->err;
    return st->err.code;
}

int rn_state_flush(rn_state *st, rn_error *err)
{
    if (!st->tiered) return RN_OK;
    dir_room(st, st->n_dirty);
    for (uint64_t f = 0; f < st->nf; f++)
        if (st->dirty[f] && frame_of(st, st->frame_key[f]) == f) write_back(st, (uint32_t)f);
    if (st->info.state == RN_STATEFILE_DIRTY && st->n_pos > st->ab_first)
        append_write(st); /* the open block as it is; it stays open */
    wb_drain(st);
    if (st->info.state != RN_STATEFILE_DIRTY || rn_state_error(st, NULL)) return rn_state_error(st, err);
    /* the rows, then the directory after them, on disk before the header
     * says clean */
    uint64_t doff = RN_STATEFILE_DATA + (st->n_pos + st->apb - 1) / st->apb * st->apb * st->stride;
    doff = (doff + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
    size_t len = pos_bytes(st->n_pos), done = 0;
    memset(st->pos_key + st->n_pos, 0, len - st->n_pos * sizeof *st->pos_key);
    while (done < len && !st->err.code) {
        ssize_t w = pwrite(st->fd, (char *)st->pos_key + done, len - done, (off_t)(doff + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) rn_seterr(&st->err, RN_EIO, "--state-file: %s: writing the row directory: %s", st->path,
                              w < 0 ? strerror(errno) : "short write");
        else done += (size_t)w;
    }
    if (!st->err.code && fsync(st->fd))
        rn_seterr(&st->err, RN_EIO, "--state-file: %s: fsync: %s", st->path, strerror(errno));
    if (!st->err.code) {
        st->info.state = RN_STATEFILE_CLEAN;
        st->info.generation++;
        st->info.dir_off = doff;
        st->info.dir_count = st->n_pos;
        st->info.dir_check = rn_statefile_dir_check(st->pos_key, st->n_pos);
        st->info.position = (uint64_t)st->position;
        rn_statefile_write(st->fd, st->path, &st->info, st->hdr_buf, &st->err);
    }
    return rn_state_error(st, err);
}

void rn_state_set_position(rn_state *st, int64_t pos) { st->position = pos; }

int rn_state_resume(rn_state *st, int64_t *pos, rn_error *err)
{
    if (!st->tiered || !st->can_resume)
        return rn_seterr(err, RN_EINPUT, "--state-resume: the state was not opened for resuming");
    const rn_statefile_info *ri = &st->resume_info;
    st->can_resume = 0; /* once: a reset starts a new sequence */
    /* ri passed rn_statefile_check when the store was created (its fields
     * against the file: dir_count at most the keys and the file's size,
     * the position at most RN_STATEFILE_POS_MAX), so the room is bounded */
    dir_room(st, ri->dir_count);
    if (st->err.code) return rn_state_error(st, err);
    int rc = rn_statefile_read_dir(st->fd, st->path, ri, st->pos_key, err);
    if (rc) return rc;
    for (uint64_t p = 0; p < ri->dir_count; p++) { /* the table of an empty directory, filled */
        uint32_t key = st->pos_key[p];
        uint64_t i = dir_home(st, key);
        while (st->dir[i] != DIR_EMPTY) i = (i + 1) & st->dir_mask;
        st->dir[i] = (uint64_t)key << 32 | p;
    }
    st->n_pos = ri->dir_count;
    st->ab_first = st->n_pos / st->apb * st->apb;
    /* the open append block as the flush wrote it (whole, zeros after its rows) */
    if (st->n_pos > st->ab_first && !rows_io(st, 0, st->ab_first, st->apb, st->ablk, &st->err))
        for (uint64_t p = st->ab_first; p < st->n_pos; p++)
            if (!row_verify(st, st->pos_key[p], p, st->ablk + (p - st->ab_first) * st->stride)) break;
    st->alloc_end = RN_STATEFILE_DATA + st->ab_first * st->stride; /* fallocate again from there: cheap where allocated */
    st->position = (int64_t)ri->position;
    *pos = st->position;
    /* taken up: from here on an ordinary run (dirty until a flush) */
    st->info.state = RN_STATEFILE_DIRTY;
    if (!st->err.code) rn_statefile_write(st->fd, st->path, &st->info, st->hdr_buf, &st->err);
    return rn_state_error(st, err);
}

void rn_state_get_counters(const rn_state *st, rn_state_counters *out)
{
    *out = st->cnt;
    out->capacity = st->tiered ? st->cap : 0;
    out->caches = st->tiered ? st->n_groups : 0;
    out->row_bytes = st->tiered ? st->stride : 0;
    out->aio = st->aio != NULL;
    out->aio_errno = st->aio_errno;
}
