/* test_storage.c — model files in bf16/fp16 storage (rn_storage.h,
 * rn_fp16.h): the fp16 conversions against independent computations on
 * every fp16 value, model.bin and safetensors written narrowed and loaded
 * back exactly as the rounded float32 values, lossless conversions between
 * the formats, the header checksum over the stored bytes, and corrupt or
 * lying 16-bit files refused with one line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "rn_bf16.h"
#include "rn_checksum.h"
#include "rn_fp16.h"
#include "rn_modelfile.h"
#include "rn_rng.h"
#include "rn_storage.h"

TH_SUITE(storage, NULL, NULL);

/* fp16 bits h as a double, from the definition (sign, 5-bit exponent of
 * bias 15, 10-bit fraction; exponent 0: subnormal). */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

TH_TEST(test_fp16_exhaustive, "fp16: every value widens exactly and rounds to nearest even")
{
    int bad_widen = 0, bad_round = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        int e = (h >> 10) & 31;
        float f = rn_fp16_to_f32((uint16_t)h);
        if (e == 31) {
            if ((h & 1023) ? !isnan(f) : !isinf(f) || (signbit(f) != 0) != (h >> 15)) bad_widen++;
            if (rn_fp16_from_f32(f) != h) bad_round++; /* infinities and every NaN come back as they were */
            uint16_t bh = (uint16_t)h, back;           /* and so does every bf16 value */
            float bf = rn_bf16_to_f32(bh);
            rn_storage_narrow(RN_STORE_BF16, &bf, &back, 1);
            if (back != bh) bad_round++;
            continue;
        }
        if ((double)f != half_value((uint16_t)h) || (signbit(f) != 0) != (h >> 15)) bad_widen++;
        if (rn_fp16_from_f32(f) != h) bad_round++; /* exact values come back */
        uint16_t bh = (uint16_t)h, back; /* and h as a bf16 (so all 65536 bf16 patterns are checked) */
        float bf = rn_bf16_to_f32(bh);
        rn_storage_narrow(RN_STORE_BF16, &bf, &back, 1);
        if (back != bh) bad_round++;
        /* the midpoint to the next value up (in magnitude) and its neighbours */
        uint16_t up = (uint16_t)(h + 1);
        double lo = fabs(half_value((uint16_t)h)), hi = ((up >> 10) & 31) == 31 ? 65536.0 : fabs(half_value(up));
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
        if ((double)mid != (lo + hi) / 2) { bad_round++; continue; }
        if (h & 0x8000) mid = -mid;
        uint16_t even = (h & 1) ? up : (uint16_t)h;
        if (rn_fp16_from_f32(mid) != even) bad_round++;
        if (rn_fp16_from_f32(nextafterf(mid, 0)) != h) bad_round++;
        if (rn_fp16_from_f32(nextafterf(mid, mid > 0 ? INFINITY : -INFINITY)) != up) bad_round++;
    }
    CU_ASSERT_EQUAL(bad_widen, 0);
    CU_ASSERT_EQUAL(bad_round, 0);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(65519.99f), 0x7bff);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(65520.0f), 0x7c00);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(-1e30f), 0xfc00);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(0x1p-25f), 0x0000);          /* a tie, to the even 0 */
    CU_ASSERT_EQUAL(rn_fp16_from_f32(nextafterf(0x1p-25f, 1)), 0x0001);
    CU_ASSERT_EQUAL(rn_fp16_from_f32(1e-30f), 0x0000);
    CU_ASSERT(isnan(rn_fp16_to_f32(rn_fp16_from_f32(NAN))));
#ifdef __FLT16_MAX__
    /* and the compiler's own conversion, where it has one, on random floats */
    rn_rng r;
    rn_rng_seed(&r, 17);
    int differ = 0;
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)rn_rng_u64(&r);
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f)) continue;
        _Float16 c = (_Float16)f;
        uint16_t cb;
        memcpy(&cb, &c, 2);
        differ += cb != rn_fp16_from_f32(f);
    }
    CU_ASSERT_EQUAL(differ, 0);
#endif
}

