/* test_eval_pairs.c — MQAR accuracy by the queried pair's place in the
 * context (`ramtrace eval --by-pair`): the generator's pair_of leaves the
 * examples bit-identical and names the right pair, the bins partition the
 * pairs, the per-pair tallies add up to the evaluation's accuracy, and they
 * equal an independent count from the inference runtime's logits with the
 * pair found by searching the context for the query's key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_device.h"
#include "rn_modelfile.h"
#include "rn_runtime.h"
#include "rn_tasks.h"
#include "rn_train_loop.h"
#include "th.h"

/* With pair_of the examples and the random stream are those without it;
 * pair_of is the index of the queried pair exactly at the labelled rows. */
TH_TEST(test_mqar_pair_of, "MQAR pair_of: examples bit-identical, the queried pair at each query")
{
    static const int shapes[][2] = { { 64, 4 }, { 64, 16 }, { 128, 32 }, { 512, 128 }, { 1024, 256 }, { 20, 1 } };
    enum { LMAX = 1024 };
    static int t0[LMAX], g0[LMAX], t1[LMAX], g1[LMAX], po[LMAX], seen[LMAX];
    static double pbuf[LMAX];
    int same = 1, bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int L = shapes[s][0], N = shapes[s][1];
        rn_rng a, b;
        rn_rng_seed(&a, 77 + s);
        rn_rng_seed(&b, 77 + s);
        for (int e = 0; e < 10; e++) {
            rn_mqar_example(&a, 8192, L, N, RN_MQAR_POWER_A, t0, g0, pbuf, NULL);
            for (int p = 0; p < L; p++) po[p] = 12345; /* every entry must be written */
            rn_mqar_example(&b, 8192, L, N, RN_MQAR_POWER_A, t1, g1, pbuf, po);
            same &= !memcmp(t0, t1, sizeof(int) * (size_t)L) && !memcmp(g0, g1, sizeof(int) * (size_t)L);
            memset(seen, 0, sizeof(int) * (size_t)N);
            for (int p = 0; p < L; p++) {
                if (g1[p] == -100) { bad |= po[p] != -1; continue; }
                int i = po[p];
                if (i < 0 || i >= N) { bad = 1; continue; }
                /* pair i was written at 2i, 2i+1: its key is queried here, its value the target */
                bad |= t1[2 * i] != t1[p] || t1[2 * i + 1] != g1[p];
                seen[i]++;
            }
            for (int i = 0; i < N; i++) bad |= seen[i] != 1;
        }
        same &= rn_rng_u64(&a) == rn_rng_u64(&b); /* the streams stay in step */
    }
    CU_ASSERT(same);
    CU_ASSERT_FALSE(bad);
}

/* The B bins are contiguous, cover 0..N−1 in order and differ in size by
 * at most one. */
TH_TEST(test_mqar_pair_bin, "MQAR pair bins partition the pairs")
{
    int bad = 0;
    for (int N = 1; N <= 300; N += (N < 20 ? 1 : 37))
        for (int B = 1; B <= N; B++) {
            int next = 0, lo = N / B, hi = (N + B - 1) / B;
            for (int b = 0; b < B; b++) {
                int from, to;
                rn_mqar_pair_bin(N, B, b, &from, &to);
                int n = to - from + 1;
                bad |= from != next || n < lo || n > hi;
                next = to + 1;
            }
            bad |= next != N;
        }
    CU_ASSERT_FALSE(bad);
    int from, to;
    rn_mqar_pair_bin(256, 8, 3, &from, &to);
    CU_ASSERT(from == 96 && to == 127);
}

/* The tallies add up: every pair is queried once per example, and the
 * queries-weighted mean over a segment's pairs is its accuracy (which is
 * rn_eval_mqar's). */
