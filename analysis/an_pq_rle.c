/* an_pq_rle.c — the RLE / bit-packing hybrid encoder (an_pq_rle.h). */
#include "an_pq_rle.h"

int an_pq_bit_width(uint32_t max)
{
    int w = 1;
    while (w < 32 && (max >> w)) w++;
    return w;
}

/* Length of the run of v[i]'s value from i, looking at most cap values. */
static size_t run_len(const uint32_t *v, size_t i, size_t n, size_t cap)
{
    size_t j = i + 1;
    while (j < n && j - i < cap && v[j] == v[i]) j++;
    return j - i;
}

/* A bit-packed run of v[i..end), end a multiple of 8 past i, values past n
 * written as 0. */
static void bitpack(an_pq_buf *b, const uint32_t *v, size_t i, size_t end, size_t n, int width)
{
    size_t groups = (end - i) / 8;
    an_pq_buf_varint(b, groups << 1 | 1);
    if (an_pq_buf_reserve(b, groups * (size_t)width)) return;
    uint8_t *o = b->p + b->n;
    if (width <= 8) {  /* a group of 8 values fills width bytes: one 64-bit word */
        for (size_t k = i; k < end; k += 8, o += width) {
            uint64_t g = 0;
            if (k + 8 <= n)
                for (int j = 0; j < 8; j++) g |= (uint64_t)v[k + (size_t)j] << (j * width);
            else  /* the last group, past n padded with zeros (k < n) */
                for (int j = 0; k + (size_t)j < n; j++) g |= (uint64_t)v[k + (size_t)j] << (j * width);
            for (int j = 0; j < width; j++) o[j] = (uint8_t)(g >> (8 * j));
        }
        b->n += groups * (size_t)width;
        return;
    }
    uint64_t acc = 0;
    int nb = 0;
    for (size_t k = i; k < end; k++) {
        acc |= (uint64_t)(k < n ? v[k] : 0) << nb;
        nb += width;
        while (nb >= 8) {
            *o++ = (uint8_t)acc;
            acc >>= 8;
            nb -= 8;
        }
    }
    b->n += groups * (size_t)width;
}

void an_pq_rle_encode(an_pq_buf *b, const uint32_t *v, size_t n, int width)
{
    int vbytes = (width + 7) / 8;
    size_t i = 0;
    while (i < n) {
        size_t r = run_len(v, i, n, SIZE_MAX);
        if (r >= 8) {
            an_pq_buf_varint(b, (uint64_t)r << 1);
            uint8_t val[4];
            for (int k = 0; k < vbytes; k++) val[k] = (uint8_t)(v[i] >> (8 * k));
            an_pq_buf_put(b, val, (size_t)vbytes);
            i += r;
            continue;
        }
        /* groups of 8 until one starts a run of 8 (an RLE run then) */
        size_t end = i + 8;
        while (end < n && run_len(v, end, n, 8) < 8) end += 8;
        bitpack(b, v, i, end, n, width);
        i = end < n ? end : n;
    }
}
