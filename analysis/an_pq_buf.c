/* an_pq_buf.c — growth of the Parquet writer's byte buffers (an_pq_buf.h). */
#include "an_pq_buf.h"

#include <stdlib.h>

int an_pq_buf_reserve(an_pq_buf *b, size_t more)
{
    if (b->oom) return -1;
    if (b->cap - b->n >= more) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->n < more) {
        if (cap > SIZE_MAX / 2) { b->oom = 1; return -1; }
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

void an_pq_buf_free(an_pq_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
