/* rn_rng.h — a small deterministic PRNG (xoshiro256**, seeded by splitmix64).
 * Used for init, sampling and synthetic data so results depend only on the
 * seed, never on libc's rand(). */
#ifndef RN_RNG_H
#define RN_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } rn_rng;

void rn_rng_seed(rn_rng *r, uint64_t seed);
uint64_t rn_rng_u64(rn_rng *r);
double rn_rng_uniform(rn_rng *r);          /* [0, 1) with 53 random bits */
uint64_t rn_rng_below(rn_rng *r, uint64_t n); /* uniform in [0, n), unbiased */
double rn_rng_normal(rn_rng *r);           /* standard normal (Box–Muller) */

#endif