TH_TEST(test_eval_pairs_consistent, "eval by pair: counts sum to the queries, the weighted mean is the accuracy")
{
    rn_model m;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&m, "samples/mqar.bin", &err), RN_OK);
    const rn_mqar_seg segs[] = { { 128, 32 }, { 512, 128 } };
    enum { EX = 12, NP = 32 + 128 };
    double acc[2], mean, acc0[2], mean0;
    rn_mqar_tally pairs[NP];
    memset(pairs, 0xff, sizeof pairs); /* zeroed by the evaluation */
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar_pairs(&m, RN_DEVICE_CPU, segs, 2, EX, 5, 1024, acc, &mean, pairs, NULL, &err),
                          RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar(&m, RN_DEVICE_CPU, segs, 2, EX, 5, 1024, acc0, &mean0, NULL, &err), RN_OK);
    CU_ASSERT(acc[0] == acc0[0] && acc[1] == acc0[1] && mean == mean0);
    const rn_mqar_tally *p = pairs;
    int once = 1;
    for (int s = 0; s < 2; s++) {
        int64_t q = 0, c = 0;
        for (int i = 0; i < segs[s].N; i++) {
            once &= p[i].queries == EX && p[i].correct >= 0 && p[i].correct <= EX;
            q += p[i].queries;
            c += p[i].correct;
        }
        CU_ASSERT_EQUAL(q, (int64_t)EX * segs[s].N);
        CU_ASSERT(fabs((double)c / (double)q - acc[s]) < 1e-12);
        /* and so over bins */
        double wsum = 0;
        int64_t bq = 0;
        for (int b = 0; b < 8; b++) {
            int from, to;
            rn_mqar_pair_bin(segs[s].N, 8, b, &from, &to);
            int64_t nq = 0, nc = 0;
            for (int i = from; i <= to; i++) { nq += p[i].queries; nc += p[i].correct; }
            wsum += (double)nq * ((double)nc / (double)nq);
            bq += nq;
        }
        CU_ASSERT_EQUAL(bq, q);
        CU_ASSERT(fabs(wsum / (double)bq - acc[s]) < 1e-12);
        p += segs[s].N;
    }
    CU_ASSERT(once);
    /* not trivially all right or all wrong: (512,128) is past the sample's training */
    CU_ASSERT(acc[1] > 0.2 && acc[1] < 0.95);
    rn_model_free(&m);
}

/* Independent count: the same examples (from rn_eval_mqar_seed) through the
 * inference runtime, correct = argmax of the logits at the query position is
 * the target, the pair = the context position holding the query's key;
 * binned by i / (N/B).  Equal to the evaluation's tallies bin by bin. */
TH_TEST(test_eval_pairs_independent, "eval by pair equals the runtime's argmax, pair found by key search")
{
    rn_model m;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&m, "samples/mqar.bin", &err), RN_OK);
    const int V = m.cfg.vocab_size;
    const rn_mqar_seg segs[] = { { 256, 64 }, { 512, 128 } };
    enum { EX = 4, B = 8, NP = 64 + 128, LMAX = 512 };
    const uint64_t seed = 31;
    double acc[2], mean;
    rn_mqar_tally pairs[NP];
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar_pairs(&m, RN_DEVICE_CPU, segs, 2, EX, seed, 1024, acc, &mean, pairs, NULL, &err),
                          RN_OK);
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, LMAX, &rt, &err), RN_OK);
    float *lg = malloc(sizeof(float) * (size_t)LMAX * (size_t)V);
    CU_ASSERT_FATAL(lg != NULL);
    int tok[LMAX], tgt[LMAX];
    double pbuf[LMAX];
    const rn_mqar_tally *p = pairs;
    int64_t wrong_total = 0, right_total = 0;
    for (int s = 0; s < 2; s++) {
        int L = segs[s].L, N = segs[s].N, per = N / B;
        int64_t q[B] = { 0 }, c[B] = { 0 };
        rn_rng rng;
        rn_rng_seed(&rng, rn_eval_mqar_seed(seed, s));
        for (int e = 0; e < EX; e++) {
            rn_mqar_example(&rng, V, L, N, RN_MQAR_POWER_A, tok, tgt, pbuf, NULL);
            rn_runtime_reset(rt);
            CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, tok, L, lg, 1, &err), RN_OK);
            for (int t = 0; t < L; t++) {
                if (tgt[t] == -100) continue;
                int i = -1;
                for (int k = 0; k < N; k++)
                    if (tok[2 * k] == tok[t]) i = k;
                CU_ASSERT_FATAL(i >= 0);
                const float *row = lg + (size_t)t * V;
                int best = 0;
                for (int j = 1; j < V; j++)
                    if (row[j] > row[best]) best = j;
                q[i / per]++;
                c[i / per] += best == tgt[t];
            }
        }
        for (int b = 0; b < B; b++) {
            int from, to;
            rn_mqar_pair_bin(N, B, b, &from, &to);
            int64_t nq = 0, nc = 0;
            for (int i = from; i <= to; i++) { nq += p[i].queries; nc += p[i].correct; }
            CU_ASSERT_EQUAL(nq, q[b]);
            CU_ASSERT_EQUAL(nc, c[b]);
            right_total += c[b];
            wrong_total += q[b] - c[b];
        }
        p += N;
    }
    /* the comparison saw both outcomes */
    CU_ASSERT(right_total > 0 && wrong_total > 0);
    free(lg);
    rn_runtime_free(rt);
    rn_model_free(&m);
}

