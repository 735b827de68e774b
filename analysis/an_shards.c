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

int an_shards_sampled(uint64_t id, uint32_t T) { return key_hash(id) < T; }

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
static int sampler_init(sampler *s, const an_stream *st, const an_shards_opts *o, double *hist, int64_t H,
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
        s->hash[k] = key_hash(st->id ? st->id[k] : k);
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

int an_shards_mrc(const an_streams *ss, const an_shards_opts *o, int32_t warmup, an_mrc *out, double *rate_out,
                  rn_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(o->rate > 0 && o->rate <= 1)) return rn_seterr(err, RN_EINPUT, "--sample: the rate must be in (0, 1]");
    int64_t n = an_streams_max_keys(ss);
    size_t np = n > 0 ? (size_t)n : 1;
    double *hist = malloc(sizeof *hist * (np + 1)), *miss = calloc(np, sizeof *miss);
    out->capacity = malloc(sizeof *out->capacity * np);
    out->misses = malloc(sizeof *out->misses * np);
    out->miss_ratio = malloc(sizeof *out->miss_ratio * np);
    out->hit_ratio = malloc(sizeof *out->hit_ratio * np);
    int rc = RN_OK;
    if (!hist || !miss || !out->capacity || !out->misses || !out->miss_ratio || !out->hit_ratio)
        rc = rn_seterr(err, RN_ENOMEM, "out of memory for a sampled miss-ratio curve");
    double min_rate = 1, cold = 0;
    for (int i = 0; i < ss->n && !rc; i++) {
        const an_stream *st = &ss->s[i];
        memset(hist, 0, sizeof *hist * (np + 1));
        sampler s;
        if ((rc = sampler_init(&s, st, o, hist, n, err))) break;
        uint64_t counted = 0;
        for (size_t j = 0; j < st->n; j++) {
            int c = !(st->pos && st->pos[j] < warmup);
            counted += c;
            feed(&s, st->key[j], c, st->n_keys);
        }
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
    }
    free(hist);
    free(miss);
    if (rc) an_mrc_free(out);
    return rc;
}

int an_shards_simulate(const an_streams *ss, double rate, const rn_policy *p, uint64_t C, int32_t warmup,
                       an_sim_result *r, rn_error *err)
{
    const uint32_t T = an_shards_threshold(rate);
    const double R = (double)T / AN_SHARDS_P;
    uint64_t Cs = (uint64_t)llround((double)C * R);
    if (Cs < 1) Cs = 1;
    int rc = RN_OK;
    double est = 0;
    for (int i = 0; i < ss->n && !rc; i++) {
        const an_stream *st = &ss->s[i];
        an_stream sub = *st;
        size_t m = 0;
        uint64_t counted = 0;
        uint8_t *take = malloc(st->n_keys ? st->n_keys : 1);
        if (!take) return rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation");
        for (uint32_t k = 0; k < st->n_keys; k++) take[k] = an_shards_sampled(st->id ? st->id[k] : k, T);
        for (size_t j = 0; j < st->n; j++) {
            m += take[st->key[j]];
            counted += !(st->pos && st->pos[j] < warmup);
        }
        sub.n = m;
        sub.key = malloc(sizeof *sub.key * (m ? m : 1));
        sub.pos = st->pos ? malloc(sizeof *sub.pos * (m ? m : 1)) : NULL;
        sub.op = NULL;
        uint32_t *nxt = p->needs_next ? malloc(sizeof *nxt * (m ? m : 1)) : NULL;
        uint32_t *last = p->needs_next ? malloc(sizeof *last * (st->n_keys ? st->n_keys : 1)) : NULL;
        if (!sub.key || (st->pos && !sub.pos) || (p->needs_next && (!nxt || !last)))
            rc = rn_seterr(err, RN_ENOMEM, "out of memory for a mini-simulation");
        for (size_t j = 0, o = 0; j < st->n && !rc; j++)
            if (take[st->key[j]]) {
                sub.key[o] = st->key[j];
                if (sub.pos) sub.pos[o] = st->pos[j];
                o++;
            }
        if (!rc && nxt) an_next_use(&sub, nxt, last);
        an_sim_result sr = { 0 };
        if (!rc) rc = an_simulate(&sub, p, Cs, warmup, nxt, &sr, err);
        if (!rc && sr.accesses) est += (double)sr.misses / (double)sr.accesses * (double)counted;
        r->accesses += counted;
        free(take); free(sub.key); free(sub.pos); free(nxt); free(last);
    }
    if (rc) return rc;
    uint64_t misses = (uint64_t)llround(est);
    r->misses += misses;
    r->hits = r->accesses >= r->misses ? r->accesses - r->misses : 0;
    return RN_OK;
}
