/* an_pq_buf.h — the growable byte buffer under the Parquet writer
 * (an_parquet.h): page bodies, Thrift headers and the footer are built in
 * one of these before they are compressed or written.  A failed growth sets
 * `oom` once and every later append is dropped, so encoders write without
 * checking each byte and the caller checks `oom` at the end. */
#ifndef AN_PQ_BUF_H
#define AN_PQ_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int oom;
} an_pq_buf;

/* Make room for `more` bytes past n; 0, or -1 (and oom set) when out of memory. */
int an_pq_buf_reserve(an_pq_buf *b, size_t more);
void an_pq_buf_free(an_pq_buf *b);

static inline void an_pq_buf_put(an_pq_buf *b, const void *src, size_t len)
{
    if (len == 0 || an_pq_buf_reserve(b, len)) return;
    memcpy(b->p + b->n, src, len);
    b->n += len;
}

static inline void an_pq_buf_byte(an_pq_buf *b, uint8_t v)
{
    if (an_pq_buf_reserve(b, 1)) return;
    b->p[b->n++] = v;
}

/* Unsigned LEB128 varint (Thrift compact and the RLE run headers). */
static inline void an_pq_buf_varint(an_pq_buf *b, uint64_t v)
{
    if (an_pq_buf_reserve(b, 10)) return;
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

#endif
