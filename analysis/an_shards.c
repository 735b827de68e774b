/* an_shards.c — sampled miss-ratio curves and mini-simulations
 * (an_shards.h).
 *
 * Stack distances among the sampled accesses come from a Fenwick tree over
 * sampled time: each tracked key marks the time of its last access, and
 * the distance of an access is one plus the marks after its key's previous
 * one.  Dropping a key (fixed size) clears its mark, so the distances that
 * follow count only the keys still sampled.  The tree spans four times the
 * keys that can be tracked at once; when time reaches its end the marks are
 * renumbered 1..m in order (a compaction), so its memory is bounded by the
 * tracked keys, not by the accesses.  The weights of a fixed-size run are
 * kept against a global factor, so lowering the rate costs O(1), not a
 * pass over the histogram.
 */
#include "an_shards.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: a key identity to a well-mixed 64-bit value. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint32_t key_hash(uint64_t id) { return (uint32_t)(mix64(id) & (AN_SHARDS_P - 1)); }

int an_shards_sampled(uint32_t k, uint32_t T) { return key_hash(k) < T; }

uint32_t an_shards_threshold(double rate)
{
    double t = rate * AN_SHARDS_P + 0.5;
    return t < 1 ? 1 : t > AN_SHARDS_P ? AN_SHARDS_P : (uint32_t)t;
}

int an_shards_parse(const char *s, an_shards_opts *o, rn_error *err)
{
    memset(o, 0, sizeof *o);
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : NAN;
    if (!s || end == s || errno || !isfinite(v) || v <= 0)
        return rn_seterr(err, RN_EINPUT, "--sample: '%s': expected a rate in (0, 1] (0.01, 1%%) or a size (8192keys)",
                         s ? s : "");
    if (!strcmp(end, "%")) v /= 100, end++;
    if (!*end) {
        if (v > 1) return rn_seterr(err, RN_EINPUT, "--sample: '%s': a rate must be at most 1 (100%%)", s);
        if (v * AN_SHARDS_P < 0.5)
            return rn_seterr(err, RN_EINPUT, "--sample: '%s': below the smallest rate, 1/%u", s, AN_SHARDS_P);
        o->rate = v;
        return RN_OK;
    }
    if ((!strcmp(end, "keys") || !strcmp(end, "k")) && v == floor(v) && v >= 16 && v <= 1e12) {
        o->rate = 1;
        o->max_keys = (uint64_t)v;
        return RN_OK;
    }
    return rn_seterr(err, RN_EINPUT, "--sample: '%s': expected a rate in (0, 1] (0.01, 1%%) or a size of at least 16 keys (8192keys)",
                     s);
}

/* ---- one stream's sampled stack distances ---- */

typedef struct {
    uint32_t *hash;     /* [n_keys] key_hash of each key's identity */
    uint32_t *last;     /* [n_keys] 1 + sampled time of its last access; 0 = not tracked */
    int32_t *bit;       /* Fenwick tree over sampled time [1..cap] */
    uint64_t cap, t;    /* its size; the current time (compactions renumber it) */
    uint64_t tracked;   /* keys with a mark */
    uint64_t *order;    /* [cap] compaction scratch: (time << 32 | key) of each mark */
    uint32_t *heap;     /* fixed size: tracked keys, a max-heap by hash */
    uint64_t n_heap, max_keys;
    uint32_t T;         /* threshold: keys with hash < T are sampled */
    double *hist;       /* [H + 1] weight per scaled distance 1..H, [0]: beyond H; times g */
    int64_t H;
    double cold;        /* weight of first accesses, times g */
    double g;           /* the weights' factor: the rate now over the rate they were counted at */
} sampler;

static void bit_add(sampler *s, uint64_t i, int32_t v)
{
    for (; i <= s->cap; i += i & (~i + 1)) s->bit[i] += v;
}

static int64_t bit_sum(const sampler *s, uint64_t i)
{
    int64_t r = 0;
    for (; i; i -= i & (~i + 1)) r += s->bit[i];
    return r;
}

static void heap_swap(uint32_t *h, uint64_t a, uint64_t b) { uint32_t t = h[a]; h[a] = h[b]; h[b] = t; }