/* Reads the CSV of `eval --by-pair`: per row the queries and accuracy
 * into q[], a[] (up to cap rows); returns the number of rows, or −1. */
static int read_bins(const char *csv, int64_t *q, double *a, int cap)
{
    const char *line = strchr(csv, '\n'); /* past the header */
    int n = 0;
    while (line && line[1] && n < cap) {
        line++;
        int L, N, bin, from, to;
        long long nq;
        double acc;
        if (sscanf(line, "\"(%*d,%*d)\",%d,%d,%d,%d,%d,%lld,%lf", &L, &N, &bin, &from, &to, &nq, &acc) != 7)
            return -1;
        q[n] = nq;
        a[n++] = acc;
        line = strchr(line, '\n');
    }
    return n;
}

/* The command: rows per bin whose weighted mean is the plain eval's
 * accuracy; bad --by-pair values are one line naming it, exit 2. */
TH_TEST(test_cli_eval_by_pair, "eval --by-pair: rows per bin; bad values exit 2 naming the option")
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval samples/mqar.bin --task mqar --examples 6 --segments 512:128 -f csv",
                                 th_bin()), 0);
    double plain = -1;
    const char *row = strstr(th_out(), "\"(512,128)\",512,128,");
    CU_ASSERT_FATAL(row != NULL);
    CU_ASSERT_EQUAL(sscanf(row, "\"(512,128)\",512,128,%lf", &plain), 1);
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval samples/mqar.bin --task mqar --examples 6 --segments 512:128 "
                                 "--by-pair 5 -f csv", th_bin()), 0);
    CU_ASSERT(strncmp(th_out(), "segment,L,N,bin,pair_from,pair_to,queries,accuracy\n", 51) == 0);
    CU_ASSERT(strstr(th_out(), "\"(512,128)\",512,128,4,102,127,156,") != NULL); /* 26 pairs × 6 */
    int64_t q[8];
    double a[8], wsum = 0;
    int64_t qsum = 0;
    CU_ASSERT_EQUAL_FATAL(read_bins(th_out(), q, a, 8), 5);
    for (int b = 0; b < 5; b++) { wsum += (double)q[b] * a[b]; qsum += q[b]; }
    CU_ASSERT_EQUAL(qsum, 6 * 128);
    CU_ASSERT(fabs(wsum / (double)qsum - plain) < 1e-9);
    /* B = N: one pair a bin */
    CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 --segments 64:4,128:8 --by-pair 4 -f csv",
                           th_bin()), 0);
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 9);
    CU_ASSERT(strstr(th_out(), "\"(64,4)\",64,4,3,3,3,2,") != NULL);
    CU_ASSERT(strstr(th_out(), "\"(128,8)\",128,8,3,6,7,4,") != NULL);
    /* bad input: one line naming --by-pair, exit 2 */
    static const char *const bad[] = { "--by-pair 0", "--by-pair -3", "--by-pair x", "--by-pair 5 --segments 64:4,128:32",
                                       "--by-pair 8" /* the ladder's (64,4) */, "--by-pair" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 %s", th_bin(), bad[i]), 2);
        CU_ASSERT(strstr(th_err(), "--by-pair") != NULL && th_count_lines(th_err()) == 1);
        CU_ASSERT_EQUAL(th_out()[0], '\0');
    }
    CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 --by-pair 5 --segments 64:4", th_bin()), 2);
    CU_ASSERT(strstr(th_err(), "--by-pair: 5 bins exceed the 4 pairs of segment (64,4)") != NULL);
    CU_ASSERT_EQUAL(th_run("%s eval samples/kjv.bin --task text --by-pair 2", th_bin()), 2);
    CU_ASSERT(strstr(th_err(), "--by-pair") != NULL && th_count_lines(th_err()) == 1);
}

