/* test_cache.c — every cache policy against an independent array-based
 * reference (written from each policy's paper) and hand-worked traces;
 * OPT never misses more than any policy; the exact LRU miss-ratio curve
 * equals LRU simulated at each capacity; stack distances against brute
 * force; replay order of streams. */
#include <stdlib.h>
#include <string.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_reuse.h"
#include "an_stream.h"
#include "rn_keyids.h"
#include "rn_rng.h"
#include "th.h"

/* ---- trace generators ------------------------------------------------ */

/* Mixed traces: uniform, skewed, loops and scans, so adaptive policies
 * take every branch. */
static void gen_trace(rn_rng *r, uint32_t *key, size_t n, uint32_t universe, int kind)
{
    size_t i = 0;
    while (i < n) {
        int mode = kind >= 0 ? kind : (int)rn_rng_below(r, 4);
        size_t run = 1 + rn_rng_below(r, 40);
        for (size_t j = 0; j < run && i < n; j++, i++) {
            switch (mode) {
            case 0: key[i] = (uint32_t)rn_rng_below(r, universe); break;
            case 1: { double u = rn_rng_uniform(r); key[i] = (uint32_t)(u * u * u * universe); break; }
            case 2: key[i] = (uint32_t)(j % (1 + universe / 3)); break;
            default: key[i] = (uint32_t)((i * 7) % universe); break;
            }
        }
    }
    /* make keys dense 0..n_keys-1 in first-seen order, as streams are */
    uint32_t *map = malloc(universe * sizeof *map);
    for (uint32_t k = 0; k < universe; k++) map[k] = AN_NONE;
    uint32_t nk = 0;
    for (size_t j = 0; j < n; j++) {
        if (map[key[j]] == AN_NONE) map[key[j]] = nk++;
        key[j] = map[key[j]];
    }
    free(map);
}

/* ---- references: plain arrays, O(C) per access -------------------------- */

typedef struct { uint32_t *a; size_t n; } vec;
static long vfind(const vec *v, uint32_t k) { for (size_t i = 0; i < v->n; i++) if (v->a[i] == k) return (long)i; return -1; }
static void vdel(vec *v, size_t i) { memmove(v->a + i, v->a + i + 1, (v->n - i - 1) * sizeof *v->a); v->n--; }
static void vpush_front(vec *v, uint32_t k) { memmove(v->a + 1, v->a, v->n * sizeof *v->a); v->a[0] = k; v->n++; }
static void vpush_back(vec *v, uint32_t k) { v->a[v->n++] = k; }
static vec vnew(size_t cap) { vec v = { calloc(cap + 2, sizeof(uint32_t)), 0 }; return v; }

/* LRU: index 0 most recent. */
static void ref_lru(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec c = vnew(n);
    for (size_t i = 0; i < n; i++) {
        long j = vfind(&c, key[i]);
        hit[i] = j >= 0;
        if (j >= 0) vdel(&c, (size_t)j);
        else if (c.n == C) c.n--;
        vpush_front(&c, key[i]);
    }
    free(c.a);
}

/* FIFO: index 0 oldest. */
static void ref_fifo(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec c = vnew(n);
    for (size_t i = 0; i < n; i++) {
        hit[i] = vfind(&c, key[i]) >= 0;
        if (hit[i]) continue;
        if (c.n == C) vdel(&c, 0);
        vpush_back(&c, key[i]);
    }
    free(c.a);
}

/* CLOCK as a queue with second chances: the head is under the hand; a
 * referenced head is cleared and sent to the back. */
static void ref_clock(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec c = vnew(n);
    uint8_t *ref = calloc(n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        hit[i] = vfind(&c, key[i]) >= 0;
        if (hit[i]) { ref[key[i]] = 1; continue; }
        if (c.n == C) {
            while (ref[c.a[0]]) { uint32_t v = c.a[0]; ref[v] = 0; vdel(&c, 0); vpush_back(&c, v); }
            vdel(&c, 0);
        }
        ref[key[i]] = 0;
        vpush_back(&c, key[i]);
    }
    free(c.a); free(ref);
}

/* LFU: evict min (count since insertion, last access time). */
static void ref_lfu(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec c = vnew(n);
    uint64_t *f = calloc(n + 1, 8), *t = calloc(n + 1, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t k = key[i];
        hit[i] = vfind(&c, k) >= 0;
        if (!hit[i]) {
            if (c.n == C) {
                size_t b = 0;
                for (size_t j = 1; j < c.n; j++) {
                    uint32_t x = c.a[j], y = c.a[b];
                    if (f[x] < f[y] || (f[x] == f[y] && t[x] < t[y])) b = j;
                }
                vdel(&c, b);
            }
            vpush_back(&c, k);
            f[k] = 0;
        }
        f[k]++;
        t[k] = i;
    }
    free(c.a); free(f); free(t);
}

