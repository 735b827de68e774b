/* tr_block.c — encoding and checking packed event blocks (tr_block.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tr_block.h"

int tr_weights_parse(const char *s)
{
    if (!s || !strcmp(s, "f32")) return s ? TR_WEIGHTS_F32 : -1;
    if (!strcmp(s, "f16")) return TR_WEIGHTS_F16;
    return -1;
}

int tr_selection_ops(const char *sel)
{
    const char *o = sel ? strstr(sel, "ops=") : NULL;
    if (!o) return 3;
    o += 4;
    if (!strncmp(o, "rw", 2) || !strncmp(o, "wr", 2)) return 3;
    return *o == 'r' ? 2 : 1;
}

const char *tr_weights_name(int fmt) { return fmt == TR_WEIGHTS_F16 ? "f16" : "f32"; }

/* Round-to-nearest-even float32 -> binary16, handling subnormals,
 * overflow to infinity and NaN (weights are in [0, 1], but the codec is
 * total). */
uint16_t tr_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31) return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) {
        if (he < -10) return (uint16_t)sign;       /* below half the smallest subnormal */
        m |= 0x800000u;                            /* implicit bit */
        int shift = 14 - he;                       /* 14..24 */
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return (uint16_t)(sign | hm);              /* a carry into the exponent is right */
    }
    uint32_t hm = m >> 13, rem = m & 0x1fffu;
    uint32_t h = sign | ((uint32_t)he << 10) | hm;
    if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) h++; /* may carry into e: still right */
    return (uint16_t)h;
}

float tr_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
    else if (e) x = sign | ((e - 15 + 127) << 23) | (m << 13);
    else if (!m) x = sign;
    else {                                        /* subnormal: normalise */
        int s = 0;
        while (!(m & 0x400u)) { m <<= 1; s++; }
        x = sign | ((uint32_t)(127 - 15 + 1 - s) << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

void tr_block_put_slots(uint8_t *dst, size_t e, const uint32_t *slot, int n, int bits)
{
    if (bits == 32) { memcpy(dst + 4 * e, slot, 4 * (size_t)n); return; }
    if (bits == 16) {
        for (int i = 0; i < n; i++) {
            uint16_t v = (uint16_t)slot[i];
            memcpy(dst + 2 * (e + (size_t)i), &v, 2);
        }
        return;
    }
    if (bits == 8) {
        for (int i = 0; i < n; i++) dst[e + (size_t)i] = (uint8_t)slot[i];
        return;
    }
    /* Read-modify-write of the (at most 5) bytes each entry spans. */
    uint64_t mask = (UINT64_C(1) << bits) - 1;
    for (int i = 0; i < n; i++) {
        size_t o = (e + (size_t)i) * (size_t)bits, first = o >> 3, len = ((o + (size_t)bits - 1) >> 3) - first + 1;
        uint64_t v = 0;
        memcpy(&v, dst + first, len);
        v = (v & ~(mask << (o & 7))) | (((uint64_t)slot[i] & mask) << (o & 7));
        memcpy(dst + first, &v, len);
    }
}

void tr_block_put_weights(uint8_t *dst, const float *w, int n, int fmt)
{
    if (fmt != TR_WEIGHTS_F16) { memcpy(dst, w, 4 * (size_t)n); return; }
    for (int i = 0; i < n; i++) {
        uint16_t h = tr_f32_to_f16(w[i]);
        memcpy(dst + 2 * i, &h, 2);
    }
}

const char *tr_block_check(const tr_block_hdr *b, int64_t layer, int64_t head, const tr_block_run *r,
                           char *buf, size_t cap)
{
    if (layer < 0 || layer >= r->L)
        snprintf(buf, cap, "layer %lld outside [0, %lld]", (long long)layer, (long long)r->L - 1);
    else if (head < 0 || head >= r->H)
        snprintf(buf, cap, "head %lld outside [0, %lld]", (long long)head, (long long)r->H - 1);
    else if (b->ops < 1 || b->ops > 3)
        snprintf(buf, cap, "op mask %lld outside [1, 3]", (long long)b->ops);
    else if (b->npos < 1 || b->npos > (1 << 24))
        snprintf(buf, cap, "position count %lld outside [1, 2^24]", (long long)b->npos);
    else if (b->pos0 < 0 || b->pos0 > INT32_MAX || (r->n_tokens >= 0 && b->pos0 + b->npos > r->n_tokens))
        snprintf(buf, cap, "%lld positions from %lld, outside the run's %lld tokens", (long long)b->npos,
                 (long long)b->pos0, (long long)r->n_tokens);
    else if (b->cape_m != 0 && b->cape_m != r->M)
        snprintf(buf, cap, "CAPE modulus %lld (not 0 or M = %lld)", (long long)b->cape_m, (long long)r->M);
    else if (r->cape_mask && (b->cape_m != 0) != (int)((r->cape_mask[layer] >> head) & 1))
        snprintf(buf, cap, "CAPE modulus %lld on a head the run's cape_masks mark %s", (long long)b->cape_m,
                 b->cape_m ? "content-only (expected 0)" : "CAPE (expected M)");
    else {
        int64_t n = b->npos * tr_block_nops(b->ops) * r->K;
        if (b->n != n)
            snprintf(buf, cap, "event count %lld, not npos x ops x K = %lld", (long long)b->n, (long long)n);
        else if (b->slots_len != tr_slot_blob_len(n, r->slot_bits))
            snprintf(buf, cap, "slots BLOB of %lld bytes, not %lld", (long long)b->slots_len,
                     (long long)tr_slot_blob_len(n, r->slot_bits));
        else if (b->weights_len != n * tr_weight_bytes(r->weight_fmt))
            snprintf(buf, cap, "weights BLOB of %lld bytes, not %lld", (long long)b->weights_len,
                     (long long)(n * tr_weight_bytes(r->weight_fmt)));
        else
            return NULL;
    }
    return buf;
}
