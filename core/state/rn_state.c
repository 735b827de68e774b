/* rn_state.c — the dense and the tiered slot-state stores (rn_state.h). */
#include "rn_state.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_cache.h"
#include "rn_keyids.h"
#include "rn_layers.h"
#include "rn_rowdir.h"
#include "rn_rowio.h"
#include "rn_statefile.h"

#define DIRECT_ALIGN 4096
#define APPEND_BLOCK RN_STATEFILE_BLOCK /* bytes of an append block at most: the rows of one file-system block */

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
    /* the row directory: the position of every key written back since
     * create/reset (rn_rowdir.h; its room made outside the scan's inner
     * loop) */
    rn_rowdir dir;
    /* The append block: positions [ab_first, dir.n_pos) are fresh rows not yet
     * written to the file as their block (apb rows, ablk); a miss there
     * copies from ablk.  The block is written whole when full and at a
     * flush (then it stays open until full). */
    char *ablk;                   /* [apb][stride], aligned; zeros after dir.n_pos */
    uint64_t apb, ab_first;
    uint64_t alloc_end;           /* file bytes preallocated (fallocate) so far: [RN_STATEFILE_DATA, alloc_end) */
    int can_resume;               /* created with opts.resume: resume_info is the clean header it had */
    rn_statefile_info resume_info;
    int64_t position;             /* the sequence position a flush records */
    int no_falloc;                /* the file system refused fallocate */
    void *hdr_buf;                /* [RN_STATEFILE_DATA] aligned: header I/O */
    rn_statefile_info info;       /* the header as on disk */
    /* how rows reach the file: the engine rn_rowio_open chose (sync,
     * threads or aio) */
    rn_rowio *io;
    int aio_errno;                /* why io_setup failed (0: not tried or fine) */
    /* read-ahead of the layer being scanned (rn_state_layer, when io->ahead):
     * its accesses, numbered in scan order, are examined up to pf_cur */
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
    return cap * ((double)stride + 9) + rn_rowio_bytes(stride, o->direct) +
           groups * (24.0 * (double)ids + (double)rn_keyids_bytes((uint32_t)ids)) + cap * 40 +
           3 * DIRECT_ALIGN + APPEND_BLOCK;
}

