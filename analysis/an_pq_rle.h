/* an_pq_rle.h — Parquet's RLE / bit-packing hybrid encoding (Encodings.md),
 * the form of dictionary indices in a data page.
 *
 * The stream is a sequence of runs.  An RLE run is the varint (count << 1)
 * and the repeated value in ceil(width / 8) little-endian bytes; a
 * bit-packed run is the varint (groups << 1 | 1) and groups × 8 values of
 * `width` bits each, packed from the least significant bit of the first
 * byte.  Runs of 8 or more equal values become RLE runs, the rest is
 * bit-packed; the last group is padded with zeros, which a reader ignores
 * past the page's value count. */
#ifndef AN_PQ_RLE_H
#define AN_PQ_RLE_H

#include <stddef.h>
#include <stdint.h>

#include "an_pq_buf.h"

/* Bits that hold every value 0..max (at least 1). */
int an_pq_bit_width(uint32_t max);

/* Append the hybrid encoding of v[0..n) (each < 2^width, width 1..32) to b. */
void an_pq_rle_encode(an_pq_buf *b, const uint32_t *v, size_t n, int width);

#endif
