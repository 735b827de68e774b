/* rn_sampler.h — choosing the next token from logits: greedy (temperature
 * 0), or temperature + nucleus (top-p) sampling with a seeded PRNG, as in
 * llama2.c.  The sampler owns its scratch (allocated once). */
#ifndef RN_SAMPLER_H
#define RN_SAMPLER_H

#include <stdint.h>

#include "rn_error.h"
#include "rn_rng.h"

typedef struct {
    int vocab_size;
    float temperature;   /* 0 = greedy */
    float top_p;         /* (0, 1]; 1 = plain sampling */
    rn_rng rng;
    float *probs;        /* [V] */
    int *idx;            /* [V] */
} rn_sampler;

int rn_sampler_init(rn_sampler *s, int vocab_size, float temperature, float top_p, uint64_t seed,
                    rn_error *err);
void rn_sampler_free(rn_sampler *s);

/* Pick a token; logits[V] is not modified. */
int rn_sample(rn_sampler *s, const float *logits);

#endif
