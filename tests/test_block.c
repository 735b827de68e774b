/* test_block.c — the packed block encoding (trace/tr_block.h): slots packed
 * at every width from 1 to 32 bits read back exactly whatever order they
 * were written in, a packed BLOB is exactly ceil(n*bits/8) bytes, and the
 * float16 codec rounds to nearest even and round-trips every half. */
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_block.h"

TH_SUITE(block, NULL, NULL);

TH_TEST(test_slot_bits, "slot widths: the fewest bits that hold M - 1")
{
    CU_ASSERT_EQUAL(tr_slot_bits(1), 1);
    CU_ASSERT_EQUAL(tr_slot_bits(2), 1);
    CU_ASSERT_EQUAL(tr_slot_bits(9), 4);
    CU_ASSERT_EQUAL(tr_slot_bits(256), 8);
    CU_ASSERT_EQUAL(tr_slot_bits(257), 9);
    CU_ASSERT_EQUAL(tr_slot_bits(1024), 10);
    CU_ASSERT_EQUAL(tr_slot_bits(65536), 16);
    CU_ASSERT_EQUAL(tr_slot_bits((int64_t)1 << 32), 32);
    CU_ASSERT_EQUAL(tr_slot_blob_len(16, 10), 20);
    CU_ASSERT_EQUAL(tr_slot_blob_len(3, 9), 4);
}

TH_TEST(test_pack_roundtrip, "packed slots of 1..32 bits read back exactly, written in any order")
{
    enum { N = 203 };
    uint32_t v[N], got;
    uint64_t x = 88172645463325252ull;
    for (int bits = 1; bits <= 32; bits++) {
        uint64_t mask = (UINT64_C(1) << bits) - 1;
        for (int i = 0; i < N; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            v[i] = (uint32_t)(x & mask);
        }
        size_t len = (size_t)tr_slot_blob_len(N, bits);
        uint8_t *blob = malloc(len);
        memset(blob, 0xa5, len);       /* stale bits must not leak in */
        /* groups of 7 entries, written back to front */
        for (int g = (N - 1) / 7; g >= 0; g--) {
            int e = g * 7, n = N - e < 7 ? N - e : 7;
            tr_block_put_slots(blob, (size_t)e, v + e, n, bits);
        }
        int bad = 0;
        for (int i = 0; i < N; i++) {
            got = tr_block_slot(blob, (size_t)i, bits);
            bad += got != v[i];
        }
        if (bad) fprintf(stderr, "\n%d bits: %d slots wrong\n", bits, bad);
        CU_ASSERT_EQUAL(bad, 0);
        /* rewriting one entry leaves its neighbours alone */
        uint32_t one = (uint32_t)(mask ^ v[100]);
        tr_block_put_slots(blob, 100, &one, 1, bits);
        CU_ASSERT_EQUAL(tr_block_slot(blob, 99, bits), v[99]);
        CU_ASSERT_EQUAL(tr_block_slot(blob, 100, bits), one);
        CU_ASSERT_EQUAL(tr_block_slot(blob, 101, bits), v[101]);
        free(blob);
    }
}

TH_TEST(test_f16, "float16: nearest even, subnormals, every half round-trips")
{
    CU_ASSERT_EQUAL(tr_f32_to_f16(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(tr_f32_to_f16(0.5f), 0x3800);
    CU_ASSERT_EQUAL(tr_f32_to_f16(0.0f), 0x0000);
    CU_ASSERT_EQUAL(tr_f32_to_f16(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(tr_f32_to_f16(1e6f), 0x7c00);                 /* overflow: infinity */
    CU_ASSERT_EQUAL(tr_f32_to_f16(5.9604645e-8f), 0x0001);        /* 2^-24, the smallest subnormal */
    CU_ASSERT_EQUAL(tr_f32_to_f16(2.0e-8f), 0x0000);              /* below half of it */
    CU_ASSERT_EQUAL(tr_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);   /* a tie: to even */
    CU_ASSERT_EQUAL(tr_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);   /* a tie: to even (up) */
    CU_ASSERT_EQUAL(tr_f32_to_f16(6.097555e-5f), 0x03ff);         /* the largest subnormal */
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) bad += tr_f32_to_f16(tr_f16_to_f32((uint16_t)h)) != h;
    CU_ASSERT_EQUAL(bad, 0);
    /* the relative error of a normal half is at most 2^-11 */
    float w = 0.0123456789f, r = tr_f16_to_f32(tr_f32_to_f16(w));
    CU_ASSERT((r > w ? r - w : w - r) <= w / 2048);
}
