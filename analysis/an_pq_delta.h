/* an_pq_delta.h — Parquet's DELTA_BINARY_PACKED encoding of 32-bit
 * integers (Encodings.md), for columns that grow by small steps (a trace's
 * positions: runs of equal values then +1), where it stores a value in a
 * bit or two before compression instead of four bytes.
 *
 * Layout: a header — block size (128 values), miniblocks per block (4, so
 * 32 values each), the value count, the first value (zigzag) — then, per
 * block of 128 deltas between consecutive values, the smallest delta
 * (zigzag), one bit-width byte per miniblock, and each miniblock's
 * (delta − smallest) bit-packed from the least significant bit, 32 values
 * × width bits; a last miniblock is padded with zeros and miniblocks past
 * the last value are left out (their width bytes are 0).  Varints are
 * unsigned LEB128.
 *
 * Values are the int32 bit patterns (a uint32 column's too); a chunk whose
 * consecutive values differ by 2^31 or more cannot be encoded so that a
 * reader computing in 32 or 64 bits gets the same values:
 * an_pq_delta_fits says so first (PLAIN then). */
#ifndef AN_PQ_DELTA_H
#define AN_PQ_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "an_pq_buf.h"

/* Whether every delta between consecutive values of v[0..n) (as int32)
 * lies in the int32 range. */
int an_pq_delta_fits(const uint32_t *v, size_t n);

/* Append the encoding of v[0..n) (n >= 1) to b. */
void an_pq_delta_encode(an_pq_buf *b, const uint32_t *v, size_t n);

#endif