/* A random small model (V=257, D=16, 2 layers) in memory. */
static void small_model(rn_model *m, uint64_t seed)
{
    rn_config c;
    rn_config_default(&c);
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.d_p = 4;
    c.order = 2;
    c.d_v = 4;
    c.top_k = 3;
    c.d_ff = 24;
    c.cape_mask[0] = 3;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, &c, seed, &err), RN_OK);
}

/* Whether every parameter of b is a's rounded to storage s (padding zero
 * in both). */
static int rounded_equal(const rn_model *a, const rn_model *b, int s)
{
    if (a->n_block != b->n_block) return 0;
    for (int64_t i = 0; i < a->n_block; i++) {
        float want = s == RN_STORE_BF16 ? rn_bf16_round_f32(a->params[i]) : rn_fp16_to_f32(rn_fp16_from_f32(a->params[i]));
        if (memcmp(&want, &b->params[i], 4)) return 0;
    }
    return 1;
}

static void storage_round_trip(int s)
{
    const char *name = rn_storage_name(s);
    char f32[512], bin[512], st[512], bin2[512], st2[512];
    snprintf(f32, sizeof f32, "%s", th_path("sto_f32.bin"));
    snprintf(bin, sizeof bin, "%s/sto_%s.bin", th_tmpdir(), name);
    snprintf(st, sizeof st, "%s/sto_%s.safetensors", th_tmpdir(), name);
    snprintf(bin2, sizeof bin2, "%s/sto_%s_2.bin", th_tmpdir(), name);
    snprintf(st2, sizeof st2, "%s/sto_%s_2.safetensors", th_tmpdir(), name);
    rn_model m, l;
    rn_error err;
    small_model(&m, 3);
    m.params[5] = 1.00390625f + 0x1p-9f; /* a tie for bf16 (rounds to even, up) */
    CU_ASSERT_EQUAL_FATAL(rn_model_save(&m, f32, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert_as(f32, bin, s, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&l, bin, &err), RN_OK);
    CU_ASSERT_EQUAL(l.storage, s);
    CU_ASSERT(rounded_equal(&m, &l, s));
    rn_model_free(&l);
    /* the file: dtype, size and checksum over the stored 16-bit block */
    size_t n;
    unsigned char *b = (unsigned char *)th_read_file(bin, &n);
    CU_ASSERT_EQUAL(b[40], s + 1);
    CU_ASSERT_EQUAL(n, 2176 + 2 * (size_t)m.n_block);
    uint64_t sum = 0;
    for (int i = 7; i >= 0; i--) sum = sum << 8 | b[32 + i];
    CU_ASSERT_EQUAL(sum, rn_checksum64(b + 2176, 2 * (size_t)m.n_block));
    free(b);
    /* bin -> safetensors -> bin: the same bytes; st -> bin -> st too */
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(bin, st, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(st, bin2, &err), RN_OK);
    CU_ASSERT(th_files_equal(bin, bin2));
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(bin2, st2, &err), RN_OK);
    CU_ASSERT(th_files_equal(st, st2));
    char *j = th_read_file(st, NULL);
    char want[32];
    snprintf(want, sizeof want, "\"dtype\":\"%s\"", s == RN_STORE_BF16 ? "BF16" : "F16");
    CU_ASSERT_PTR_NOT_NULL(strstr(j + 8, want)); /* the JSON after its 8-byte length */
    CU_ASSERT_PTR_NULL(strstr(j + 8, "\"F32\""));
    free(j);
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&l, st, &err), RN_OK);
    CU_ASSERT(rounded_equal(&m, &l, s));
    rn_model_free(&l);
    /* back to float32: the rounded values, stored as float32; and to 16
     * bits again: the first 16-bit file byte for byte */
    CU_ASSERT_EQUAL_FATAL(rn_model_convert_as(bin, bin2, RN_STORE_F32, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&l, bin2, &err), RN_OK);
    CU_ASSERT_EQUAL(l.storage, RN_STORE_F32);
    CU_ASSERT(rounded_equal(&m, &l, s));
    rn_model_free(&l);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert_as(bin2, st2, s, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(st2, bin2, &err), RN_OK);
    CU_ASSERT(th_files_equal(bin, bin2));
    rn_model_free(&m);
}

