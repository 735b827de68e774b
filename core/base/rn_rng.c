/* rn_rng.c — xoshiro256** PRNG; see rn_rng.h. */
#include "rn_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rn_rng_seed(rn_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rn_rng_u64(rn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}

double rn_rng_uniform(rn_rng *r) { return (double)(rn_rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t rn_rng_below(rn_rng *r, uint64_t n)
{
    if (n <= 1) return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rn_rng_u64(r); while (x >= lim);
    return x % n;
}

double rn_rng_normal(rn_rng *r)
{
    double u1 = rn_rng_uniform(r), u2 = rn_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
