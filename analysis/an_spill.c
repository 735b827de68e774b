/* an_spill.c — scope streams streamed from a trace run into temporary key
 * and next-use files (an_spill.h). */
#include "an_spill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an_replay.h"

size_t an_spill_chunk = (size_t)1 << 20; /* accesses per read or write */
uint64_t an_spill_direct_max = 1u << 23;

/* The chunk in use: an_spill_chunk, at least 1. */
static size_t chunk_len(void) { return an_spill_chunk ? an_spill_chunk : 1; }

/* An unlinked temporary file in $TMPDIR (default /tmp). */
static int temp_fd(rn_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/ramtrace-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return -rn_seterr(err, RN_EIO, "%s: cannot create a temporary file: %s", path, strerror(errno));
    unlink(path);
    return fd;
}

static int write_at(int fd, const void *buf, size_t len, uint64_t off, rn_error *err)
{
    const char *p = buf;
    while (len) {
        ssize_t w = pwrite(fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return rn_seterr(err, RN_EIO, "writing a temporary file: %s", w < 0 ? strerror(errno) : "short write");
        p += w; len -= (size_t)w; off += (uint64_t)w;
    }
    return RN_OK;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off, rn_error *err)
{
    char *p = buf;
    while (len) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return rn_seterr(err, RN_EIO, "reading a temporary file: %s", r < 0 ? strerror(errno) : "short read");
        p += r; len -= (size_t)r; off += (uint64_t)r;
    }
    return RN_OK;
}

void an_spill_free(an_spill *sp)
{
    if (!sp) return;
    if (sp->fd_key >= 0) close(sp->fd_key);
    if (sp->fd_next >= 0) close(sp->fd_next);
    free(sp->s);
    free(sp->next);
    memset(sp, 0, sizeof *sp);
    sp->fd_key = sp->fd_next = -1;
}

int an_spill_build(const an_run *r, int layer, int head, int scope, int ops, int32_t warmup,
                   volatile const int *stop, an_spill *out, rn_error *err)
{
    return an_spill_build_order(r, layer, head, scope, ops, warmup, NULL, 0, stop, out, err);
}

int an_spill_build_order(const an_run *r, int layer, int head, int scope, int ops, int32_t warmup,
                         const tr_chunk *chunks, int n_chunks, volatile const int *stop, an_spill *out,
                         rn_error *err)
{
    return an_spill_build_runs(r, 1, layer, head, scope, ops, warmup, &chunks, &n_chunks, stop, out, err);
}