TH_TEST(test_storage_bf16, "bf16 model.bin and safetensors: rounded, exact back, lossless between formats")
{
    storage_round_trip(RN_STORE_BF16);
}

TH_TEST(test_storage_fp16, "fp16 model.bin and safetensors: rounded, exact back, lossless between formats")
{
    storage_round_trip(RN_STORE_F16);
}

/* Expect loading path to fail with RN_EINPUT, one line containing want. */
static void expect_refused(const char *path, const char *want)
{
    rn_model m;
    rn_error err = { 0, "" };
    int rc = rn_model_load(&m, path, &err);
    CU_ASSERT_EQUAL(rc, RN_EINPUT);
    int ok = rc == RN_EINPUT && strstr(err.msg, want) && !strchr(err.msg, '\n');
    if (!ok) printf("\n  %s: rc %d, message '%s' (wanted '%s')\n", path, rc, err.msg, want);
    CU_ASSERT(ok);
    if (rc == RN_OK) rn_model_free(&m);
}

/* Write b[0..n) to name, with the model.bin header checksum at 32 set to
 * that of the 16-bit block when fix. */
static const char *write_bytes(const char *name, unsigned char *b, size_t n, int fix)
{
    if (fix) {
        uint64_t s = rn_checksum64(b + 2176, n - 2176);
        for (int i = 0; i < 8; i++) b[32 + i] = (unsigned char)(s >> (8 * i));
    }
    const char *p = th_path(name);
    CU_ASSERT(th_write_file(p, b, n) == 0);
    return p;
}

TH_TEST(test_storage_corrupt, "corrupt and lying 16-bit files, and weights fp16 cannot hold")
{
    char bin[512];
    snprintf(bin, sizeof bin, "%s", th_path("sto_c.bin"));
    rn_model m;
    rn_error err;
    small_model(&m, 4);
    m.storage = RN_STORE_BF16;
    CU_ASSERT_EQUAL_FATAL(rn_model_save(&m, bin, &err), RN_OK);
    size_t n;
    unsigned char *g = (unsigned char *)th_read_file(bin, &n), *b = malloc(n + 8);
    memcpy(b, g, n);
    b[3000] ^= 1;
    expect_refused(write_bytes("sto_flip.bin", b, n, 0), "checksum mismatch");
    memcpy(b, g, n);
    expect_refused(write_bytes("sto_cut.bin", b, n - 2, 0), "truncated");
    memcpy(b, g, n);
    b[40] = 4;
    expect_refused(write_bytes("sto_dtype.bin", b, n, 0), "unknown parameter dtype 4");
    memcpy(b, g, n);
    b[40] = 1; /* claims float32: the size no longer fits the parameter count */
    expect_refused(write_bytes("sto_as_f32.bin", b, n, 0), "disagrees with its parameter count");
    memcpy(b, g, n);
    b[40] = 3; /* fp16 instead of bf16: same size, same bytes; the checksum still holds */
    const char *p = write_bytes("sto_as_f16.bin", b, n, 0);
    rn_model l;
    int lrc = rn_model_load(&l, p, &err);
    CU_ASSERT_EQUAL(lrc, RN_OK); /* a lying dtype is other numbers, not a corrupt file */
    if (lrc == RN_OK) rn_model_free(&l);
    /* a non-zero padding element of the 16-bit block (checksum fixed) */
    memcpy(b, g, n);
    rn_tensor_desc t;
    for (int i = 0; i < rn_params_count_tensors(&m.cfg); i++) { /* the first tensor followed by padding */
        rn_params_tensor(&m.cfg, i, &t);
        if (t.numel % 16) break;
    }
    CU_ASSERT_FATAL(t.numel % 16 != 0);
    b[2176 + 2 * (t.offset + t.numel) + 1] = 0x3f;
    char want[128];
    snprintf(want, sizeof want, "padding after tensor %s is not zero", t.name);
    expect_refused(write_bytes("sto_pad.bin", b, n, 1), want);
    free(b);
    free(g);
    /* a weight fp16 cannot hold: refused naming its tensor, nothing written */
    m.storage = RN_STORE_F16;
    rn_params_tensor(&m.cfg, 2, &t);
    m.params[t.offset + 1] = 1e5f;
    char out[512];
    snprintf(out, sizeof out, "%s", th_path("sto_big.bin"));
    CU_ASSERT_EQUAL(rn_model_save(&m, out, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, t.name));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fp16 cannot store"));
    CU_ASSERT(!th_file_exists(out));
    snprintf(out, sizeof out, "%s", th_path("sto_big.safetensors"));
    CU_ASSERT_EQUAL(rn_model_save(&m, out, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, t.name)); /* the same message as model.bin's */
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "holds 100000, which fp16 cannot store (largest 65504)"));
    CU_ASSERT(!th_file_exists(out));
    m.storage = RN_STORE_BF16; /* bf16 has float32's range */
    CU_ASSERT_EQUAL(rn_model_save(&m, out, &err), RN_OK);
    rn_model_free(&m);
}