/* OPT by forward scans: evict the furthest next use (never = furthest);
 * returns misses. */
static uint64_t ref_opt(const uint32_t *key, size_t n, size_t C)
{
    vec c = vnew(n);
    uint64_t miss = 0;
    for (size_t i = 0; i < n; i++) {
        if (vfind(&c, key[i]) >= 0) continue;
        miss++;
        if (c.n < C) { vpush_back(&c, key[i]); continue; }
        size_t best = 0, bestnext = 0;
        for (size_t j = 0; j <= c.n; j++) {
            uint32_t k = j < c.n ? c.a[j] : key[i];
            size_t nx = i + 1;
            while (nx < n && key[nx] != k) nx++;
            if (nx >= bestnext) { bestnext = nx; best = j; }
        }
        if (best < c.n) { c.a[best] = key[i]; }
    }
    free(c.a);
    return miss;
}

/* ARC: Megiddo & Modha Fig. 4 on four arrays (index 0 = LRU end). */
static void ref_arc(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec T1 = vnew(n), T2 = vnew(n), B1 = vnew(n), B2 = vnew(n);
    double p = 0, c = (double)C;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = key[i];
        long j;
        hit[i] = 0;
#define REPLACE(inB2) do { \
        if (T1.n >= 1 && (((inB2) && (double)T1.n == p) || (double)T1.n > p)) { \
            vpush_back(&B1, T1.a[0]); vdel(&T1, 0); \
        } else { vpush_back(&B2, T2.a[0]); vdel(&T2, 0); } } while (0)
        if ((j = vfind(&T1, x)) >= 0) { vdel(&T1, (size_t)j); vpush_back(&T2, x); hit[i] = 1; }
        else if ((j = vfind(&T2, x)) >= 0) { vdel(&T2, (size_t)j); vpush_back(&T2, x); hit[i] = 1; }
        else if ((j = vfind(&B1, x)) >= 0) {
            double d = B1.n >= B2.n ? 1 : (double)B2.n / (double)B1.n;
            p = p + d < c ? p + d : c;
            REPLACE(0);
            vdel(&B1, (size_t)vfind(&B1, x)); vpush_back(&T2, x);
        } else if ((j = vfind(&B2, x)) >= 0) {
            double d = B2.n >= B1.n ? 1 : (double)B1.n / (double)B2.n;
            p = p - d > 0 ? p - d : 0;
            REPLACE(1);
            vdel(&B2, (size_t)vfind(&B2, x)); vpush_back(&T2, x);
        } else {
            if ((double)(T1.n + B1.n) == c) {
                if ((double)T1.n < c) { vdel(&B1, 0); REPLACE(0); }
                else vdel(&T1, 0);
            } else {
                size_t tot = T1.n + T2.n + B1.n + B2.n;
                if ((double)tot >= c) {
                    if ((double)tot == 2 * c) vdel(&B2, 0);
                    REPLACE(0);
                }
            }
            vpush_back(&T1, x);
        }
#undef REPLACE
    }
    free(T1.a); free(T2.a); free(B1.a); free(B2.a);
}

/* S3-FIFO: Yang et al. Algorithm 1 on arrays (index 0 = tail/oldest). */
static void ref_s3fifo(const uint32_t *key, size_t n, size_t C, uint8_t *hit)
{
    vec S = vnew(n), Mq = vnew(n), G = vnew(n);
    uint8_t *f = calloc(n + 1, 1);
    size_t cs = C / 10 ? C / 10 : 1, cm = C - cs, cg = cm ? cm : 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = key[i];
        if (vfind(&S, x) >= 0 || vfind(&Mq, x) >= 0) { hit[i] = 1; if (f[x] < 3) f[x]++; continue; }
        hit[i] = 0;
        while (S.n + Mq.n >= C) {
            int from_s = S.n >= cs || Mq.n == 0;
            if (from_s) {
                int done = 0;
                while (!done && S.n > 0) {
                    uint32_t t = S.a[0];
                    vdel(&S, 0);
                    if (f[t] > 1) {
                        f[t] = 0;
                        vpush_back(&Mq, t);
                        if (Mq.n > cm) goto evict_m;
                    } else {
                        if (G.n >= cg) vdel(&G, 0);
                        vpush_back(&G, t);
                        done = 1;
                    }
                    continue;
                evict_m:
                    while (Mq.n > 0) {
                        uint32_t u = Mq.a[0];
                        vdel(&Mq, 0);
                        if (f[u] > 0) { f[u]--; vpush_back(&Mq, u); } else break;
                    }
                }
            } else {
                while (Mq.n > 0) {
                    uint32_t u = Mq.a[0];
                    vdel(&Mq, 0);
                    if (f[u] > 0) { f[u]--; vpush_back(&Mq, u); } else break;
                }
            }
        }
        f[x] = 0;
        long g = vfind(&G, x);
        if (g >= 0) { vdel(&G, (size_t)g); vpush_back(&Mq, x); }
        else vpush_back(&S, x);
    }
    free(S.a); free(Mq.a); free(G.a); free(f);
}

