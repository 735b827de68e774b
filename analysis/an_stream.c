/* an_stream.c — events to replay-ordered, scope-split, densely keyed
 * streams (see an_stream.h). */
#include "an_stream.h"

#include <stdlib.h>
#include <string.h>

/* Canonical order: (layer, head, pos, op, rank). */
static int cmp_canonical(const void *a, const void *b)
{
    const tr_event *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int is_canonical(const tr_event *ev, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_canonical(&ev[i - 1], &ev[i]) > 0) return 0;
    return 1;
}

static inline size_t id_hash(uint64_t x, size_t mask)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x & mask;
}

static int idmap_grow(an_idmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nt = calloc(ncap, sizeof *nt);
    uint32_t *nv = malloc(ncap * sizeof *nv);
    if (!nt || !nv) { free(nt); free(nv); return RN_ENOMEM; }
    for (size_t i = 0; i < m->cap; i++)
        if (m->tab[i]) {
            size_t h = id_hash(m->tab[i] - 1, ncap - 1);
            while (nt[h]) h = (h + 1) & (ncap - 1);
            nt[h] = m->tab[i];
            nv[h] = m->val[i];
        }
    free(m->tab); free(m->val);
    m->tab = nt; m->val = nv; m->cap = ncap;
    return RN_OK;
}

int an_idmap_get(an_idmap *m, uint64_t id, uint32_t next, uint32_t *out, int *isnew)
{
    if (2 * (m->used + 1) > m->cap && idmap_grow(m)) return RN_ENOMEM;
    size_t mask = m->cap - 1, h = id_hash(id, mask);
    while (m->tab[h]) {
        if (m->tab[h] == id + 1) { *out = m->val[h]; *isnew = 0; return RN_OK; }
        h = (h + 1) & mask;
    }
    m->tab[h] = id + 1;
    m->val[h] = next;
    m->used++;
    *out = next;
    *isnew = 1;
    return RN_OK;
}

void an_idmap_clear(an_idmap *m)
{
    if (m->cap) memset(m->tab, 0, m->cap * sizeof *m->tab);
    m->used = 0;
}

void an_idmap_free(an_idmap *m)
{
    free(m->tab); free(m->val);
    memset(m, 0, sizeof *m);
}

void an_streams_free(an_streams *ss)
{
    if (!ss || !ss->s) return;
    for (int i = 0; i < ss->n; i++) {
        free(ss->s[i].key); free(ss->s[i].pos); free(ss->s[i].op); free(ss->s[i].id);
    }
    free(ss->s);
    ss->s = NULL;
    ss->n = 0;
}

/* Order event indices by their event's pos, ties by index (stable). */
static int cmp_index_by_pos(const void *x, const void *y, void *ctx)
{
    const tr_event *ev = ctx;
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    if (ev[i].pos != ev[j].pos) return ev[i].pos < ev[j].pos ? -1 : 1;
    return i < j ? -1 : i > j;
}

