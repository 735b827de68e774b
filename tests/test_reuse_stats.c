/* test_reuse_stats.c — reuse times, stack distances, their log2 histograms
 * and `stats`' percentiles and slot shift on hand-made event streams,
 * each against a brute-force count written here: the previous access to
 * the same slot found by scanning back, the distinct slots in between
 * counted one by one, percentiles read off a sorted copy, the shift mode
 * counted over every pair of consecutive positions (ties in count to the
 * smaller |shift|, then the negative one, through the loaded and the
 * streamed computation); percentiles at exact ties (q·n an integer). */
#include <stdlib.h>
#include <string.h>

#include "an_load.h"
#include "an_reuse.h"
#include "an_stats.h"
#include "an_stream.h"
#include "rn_rng.h"
#include "th.h"
#include "tr_writer.h"

enum { MS = 64, KK = 2, NPOS = 300 };

static void cfg_one_head(rn_config *c, int cape)
{
    rn_config_default(c);
    c->n_layers = 1;
    c->n_heads = 1;
    c->d_p = 8;
    c->order = 2; /* M = 64 */
    c->top_k = KK;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = cape ? 1 : 0;
}

/* Events of one head in replay order: per position KK writes then KK reads,
 * slots from slot_of(pos, op, rank). */
static size_t make_events(tr_event *ev, uint32_t (*slot_of)(int, int, int))
{
    size_t n = 0;
    for (int p = 0; p < NPOS; p++)
        for (int op = 0; op < 2; op++)
            for (int r = 0; r < KK; r++) {
                tr_event *e = &ev[n++];
                memset(e, 0, sizeof *e);
                e->pos = p;
                e->op = (uint8_t)op;
                e->rank = (uint16_t)r;
                e->slot = e->addr = slot_of(p, op, r);
                e->weight = 0.5f;
            }
    return n;
}

static rn_rng g_rng;
static uint32_t g_slots[NPOS][2][KK];
static uint32_t random_slot(int p, int op, int r) { return g_slots[p][op][r]; }

/* Skewed random slots (some reuse at every distance), fixed by seed. */
static void fill_random(uint64_t seed)
{
    rn_rng_seed(&g_rng, seed);
    for (int p = 0; p < NPOS; p++)
        for (int op = 0; op < 2; op++)
            for (int r = 0; r < KK; r++) {
                double u = rn_rng_uniform(&g_rng);
                g_slots[p][op][r] = (uint32_t)(u * u * u * MS);
            }
}