int an_spill_build_runs(const an_run *r, int nr, int layer, int head, int scope, int ops, int32_t warmup,
                        const tr_chunk *const *chunks, const int *n_chunks, volatile const int *stop,
                        an_spill *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    if (nr > 1 && warmup > 0)
        return rn_seterr(err, RN_EINPUT, "--warmup: applies to one run only (several runs are one stream)");
    out->scope = scope;
    out->fd_key = out->fd_next = -1;
    const rn_config *cfg = &r->run.cfg;
    int L = cfg->n_layers, H = cfg->n_heads;
    int64_t M = r->M;
    if (M <= 0) return rn_seterr(err, RN_EINPUT, "trace config has no valid slot count");
    int l0 = layer >= 0 ? layer : 0, l1 = layer >= 0 ? layer + 1 : L;
    int h0 = head >= 0 ? head : 0, h1 = head >= 0 ? head + 1 : H;
    /* groups: one per head, per layer, or one */
    int G = (int)rn_scope_caches(scope, l1 - l0, h1 - h0);
    out->s = calloc((size_t)G, sizeof *out->s);
    const size_t chunk = chunk_len();
    uint32_t *buf = malloc(chunk * sizeof *buf);
    an_idmap map = { 0 };
    an_replay *rp = NULL;
    /* Small models (L·H·M <= an_spill_direct_max) number keys through a table over
     * every (layer, head, slot), stamped with the group that numbered
     * them, instead of the hash map: the same first-access numbering. */
    uint64_t all = (uint64_t)L * (uint64_t)H * (uint64_t)M;
    uint32_t *dkey = NULL, *dstamp = NULL;
    if (all <= an_spill_direct_max) {
        dkey = malloc(all * sizeof *dkey);
        dstamp = calloc(all, sizeof *dstamp);
    }
    int rc = RN_OK;
    if (!out->s || !buf || (all <= an_spill_direct_max && (!dkey || !dstamp))) {
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < nr && !rc; i++) rc = tr_check_block_heads(r[i].db, r[i].run.run_id, err);
    if (rc) goto done;
    int fd = temp_fd(err);
    if (fd < 0) { rc = -fd; goto done; }
    out->fd_key = fd;
    uint64_t off = 0;
    uint32_t stamp = 0;
    for (int g = 0; g < G && !rc; g++) {
        int gl0 = l0, gl1 = l1, gh0 = h0, gh1 = h1;
        if (scope == RN_CACHE_SCOPE_HEAD) { gl0 = l0 + g / (h1 - h0); gl1 = gl0 + 1; gh0 = h0 + g % (h1 - h0); gh1 = gh0 + 1; }
        else if (scope == RN_CACHE_SCOPE_LAYER) { gl0 = l0 + g; gl1 = gl0 + 1; }
        an_spill_stream *s = &out->s[out->n];
        s->layer = scope == RN_CACHE_SCOPE_MODEL ? -1 : gl0;
        s->head = scope == RN_CACHE_SCOPE_HEAD ? gh0 : -1;
        s->off = off;
        s->universe = (uint64_t)nr * rn_scope_universe(scope, L, H, M);
        uint32_t nk = 0;
        size_t nb = 0;
        /* the group's stream: run after run, each run's keys its own */
        for (int ri = 0; ri < nr && !rc; ri++) {
            if ((rc = an_replay_open(r[ri].db, r[ri].run.run_id, gl0, gl1, gh0, gh1, ops, &rp, err))) break;
            an_replay_set_chunks(rp, chunks ? chunks[ri] : NULL, n_chunks ? n_chunks[ri] : 0);
            an_idmap_clear(&map);
            stamp++;
            tr_event e;
            while ((rc = an_replay_next(rp, &e, err)) == 1) {
                uint32_t key;
                if (dkey) {
                    size_t u = ((size_t)e.layer * (size_t)H + e.head) * (size_t)M + e.slot;
                    if (dstamp[u] != stamp) { dstamp[u] = stamp; dkey[u] = nk++; }
                    key = dkey[u];
                } else {
                    int isnew;
                    if (an_idmap_get(&map, an_pack_id(e.layer, e.head, e.slot), nk, &key, &isnew)) {
                        rc = rn_seterr(err, RN_ENOMEM, "out of memory numbering the keys of a stream");
                        break;
                    }
                    nk += (uint32_t)isnew;
                }
                if (an_replay_unit(rp) < warmup) s->n_warm++; /* e.pos without chunks */
                buf[nb++] = key;
                if (++s->n >= (uint64_t)UINT32_MAX - 1) {
                    rc = rn_seterr(err, RN_EINPUT, "too many events in one stream (at most 2^32-2)");
                    break;
                }
                if (nb == chunk) {
                    if ((rc = write_at(fd, buf, nb * sizeof *buf, (off + s->n - nb) * sizeof *buf, err))) break;
                    nb = 0;
                    if (stop && *stop) { rc = rn_seterr(err, RN_EINTR, "interrupted"); break; }
                }
            }
            an_replay_close(rp);
            rp = NULL;
        }
        if (!rc && nb) rc = write_at(fd, buf, nb * sizeof *buf, (off + s->n - nb) * sizeof *buf, err);
        if (rc) break;
        s->n_keys = nk;
        off += s->n;
        if (s->n) out->n++;
    }
done:
    free(buf);
    free(dkey); free(dstamp);
    an_idmap_free(&map);
    if (rc) an_spill_free(out);
    return rc;
}

int an_spill_resident(const an_streams *ss, int32_t warmup, an_spill *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd_key = out->fd_next = -1;
    out->scope = ss->scope;
    out->mem = ss;
    out->s = calloc(ss->n > 0 ? (size_t)ss->n : 1, sizeof *out->s);
    if (!out->s) return rn_seterr(err, RN_ENOMEM, "out of memory");
    uint64_t off = 0;
    for (int i = 0; i < ss->n; i++) {
        const an_stream *s = &ss->s[i];
        size_t n_warm;
        int rc = an_stream_warm(s, warmup, &n_warm, err);
        if (rc) { an_spill_free(out); return rc; }
        out->s[i] = (an_spill_stream){ s->layer, s->head, off, s->n, n_warm, s->n_keys, s->universe };
        off += s->n;
    }
    out->n = ss->n;
    return RN_OK;
}