TH_TEST(test_storage_safetensors, "safetensors: a wrong BF16 span, an unknown dtype, mixed dtypes")
{
    char st[512];
    snprintf(st, sizeof st, "%s", th_path("sto_m.safetensors"));
    rn_model m, l;
    rn_error err;
    small_model(&m, 5);
    m.storage = RN_STORE_BF16;
    CU_ASSERT_EQUAL_FATAL(rn_model_save(&m, st, &err), RN_OK);
    size_t n;
    char *g = th_read_file(st, &n), *b = malloc(n);
    char *at = strstr(g + 8, "\"norm.weight\":{\"dtype\":\"BF16\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    memcpy(b, g, n);
    memcpy(b + (at - g) + 24, "F64\" ", 5); /* "BF16" -> "F64" (a space keeps the length) */
    CU_ASSERT(th_write_file(st, b, n) == 0);
    expect_refused(st, "tensor 'norm.weight' has dtype F64, expected F32, BF16 or F16");
    memcpy(b, g, n);
    memcpy(b + (at - g) + 24, "F16\" ", 5); /* F16 is 2 bytes too: the same span, read as fp16 */
    CU_ASSERT(th_write_file(st, b, n) == 0);
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&l, st, &err), RN_OK);
    CU_ASSERT_EQUAL(l.storage, RN_STORE_F32); /* mixed: saved back as float32 */
    rn_model_free(&l);
    memcpy(b, g, n);
    memcpy(b + (at - g) + 24, "F32\" ", 5); /* F32 needs twice the span */
    CU_ASSERT(th_write_file(st, b, n) == 0);
    expect_refused(st, "tensor 'norm.weight': data_offsets span 32 bytes but its shape needs 64");
    free(b);
    free(g);
    rn_model_free(&m);
}

TH_TEST(test_storage_cli, "convert --storage and info on the command line")
{
    char a[512], h[512];
    snprintf(a, sizeof a, "%s", th_path("sto_cli.bin"));
    snprintf(h, sizeof h, "%s", th_path("sto_cli16.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q init --config samples/configs/tiny.cfg -o %s", th_bin(), a), 0);
    CU_ASSERT_EQUAL(th_run("%s -q convert %s %s --storage fp16", th_bin(), a, h), 0);
    CU_ASSERT_EQUAL(th_run("%s info %s", th_bin(), h), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "format            model.bin v1, storage fp16"));
    CU_ASSERT_EQUAL(th_run("%s convert %s %s --storage fp8", th_bin(), a, th_path("sto_never.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--storage: 'fp8' is not fp32, bf16 or fp16"));
    CU_ASSERT(!th_file_exists(th_path("sto_never.bin")));
    /* a 16-bit model runs: the same greedy tokens as its float32 conversion */
    char f[512], p[512];
    snprintf(f, sizeof f, "%s", th_path("sto_cli32.bin"));
    snprintf(p, sizeof p, "%s", th_path("sto_prompt.txt"));
    CU_ASSERT(th_write_file(p, "In the beginning", 16) == 0);
    CU_ASSERT_EQUAL(th_run("%s -q convert %s %s --storage fp32", th_bin(), h, f), 0);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 12 --temperature 0 --threads 1", th_bin(), f, p), 0);
    char ref[256];
    snprintf(ref, sizeof ref, "%s", th_out());
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 12 --temperature 0 --threads 1", th_bin(), h, p), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), ref);
}