/* Run a policy over keys recording each access's outcome. */
static void run_policy(const char *name, const uint32_t *key, size_t n, uint64_t C, uint8_t *hit)
{
    const rn_policy *p = rn_policy_find(name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    an_stream s = an_stream_from_keys(key, n, NULL);
    uint32_t *nxt = malloc((n + 1) * 4), *last = malloc((s.n_keys + 1) * 4);
    an_next_use(&s, nxt, last);
    void *c = p->init(C, s.n_keys);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (size_t i = 0; i < n; i++) hit[i] = (uint8_t)p->access(c, key[i], nxt[i], NULL);
    p->free(c);
    free(nxt); free(last);
}

typedef void (*ref_fn)(const uint32_t *, size_t, size_t, uint8_t *);

static void check_against(const char *name, ref_fn ref)
{
    rn_rng r;
    rn_rng_seed(&r, 77);
    const size_t n = 3000;
    uint32_t *key = malloc(n * 4);
    uint8_t *a = malloc(n), *b = malloc(n);
    const uint32_t universes[] = { 5, 17, 60, 200 };
    const uint64_t caps[] = { 1, 2, 3, 4, 7, 10, 16, 31, 64, 150 };
    int bad = 0, trials = 0;
    for (int u = 0; u < 4; u++)
        for (int kind = -1; kind < 4; kind++) {
            gen_trace(&r, key, n, universes[u], kind);
            for (int ci = 0; ci < 10; ci++) {
                ref(key, n, caps[ci], b);
                run_policy(name, key, n, caps[ci], a);
                trials++;
                if (memcmp(a, b, n)) {
                    if (!bad) fprintf(stderr, "\n%s differs: universe %u kind %d C %llu\n", name,
                                      universes[u], kind, (unsigned long long)caps[ci]);
                    bad++;
                }
            }
        }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(trials, 200);
    free(key); free(a); free(b);
}

TH_TEST(test_lru, "LRU equals reference")
{ check_against("lru", ref_lru); }
TH_TEST(test_fifo, "FIFO equals reference")
{ check_against("fifo", ref_fifo); }
TH_TEST(test_clock, "CLOCK equals reference")
{ check_against("clock", ref_clock); }
TH_TEST(test_lfu, "LFU equals reference")
{ check_against("lfu", ref_lfu); }
TH_TEST(test_arc, "ARC equals Megiddo-Modha reference")
{ check_against("arc", ref_arc); }
TH_TEST(test_s3fifo, "S3-FIFO equals Yang et al. reference")
{ check_against("s3fifo", ref_s3fifo); }

/* Hand-worked traces (keys 1..5 as 0..4), capacity 3:
 *   1 2 3 1 4 1 5 2
 * LRU:   M M M H M H M M  (4 evicts 2, 5 evicts 3, 2 evicts 4)
 * FIFO:  M M M H M M M M  (4 evicts 1, 1 evicts 2, 5 evicts 3, 2 evicts 4)
 * CLOCK: M M M H M H M M  (4: 1 second chance, evicts 2; 5 evicts 3)
 * OPT:   M M M H M H M H  (4 evicts 3 (never again), 5 bypasses... 2 kept)
 * LFU:   M M M H M H M M  (4 evicts 2 (count 1, older than 3), 5 evicts 3, 2 evicts 4) */
TH_TEST(test_hand_worked, "hand-worked traces")
{
    const uint32_t key[] = { 0, 1, 2, 0, 3, 0, 4, 1 };
    const char *names[] = { "lru", "fifo", "clock", "opt", "lfu" };
    const char *want[] = { "MMMHMHMM", "MMMHMMMM", "MMMHMHMM", "MMMHMHMH", "MMMHMHMM" };
    for (int p = 0; p < 5; p++) {
        uint8_t hit[8];
        char got[9];
        run_policy(names[p], key, 8, 3, hit);
        for (int i = 0; i < 8; i++) got[i] = hit[i] ? 'H' : 'M';
        got[8] = 0;
        if (strcmp(got, want[p])) fprintf(stderr, "\n%s: got %s want %s\n", names[p], got, want[p]);
        CU_ASSERT_STRING_EQUAL(got, want[p]);
    }
    /* S3-FIFO, capacity 10 (S 1, M 9, G 9): 0..9 fill S; 10 pushes 0 from S
     * to the ghost; 0 comes back from the ghost into M (miss) and then hits;
     * a scan of 20 one-time keys passes through S without touching M, so
     * the last 0 hits (LRU of 10 would miss it). */
    uint32_t k2[64];
    int n = 0;
    for (uint32_t j = 0; j <= 10; j++) k2[n++] = j;
    k2[n++] = 0;
    k2[n++] = 0;
    for (uint32_t j = 11; j <= 30; j++) k2[n++] = j;
    k2[n++] = 0;
    uint8_t hit[64];
    run_policy("s3fifo", k2, (size_t)n, 10, hit);
    int hits = 0;
    for (int i = 0; i < n; i++) hits += hit[i];
    CU_ASSERT_EQUAL(hits, 2);
    CU_ASSERT_EQUAL(hit[12], 1);
    run_policy("lru", k2, (size_t)n, 10, hit);
    CU_ASSERT_EQUAL(hit[n - 1], 0);
    run_policy("s3fifo", k2, (size_t)n, 10, hit);
    CU_ASSERT_EQUAL(hit[n - 1], 1);
}

/* OPT against the forward-scan reference, and never worse than any policy. */
TH_TEST(test_opt, "OPT equals reference and beats every policy")
{
    rn_rng r;
    rn_rng_seed(&r, 5);
    const size_t n = 2000;
    uint32_t *key = malloc(n * 4);
    uint8_t *h = malloc(n);
    int bad_ref = 0, worse = 0;
    for (int t = 0; t < 12; t++) {
        gen_trace(&r, key, n, 10 + 30 * (uint32_t)t, -1);
        for (uint64_t C = 1; C <= 64; C = C * 2 + 1) {
            run_policy("opt", key, n, C, h);
            uint64_t om = 0;
            for (size_t i = 0; i < n; i++) om += !h[i];
            if (om != ref_opt(key, n, C)) bad_ref++;
            for (int p = 0; p < rn_policy_count(); p++) {
                run_policy(rn_policy_at(p)->name, key, n, C, h);
                uint64_t m = 0;
                for (size_t i = 0; i < n; i++) m += !h[i];
                if (m < om) worse++;
            }
        }
    }
    CU_ASSERT_EQUAL(bad_ref, 0);
    CU_ASSERT_EQUAL(worse, 0);
    free(key); free(h);
}

/* Stack distances against counting distinct keys between reuses. */
TH_TEST(test_stack_distance, "stack distance equals brute force")
{
    rn_rng r;
    rn_rng_seed(&r, 9);
    const size_t n = 5000;
    uint32_t *key = malloc(n * 4), *d = malloc(n * 4);
    uint8_t *seen = malloc(1000);
    int bad = 0;
    for (int t = 0; t < 6; t++) {
        gen_trace(&r, key, n, t < 3 ? 8 : 700, -1); /* small universes force compactions */
        an_stream s = an_stream_from_keys(key, n, NULL);
        rn_error err;
        CU_ASSERT_EQUAL(an_stack_distances(&s, d, &err), RN_OK);
        for (size_t i = 0; i < n; i++) {
            long prev = (long)i - 1;
            while (prev >= 0 && key[prev] != key[i]) prev--;
            uint32_t want = AN_COLD;
            if (prev >= 0) {
                memset(seen, 0, 1000);
                uint32_t c = 0;
                for (size_t j = (size_t)prev + 1; j < i; j++) if (!seen[key[j]]) { seen[key[j]] = 1; c++; }
                want = c + 1;
            }
            if (d[i] != want) bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(key); free(d); free(seen);
}

/* Percentiles by their definition (the smallest v with at least q·total
 * selected values <= v), by scanning every candidate value. */
static uint32_t naive_percentile(const uint32_t *v, size_t n, const uint8_t *mask, double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += (!mask || mask[i]) && v[i] != AN_COLD;
    uint32_t best = AN_COLD;
    for (size_t c = 0; c < n; c++) {
        if ((mask && !mask[c]) || v[c] == AN_COLD || (best != AN_COLD && v[c] >= best)) continue;
        uint64_t le = 0;
        for (size_t i = 0; i < n; i++) le += (!mask || mask[i]) && v[i] != AN_COLD && v[i] <= v[c];
        if ((double)le >= q * (double)total - 1e-9) best = v[c];
    }
    return best;
}

/* Both ways an_percentiles computes (a counting array for small values,
 * sorting when the largest value is large against the count, as reuse
 * times are in a trace with positions near 2^31) equal the definition. */
TH_TEST(test_percentiles, "percentiles equal their definition, small and huge values")
{
    rn_rng r;
    rn_rng_seed(&r, 11);
    const size_t n = 600;
    uint32_t *v = malloc(n * 4);
    uint8_t *mask = malloc(n);
    const double q[4] = { 0.01, 0.5, 0.9, 1.0 };
    int bad = 0;
    for (int t = 0; t < 8; t++) {
        uint64_t range = t < 4 ? 50 : (uint64_t)INT32_MAX;
        for (size_t i = 0; i < n; i++) {
            v[i] = rn_rng_below(&r, 10) == 0 ? AN_COLD : (uint32_t)rn_rng_below(&r, range);
            mask[i] = rn_rng_below(&r, 3) != 0;
        }
        if (t == 7) v[0] = INT32_MAX - 1;
        uint32_t got[4];
        rn_error err;
        for (int m = 0; m < 2; m++) {
            CU_ASSERT_EQUAL(an_percentiles(v, n, m ? mask : NULL, q, 4, got, &err), RN_OK);
            for (int j = 0; j < 4; j++) bad += got[j] != naive_percentile(v, n, m ? mask : NULL, q[j]);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    uint32_t cold[3] = { AN_COLD, AN_COLD, AN_COLD }, got[4];
    rn_error err;
    CU_ASSERT_EQUAL(an_percentiles(cold, 3, NULL, q, 4, got, &err), RN_OK);
    CU_ASSERT_EQUAL(got[1], AN_COLD);
    free(v); free(mask);
}

/* The exact MRC equals LRU simulated at every capacity, for a multi-stream
 * scope with warm-up. */
TH_TEST(test_mrc_equals_lru, "MRC equals LRU at every capacity")
{
    rn_rng r;
    rn_rng_seed(&r, 21);
    rn_config cfg;
    rn_config_default(&cfg);
    cfg.n_layers = 2; cfg.n_heads = 2; cfg.d_p = 4; cfg.order = 2; cfg.top_k = 2; /* M = 16 */
    size_t n = 4 * 300 * 4;
    tr_event *ev = calloc(n, sizeof *ev);
    size_t m = 0;
    for (int l = 0; l < 2; l++) for (int h = 0; h < 2; h++) for (int p = 0; p < 300; p++)
        for (int op = 0; op < 2; op++) for (int k = 0; k < 2; k++) {
            tr_event *e = &ev[m++];
            e->layer = (uint16_t)l; e->head = (uint16_t)h; e->pos = p; e->op = (uint8_t)op; e->rank = (uint8_t)k;
            e->slot = (uint32_t)(k ? rn_rng_below(&r, 16) : (uint32_t)(p * 3 + l) % 16);
            if (k == 1 && e->slot == ev[m - 2].slot) e->slot = (e->slot + 1) % 16;
        }
    for (int scope = 0; scope < 3; scope++) {
        an_streams ss;
        rn_error err;
        CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, m, &cfg, scope, RN_OPS_BOTH, &ss, &err), RN_OK);
        an_mrc mrc;
        CU_ASSERT_EQUAL_FATAL(an_mrc_build(&ss, 10, &mrc, &err), RN_OK);
        int bad = 0;
        for (uint64_t C = 1; C <= (uint64_t)mrc.n + 2; C++) {
            an_sim_result res = { 0 };
            for (int i = 0; i < ss.n; i++)
                an_simulate(&ss.s[i], rn_policy_find("lru"), C, 10, NULL, &res, &err);
            if (res.misses != an_mrc_misses_at(&mrc, C) || res.accesses != mrc.accesses) bad++;
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(mrc.accesses, (uint64_t)(m - 4 * 10 * 4));
        an_mrc_free(&mrc);
        an_streams_free(&ss);
    }
    free(ev);
}

/* Streams: replay order (pos, layer, head, op, rank), scopes, ops. */
TH_TEST(test_streams, "streams: replay order, scopes, ops")
{
    rn_config cfg;
    rn_config_default(&cfg);
    cfg.n_layers = 2; cfg.n_heads = 2; cfg.d_p = 4; cfg.order = 1; cfg.top_k = 1;
    /* canonical order: (layer, head, pos, op) */
    tr_event ev[16];
    int m = 0;
    for (int l = 0; l < 2; l++) for (int h = 0; h < 2; h++) for (int p = 0; p < 2; p++)
        for (int op = 0; op < 2; op++) {
            tr_event *e = &ev[m++];
            memset(e, 0, sizeof *e);
            e->layer = (uint16_t)l; e->head = (uint16_t)h; e->pos = p; e->op = (uint8_t)op;
            e->slot = (uint32_t)(l + h + p) % 4;
        }
    an_streams ss;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, 16, &cfg, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, &ss, &err), RN_OK);
    CU_ASSERT_EQUAL(ss.n, 1);
    CU_ASSERT_EQUAL(ss.s[0].n, 16u);
    CU_ASSERT_EQUAL(ss.s[0].universe, 16u);
    /* access 5 of the model stream: pos 0, layer 1, head 0, read */
    uint64_t id = ss.s[0].id[ss.s[0].key[5]];
    CU_ASSERT_EQUAL(an_id_layer(id), 1);
    CU_ASSERT_EQUAL(an_id_head(id), 0);
    CU_ASSERT_EQUAL(an_id_slot(id), 1u);
    CU_ASSERT_EQUAL(ss.s[0].pos[5], 0);
    CU_ASSERT_EQUAL(ss.s[0].pos[8], 1);
    CU_ASSERT_EQUAL(ss.s[0].n_keys, 8u); /* 4 (l,h) x slots {l+h, l+h+1} */
    an_streams_free(&ss);
    /* reversed input gives the same streams */
    tr_event rev[16];
    for (int i = 0; i < 16; i++) rev[i] = ev[15 - i];
    CU_ASSERT_EQUAL_FATAL(an_streams_build(rev, 16, &cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_READ, &ss, &err), RN_OK);
    CU_ASSERT_EQUAL(ss.n, 4);
    CU_ASSERT_EQUAL(ss.s[3].layer, 1);
    CU_ASSERT_EQUAL(ss.s[3].head, 1);
    CU_ASSERT_EQUAL(ss.s[3].n, 2u);
    CU_ASSERT_EQUAL(ss.s[3].universe, 4u);
    CU_ASSERT_EQUAL(an_id_slot(ss.s[3].id[ss.s[3].key[1]]), 3u);
    an_streams_free(&ss);
    ev[3].slot = 9; /* outside M = 4 */
    CU_ASSERT_EQUAL(an_streams_build(ev, 16, &cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_EINPUT);
    ev[3].slot = 1;
    ev[5].op = 32; /* neither a write nor a read (a corrupt trace) */
    CU_ASSERT_EQUAL(an_streams_build(ev, 16, &cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_EINPUT);
}

/* Dense keys: as many as distinct (layer, head, slot), each id kept
 * (enough keys that the id map grows several times). */
TH_TEST(test_stream_keys, "stream keys equal distinct (layer, head, slot)")
{
    rn_config cfg;
    rn_config_default(&cfg);
    cfg.n_layers = 2; cfg.n_heads = 2; cfg.d_p = 64; cfg.order = 2; cfg.top_k = 1; /* M = 4096 */
    rn_rng r;
    rn_rng_seed(&r, 3);
    size_t n = 40000;
    tr_event *ev = calloc(n, sizeof *ev);
    uint8_t *seen = calloc(4 * 4096, 1);
    uint32_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        ev[i].layer = (uint16_t)(i * 2 / n); ev[i].head = (uint16_t)(i * 4 / n % 2);
        ev[i].pos = (int32_t)(i % (n / 4)); ev[i].op = 0;
        ev[i].slot = (uint32_t)rn_rng_below(&r, 4096);
        size_t b = (size_t)(ev[i].layer * 2 + ev[i].head) * 4096 + ev[i].slot;
        if (!seen[b]) { seen[b] = 1; distinct++; }
    }
    an_streams ss;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &cfg, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, &ss, &err), RN_OK);
    CU_ASSERT_EQUAL(ss.s[0].n_keys, distinct);
    int bad = 0;
    for (size_t i = 0; i < ss.s[0].n; i++) {
        uint64_t id = ss.s[0].id[ss.s[0].key[i]];
        size_t b = (size_t)(an_id_layer(id) * 2 + an_id_head(id)) * 4096 + an_id_slot(id);
        bad += !seen[b];
    }
    CU_ASSERT_EQUAL(bad, 0);
    an_streams_free(&ss);
    free(ev); free(seen);
}

TH_TEST(test_policy_names, "policy names")
{
    const rn_policy *p[16];
    int n;
    rn_error err;
    CU_ASSERT_EQUAL(rn_policy_parse_list("lru,opt,lru", p, 16, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(rn_policy_parse_list("all", p, 16, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, 7);
    CU_ASSERT_EQUAL(rn_policy_parse_list("lru,bogus", p, 16, &n, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bogus"));
}

/* The victims a policy names are exactly the keys that leave it: replaying
 * the named victims into a membership set predicts every hit and miss, and
 * the set never exceeds the capacity (the tiered memory state relies on it
 * to free a frame per victim).  Online policies only: OPT may bypass. */
typedef struct {
    uint8_t *in;
    uint64_t size;
    uint32_t k;
    int bad;
} victim_rec;

static void on_victim(void *user, uint32_t key)
{
    victim_rec *r = user;
    if (!r->in[key] || key == r->k) r->bad++;
    r->in[key] = 0;
    r->size--;
}

TH_TEST(test_policy_victims, "policies name their evicted keys exactly")
{
    rn_rng r;
    rn_rng_seed(&r, 19);
    const size_t n = 4000;
    const uint32_t universes[] = { 3, 20, 90, 400 };
    const uint64_t caps[] = { 1, 2, 5, 9, 16, 50, 120, 500 };
    victim_rec vr = { malloc(400), 0, 0, 0 };
    uint64_t evictions = 0;
    for (int p = 0; p < rn_policy_count(); p++) {
        const rn_policy *pol = rn_policy_at(p);
        if (pol->needs_next) continue;
        for (int u = 0; u < 4; u++)
            for (int ci = 0; ci < 8; ci++) {
                void *c = pol->init(caps[ci], universes[u]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(c);
                memset(vr.in, 0, 400);
                vr.size = 0;
                for (size_t i = 0; i < n; i++) {
                    /* skewed keys: half the accesses to a small hot set */
                    uint32_t k = (uint32_t)(rn_rng_u64(&r) % (rn_rng_u64(&r) % 2 ? universes[u]
                                                                 : (universes[u] + 3) / 4));
                    rn_victims v = { on_victim, &vr, NULL };
                    vr.k = k;
                    uint64_t before = vr.size;
                    int h = pol->access(c, k, RN_CACHE_NONE, &v);
                    evictions += before - vr.size;
                    if (h != vr.in[k]) vr.bad++;
                    if (!h) { vr.in[k] = 1; vr.size++; }
                    if (vr.size > caps[ci]) vr.bad++;
                }
                pol->free(c);
            }
    }
    CU_ASSERT_EQUAL(vr.bad, 0);
    CU_ASSERT(evictions > 0);
    free(vr.in);
}

/* ---- compact ids (rn_keyids) ----------------------------------------- */

/* One run's decisions: per access a marker (hit or miss) then its victims,
 * as keys of the caller's universe. */
typedef struct {
    uint32_t *log;
    size_t n, cap;
    rn_keyids *ids;  /* NULL: dense keys */
    int overflow;
} decision_log;

#define LOG_HIT 0xFFFFFFFEu
#define LOG_MISS 0xFFFFFFFDu

static void log_put(decision_log *d, uint32_t x)
{
    if (d->n < d->cap) d->log[d->n++] = x;
    else d->overflow = 1;
}

static void log_victim(void *user, uint32_t k)
{
    decision_log *d = user;
    log_put(d, d->ids ? rn_keyids_key(d->ids, k) : k);
}

static void log_forget(void *user, uint32_t k)
{
    decision_log *d = user;
    if (d->ids) rn_keyids_release(d->ids, k);
}

/* Every online policy over a universe of 10^6 keys makes the same
 * decisions through a key-to-id map with rn_policy_ids ids as over the
 * dense keys (the independent reference), a key always finds an id, and
 * the ids held never exceed what the policy declares it remembers. */
TH_TEST(test_keyids_same_decisions, "policies over compact ids decide as over the whole key universe")
{
    const uint32_t universe = 1000000;
    const size_t n = 30000;
    const uint64_t caps[] = { 1, 3, 100 };
    uint32_t *key = malloc(n * sizeof *key);
    decision_log dense = { malloc(3 * n * sizeof(uint32_t)), 0, 3 * n, NULL, 0 };
    decision_log ids = { malloc(3 * n * sizeof(uint32_t)), 0, 3 * n, NULL, 0 };
    CU_ASSERT_PTR_NOT_NULL_FATAL(key);
    rn_rng r;
    rn_rng_seed(&r, 23);
    int policies = 0;
    uint64_t forgotten = 0;
    for (int p = 0; p < rn_policy_count(); p++) {
        const rn_policy *pol = rn_policy_at(p);
        if (pol->needs_next) continue;
        CU_ASSERT_PTR_NOT_NULL_FATAL(pol->remembers);
        policies++;
        for (int ci = 0; ci < 3; ci++) {
            const uint64_t cap = caps[ci];
            /* fresh keys from the whole universe, and repeats at distances
             * up to 4·cap + 4 (inside and just past the ghost lists) */
            for (size_t i = 0; i < n; i++) {
                uint64_t back = 1 + rn_rng_below(&r, 4 * cap + 4);
                key[i] = i >= back && rn_rng_below(&r, 10) < 6 ? key[i - back]
                                                                 : (uint32_t)rn_rng_below(&r, universe);
            }
            const uint64_t n_ids = rn_policy_ids(pol, cap, universe);
            CU_ASSERT_EQUAL(n_ids, pol->remembers(cap) + 1);
            void *cd = pol->init(cap, universe), *ci_ = pol->init(cap, (uint32_t)n_ids);
            ids.ids = rn_keyids_new((uint32_t)n_ids);
            CU_ASSERT_PTR_NOT_NULL_FATAL(cd);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ci_);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ids.ids);
            dense.n = ids.n = 0;
            rn_victims vd = { log_victim, &dense, log_forget }, vi = { log_victim, &ids, log_forget };
            int out_of_ids = 0, over = 0;
            for (size_t i = 0; i < n; i++) {
                log_put(&dense, pol->access(cd, key[i], RN_CACHE_NONE, &vd) ? LOG_HIT : LOG_MISS);
                uint32_t id = rn_keyids_get(ids.ids, key[i]);
                if (id == UINT32_MAX) { out_of_ids++; break; }
                log_put(&ids, pol->access(ci_, id, RN_CACHE_NONE, &vi) ? LOG_HIT : LOG_MISS);
                over += rn_keyids_used(ids.ids) > pol->remembers(cap);
            }
            CU_ASSERT_EQUAL(out_of_ids, 0);
            CU_ASSERT_EQUAL(over, 0);
            CU_ASSERT_FALSE(dense.overflow || ids.overflow);
            CU_ASSERT_EQUAL(dense.n, ids.n);
            size_t diff = 0;
            for (size_t i = 0; i < dense.n && i < ids.n; i++) diff += dense.log[i] != ids.log[i];
            CU_ASSERT_EQUAL(diff, 0);
            /* the stream did fill the ids and reuse them many times over */
            CU_ASSERT(rn_keyids_peak(ids.ids) >= cap);
            forgotten += n - rn_keyids_used(ids.ids);
            rn_keyids_free(ids.ids);
            ids.ids = NULL;
            pol->free(cd);
            pol->free(ci_);
        }
    }
    CU_ASSERT_EQUAL(policies, 6);
    CU_ASSERT(forgotten > 0);
    /* the id counts by hand: capped by the universe; OPT keeps it whole */
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("lru"), 50, 20), 20);
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("lru"), 50, 1000), 51);
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("arc"), 50, 1000), 101);
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("s3fifo"), 100, 1000), 191); /* 100 + |M| = 90, + 1 */
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("s3fifo"), 1, 1000), 3);     /* S = 1, ghost 1, + 1 */
    CU_ASSERT_EQUAL(rn_policy_ids(rn_policy_find("opt"), 5, 1000), 1000);
    free(key); free(dense.log); free(ids.log);
}