int an_spill_next_use(an_spill *sp, rn_error *err)
{
    if (sp->fd_next >= 0 || sp->next) return RN_OK;
    if (sp->mem) {
        uint64_t total = an_spill_total(sp);
        if (!(sp->next = malloc((total ? total : 1) * sizeof *sp->next)))
            return rn_seterr(err, RN_ENOMEM, "out of memory for next uses");
    } else {
        int fd = temp_fd(err);
        if (fd < 0) return -fd;
        sp->fd_next = fd;
    }
    const size_t chunk = an_spill_chunk_for(sp, chunk_len());
    uint32_t *key = malloc(chunk * sizeof *key), *nxt = malloc(chunk * sizeof *nxt);
    uint32_t *last = malloc(((size_t)an_spill_max_keys(sp) + 1) * sizeof *last);
    int rc = RN_OK;
    if (!key || !nxt || !last) rc = rn_seterr(err, RN_ENOMEM, "out of memory for next uses");
    for (int si = 0; si < sp->n && !rc; si++) {
        const an_spill_stream *s = &sp->s[si];
        for (uint32_t k = 0; k < s->n_keys; k++) last[k] = AN_NONE;
        /* backward, chunk by chunk from the end: last[] carries each key's
         * next use (a stream index) across the chunks */
        for (uint64_t hi = s->n; hi > 0 && !rc;) {
            uint64_t lo = hi > chunk ? hi - chunk : 0;
            size_t m = (size_t)(hi - lo);
            if ((rc = an_spill_read(sp, si, lo, m, key, NULL, err))) break;
            for (size_t j = m; j-- > 0;) {
                nxt[j] = last[key[j]];
                last[key[j]] = (uint32_t)(lo + j);
            }
            if (sp->mem) memcpy(sp->next + s->off + lo, nxt, m * sizeof *nxt);
            else rc = write_at(sp->fd_next, nxt, m * sizeof *nxt, (s->off + lo) * sizeof *nxt, err);
            hi = lo;
        }
    }
    free(key); free(nxt); free(last);
    return rc;
}

int an_spill_read(const an_spill *sp, int si, uint64_t i0, size_t n, uint32_t *key, uint32_t *nxt,
                  rn_error *err)
{
    const an_spill_stream *s = &sp->s[si];
    if (i0 + n > s->n) return rn_seterr(err, RN_EINTERNAL, "reading past a stream's end");
    if (sp->mem) { /* resident: the stream's arrays */
        if (nxt && !sp->next) return rn_seterr(err, RN_EINTERNAL, "next uses not computed");
        memcpy(key, sp->mem->s[si].key + i0, n * sizeof *key);
        if (nxt) memcpy(nxt, sp->next + s->off + i0, n * sizeof *nxt);
        return RN_OK;
    }
    int rc = read_at(sp->fd_key, key, n * sizeof *key, (s->off + i0) * sizeof *key, err);
    if (!rc && nxt) {
        if (sp->fd_next < 0) return rn_seterr(err, RN_EINTERNAL, "next uses not computed");
        rc = read_at(sp->fd_next, nxt, n * sizeof *nxt, (s->off + i0) * sizeof *nxt, err);
    }
    return rc;
}

uint64_t an_spill_total(const an_spill *sp)
{
    uint64_t t = 0;
    for (int i = 0; i < sp->n; i++) t += sp->s[i].n;
    return t;
}

size_t an_spill_chunk_for(const an_spill *sp, size_t cap)
{
    uint64_t longest = 0;
    for (int i = 0; i < sp->n; i++) if (sp->s[i].n > longest) longest = sp->s[i].n;
    return longest < cap ? (longest ? (size_t)longest : 1) : (cap ? cap : 1);
}

uint32_t an_spill_max_keys(const an_spill *sp)
{
    uint32_t m = 0;
    for (int i = 0; i < sp->n; i++) if (sp->s[i].n_keys > m) m = sp->s[i].n_keys;
    return m;
}
