/* an_pq_thrift.c — Thrift compact protocol encoding (an_pq_thrift.h). */
#include "an_pq_thrift.h"

#include <string.h>

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* The header of field id of type type in the innermost struct. */
static void field(an_tc *t, int id, int type)
{
    int delta = id - t->last[t->depth];
    if (delta > 0 && delta <= 15) an_pq_buf_byte(t->b, (uint8_t)(delta << 4 | type));
    else {
        an_pq_buf_byte(t->b, (uint8_t)type);
        an_pq_buf_varint(t->b, zigzag(id));
    }
    t->last[t->depth] = (int16_t)id;
}

void an_tc_begin(an_tc *t)
{
    if (t->depth + 1 >= AN_TC_DEPTH) { t->b->oom = 1; return; }
    t->last[++t->depth] = 0;
}

void an_tc_end(an_tc *t)
{
    an_pq_buf_byte(t->b, 0);
    if (t->depth > 0) t->depth--;
}

void an_tc_struct(an_tc *t, int id)
{
    field(t, id, AN_TC_STRUCT);
    an_tc_begin(t);
}

void an_tc_i32(an_tc *t, int id, int32_t v) { field(t, id, AN_TC_I32); an_pq_buf_varint(t->b, zigzag(v)); }
void an_tc_i64(an_tc *t, int id, int64_t v) { field(t, id, AN_TC_I64); an_pq_buf_varint(t->b, zigzag(v)); }
void an_tc_bool(an_tc *t, int id, int v) { field(t, id, v ? AN_TC_TRUE : AN_TC_FALSE); }
void an_tc_byte(an_tc *t, int id, int8_t v) { field(t, id, AN_TC_BYTE); an_pq_buf_byte(t->b, (uint8_t)v); }

void an_tc_binary(an_tc *t, int id, const void *p, size_t n)
{
    field(t, id, AN_TC_BINARY);
    an_pq_buf_varint(t->b, n);
    an_pq_buf_put(t->b, p, n);
}

void an_tc_string(an_tc *t, int id, const char *s) { an_tc_binary(t, id, s, strlen(s)); }

void an_tc_list(an_tc *t, int id, int etype, size_t n)
{
    field(t, id, AN_TC_LIST);
    if (n < 15) an_pq_buf_byte(t->b, (uint8_t)(n << 4 | (size_t)etype));
    else {
        an_pq_buf_byte(t->b, (uint8_t)(0xf0 | etype));
        an_pq_buf_varint(t->b, n);
    }
}

void an_tc_elem_i32(an_tc *t, int32_t v) { an_pq_buf_varint(t->b, zigzag(v)); }

void an_tc_elem_string(an_tc *t, const char *s)
{
    size_t n = strlen(s);
    an_pq_buf_varint(t->b, n);
    an_pq_buf_put(t->b, s, n);
}
