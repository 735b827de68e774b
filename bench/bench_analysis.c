/* bench_analysis.c — single-thread speed of the cache policies, the exact
 * LRU miss-ratio curve and head statistics on a synthetic 10M-access
 * trace shaped like a RAM-Net model scope (skewed slot popularity with
 * reuse bursts over 64K keys).  Reports the median of 5 repetitions in
 * M accesses/s, and each policy's ratio to FIFO measured in the same run;
 * then simulate's grid (lru, s3fifo, opt x 2 capacities, an_simgrid_run)
 * on 1 and on 2 threads, alternating, with the ratio of the medians and
 * a check that both give the same counts. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_reuse.h"
#include "an_simrun.h"
#include "an_stats.h"
#include "rn_rng.h"
#include "bench_util.h"

#define N 10000000u
#define KEYS 65536u
#define REPS 5

int main(void)
{
    uint32_t *key = malloc(N * sizeof *key), *nxt = malloc(N * sizeof *nxt), *last = malloc(KEYS * 4);
    int32_t *pos = malloc(N * sizeof *pos);
    uint8_t *op = malloc(N);
    uint64_t *id = malloc(KEYS * sizeof *id);
    rn_rng r;
    rn_rng_seed(&r, 1);
    /* 16 accesses per token; half repeat a recent key, half skewed draws */
    for (uint32_t i = 0; i < N; i++) {
        double u = rn_rng_uniform(&r);
        key[i] = i > 64 && u < 0.5 ? key[i - 1 - rn_rng_below(&r, 64)]
                                   : (uint32_t)((double)KEYS * u * u * u) % KEYS;
        pos[i] = (int32_t)(i / 16);
        op[i] = (i / 8) & 1;
    }
    for (uint32_t k = 0; k < KEYS; k++) id[k] = k;
    an_stream s = an_stream_from_keys(key, N, pos);
    s.op = op;
    s.id = id;
    an_next_use(&s, nxt, last);
    printf("bench_analysis: %u accesses, %u keys, single thread, median of %d\n", N, s.n_keys, REPS);
    const char *names[] = { "fifo", "lru", "clock", "lfu", "arc", "s3fifo", "opt" };
    const uint64_t caps[] = { 1024, 8192 };
    double base[2] = { 0, 0 };
    rn_error err;
    for (int c = 0; c < 2; c++)
        for (int p = 0; p < 7; p++) {
            const rn_policy *pol = rn_policy_find(names[p]);
            double t[REPS];
            an_sim_result res = { 0 };
            for (int k = 0; k < REPS; k++) {
                memset(&res, 0, sizeof res);
                double t0 = bench_now();
                an_simulate(&s, pol, caps[c], 0, pol->needs_next ? nxt : NULL, &res, &err);
                t[k] = bench_now() - t0;
            }
            double rate = N / bench_median(t, REPS) / 1e6;
            if (p == 0) base[c] = rate;
            printf("  %-7s C=%-5llu %7.1f M acc/s  (x%.2f of fifo)  hit ratio %.4f\n", names[p],
                   (unsigned long long)caps[c], rate, rate / base[c], an_hit_ratio(&res));
        }
    {
        double t[REPS], tn[REPS];
        for (int k = 0; k < REPS; k++) {
            double t0 = bench_now();
            an_next_use(&s, nxt, last);
            tn[k] = bench_now() - t0;
        }
        an_streams ss = { RN_CACHE_SCOPE_MODEL, 1, &s };
        an_mrc m;
        for (int k = 0; k < REPS; k++) {
            double t0 = bench_now();
            an_mrc_build(&ss, 0, &m, &err);
            t[k] = bench_now() - t0;
            if (k < REPS - 1) an_mrc_free(&m);
        }
        printf("  next-use oracle pass   %7.1f M acc/s\n", N / bench_median(tn, REPS) / 1e6);
        printf("  exact LRU MRC (%lld capacities) %7.1f M acc/s; LRU hit ratio at 1024: %.4f\n",
               (long long)m.n, N / bench_median(t, REPS) / 1e6, m.hit_ratio[1023]);
        an_mrc_free(&m);
    }
    {
        double t[REPS];
        an_head_stats hs;
        for (int k = 0; k < REPS; k++) {
            double t0 = bench_now();
            an_stats_head(&s, KEYS, 0, 64, &hs, &err);
            t[k] = bench_now() - t0;
        }
        printf("  stats of a 10M-event head (in memory) %.2f s\n", bench_median(t, REPS));
    }
    {
        /* simulate's policy x capacity grid, 1 thread against 2 (the cells run in parallel) */
        const rn_policy *pol[3] = { rn_policy_find("lru"), rn_policy_find("s3fifo"), rn_policy_find("opt") };
        an_streams ss = { RN_CACHE_SCOPE_MODEL, 1, &s };
        double t[2][REPS];
        an_sim_result first[6];
        int same = 1;
        for (int k = 0; k < 2 * REPS; k++) {
            int nt = 1 + k % 2;
            omp_set_num_threads(nt);
            an_simgrid g;
            double t0 = bench_now();
            if (an_simgrid_run(&ss, pol, 3, caps, 2, 0, 68, NULL, NULL, &g, &err)) {
                fprintf(stderr, "bench_analysis: %s\n", err.msg);
                return 1;
            }
            t[nt - 1][k / 2] = bench_now() - t0;
            if (k == 0) memcpy(first, g.result, sizeof first);
            else same &= !memcmp(first, g.result, sizeof first);
            an_simgrid_free(&g);
        }
        double t1 = bench_median(t[0], REPS), t2 = bench_median(t[1], REPS);
        printf("  simulate grid (lru,s3fifo,opt x C=1024,8192): 1 thread %.2f s, 2 threads %.2f s: "
               "x%.2f faster; counts %s\n", t1, t2, t1 / t2, same ? "identical" : "DIFFER");
        if (!same) return 1;
    }
    free(key); free(nxt); free(last); free(pos); free(op); free(id);
    return 0;
}