void rn_state_free(rn_state *st)
{
    if (!st) return;
    rn_rowio_close(st->io, &st->err); /* every queued row is written */
    st->io = NULL;
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
    free(st->dirty); rn_rowdir_free(&st->dir); free(st->ablk);
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
    /* fresh rows are appended in blocks of apb rows (at least one): with
     * O_DIRECT's 512-byte rows, 8 rows a 4096-byte block */
    st->apb = st->stride < APPEND_BLOCK ? APPEND_BLOCK / st->stride : 1;
    rn_rowio_conf ioc = { st->fd, st->path, st->stride, st->apb * st->stride, RN_STATEFILE_DATA, o->direct, o->io,
                          o->no_prefetch };
    if ((rc = rn_rowio_open(&ioc, &st->io, &st->aio_errno, err))) {
        rn_state_free(st);
        return rc;
    }
    st->frames = aligned_alloc(DIRECT_ALIGN, (st->nf * st->stride + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
    st->id_frame = malloc(st->n_groups * st->n_ids * sizeof *st->id_frame);
    st->frame_key = malloc(st->nf * sizeof *st->frame_key);
    st->free_frames = malloc(st->nf * sizeof *st->free_frames);
    st->dirty = malloc(st->nf);
    int dir_ok = rn_rowdir_init(&st->dir, &(rn_error){ 0 }) == RN_OK;
    st->ablk = aligned_alloc(DIRECT_ALIGN, (st->apb * st->stride + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN);
    st->caches = calloc(st->n_groups, sizeof *st->caches);
    st->ids = calloc(st->n_groups, sizeof *st->ids);
    st->n_free = calloc(st->n_groups, sizeof *st->n_free);
    int ids_ok = st->ids != NULL;
    for (uint64_t g = 0; ids_ok && g < st->n_groups; g++) ids_ok = !!(st->ids[g] = rn_keyids_new((uint32_t)st->n_ids));
    if (!st->frames || !st->id_frame || !st->frame_key || !st->free_frames || !st->dirty || !dir_ok ||
        !st->ablk || !st->caches || !ids_ok || !st->n_free) {
        rn_state_free(st);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the tiered memory state");
    }
    st->info = (rn_statefile_info){ 0, st->can_resume ? st->resume_info.generation : 0, rn_statefile_shape(c),
                                    st->stride, st->n_keys, 0, 0, 0, 0 };
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
    if (st->io->ahead) st->io->ops->ahead_drop(st->io);
    st->pf_l = -1;
    st->io->ops->drain(st->io);
    st->io->ops->clear_error(st->io);
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
    rn_rowdir_clear(&st->dir);
    st->ab_first = 0;
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

/* Full pread/pwrite of n rows from position pos (the store's own I/O:
 * the open append block at a resume); a failure is set in *e unless one
 * is there already. */
static int rows_io(rn_state *st, int wr, uint64_t pos, uint64_t n, char *buf, rn_error *e)
{
    return rn_rowio_pio(st->fd, st->path, wr, RN_STATEFILE_DATA + pos * st->stride, (size_t)(n * st->stride), buf, e);
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
 * fresh row) through the engine.  When it is full, the next block opens. */
static void append_write(rn_state *st)
{
    const uint64_t b = st->ab_first / st->apb, len = st->apb * st->stride;
    prealloc(st, RN_STATEFILE_DATA + (b + 1) * len);
    st->io->ops->write_block(st->io, b, st->ablk, &st->err);
    if (st->dir.n_pos == st->ab_first + st->apb) {
        st->ab_first = st->dir.n_pos;
        memset(st->ablk, 0, len);
    }
}

/* Write frame f's row back: a key without a position gets the next one and
 * its row goes into the append block; a row in the open append block is
 * updated there; any other is rewritten in place by the engine. */
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
    uint32_t p = rn_rowdir_find(&st->dir, key);
    uint64_t pos = p != RN_ROWDIR_NONE ? p : rn_rowdir_add(&st->dir, key, &st->err);
    if (pos >= st->ab_first) {
        memcpy(st->ablk + (pos - st->ab_first) * st->stride, src, st->stride);
        if (st->dir.n_pos == st->ab_first + st->apb) append_write(st);
    } else
        st->io->ops->write(st->io, key, pos, src, &st->err);
    st->dirty[f] = 0;
    st->n_dirty--;
    st->cnt.bytes_written += st->stride;
}

/* Read key's row (at position pos) into buf: from the open append block,
 * else the engine's newest copy (one still queued for writing, else the
 * file's). */
static void read_back(rn_state *st, uint32_t key, uint64_t pos, char *buf)
{
    if (pos >= st->ab_first) memcpy(buf, st->ablk + (pos - st->ab_first) * st->stride, st->stride);
    else st->io->ops->read(st->io, key, pos, buf, &st->err);
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
            uint32_t pos = rn_rowdir_find(&st->dir, key);
            if (pos != RN_ROWDIR_NONE) {
                rn_rowio *io = st->io;
                int s = io->ahead ? io->ops->ahead_find(io, key) : -1;
                if (s >= 0)
                    st->cnt.prefetched += (uint64_t)io->ops->ahead_take(io, s, r, &st->err); /* 0: it read the row itself */
                else
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

/* Read ahead: examine the layer's accesses from max(pf_cur, cur) on, in
 * scan order, and issue a read for each row that is neither in memory nor
 * in the open append block nor queued nor read already but is in the
 * file, while slots are free.  Such
 * a row stays out of memory until its own access (only an access brings a
 * row in), so its bytes in the file cannot change before that access takes
 * them: read ahead changes no hit, miss or byte count, only when the bytes
 * arrive.  Returns the reads issued (an engine may hold them until its
 * next kick). */
static int read_ahead(rn_state *st, uint64_t cur)
{
    if (st->pf_cur < cur) st->pf_cur = cur;
    const int H = st->H, K = st->c.top_k, n = st->pf_n;
    rn_rowio *io = st->io;
    int issued = 0;
    while (st->pf_cur < st->pf_total && !io->ops->ahead_full(io)) {
        uint64_t i = st->pf_cur++;
        int h = (int)(i / ((uint64_t)n * 2 * K));
        uint64_t rem = i % ((uint64_t)n * 2 * K);
        int t = (int)(rem / (2 * (uint64_t)K)), j = (int)(rem % (2 * (uint64_t)K));
        size_t a = ((size_t)t * H + h) * K;
        uint32_t slot = j < K ? st->pf_w[a + j] : st->pf_r[a + j - K];
        uint32_t key = (uint32_t)(((uint64_t)st->pf_l * H + h) * (uint64_t)st->M + slot);
        if (frame_of(st, key) != RN_CACHE_NONE) continue;
        uint32_t pos = rn_rowdir_find(&st->dir, key);
        if (pos == RN_ROWDIR_NONE || pos >= st->ab_first || io->ops->ahead_find(io, key) >= 0 ||
            io->ops->pending(io, key, pos, NULL))
            continue;
        io->ops->ahead_issue(io, key, pos);
        issued++;
    }
    return issued;
}

void rn_state_layer(rn_state *st, int l, const uint32_t *wslot, const uint32_t *rslot, int n)
{
    if (!st->tiered) return;
    rn_rowio *io = st->io;
    if (!io->ahead) {
        io->ops->kick(io); /* the writes queued since the last submission */
        return;
    }
    io->ops->ahead_drop(io); /* the last layer's reads not taken (none, normally) */
    st->pf_l = l;
    st->pf_w = wslot;
    st->pf_r = rslot;
    st->pf_n = n;
    st->pf_cur = 0;
    st->pf_total = (uint64_t)st->H * (uint64_t)n * 2 * (uint64_t)st->c.top_k;
    read_ahead(st, 0);
    io->ops->kick(io); /* the layer's reads and the writes queued: one io_submit */
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
    rn_rowdir_room(&st->dir, st->n_dirty + (uint64_t)n * K, &st->err);
    const int ahead = st->io->ahead && st->pf_l == l && st->pf_n == n && st->pf_w == wslot && st->pf_r == rslot;
    for (int t = 0; t < n; t++) {
        size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * dv + (size_t)h * dv;
        if (ahead && read_ahead(st, ((uint64_t)h * n + t) * 2 * K)) /* keep the slots busy */
            st->io->ops->kick(st->io);
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
    if (h == H - 1) st->io->ops->kick(st->io); /* the layer's write-backs */
}

int rn_state_error(rn_state *st, rn_error *err)
{
    if (st->io && !st->err.code) st->io->ops->error(st->io, &st->err);
    if (st->err.code && err) *err = st->err;
    return st->err.code;
}

int rn_state_flush(rn_state *st, rn_error *err)
{
    if (!st->tiered) return RN_OK;
    rn_rowdir_room(&st->dir, st->n_dirty, &st->err);
    for (uint64_t f = 0; f < st->nf; f++)
        if (st->dirty[f] && frame_of(st, st->frame_key[f]) == f) write_back(st, (uint32_t)f);
    if (st->info.state == RN_STATEFILE_DIRTY && st->dir.n_pos > st->ab_first)
        append_write(st); /* the open block as it is; it stays open */
    st->io->ops->drain(st->io);
    if (st->info.state != RN_STATEFILE_DIRTY || rn_state_error(st, NULL)) return rn_state_error(st, err);
    /* the rows, then the directory after them, on disk before the header
     * says clean */
    const rn_rowdir *d = &st->dir;
    uint64_t doff = RN_STATEFILE_DATA + (d->n_pos + st->apb - 1) / st->apb * st->apb * st->stride;
    doff = (doff + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
    size_t len = rn_rowdir_pos_bytes(d->n_pos);
    memset(d->pos_key + d->n_pos, 0, len - d->n_pos * sizeof *d->pos_key);
    int e = st->err.code ? 0 : rn_rowio_full(st->fd, 1, doff, len, d->pos_key);
    if (e) rn_seterr(&st->err, RN_EIO, "--state-file: %s: writing the row directory: %s", st->path,
                     e > 0 ? strerror(e) : "short write");
    if (!st->err.code && fsync(st->fd))
        rn_seterr(&st->err, RN_EIO, "--state-file: %s: fsync: %s", st->path, strerror(errno));
    if (!st->err.code) {
        st->info.state = RN_STATEFILE_CLEAN;
        st->info.generation++;
        st->info.dir_off = doff;
        st->info.dir_count = d->n_pos;
        st->info.dir_check = rn_statefile_dir_check(d->pos_key, d->n_pos);
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
    rn_rowdir *d = &st->dir;
    rn_rowdir_room(d, ri->dir_count, &st->err);
    if (st->err.code) return rn_state_error(st, err);
    int rc = rn_statefile_read_dir(st->fd, st->path, ri, d->pos_key, err);
    if (rc) return rc;
    rn_rowdir_load(d, ri->dir_count); /* the table of an empty directory, filled */
    st->ab_first = d->n_pos / st->apb * st->apb;
    /* the open append block as the flush wrote it (whole, zeros after its rows) */
    if (d->n_pos > st->ab_first && !rows_io(st, 0, st->ab_first, st->apb, st->ablk, &st->err))
        for (uint64_t p = st->ab_first; p < d->n_pos; p++)
            if (!row_verify(st, d->pos_key[p], p, st->ablk + (p - st->ab_first) * st->stride)) break;
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
    rn_rowio_stats io = { 0 };
    if (st->io) st->io->ops->stats(st->io, &io);
    out->aio = io.batched;
    out->aio_errno = st->aio_errno;
}
