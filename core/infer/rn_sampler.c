/* rn_sampler.c — greedy / temperature / top-p sampling (see rn_sampler.h). */
#include "rn_sampler.h"

#include <math.h>
#include <stdlib.h>

int rn_sampler_init(rn_sampler *s, int vocab_size, float temperature, float top_p, uint64_t seed,
                    rn_error *err)
{
    s->vocab_size = vocab_size;
    s->temperature = temperature;
    s->top_p = top_p;
    rn_rng_seed(&s->rng, seed);
    s->probs = malloc(sizeof(float) * vocab_size);
    s->idx = malloc(sizeof(int) * vocab_size);
    if (!s->probs || !s->idx) {
        rn_sampler_free(s);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    return RN_OK;
}

void rn_sampler_free(rn_sampler *s)
{
    free(s->probs);
    free(s->idx);
    s->probs = NULL;
    s->idx = NULL;
}

/* qsort_r order of token ids: descending probability, then ascending id
 * (a total order, so the result does not depend on the sort algorithm). */
static int cmp_desc(const void *a, const void *b, void *probs)
{
    const float *p = probs;
    float x = p[*(const int *)a], y = p[*(const int *)b];
    if (x > y) return -1;
    if (x < y) return 1;
    return *(const int *)a - *(const int *)b;
}

int rn_sample(rn_sampler *s, const float *logits)
{
    int V = s->vocab_size;
    if (s->temperature <= 0) {
        int best = 0;
        for (int i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
        return best;
    }
    float mx = logits[0];
    for (int i = 1; i < V; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < V; i++) {
        s->probs[i] = expf((logits[i] - mx) / s->temperature);
        sum += s->probs[i];
    }
    for (int i = 0; i < V; i++) s->probs[i] = (float)(s->probs[i] / sum);
    double u = rn_rng_uniform(&s->rng);
    if (s->top_p >= 1.0f) {
        double c = 0;
        for (int i = 0; i < V; i++) {
            c += s->probs[i];
            if (u < c) return i;
        }
        return V - 1;
    }
    /* Nucleus: only tokens with p >= (1 − top_p)/(V − 1) can be in the
     * nucleus (llama2.c's cut), sort those, keep the smallest prefix with
     * mass >= top_p, sample within it. */
    float cutoff = (1.0f - s->top_p) / (float)(V - 1);
    int n = 0;
    for (int i = 0; i < V; i++) if (s->probs[i] >= cutoff) s->idx[n++] = i;
    if (n == 0) { /* top_p < 1/V on a near-flat (or NaN) distribution: keep the argmax */
        int best = 0;
        for (int i = 1; i < V; i++) if (s->probs[i] > s->probs[best]) best = i;
        s->idx[n++] = best;
    }
    qsort_r(s->idx, n, sizeof(int), cmp_desc, s->probs);
    double mass = 0;
    int last = n - 1;
    for (int i = 0; i < n; i++) {
        mass += s->probs[s->idx[i]];
        if (mass > s->top_p) { last = i; break; }
    }
    double r = u * mass, c = 0;
    for (int i = 0; i <= last; i++) {
        c += s->probs[s->idx[i]];
        if (r < c) return s->idx[i];
    }
    return s->idx[last];
}
