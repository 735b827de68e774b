/* an_pq_thrift.h — the Thrift compact protocol encoder that writes
 * Parquet's metadata (page headers and the file footer, parquet.thrift).
 *
 * Only what a writer needs: structs with i32/i64/bool/binary fields, lists
 * of i32, binary and structs.  A field header is the delta from the
 * previous field id of the same struct in the high nibble and the type in
 * the low one (a long form for deltas outside 1..15); integers are zigzag
 * varints; binary is a varint length and the bytes; a struct ends with a
 * 0 byte; a list header is the size (< 15 in the high nibble, else 0xF and
 * a varint) and the element type.  Booleans as fields carry their value in
 * the type (1 true, 2 false). */
#ifndef AN_PQ_THRIFT_H
#define AN_PQ_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "an_pq_buf.h"

enum {
    AN_TC_TRUE = 1, AN_TC_FALSE = 2, AN_TC_BYTE = 3, AN_TC_I16 = 4, AN_TC_I32 = 5, AN_TC_I64 = 6,
    AN_TC_DOUBLE = 7, AN_TC_BINARY = 8, AN_TC_LIST = 9, AN_TC_SET = 10, AN_TC_MAP = 11, AN_TC_STRUCT = 12
};

#define AN_TC_DEPTH 16

/* An encoder over a buffer: the last field id of each open struct. */
typedef struct {
    an_pq_buf *b;
    int16_t last[AN_TC_DEPTH];
    int depth;
} an_tc;

static inline void an_tc_init(an_tc *t, an_pq_buf *b) { t->b = b; t->depth = 0; t->last[0] = 0; }

/* Open a struct that is the whole message or a list element (no field header). */
void an_tc_begin(an_tc *t);
/* Close the innermost struct (its stop byte). */
void an_tc_end(an_tc *t);
/* Open a struct-typed field. */
void an_tc_struct(an_tc *t, int id);

void an_tc_i32(an_tc *t, int id, int32_t v);
void an_tc_i64(an_tc *t, int id, int64_t v);
void an_tc_bool(an_tc *t, int id, int v);
void an_tc_byte(an_tc *t, int id, int8_t v);
void an_tc_binary(an_tc *t, int id, const void *p, size_t n);
void an_tc_string(an_tc *t, int id, const char *s);

/* A list field of n elements of type etype; then write the n elements with
 * the an_tc_elem_* calls (or an_tc_begin/end for structs). */
void an_tc_list(an_tc *t, int id, int etype, size_t n);
void an_tc_elem_i32(an_tc *t, int32_t v);
void an_tc_elem_string(an_tc *t, const char *s);

#endif
