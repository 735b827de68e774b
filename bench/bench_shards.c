/* bench_shards.c — sampled miss-ratio curves (analysis/an_shards.c)
 * against the exact LRU curve (an_mrc_build) on one synthetic stream of
 * 20M accesses over 1M keys shaped like a model scope (half the accesses
 * repeat a recent key, half draw a skewed key): the time of each (median
 * of 3), the speed-up, and the mean absolute miss-ratio error over every
 * capacity, for --sample 0.01, 0.001 and a fixed size of 8192 keys; then
 * LRU at 4 capacities by mini-simulation at 0.01 against the exact run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_shards.h"
#include "an_simrun.h"
#include "rn_rng.h"
#include "bench_util.h"

#define N 20000000u
#define KEYS 1000000u

static double mae(const an_mrc *a, const an_mrc *b)
{
    double e = 0;
    int64_t n = a->n < b->n ? a->n : b->n;
    for (int64_t c = 0; c < n; c++) e += fabs(a->miss_ratio[c] - b->miss_ratio[c]);
    return n ? e / n : 0;
}

int main(void)
{
    an_stream s = { .layer = -1, .head = -1, .n = N };
    s.key = malloc(sizeof *s.key * N);
    s.id = malloc(sizeof *s.id * KEYS);
    uint32_t *dense = malloc(sizeof *dense * KEYS);
    rn_rng r;
    rn_rng_seed(&r, 7);
    for (uint32_t k = 0; k < KEYS; k++) dense[k] = UINT32_MAX;
    uint32_t nk = 0;
    for (uint32_t i = 0; i < N; i++) {
        double u = rn_rng_uniform(&r);
        uint32_t raw = i > 4096 && u < 0.5 ? (uint32_t)s.id[s.key[i - 1 - rn_rng_below(&r, 4096)]]
                                           : (uint32_t)((double)KEYS * u * u * u) % KEYS;
        if (dense[raw] == UINT32_MAX) s.id[nk] = raw, dense[raw] = nk++;
        s.key[i] = dense[raw];
    }
    s.n_keys = nk;
    s.universe = KEYS;
    an_streams ss = { 0, 1, &s };
    rn_error err;
    an_spill sp;
    if (an_spill_resident(&ss, 0, &sp, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    an_mrc exact;
    double t[3];
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        if (an_mrc_build(&ss, 0, &exact, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        t[rep] = bench_now() - t0;
        if (rep < 2) an_mrc_free(&exact);
    }
    double te = bench_median(t, 3);
    printf("stream: %u accesses over %u keys; exact LRU curve %.2f s (%.1f M accesses/s)\n", N, nk, te, N / te / 1e6);
    const struct { const char *arg; } cases[] = { { "0.01" }, { "0.001" }, { "8192keys" } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        an_shards_opts o;
        an_shards_parse(cases[c].arg, &o, &err);
        an_mrc est;
        double rate = 0;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = bench_now();
            if (an_shards_mrc(&sp, &o, &est, &rate, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            t[rep] = bench_now() - t0;
            if (rep < 2) an_mrc_free(&est);
        }
        double ts = bench_median(t, 3);
        printf("  --sample %-9s rate %.5f: %.3f s, %.1fx faster, mean |error| %.5f over %lld capacities\n",
               cases[c].arg, rate, ts, te / ts, mae(&exact, &est), (long long)exact.n);
        an_mrc_free(&est);
    }
    const rn_policy *lru = rn_policy_find("lru");
    const uint64_t caps[] = { 1024, 8192, 65536 };
    an_simgrid ge, gs;
    double t0 = bench_now();
    an_simgrid_run(&ss, &lru, 1, caps, 3, 0, 132, NULL, NULL, &ge, &err);
    double t1 = bench_now();
    an_shards_grid(&sp, 0.01, &lru, 1, caps, 3, 132, NULL, NULL, &gs, &err);
    double t2 = bench_now();
    printf("  lru at 1024, 8192, 65536: exact %.2f s, mini-simulations at 0.01 %.3f s (%.1fx)\n", t1 - t0, t2 - t1,
           (t1 - t0) / (t2 - t1));
    for (int c = 0; c < 3; c++)
        printf("    capacity %6llu: exact miss ratio %.4f, sampled %.4f\n", (unsigned long long)caps[c],
               (double)ge.result[c].misses / ge.result[c].accesses, (double)gs.result[c].misses / gs.result[c].accesses);
    an_simgrid_free(&ge);
    an_simgrid_free(&gs);
    an_spill_free(&sp);
    an_mrc_free(&exact);
    free(s.key); free(s.id); free(dense);
    return 0;
}
