/* an_pq_delta.c — the DELTA_BINARY_PACKED encoder (an_pq_delta.h). */
#include "an_pq_delta.h"

#include "an_pq_rle.h"

#define BLOCK 128
#define MINI 4
#define PER_MINI (BLOCK / MINI)

static inline int64_t delta(const uint32_t *v, size_t i) { return (int64_t)(int32_t)v[i] - (int64_t)(int32_t)v[i - 1]; }

int an_pq_delta_fits(const uint32_t *v, size_t n)
{
    /* values within 2^31 - 1 of each other: every delta fits (one pass of
     * 32-bit minima and maxima, vectorised) */
    int32_t vmin = INT32_MAX, vmax = INT32_MIN;
#pragma omp simd reduction(min : vmin) reduction(max : vmax)
    for (size_t i = 0; i < n; i++) {
        int32_t x = (int32_t)v[i];
        vmin = x < vmin ? x : vmin;
        vmax = x > vmax ? x : vmax;
    }
    if (n == 0 || (int64_t)vmax - (int64_t)vmin <= INT32_MAX) return 1;
    /* else the smallest and largest delta, without an early exit */
    int64_t lo = 0, hi = 0;
    for (size_t i = 1; i < n; i++) {
        int64_t d = delta(v, i);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    return lo >= INT32_MIN && hi <= INT32_MAX;
}

static inline uint64_t zigzag(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }

/* 32 values of width bits (1..32), least significant bit first. */
static void pack32(an_pq_buf *b, const uint32_t *u, int width)
{
    if (an_pq_buf_reserve(b, 4 * (size_t)width)) return;
    uint8_t *o = b->p + b->n;
    uint64_t acc = 0;
    int nb = 0;
    for (int k = 0; k < PER_MINI; k++) {
        acc |= (uint64_t)u[k] << nb;
        nb += width;
        while (nb >= 8) {
            *o++ = (uint8_t)acc;
            acc >>= 8;
            nb -= 8;
        }
    }
    b->n += 4 * (size_t)width;
}

void an_pq_delta_encode(an_pq_buf *b, const uint32_t *v, size_t n)
{
    an_pq_buf_varint(b, BLOCK);
    an_pq_buf_varint(b, MINI);
    an_pq_buf_varint(b, n);
    an_pq_buf_varint(b, zigzag((int32_t)v[0]));
    uint32_t u[BLOCK];
    int64_t d[BLOCK];
    for (size_t i = 1; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;  /* deltas in this block */
        int64_t mn = INT64_MAX;
        for (size_t k = 0; k < m; k++) {
            d[k] = delta(v, i + k);
            mn = d[k] < mn ? d[k] : mn;
        }
        for (size_t k = 0; k < m; k++) u[k] = (uint32_t)(d[k] - mn);
        for (size_t k = m; k < BLOCK; k++) u[k] = 0;
        an_pq_buf_varint(b, zigzag(mn));
        int width[MINI] = { 0 };
        size_t used = (m + PER_MINI - 1) / PER_MINI;
        for (size_t j = 0; j < used; j++) {
            uint32_t mx = 0;
            for (size_t k = 0; k < PER_MINI; k++) mx |= u[j * PER_MINI + k];
            width[j] = mx ? an_pq_bit_width(mx) : 0;
        }
        for (int j = 0; j < MINI; j++) an_pq_buf_byte(b, (uint8_t)width[j]);
        for (size_t j = 0; j < used; j++)
            if (width[j]) pack32(b, u + j * PER_MINI, width[j]);
    }
}