/* Several segments whose tallies differ (the short one all right, the long
 * one about 0.6): each segment's rows must be its own tallies, so their
 * queries-weighted mean is that segment's accuracy in the plain eval of the
 * same segments (the same computation, without the tallies).  Rows built
 * from another segment's tallies (the first's, reused) mix the all-right
 * pairs into the long segment and miss by far more than the tolerance. */
TH_TEST(test_cli_eval_by_pair_segments, "eval --by-pair with several segments: each segment's rows are its own tallies")
{
    static const char *const segs = "64:16,512:128";
    static const int L[2] = { 64, 512 }, N[2] = { 16, 128 };
    enum { EX = 6, B = 4 };
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval samples/mqar.bin --task mqar --examples %d --segments %s -f csv", th_bin(),
                                 EX, segs), 0);
    double plain[2];
    for (int s = 0; s < 2; s++) {
        char key[64];
        snprintf(key, sizeof key, "\"(%d,%d)\",%d,%d,", L[s], N[s], L[s], N[s]);
        const char *row = strstr(th_out(), key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        CU_ASSERT_EQUAL_FATAL(sscanf(row + strlen(key), "%lf", &plain[s]), 1);
    }
    /* the segments differ, so a row built from the wrong one shows */
    CU_ASSERT(plain[0] - plain[1] > 0.15);
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval samples/mqar.bin --task mqar --examples %d --segments %s --by-pair %d -f csv",
                                 th_bin(), EX, segs, B), 0);
    int64_t q[2 * B];
    double a[2 * B];
    CU_ASSERT_EQUAL_FATAL(read_bins(th_out(), q, a, 2 * B), 2 * B);
    for (int s = 0; s < 2; s++) {
        double wsum = 0;
        int64_t qsum = 0;
        for (int b = 0; b < B; b++) {
            CU_ASSERT_EQUAL(q[s * B + b], (int64_t)EX * (N[s] / B));
            wsum += (double)q[s * B + b] * a[s * B + b];
            qsum += q[s * B + b];
        }
        CU_ASSERT_EQUAL(qsum, (int64_t)EX * N[s]);
        if (fabs(wsum / (double)qsum - plain[s]) >= 1e-9)
            fprintf(stderr, "\nsegment (%d,%d): bins %.6f, eval %.6f", L[s], N[s], wsum / (double)qsum, plain[s]);
        CU_ASSERT(fabs(wsum / (double)qsum - plain[s]) < 1e-9);
    }
    /* and the long segment's rows are not all right, its bins not all alike */
    double lo = 1, hi = 0;
    for (int b = 0; b < B; b++) {
        if (a[B + b] < lo) lo = a[B + b];
        if (a[B + b] > hi) hi = a[B + b];
    }
    CU_ASSERT(hi - lo > 0.1);
}
