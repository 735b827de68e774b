/* test_shards.c — sampled miss-ratio curves (analysis/an_shards.c): at
 * rate 1 the sampled curve and the mini-simulations equal the exact ones
 * (an_mrc_build, an_simulate) for every policy; at rate 0.1, and with a
 * fixed size, the sampled LRU curve stays close to the exact one on a
 * stream with skewed reuse; the --sample parser. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_cache.h"
#include "an_simrun.h"
#include "an_spill.h"
#include "an_mrc.h"
#include "an_shards.h"
#include "rn_rng.h"
#include "th.h"

/* A stream of n accesses over nk keys: a key is reused from a recent
 * window most of the time (skewed reuse, like a model's hot slots) and
 * drawn at random otherwise. */
static void make_streams(an_streams *ss, an_stream *s, size_t n, uint32_t nk, uint64_t seed)
{
    rn_rng r;
    rn_rng_seed(&r, seed);
    memset(s, 0, sizeof *s);
    s->layer = s->head = -1;
    s->n = n;
    s->key = malloc(sizeof *s->key * n);
    s->pos = malloc(sizeof *s->pos * n);
    s->id = malloc(sizeof *s->id * nk);
    uint32_t *first = malloc(sizeof *first * nk), *raw = malloc(sizeof *raw * n);
    for (size_t j = 0; j < n; j++) {
        uint32_t k;
        if (j > 64 && rn_rng_uniform(&r) < 0.7) {
            size_t back = 1 + (size_t)(pow(rn_rng_uniform(&r), 3) * (j < 5000 ? j - 1 : 4999));
            k = raw[j - back];
        } else
            k = (uint32_t)rn_rng_below(&r, nk);
        raw[j] = k;
    }
    /* dense keys in order of first access, as an_streams_build numbers them */
    for (uint32_t k = 0; k < nk; k++) first[k] = UINT32_MAX;
    uint32_t next = 0;
    for (size_t j = 0; j < n; j++) {
        if (first[raw[j]] == UINT32_MAX) { first[raw[j]] = next; s->id[next] = an_pack_id(0, 0, raw[j]); next++; }
        s->key[j] = first[raw[j]];
        s->pos[j] = (int32_t)(j / 4);
    }
    s->n_keys = next;
    s->universe = nk;
    ss->scope = 0;
    ss->n = 1;
    ss->s = s;
    free(first); free(raw);
}

static void free_stream(an_stream *s) { free(s->key); free(s->pos); free(s->id); }

TH_TEST(test_shards_rate1_exact, "sampled curve at rate 1 (fixed rate and fixed size) == the exact LRU curve")
{
    an_streams ss;
    an_stream s;
    make_streams(&ss, &s, 40000, 3000, 1);
    rn_error err;
    an_mrc exact, est;
    CU_ASSERT_EQUAL_FATAL(an_mrc_build(&ss, 100, &exact, &err), RN_OK);
    an_shards_opts opts[2] = { { 1.0, 0 }, { 1.0, 1u << 20 } };
    an_spill sp;
    CU_ASSERT_EQUAL_FATAL(an_spill_resident(&ss, 100, &sp, &err), RN_OK);
    for (int v = 0; v < 2; v++) {
        double rate = 0;
        CU_ASSERT_EQUAL_FATAL(an_shards_mrc(&sp, &opts[v], &est, &rate, &err), RN_OK);
        CU_ASSERT_EQUAL(rate, 1.0);
        CU_ASSERT_EQUAL(est.n, exact.n);
        CU_ASSERT_EQUAL(est.accesses, exact.accesses);
        int bad = 0;
        for (int64_t c = 0; c < exact.n && c < est.n; c++) bad += est.misses[c] != exact.misses[c];
        CU_ASSERT_EQUAL(bad, 0);
        an_mrc_free(&est);
    }
    an_spill_free(&sp);
    an_mrc_free(&exact);
    free_stream(&s);
}

