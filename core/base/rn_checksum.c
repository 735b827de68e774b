/* rn_checksum.c — the parameter-block checksum defined in rn_checksum.h. */
#include "rn_checksum.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rn_checksum.c assumes a little-endian host"
#endif

#define FNV_P 0x100000001b3ull
#define FNV_B 0xcbf29ce484222325ull

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t step(uint64_t h, uint64_t w) { return rotl64((h ^ w) * FNV_P, 31); }

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb53fe63bc4bbull;
    k ^= k >> 33;
    return k;
}

uint64_t rn_checksum64(const void *data, size_t nbytes)
{
    const unsigned char *p = data;
    uint64_t h0 = FNV_B, h1 = FNV_B + 1, h2 = FNV_B + 2, h3 = FNV_B + 3;
    size_t nw = nbytes / 8, j = 0;
    for (; j + 4 <= nw; j += 4) {
        uint64_t w[4];
        memcpy(w, p + 8 * j, sizeof w);
        h0 = step(h0, w[0]);
        h1 = step(h1, w[1]);
        h2 = step(h2, w[2]);
        h3 = step(h3, w[3]);
    }
    uint64_t *lane[4] = { &h0, &h1, &h2, &h3 };
    for (; j < nw; j++) {
        uint64_t w;
        memcpy(&w, p + 8 * j, 8);
        *lane[j % 4] = step(*lane[j % 4], w);
    }
    if (nbytes % 8) {
        uint64_t w = 0;
        memcpy(&w, p + 8 * nw, nbytes % 8);
        *lane[nw % 4] = step(*lane[nw % 4], w);
    }
    uint64_t r = FNV_B;
    r = (r ^ h0) * FNV_P;
    r = (r ^ h1) * FNV_P;
    r = (r ^ h2) * FNV_P;
    r = (r ^ h3) * FNV_P;
    r ^= (uint64_t)nbytes;
    return fmix64(r);
}