/* The map itself against a direct array over a small universe: ids are
 * unique among the held keys, stable while held, taken back on release,
 * and the table survives heavy churn (backward-shift deletion). */
TH_TEST(test_keyids_map, "key-to-id map against a direct array")
{
    const uint32_t universe = 5000, n_ids = 37;
    rn_keyids *m = rn_keyids_new(n_ids);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    uint32_t *ref = malloc(universe * sizeof *ref);   /* key -> id or UINT32_MAX */
    uint32_t held[37], n_held = 0;                    /* held keys */
    for (uint32_t k = 0; k < universe; k++) ref[k] = UINT32_MAX;
    rn_rng r;
    rn_rng_seed(&r, 5);
    int bad = 0;
    for (int step = 0; step < 200000; step++) {
        if (n_held && (n_held == n_ids || rn_rng_below(&r, 2))) {
            uint32_t j = (uint32_t)rn_rng_below(&r, n_held), k = held[j];
            if (rn_keyids_key(m, ref[k]) != k) bad++;
            rn_keyids_release(m, ref[k]);
            ref[k] = UINT32_MAX;
            held[j] = held[--n_held];
        } else {
            /* small key range so keys collide in the table */
            uint32_t k = (uint32_t)rn_rng_below(&r, step % 3 ? 200 : universe);
            uint32_t id = rn_keyids_get(m, k);
            if (id >= n_ids) { bad++; continue; }
            if (ref[k] != UINT32_MAX) { bad += id != ref[k]; continue; }
            for (uint32_t j = 0; j < n_held; j++) bad += ref[held[j]] == id;
            ref[k] = id;
            held[n_held++] = k;
        }
        bad += rn_keyids_used(m) != n_held;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* all ids held: one more key gets none */
    rn_keyids_clear(m);
    for (uint32_t k = 0; k < n_ids; k++) CU_ASSERT_EQUAL(rn_keyids_get(m, 1000 + k), k);
    CU_ASSERT_EQUAL(rn_keyids_get(m, 7), UINT32_MAX);
    CU_ASSERT_EQUAL(rn_keyids_get(m, 1003), 3);
    CU_ASSERT_EQUAL(rn_keyids_peak(m), n_ids);
    rn_keyids_free(m);
    free(ref);
}