TH_TEST(test_shards_minisim_rate1, "mini-simulations at rate 1 == the exact grid, every policy")
{
    an_streams ss;
    an_stream s;
    make_streams(&ss, &s, 20000, 2000, 2);
    rn_error err;
    const rn_policy *pol[32];
    int np = 0;
    for (int i = 0; i < rn_policy_count() && np < 32; i++) pol[np++] = rn_policy_at(i);
    const uint64_t caps[] = { 8, 32, 128, 512, 1024 };
    an_simgrid exact, est;
    CU_ASSERT_EQUAL_FATAL(an_simgrid_run(&ss, pol, np, caps, 5, 50, 132, NULL, NULL, &exact, &err), RN_OK);
    an_spill sp;
    CU_ASSERT_EQUAL_FATAL(an_spill_resident(&ss, 50, &sp, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_shards_grid(&sp, 1.0, pol, np, caps, 5, 132, NULL, NULL, &est, &err), RN_OK);
    int bad = 0;
    for (int i = 0; i < np * 5; i++)
        bad += est.result[i].accesses != exact.result[i].accesses || est.result[i].misses != exact.result[i].misses ||
               est.result[i].hits != exact.result[i].hits;
    CU_ASSERT_EQUAL(bad, 0);
    for (int c = 0; c < 5; c++) CU_ASSERT_EQUAL(est.capacity[c], caps[c]);
    an_simgrid_free(&exact);
    an_simgrid_free(&est);
    an_spill_free(&sp);
    free_stream(&s);
}

/* Mean absolute miss-ratio error over the curve's capacities. */
static double mae(const an_mrc *a, const an_mrc *b)
{
    double e = 0;
    int64_t n = a->n < b->n ? a->n : b->n;
    for (int64_t c = 0; c < n; c++) e += fabs(a->miss_ratio[c] - b->miss_ratio[c]);
    return n ? e / n : 0;
}

TH_TEST(test_shards_sampled_close, "sampled curves at rate 0.1 and fixed size stay close to the exact curve")
{
    an_streams ss;
    an_stream s;
    make_streams(&ss, &s, 400000, 20000, 3);
    rn_error err;
    an_mrc exact, est;
    CU_ASSERT_EQUAL_FATAL(an_mrc_build(&ss, 0, &exact, &err), RN_OK);
    an_shards_opts fr = { 0.1, 0 }, fs = { 1.0, 2000 };
    double rate;
    an_spill sp;
    CU_ASSERT_EQUAL_FATAL(an_spill_resident(&ss, 0, &sp, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_shards_mrc(&sp, &fr, &est, &rate, &err), RN_OK);
    double e1 = mae(&exact, &est);
    CU_ASSERT(fabs(rate - 0.1) < 1e-6);
    CU_ASSERT(e1 < 0.02);
    an_mrc_free(&est);
    CU_ASSERT_EQUAL_FATAL(an_shards_mrc(&sp, &fs, &est, &rate, &err), RN_OK);
    double e2 = mae(&exact, &est);
    CU_ASSERT(rate < 0.2 && rate > 0.05); /* 2000 of ~20000 keys */
    CU_ASSERT(e2 < 0.03);
    an_mrc_free(&est);
    /* a mini-simulation of LRU at 0.1 against the exact LRU */
    const rn_policy *lru = rn_policy_find("lru");
    const uint64_t cap = 2000;
    an_simgrid a, b;
    CU_ASSERT_EQUAL_FATAL(an_simgrid_run(&ss, &lru, 1, &cap, 1, 0, 132, NULL, NULL, &a, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_shards_grid(&sp, 0.1, &lru, 1, &cap, 1, 132, NULL, NULL, &b, &err), RN_OK);
    double mr_a = (double)a.result[0].misses / a.result[0].accesses;
    double mr_b = (double)b.result[0].misses / b.result[0].accesses;
    an_simgrid_free(&a);
    an_simgrid_free(&b);
    an_spill_free(&sp);
    CU_ASSERT(fabs(mr_a - mr_b) < 0.03);
    if (e1 >= 0.02 || e2 >= 0.03 || fabs(mr_a - mr_b) >= 0.03)
        fprintf(stderr, "\nshards: mae fixed-rate %.4f, fixed-size %.4f (rate %.4f); lru@2000 %.4f vs %.4f\n", e1, e2,
                rate, mr_a, mr_b);
    an_mrc_free(&exact);
    free_stream(&s);
}

TH_TEST(test_shards_parse, "--sample: rates, sizes and refusals")
{
    an_shards_opts o;
    rn_error err;
    CU_ASSERT_EQUAL(an_shards_parse("0.01", &o, &err), RN_OK);
    CU_ASSERT(o.rate == 0.01 && o.max_keys == 0);
    CU_ASSERT_EQUAL(an_shards_parse("1%", &o, &err), RN_OK);
    CU_ASSERT(o.rate == 0.01);
    CU_ASSERT_EQUAL(an_shards_parse("8192keys", &o, &err), RN_OK);
    CU_ASSERT(o.rate == 1 && o.max_keys == 8192);
    const char *bad[] = { "0", "-0.5", "1.5", "abc", "", "10keys", "0.5x", "nan", "1e-9" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(an_shards_parse(bad[i], &o, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--sample"));
    }
}

/* The commands: simulate --sample 1 gives the exact numbers (every key
 * sampled), --mrc then labels its curve lru-shards; a rate estimates; a bad
 * --sample is one line and exit 2; plot mrc --sample draws. */
TH_TEST(test_shards_cli, "simulate --sample and plot mrc --sample from the command line")
{
    char in[512], db[512], png[512];
    snprintf(in, sizeof in, "%s", th_path("shards_in.txt"));
    snprintf(db, sizeof db, "%s", th_path("shards_t.db"));
    snprintf(png, sizeof png, "%s", th_path("shards_mrc.png"));
    CU_ASSERT_EQUAL_FATAL(th_write_verses(in, 600), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace samples/kjv.bin %s -o %s -q", th_bin(), in, db), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --policy lru,fifo,s3fifo --capacity 16,64,256 -f csv -q", th_bin(),
                                 db), 0);
    char exact[4096];
    snprintf(exact, sizeof exact, "%s", th_out());
    CU_ASSERT_EQUAL(th_run("%s simulate %s --policy lru,fifo,s3fifo --capacity 16,64,256 -f csv -q --sample 1",
                           th_bin(), db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), exact);
    CU_ASSERT_EQUAL(th_run("%s simulate %s --policy lru --capacity 64 --mrc -f csv -q --sample 100%%", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "lru-shards,64,"));
    CU_ASSERT_EQUAL(th_run("%s simulate %s --policy lru --capacity 64 -f csv --sample 0.25", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "sampled at rate 0.25"));
    CU_ASSERT_EQUAL(th_run("%s simulate %s --sample 2", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--sample"));
    CU_ASSERT_EQUAL(th_run("%s plot mrc %s --sample 0.5 --policies lru,fifo -o %s", th_bin(), db, png), 0);
    CU_ASSERT(th_file_exists(png));
    CU_ASSERT_EQUAL(th_run("%s plot mrc %s --sample 10keys -o %s", th_bin(), db, png), 2);
}