/* Brute force: reuse time and stack distance of access i, AN_COLD if first. */
static void brute(const tr_event *ev, size_t i, uint32_t *reuse, uint32_t *sd)
{
    size_t j = i;
    while (j-- > 0)
        if (ev[j].slot == ev[i].slot) break;
    if (j == (size_t)-1) { *reuse = *sd = AN_COLD; return; }
    *reuse = (uint32_t)(ev[i].pos - ev[j].pos);
    uint8_t seen[MS] = {0};
    uint32_t d = 0;
    for (size_t x = j + 1; x < i; x++)
        if (!seen[ev[x].slot]) { seen[ev[x].slot] = 1; d++; }
    *sd = d + 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* smallest v with at least q·n of the sorted values <= v */
static uint32_t brute_pct(const uint32_t *sorted, size_t n, double q)
{
    size_t need = (size_t)(q * (double)n + 0.999999);
    if (need < 1) need = 1;
    return sorted[need - 1];
}

static int brute_bin(uint32_t v)
{
    int b = 0;
    while (b < 33 && !(v >= (b ? 1ull << (b - 1) : 0) && v <= (b ? (1ull << b) - 1 : 0))) b++;
    return b;
}

TH_TEST(test_reuse_brute, "reuse times, stack distances, histograms and stats percentiles vs brute force")
{
    static tr_event ev[NPOS * 2 * KK];
    fill_random(21);
    size_t n = make_events(ev, random_slot);
    rn_config c;
    cfg_one_head(&c, 0);
    an_streams ss;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &c, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(ss.n, 1);
    CU_ASSERT_EQUAL_FATAL(ss.s[0].n, n);
    uint32_t *reuse = malloc(n * sizeof *reuse), *sd = malloc(n * sizeof *sd);
    CU_ASSERT_EQUAL_FATAL(an_reuse_times(&ss.s[0], reuse, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_stack_distances(&ss.s[0], sd, &err), RN_OK);
    uint32_t *br = malloc(n * sizeof *br), *bs = malloc(n * sizeof *bs);
    int bad = 0;
    size_t warm = 0, nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        brute(ev, i, &br[i], &bs[i]);
        bad += reuse[i] != br[i];
        bad += sd[i] != bs[i];
        if (br[i] != AN_COLD) { warm++; nonzero += br[i] > 0; }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(warm > n / 2 && nonzero > warm / 4); /* the stream exercises both */
    /* histograms: log2 bins counted directly */
    an_hist h[2];
    CU_ASSERT_EQUAL_FATAL(an_reuse_hists(&ss, h, &err), RN_OK);
    uint64_t cnt[2][33] = {{0}}, cold = 0;
    for (size_t i = 0; i < n; i++) {
        if (br[i] == AN_COLD) { cold++; continue; }
        cnt[0][brute_bin(br[i])]++;
        cnt[1][brute_bin(bs[i])]++;
    }
    for (int m = 0; m < 2; m++) {
        CU_ASSERT_EQUAL(h[m].cold, cold);
        CU_ASSERT_EQUAL(h[m].total, warm);
        for (int b = 0; b < 33; b++) bad += h[m].count[b] != cnt[m][b];
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* stats: p50 / p90 of the non-cold values */
    an_head_stats st;
    CU_ASSERT_EQUAL_FATAL(an_stats_head(&ss.s[0], MS, 0, 16, &st, &err), RN_OK);
    uint32_t *sr = malloc(warm * sizeof *sr), *sdist = malloc(warm * sizeof *sdist);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (br[i] != AN_COLD) { sr[w] = br[i]; sdist[w] = bs[i]; w++; }
    qsort(sr, warm, sizeof *sr, cmp_u32);
    qsort(sdist, warm, sizeof *sdist, cmp_u32);
    CU_ASSERT_EQUAL(st.reuse_p50, brute_pct(sr, warm, 0.5));
    CU_ASSERT_EQUAL(st.reuse_p90, brute_pct(sr, warm, 0.9));
    CU_ASSERT_EQUAL(st.sd_p50, brute_pct(sdist, warm, 0.5));
    CU_ASSERT_EQUAL(st.sd_p90, brute_pct(sdist, warm, 0.9));
    CU_ASSERT(st.reuse_p90 > st.reuse_p50 || st.sd_p90 > st.sd_p50); /* not degenerate */
    free(reuse); free(sd); free(br); free(bs); free(sr); free(sdist);
    an_streams_free(&ss);
}

/* A CAPE head whose address is fixed: slot(t) = (a − t) mod M. */
static uint32_t cape_fixed(int p, int op, int r)
{
    int a = op ? 40 + r : 3 + r; /* wraps past 0 within the run */
    return (uint32_t)(((a - p) % MS + MS) % MS);
}
static uint32_t plain_fixed(int p, int op, int r) { (void)p; return (uint32_t)(op ? 40 + r : 3 + r); }

/* Brute force of the shift mode: every pair (same op and rank, positions
 * t and t+1), the difference taken into (−M/2, M/2]. */
static void brute_shift(const tr_event *ev, size_t n, int64_t *mode, double *share)
{
    static int64_t cnt[MS];
    memset(cnt, 0, sizeof cnt);
    uint64_t pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n && ev[j].pos <= ev[i].pos + 1; j++)
            if (ev[j].pos == ev[i].pos + 1 && ev[j].op == ev[i].op && ev[j].rank == ev[i].rank) {
                int64_t d = (int64_t)ev[j].slot - (int64_t)ev[i].slot;
                while (d <= -MS / 2) d += MS;
                while (d > MS / 2) d -= MS;
                cnt[d + MS / 2 - 1]++; /* d in (−M/2, M/2]: index 0..M−1 */
                pairs++;
            }
    /* the most pairs; among equals the smaller |d|, then the negative d */
    int best = -1;
    for (int b = 0; b < MS; b++) {
        int64_t d = b - MS / 2 + 1, m = best - MS / 2 + 1;
        if (cnt[b] && (best < 0 || cnt[b] > cnt[best] ||
                       (cnt[b] == cnt[best] && (llabs(d) < llabs(m) || (llabs(d) == llabs(m) && d < m)))))
            best = b;
    }
    *mode = best < 0 ? 0 : best - MS / 2 + 1;
    *share = pairs ? (double)cnt[best] / (double)pairs : 0;
}

TH_TEST(test_stats_shift, "stats: a CAPE head with a fixed address shifts by -1 (wrapped), a plain one by 0")
{
    static tr_event ev[NPOS * 2 * KK];
    for (int cape = 1; cape >= 0; cape--) {
        size_t n = make_events(ev, cape ? cape_fixed : plain_fixed);
        rn_config c;
        cfg_one_head(&c, cape);
        an_streams ss;
        rn_error err = {0};
        CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &c, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
        an_head_stats st;
        CU_ASSERT_EQUAL_FATAL(an_stats_head(&ss.s[0], MS, cape, 16, &st, &err), RN_OK);
        int64_t mode;
        double share;
        brute_shift(ev, n, &mode, &share);
        CU_ASSERT_EQUAL(mode, cape ? -1 : 0);
        CU_ASSERT_EQUAL(share, 1.0);
        CU_ASSERT_EQUAL(st.delta, mode);
        CU_ASSERT_DOUBLE_EQUAL(st.delta_share, share, 1e-12);
        an_streams_free(&ss);
    }
    /* random slots: the mode and its share as counted by brute force */
    fill_random(22);
    size_t n = make_events(ev, random_slot);
    rn_config c;
    cfg_one_head(&c, 0);
    an_streams ss;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &c, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
    an_head_stats st;
    CU_ASSERT_EQUAL_FATAL(an_stats_head(&ss.s[0], MS, 0, 16, &st, &err), RN_OK);
    int64_t mode;
    double share;
    brute_shift(ev, n, &mode, &share);
    CU_ASSERT_EQUAL(st.delta, mode);
    CU_ASSERT_DOUBLE_EQUAL(st.delta_share, share, 1e-12);
    an_streams_free(&ss);
}

/* Shift ties: one head per layer, top-1, 11 positions; the write slots move
 * by the shifts below, the read slots by the same ones from another start,
 * so every shift is counted twice and the two named ones tie. */
enum { TIE_HEADS = 5, TIE_SHIFTS = 10 };
static const int tie_shift[TIE_HEADS][TIE_SHIFTS] = {
    { 3, 3, 3, 3, 3, -1, -1, -1, -1, -1 },   /* the larger |shift| reaches the tie first */
    { -1, -1, -1, -1, -1, 3, 3, 3, 3, 3 },   /* the smaller first */
    { 2, 2, 2, 2, 2, -2, -2, -2, -2, -2 },   /* +s first, then -s */
    { -2, -2, -2, -2, -2, 2, 2, 2, 2, 2 },   /* -s first */
    { 5, 5, 5, -7, -7, -7, 1, 1, 32, 32 },   /* 5 and -7 tie above 1 and 32 (M/2) */
};
/* the rule by hand: smaller |shift|, then the negative one */
static const int64_t tie_mode[TIE_HEADS] = { -1, -1, -2, -2, 5 };
static const double tie_share[TIE_HEADS] = { 0.5, 0.5, 0.5, 0.5, 0.3 };

static uint32_t tie_slot(int h, int p, int op)
{
    int64_t s = op ? 20 : 7;
    for (int i = 0; i < p; i++) s += tie_shift[h][i];
    return (uint32_t)(((s % MS) + MS) % MS);
}

TH_TEST(test_stats_shift_ties, "stats: shifts tied in count go to the smaller |shift|, then the negative, loaded and streamed")
{
    /* the trace: layer h is tie pattern h */
    rn_config c;
    cfg_one_head(&c, 0);
    c.n_layers = TIE_HEADS;
    c.top_k = 1;
    char db[4096];
    snprintf(db, sizeof db, "%s", th_path("ties.db"));
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.name = "ties";
    meta.command = "trace";
    meta.cfg = &c;
    tr_writer *w;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(tr_writer_open(db, &meta, &sel, NULL, &w, &err), RN_OK);
    const rn_probe *pr = tr_writer_probe(w);
    for (int p = 0; p <= TIE_SHIFTS; p++) {
        tr_writer_add_token(w, p, 65, NULL, 0);
        for (int h = 0; h < TIE_HEADS; h++)
            for (int op = 0; op < 2; op++) {
                uint32_t slot = tie_slot(h, p, op);
                float wt = 1.0f;
                pr->access(pr->user, h, 0, p, op, 1, &slot, &slot, &wt);
            }
    }
    CU_ASSERT_EQUAL_FATAL(tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err), RN_OK);

    an_run r;
    CU_ASSERT_EQUAL_FATAL(an_run_open(db, 0, &r, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(r.M, MS);
    /* streamed, and (no model streams above 0 slots) each head loaded */
    an_head_stats *hs[2];
    int nh[2];
    uint64_t total;
    CU_ASSERT_EQUAL_FATAL(an_stats_run(&r, -1, -1, 16, NULL, &hs[0], &nh[0], &total, &err), RN_OK);
    size_t keep = an_stats_stream_max_slots;
    an_stats_stream_max_slots = 0;
    int rc = an_stats_run(&r, -1, -1, 16, NULL, &hs[1], &nh[1], &total, &err);
    an_stats_stream_max_slots = keep;
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    CU_ASSERT_EQUAL_FATAL(nh[0], TIE_HEADS);
    CU_ASSERT_EQUAL_FATAL(nh[1], TIE_HEADS);
    for (int h = 0; h < TIE_HEADS; h++) {
        /* the loaded path on its own, and the brute-force count */
        tr_event *ev;
        size_t n;
        CU_ASSERT_EQUAL_FATAL(an_run_load(&r, h, 0, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(n, 2 * (TIE_SHIFTS + 1));
        an_streams ss;
        CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &r.run.cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
        an_head_stats st;
        CU_ASSERT_EQUAL_FATAL(an_stats_head(&ss.s[0], MS, 0, 16, &st, &err), RN_OK);
        int64_t mode;
        double share;
        brute_shift(ev, n, &mode, &share);
        CU_ASSERT_EQUAL(mode, tie_mode[h]);
        CU_ASSERT_DOUBLE_EQUAL(share, tie_share[h], 1e-12);
        const int64_t got[3] = { st.delta, hs[0][h].delta, hs[1][h].delta };
        const double gs[3] = { st.delta_share, hs[0][h].delta_share, hs[1][h].delta_share };
        for (int k = 0; k < 3; k++) {
            if (got[k] != tie_mode[h]) fprintf(stderr, "\nhead %d, path %d: shift %lld, want %lld", h, k,
                                               (long long)got[k], (long long)tie_mode[h]);
            CU_ASSERT_EQUAL(got[k], tie_mode[h]);
            CU_ASSERT_DOUBLE_EQUAL(gs[k], tie_share[h], 1e-12);
        }
        an_streams_free(&ss);
        free(ev);
    }
    free(hs[0]);
    free(hs[1]);
    an_run_close(&r);
}

TH_TEST(test_percentile_ties, "percentiles: the smallest v with at least q of the values <= v")
{
    /* 1 2 3 4 (and a cold one): p50 is 2 (2 of 4 values <= 2), p90 is 4 */
    uint32_t v[5] = { 4, AN_COLD, 2, 1, 3 };
    const double q[3] = { 0.5, 0.9, 0.25 };
    uint32_t out[3];
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(an_percentiles(v, 5, NULL, q, 3, out, &err), RN_OK);
    uint32_t sorted[4] = { 1, 2, 3, 4 };
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(out[j], brute_pct(sorted, 4, q[j]));
    CU_ASSERT_EQUAL(out[0], 2);
    CU_ASSERT_EQUAL(out[1], 4);
    CU_ASSERT_EQUAL(out[2], 1);
}