static void heap_push(sampler *s, uint32_t key)
{
    uint64_t i = s->n_heap++;
    s->heap[i] = key;
    while (i && s->hash[s->heap[(i - 1) / 2]] < s->hash[s->heap[i]]) {
        heap_swap(s->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static uint32_t heap_pop(sampler *s)
{
    uint32_t top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    for (uint64_t i = 0;;) {
        uint64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n_heap && s->hash[s->heap[l]] > s->hash[s->heap[m]]) m = l;
        if (r < s->n_heap && s->hash[s->heap[r]] > s->hash[s->heap[m]]) m = r;
        if (m == i) break;
        heap_swap(s->heap, i, m);
        i = m;
    }
    return top;
}

/* Fixed size: drop the keys of largest hash until max_keys remain; the
 * threshold falls to the largest hash dropped and the weights so far are
 * scaled to the new rate. */
static void shrink(sampler *s)
{
    uint32_t T = s->T;
    while (s->n_heap > s->max_keys || (s->n_heap && s->hash[s->heap[0]] >= T)) {
        uint32_t k = heap_pop(s);
        if (s->hash[k] < T) T = s->hash[k];
        if (s->last[k]) bit_add(s, s->last[k], -1), s->tracked--;
        s->last[k] = 0;
    }
    if (T == s->T) return;
    s->g *= (double)T / s->T;
    s->T = T;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Renumber the marks 1..m in time order and rebuild the tree over them. */
static void compact(sampler *s, uint32_t n_keys)
{
    uint64_t m = 0;
    for (uint32_t k = 0; k < n_keys; k++)
        if (s->last[k]) s->order[m++] = (uint64_t)s->last[k] << 32 | k;
    qsort(s->order, m, sizeof *s->order, cmp_u64);
    memset(s->bit, 0, sizeof *s->bit * (s->cap + 1));
    for (uint64_t i = 1; i <= m; i++) s->last[(uint32_t)s->order[i - 1]] = (uint32_t)i;
    /* a tree of ones over 1..m, built in one pass over the whole tree
     * (every node passes its sum to its parent, also above m) */
    for (uint64_t i = 1; i <= s->cap; i++) {
        s->bit[i] += i <= m;
        uint64_t up = i + (i & (~i + 1));
        if (up <= s->cap) s->bit[up] += s->bit[i];
    }
    s->t = m;
}

/* Feed access of key k (counted or not) of a stream of n_keys keys. */
static void feed(sampler *s, uint32_t k, int counted, uint32_t n_keys)
{
    if (s->hash[k] >= s->T) return;
    if (s->t == s->cap) compact(s, n_keys);
    uint64_t t = ++s->t;
    double rate = (double)s->T / AN_SHARDS_P;
    if (s->last[k]) {
        int64_t d = bit_sum(s, t - 1) - bit_sum(s, s->last[k]) + 1; /* distinct keys since, itself included */
        bit_add(s, s->last[k], -1);
        if (counted) {
            double scaled = ceil((double)d / rate);
            s->hist[scaled > (double)s->H ? 0 : (int64_t)scaled] += 1 / s->g;
        }
    } else {
        if (counted) s->cold += 1 / s->g;
        s->tracked++;
        if (s->max_keys) heap_push(s, k);
    }
    s->last[k] = (uint32_t)t;
    bit_add(s, t, 1);
    if (s->max_keys && s->n_heap > s->max_keys) shrink(s);
}

static void sampler_free(sampler *s)
{
    free(s->hash); free(s->last); free(s->bit); free(s->heap); free(s->order);
}

/* Set up s for stream st (hist of H+1 buckets is the caller's). */
static int sampler_init(sampler *s, const an_spill_stream *st, const an_shards_opts *o, double *hist, int64_t H,
                        rn_error *err)
{
    memset(s, 0, sizeof *s);
    s->T = an_shards_threshold(o->rate);
    s->max_keys = o->max_keys;
    s->hist = hist, s->H = H, s->g = 1;
    uint32_t nk = st->n_keys ? st->n_keys : 1;
    s->hash = malloc(sizeof *s->hash * nk);
    s->last = calloc(nk, sizeof *s->last);
    if (o->max_keys) s->heap = malloc(sizeof *s->heap * (nk + 1));
    if (!s->hash || !s->last || (o->max_keys && !s->heap)) goto oom;
    /* the tree: four times the keys that can be marked at once (those
     * under the threshold, at most max_keys + 1), and at least 1024 */
    uint64_t can = 0;
    for (uint32_t k = 0; k < st->n_keys; k++) {
        s->hash[k] = key_hash(k);
        can += s->hash[k] < s->T;
    }
    if (o->max_keys && can > o->max_keys + 1) can = o->max_keys + 1;
    s->cap = 4 * can < 1024 ? 1024 : 4 * can;
    s->bit = calloc(s->cap + 1, sizeof *s->bit);
    s->order = malloc(sizeof *s->order * s->cap);
    if (!s->bit || !s->order) goto oom;
    return RN_OK;
oom:
    sampler_free(s);
    return rn_seterr(err, RN_ENOMEM, "out of memory for a sampled miss-ratio curve");
}

int an_shards_mrc(const an_spill *sp, const an_shards_opts *o, an_mrc *out, double *rate_out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(o->rate > 0 && o->rate <= 1)) return rn_seterr(err, RN_EINPUT, "--sample: the rate must be in (0, 1]");
    int64_t n = an_spill_max_keys(sp);
    size_t chunk = an_spill_chunk_for(sp, an_spill_chunk);
    uint32_t *key = malloc(sizeof *key * chunk);
    size_t np = n > 0 ? (size_t)n : 1;
    double *hist = malloc(sizeof *hist * (np + 1)), *miss = calloc(np, sizeof *miss);
    out->capacity = malloc(sizeof *out->capacity * np);
    out->misses = malloc(sizeof *out->misses * np);
    out->miss_ratio = malloc(sizeof *out->miss_ratio * np);
    out->hit_ratio = malloc(sizeof *out->hit_ratio * np);
    int rc = RN_OK;
    if (!key || !hist || !miss || !out->capacity || !out->misses || !out->miss_ratio || !out->hit_ratio)
        rc = rn_seterr(err, RN_ENOMEM, "out of memory for a sampled miss-ratio curve");
    double min_rate = 1, cold = 0;
    for (int i = 0; i < sp->n && !rc; i++) {
        const an_spill_stream *st = &sp->s[i];
        memset(hist, 0, sizeof *hist * (np + 1));
        sampler s;
        if ((rc = sampler_init(&s, st, o, hist, n, err))) break;
        for (uint64_t i0 = 0; i0 < st->n && !rc; i0 += chunk) {
            size_t m = st->n - i0 < chunk ? (size_t)(st->n - i0) : chunk;
            if ((rc = an_spill_read(sp, i, i0, m, key, NULL, err))) break;
            for (size_t j = 0; j < m; j++) feed(&s, key[j], i0 + j >= st->n_warm, st->n_keys);
        }
        if (rc) { sampler_free(&s); break; }
        uint64_t counted = st->n - st->n_warm;
        double rate = (double)s.T / AN_SHARDS_P;
        if (rate < min_rate) min_rate = rate;
        /* the stream's estimated misses at each C, in full-stream units:
         * sampled misses over the rate (SHARDS_adj: the expected sampled
         * accesses are counted·rate, whatever was drawn) */
        double above = hist[0] + s.cold, g = s.g;
        for (int64_t C = n; C >= 1; C--) {
            miss[C - 1] += above * g / rate;
            above += hist[C];
        }
        cold += s.cold * g / rate;
        out->accesses += counted;
        sampler_free(&s);
    }
    if (!rc) {
        for (int64_t C = 1; C <= n; C++) {
            double m = miss[C - 1] > (double)out->accesses ? (double)out->accesses : miss[C - 1];
            out->capacity[C - 1] = (uint64_t)C;
            out->misses[C - 1] = (uint64_t)llround(m);
            out->miss_ratio[C - 1] = out->accesses ? m / (double)out->accesses : 0.0;
            out->hit_ratio[C - 1] = out->accesses ? 1.0 - out->miss_ratio[C - 1] : 0.0;
        }
        out->n = n;
        out->cold = (uint64_t)llround(cold > (double)out->accesses ? (double)out->accesses : cold);
        *rate_out = min_rate;
        out->sample_rate = min_rate;
    }
    free(key);
    free(hist);
    free(miss);
    if (rc) an_mrc_free(out);
    return rc;
}

/* The sampled accesses of every stream of sp at threshold T, as resident
 * streams (keys kept; pos 0 for the warm prefix, 1 after, so warm-up 1
 * splits them as the spill did), with the counted accesses of the whole
 * streams in *counted. */
static int sample_streams(const an_spill *sp, uint32_t T, an_streams *sub, uint64_t *counted, rn_error *err)
{
    memset(sub, 0, sizeof *sub);
    *counted = 0;
    sub->scope = sp->scope;
    sub->n = sp->n;
    sub->s = calloc((size_t)(sp->n ? sp->n : 1), sizeof *sub->s);
    size_t chunk = an_spill_chunk_for(sp, an_spill_chunk);
    uint32_t *key = malloc(sizeof *key * chunk);
    if (!sub->s || !key) {
        free(key);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation");
    }
    int rc = RN_OK;
    for (int i = 0; i < sp->n && !rc; i++) {
        const an_spill_stream *st = &sp->s[i];
        an_stream *o = &sub->s[i];
        o->layer = st->layer, o->head = st->head, o->n_keys = st->n_keys, o->universe = st->universe;
        *counted += st->n - st->n_warm;
        size_t cap = 1024, n = 0;
        o->key = malloc(sizeof *o->key * cap);
        o->pos = malloc(sizeof *o->pos * cap);
        if (!o->key || !o->pos) rc = rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation");
        for (uint64_t i0 = 0; i0 < st->n && !rc; i0 += chunk) {
            size_t m = st->n - i0 < chunk ? (size_t)(st->n - i0) : chunk;
            if ((rc = an_spill_read(sp, i, i0, m, key, NULL, err))) break;
            for (size_t j = 0; j < m && !rc; j++) {
                if (key_hash(key[j]) >= T) continue;
                if (n == cap) {
                    uint32_t *k2 = realloc(o->key, sizeof *k2 * cap * 2);
                    if (k2) o->key = k2;
                    int32_t *p2 = k2 ? realloc(o->pos, sizeof *p2 * cap * 2) : NULL;
                    if (p2) o->pos = p2;
                    if (!k2 || !p2) { rc = rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation"); break; }
                    cap *= 2;
                }
                o->key[n] = key[j];
                o->pos[n] = i0 + j >= st->n_warm;
                n++;
            }
        }
        o->n = n;
    }
    free(key);
    if (rc) an_streams_free(sub);
    return rc;
}

int an_shards_grid(const an_spill *sp, double rate, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                   uint64_t slot_bytes, an_progress_fn progress, void *user, an_simgrid *g, rn_error *err)
{
    if (!(rate > 0 && rate <= 1)) return rn_seterr(err, RN_EINPUT, "--sample: the rate must be in (0, 1]");
    const uint32_t T = an_shards_threshold(rate);
    const double R = (double)T / AN_SHARDS_P;
    an_streams sub;
    uint64_t counted;
    int rc = sample_streams(sp, T, &sub, &counted, err);
    if (rc) return rc;
    uint64_t *scaled = malloc(sizeof *scaled * (size_t)(nc ? nc : 1));
    if (!scaled) {
        an_streams_free(&sub);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation");
    }
    for (int c = 0; c < nc; c++) {
        double v = (double)caps[c] * R;
        scaled[c] = v < 1.5 ? 1 : (uint64_t)llround(v);
    }
    rc = an_simgrid_run(&sub, pol, np, scaled, nc, 1, slot_bytes, progress, user, g, err);
    if (!rc) {
        /* back to the whole streams: the capacities asked for, every counted
         * access, the sample's miss ratio applied to them */
        for (int c = 0; c < nc; c++) g->capacity[c] = caps[c];
        for (int i = 0; i < np * nc; i++) {
            an_sim_result *r = &g->result[i];
            double mr = r->accesses ? (double)r->misses / (double)r->accesses : 0.0;
            r->accesses = counted;
            r->misses = (uint64_t)llround(mr * (double)counted);
            r->hits = counted - r->misses;
        }
    }
    free(scaled);
    an_streams_free(&sub);
    return rc;
}
