/* test_sampler.c — token sampling frequencies against the distribution
 * computed here: softmax(logits / T) at T = 0.5 (plain sampling), and the
 * same renormalised over the top-p nucleus.  Seeded; 200000 draws, each
 * token's frequency within 5 binomial standard deviations
 * (sqrt(p(1−p)/N)) of its probability; greedy picks the argmax. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rn_sampler.h"
#include "th.h"

enum { V = 6, N = 200000 };
static const float g_logits[V] = { 1.0f, 0.5f, 0.0f, -0.5f, 2.0f, 0.25f };

/* p = softmax(logits / T) in double */
static void softmax_t(double *p, double T)
{
    double mx = -1e300, s = 0;
    for (int i = 0; i < V; i++) mx = fmax(mx, g_logits[i] / T);
    for (int i = 0; i < V; i++) s += p[i] = exp(g_logits[i] / T - mx);
    for (int i = 0; i < V; i++) p[i] /= s;
}

/* Frequencies of N draws against want[]; returns the number of tokens
 * outside 5 standard deviations. */
static int draw_and_compare(float T, float top_p, const double *want)
{
    rn_sampler s;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, V, T, top_p, 1234, &err), RN_OK);
    long cnt[V] = {0};
    for (int i = 0; i < N; i++) {
        int t = rn_sample(&s, g_logits);
        CU_ASSERT_FATAL(t >= 0 && t < V);
        cnt[t]++;
    }
    rn_sampler_free(&s);
    int bad = 0;
    for (int i = 0; i < V; i++) {
        double f = (double)cnt[i] / N, sd = sqrt(want[i] * (1 - want[i]) / N);
        if (fabs(f - want[i]) > 5 * sd + (want[i] == 0 ? 0 : 1e-12)) {
            printf("\n  T=%g top_p=%g token %d: frequency %.5f, probability %.5f (sd %.5f)\n", (double)T,
                   (double)top_p, i, f, want[i], sd);
            bad++;
        }
    }
    return bad;
}

TH_TEST(test_sample_temperature, "T = 0.5: frequencies match softmax(logits / 0.5)")
{
    double p[V];
    softmax_t(p, 0.5);
    CU_ASSERT_EQUAL(draw_and_compare(0.5f, 1.0f, p), 0);
    /* the check can tell: softmax(logits * 0.5) is far from it */
    double q[V];
    softmax_t(q, 2.0);
    CU_ASSERT(fabs(p[4] - q[4]) > 0.2);
}

TH_TEST(test_sample_top_p, "T = 0.5, top-p 0.9: frequencies match the renormalised nucleus")
{
    double p[V];
    softmax_t(p, 0.5);
    /* nucleus: tokens by descending p until the mass first exceeds 0.9 */
    int order[V];
    for (int i = 0; i < V; i++) order[i] = i;
    for (int i = 0; i < V; i++)
        for (int j = i + 1; j < V; j++)
            if (p[order[j]] > p[order[i]]) { int t = order[i]; order[i] = order[j]; order[j] = t; }
    double want[V] = {0}, mass = 0;
    int k = 0;
    while (k < V && mass <= 0.9) mass += p[order[k++]];
    for (int i = 0; i < k; i++) want[order[i]] = p[order[i]] / mass;
    CU_ASSERT(k >= 2 && k < V); /* a real cut */
    CU_ASSERT_EQUAL(draw_and_compare(0.5f, 0.9f, want), 0);
}

TH_TEST(test_sample_greedy, "T = 0: the argmax")
{
    rn_sampler s;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, V, 0.0f, 0.9f, 1, &err), RN_OK);
    for (int i = 0; i < 10; i++) CU_ASSERT_EQUAL(rn_sample(&s, g_logits), 4);
    rn_sampler_free(&s);
}
