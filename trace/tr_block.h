/* tr_block.h — the packed event block of trace schema v2
 * (docs/trace-schema.md, "Storage layout"): how one `event_blocks` row's
 * two BLOBs hold the events of one (run, layer, head) over npos consecutive
 * positions.
 *
 * Entry e of a block (0 <= e < npos * nops * K) is, in canonical order,
 * position pos0 + e / (nops * K), then op (writes before reads, only the
 * ops of the block's mask), then rank e % K.  `slots` packs the slots in
 * b = tr_slot_bits(M) bits each (the fewest that hold M - 1: 8 for M = 256,
 * 10 for M = 1024), entry e at bits e*b .. e*b + b - 1 counted from the
 * least significant bit of byte 0 (little-endian bit order), in
 * ceil(n*b / 8) bytes; `weights` holds each weight as a little-endian IEEE
 * float32 (bit-exact) or, for a run recorded with `--weights f16`, IEEE
 * float16 rounded to nearest even.
 *
 * Pure C with no SQLite calls: the C reader, `repair`, the writer and the
 * SQL virtual table (also built into the loadable extension) share it. */
#ifndef TR_BLOCK_H
#define TR_BLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trace blocks are read and written as little-endian memory"
#endif

/* Weight encodings (runs.weight_format). */
enum { TR_WEIGHTS_F32 = 0, TR_WEIGHTS_F16 = 1 };

/* "f32" / "f16" -> TR_WEIGHTS_*; -1 for anything else. */
int tr_weights_parse(const char *s);
const char *tr_weights_name(int fmt);
static inline int tr_weight_bytes(int fmt) { return fmt == TR_WEIGHTS_F16 ? 2 : 4; }

/* Bits per stored slot for M slots (1..32), and the bytes of n slots. */
static inline int tr_slot_bits(int64_t M)
{
    int b = 1;
    while (b < 32 && ((int64_t)1 << b) < M) b++;
    return b;
}
static inline int64_t tr_slot_blob_len(int64_t n, int bits) { return (n * bits + 7) / 8; }

/* The op mask (RN_OPS_* bits: 1 writes, 2 reads) of a run's selection text
 * ("layers=all heads=all ops=rw"); both ops when it names none. */
int tr_selection_ops(const char *selection);

/* Ops in a block's mask (RN_OPS_* bits). */
static inline int tr_block_nops(int64_t ops) { return (int)(ops & 1) + (int)((ops >> 1) & 1); }

/* IEEE binary16 <-> binary32 (round to nearest even; NaN stays NaN). */
uint16_t tr_f32_to_f16(float f);
float tr_f16_to_f32(uint16_t h);

/* Store n slots as entries e..e+n-1 of the packed slots at dst (bits
 * outside those entries are kept; each slot must be < 2^bits), and n
 * weights at dst (entry 0) in the weight encoding. */
void tr_block_put_slots(uint8_t *dst, size_t e, const uint32_t *slot, int n, int bits);
void tr_block_put_weights(uint8_t *dst, const float *w, int n, int fmt);

/* Entry i of a packed slots BLOB (reads only the bytes that entry spans,
 * so never past ceil(n*bits/8) for i < n). */
static inline uint32_t tr_block_slot(const uint8_t *p, size_t i, int bits)
{
    if (bits == 8) return p[i];
    if (bits == 16) { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    if (bits == 32) { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    size_t o = i * (size_t)bits, first = o >> 3, last = (o + (size_t)bits - 1) >> 3;
    uint64_t v = 0;
    memcpy(&v, p + first, last - first + 1);
    return (uint32_t)((v >> (o & 7)) & ((UINT64_C(1) << bits) - 1));
}

/* Entry i of a weights BLOB. */

static inline float tr_block_weight(const uint8_t *p, size_t i, int fmt)
{
    if (fmt == TR_WEIGHTS_F16) { uint16_t h; memcpy(&h, p + 2 * i, 2); return tr_f16_to_f32(h); }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

/* The header of one stored block and its run's shape, for checking. */
typedef struct {
    int64_t pos0, npos, ops, cape_m, n;   /* columns of the row */
    int64_t slots_len, weights_len;      /* bytes of the two BLOBs (-1: not a BLOB) */
} tr_block_hdr;

typedef struct {
    int64_t L, H, M, K, n_tokens;        /* n_tokens < 0: positions unbounded */
    int slot_bits, weight_fmt;
    /* the run's per-layer CAPE masks (L entries; bit n: head n is a CAPE
     * head), or NULL where the caller has not got them: then cape_m is
     * only checked to be 0 or M */
    const uint64_t *cape_mask;
} tr_block_run;

/* NULL when hdr is consistent with its run (given layer and head); else a
 * short description of the first problem, written into buf. */
const char *tr_block_check(const tr_block_hdr *hdr, int64_t layer, int64_t head, const tr_block_run *run,
                           char *buf, size_t cap);

#endif