int an_streams_build(const tr_event *ev_in, size_t n, const rn_config *cfg, int scope, int ops,
                     an_streams *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    out->scope = scope;
    int64_t M = rn_config_slots(cfg);
    int L = cfg->n_layers, H = cfg->n_heads;
    if (M <= 0) return rn_seterr(err, RN_EINPUT, "trace config has no valid slot count");
    if (n >= (size_t)UINT32_MAX)
        return rn_seterr(err, RN_EINPUT, "too many events in one run (%zu, at most 2^32-2)", n);

    const tr_event *ev = ev_in;
    tr_event *sorted = NULL;
    if (!is_canonical(ev_in, n)) {
        sorted = malloc((n ? n : 1) * sizeof *sorted);
        if (!sorted) return rn_seterr(err, RN_ENOMEM, "out of memory sorting %zu events", n);
        memcpy(sorted, ev_in, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, cmp_canonical);
        ev = sorted;
    }

    int G = (int)rn_scope_caches(scope, L, H);
    int32_t maxpos = 0;
    size_t nsel = 0;
    for (size_t i = 0; i < n; i++) {
        const tr_event *e = &ev[i];
        if (e->layer >= L || e->head >= H || (int64_t)e->slot >= M || e->pos < 0 || e->op > 1) {
            /* the message is built before sorted (which may hold e) is freed */
            int rc = rn_seterr(err, RN_EINPUT,
                               "event (layer %d, head %d, pos %d, op %d, slot %u) outside the run's config",
                               e->layer, e->head, e->pos, e->op, e->slot);
            free(sorted);
            return rc;
        }
        if (!rn_ops_has(ops, e->op)) continue;
        nsel++;
        if (e->pos > maxpos) maxpos = e->pos;
    }

    /* Stable sort of the selected events by pos, then by group: canonical
     * input makes the result (group, pos, layer, head, op, rank).  By pos:
     * a counting sort when positions are dense enough, else a comparison
     * sort, so memory stays O(events) whatever positions a trace claims. */
    int dense = (uint64_t)maxpos <= 4 * (uint64_t)nsel + 4096;
    size_t nb = dense ? (size_t)maxpos + 2 : 0;
    size_t *cnt = calloc(nb > (size_t)G + 1 ? nb : (size_t)G + 1, sizeof *cnt);
    uint32_t *a = malloc((nsel ? nsel : 1) * sizeof *a), *b = malloc((nsel ? nsel : 1) * sizeof *b);
    size_t *gcount = calloc((size_t)G + 1, sizeof *gcount);
    an_idmap map = { 0 };
    int rc = RN_OK;
    if (!cnt || !a || !b || !gcount) { rc = RN_ENOMEM; goto done; }
    if (dense) {
        for (size_t i = 0; i < n; i++)
            if (rn_ops_has(ops, ev[i].op)) cnt[ev[i].pos + 1]++;
        for (size_t p = 1; p < nb; p++) cnt[p] += cnt[p - 1];
        for (size_t i = 0; i < n; i++)
            if (rn_ops_has(ops, ev[i].op)) a[cnt[ev[i].pos]++] = (uint32_t)i;
    } else {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (rn_ops_has(ops, ev[i].op)) a[k++] = (uint32_t)i;
        qsort_r(a, nsel, sizeof *a, cmp_index_by_pos, (void *)ev);
    }
#define GROUP(e) (scope == RN_CACHE_SCOPE_HEAD ? (e)->layer * H + (e)->head : \
                  scope == RN_CACHE_SCOPE_LAYER ? (e)->layer : 0)
    for (size_t j = 0; j < nsel; j++) gcount[GROUP(&ev[a[j]]) + 1]++;
    int ng = 0;
    for (int g = 0; g < G; g++) if (gcount[g + 1]) ng++;
    for (int g = 1; g <= G; g++) gcount[g] += gcount[g - 1];
    {
        size_t *start = cnt; /* reuse as group cursors */
        for (int g = 0; g < G; g++) start[g] = gcount[g];
        for (size_t j = 0; j < nsel; j++) b[start[GROUP(&ev[a[j]])]++] = a[j];
    }

    out->s = calloc(ng ? (size_t)ng : 1, sizeof *out->s);
    if (!out->s) { rc = RN_ENOMEM; goto done; }
    for (int g = 0, k = 0; g < G; g++) {
        size_t lo = gcount[g], hi = gcount[g + 1];
        if (lo == hi) continue;
        an_stream *s = &out->s[k++];
        out->n = k;
        s->layer = scope == RN_CACHE_SCOPE_MODEL ? -1 : scope == RN_CACHE_SCOPE_LAYER ? g : g / H;
        s->head = scope == RN_CACHE_SCOPE_HEAD ? g % H : -1;
        s->n = hi - lo;
        s->universe = rn_scope_universe(scope, L, H, M);
        s->key = malloc(s->n * sizeof *s->key);
        s->pos = malloc(s->n * sizeof *s->pos);
        s->op = malloc(s->n);
        size_t idcap = 1024;
        s->id = malloc(idcap * sizeof *s->id);
        if (!s->key || !s->pos || !s->op || !s->id) { rc = RN_ENOMEM; goto done; }
        an_idmap_clear(&map);
        uint32_t nk = 0;
        for (size_t j = lo; j < hi; j++) {
            const tr_event *e = &ev[b[j]];
            uint64_t id = an_pack_id(e->layer, e->head, e->slot);
            uint32_t key;
            int isnew;
            if (an_idmap_get(&map, id, nk, &key, &isnew)) { rc = RN_ENOMEM; goto done; }
            if (isnew) {
                if (nk == idcap) {
                    uint64_t *t = realloc(s->id, 2 * idcap * sizeof *t);
                    if (!t) { rc = RN_ENOMEM; goto done; }
                    s->id = t;
                    idcap *= 2;
                }
                s->id[nk++] = id;
            }
            s->key[j - lo] = key;
            s->pos[j - lo] = e->pos;
            s->op[j - lo] = e->op;
        }
        s->n_keys = nk;
    }
#undef GROUP
done:
    free(cnt); free(a); free(b); free(gcount); free(sorted);
    an_idmap_free(&map);
    if (rc) {
        an_streams_free(out);
        return rn_seterr(err, rc, "out of memory building access streams of %zu events", n);
    }
    return RN_OK;
}

size_t an_streams_total(const an_streams *ss)
{
    size_t t = 0;
    for (int i = 0; i < ss->n; i++) t += ss->s[i].n;
    return t;
}

uint32_t an_streams_max_keys(const an_streams *ss)
{
    uint32_t m = 0;
    for (int i = 0; i < ss->n; i++) if (ss->s[i].n_keys > m) m = ss->s[i].n_keys;
    return m;
}

int an_stream_warm(const an_stream *s, int32_t warmup, size_t *n_warm, rn_error *err)
{
    size_t w = 0;
    if (s->pos && warmup > 0) {
        while (w < s->n && s->pos[w] < warmup) w++;
        for (size_t i = w; i < s->n; i++)
            if (s->pos[i] < warmup)
                return rn_seterr(err, RN_EINPUT, "stream not in replay order: position %d after %d", s->pos[i],
                                 s->pos[w]);
    }
    *n_warm = w;
    return RN_OK;
}

void an_next_use(const an_stream *s, uint32_t *nxt, uint32_t *last)
{
    for (uint32_t k = 0; k < s->n_keys; k++) last[k] = AN_NONE;
    for (size_t i = s->n; i-- > 0;) {
        nxt[i] = last[s->key[i]];
        last[s->key[i]] = (uint32_t)i;
    }
}

an_stream an_stream_from_keys(const uint32_t *key, size_t n, const int32_t *pos)
{
    an_stream s;
    memset(&s, 0, sizeof s);
    s.layer = s.head = -1;
    s.n = n;
    s.key = (uint32_t *)key;
    s.pos = (int32_t *)pos;
    uint32_t mx = 0;
    for (size_t i = 0; i < n; i++) if (key[i] + 1 > mx) mx = key[i] + 1;
    s.n_keys = mx;
    s.universe = mx;
    return s;
}
