/* test_modelfile.c — model.bin and safetensors: byte layout as documented,
 * bit-exact round trips, the checksum against a plain re-implementation,
 * every kind of corrupt file (library and CLI), init/info/convert. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_checksum.h"
#include "rn_modelfile.h"
#include "rn_modelinfo.h"
#include "rn_rng.h"
#include "th.h"

/* A small config: V=257, D=16, L=2, H=2, M = 4^2 = 16, K=3. */
static void small_cfg(rn_config *c, int tied)
{
    rn_config_default(c);
    c->d_model = 16;
    c->n_layers = 2;
    c->n_heads = 2;
    c->d_p = 4;
    c->order = 2;
    c->d_v = 4;
    c->top_k = 3;
    c->d_ff = 24;
    c->gamma = 0.75f;
    c->tau = 0.5f;
    c->eps = 1e-6f;
    c->norm_eps = 1e-5f;
    c->tie_embeddings = tied;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 3;
    c->cape_mask[1] = 2;
}

/* Save a random small model to path (and keep a copy of its block). */
static rn_real *write_model(const char *path, int tied, int64_t *n_block)
{
    rn_config c;
    small_cfg(&c, tied);
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_FATAL(rn_model_create_random(&m, &c, 42, &err) == RN_OK);
    /* make the α's non-zero so they are really carried */
    for (int l = 0; l < c.n_layers; l++)
        for (int h = 0; h < c.n_heads; h++) { m.w.layer[l].q_alpha[h] = 0.1f * (float)(h + 1); m.w.layer[l].k_alpha[h] = -0.2f * (float)(l + 1); }
    CU_ASSERT_FATAL(rn_model_save(&m, path, &err) == RN_OK);
    rn_real *copy = malloc((size_t)m.n_block * sizeof *copy);
    memcpy(copy, m.params, (size_t)m.n_block * sizeof *copy);
    *n_block = m.n_block;
    rn_model_free(&m);
    return copy;
}

static uint32_t rd32(const unsigned char *b, size_t at) { return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24; }
static uint64_t rd64(const unsigned char *b, size_t at) { return rd32(b, at) | (uint64_t)rd32(b, at + 4) << 32; }
static void wr32(unsigned char *b, size_t at, uint32_t v) { for (int i = 0; i < 4; i++) b[at + i] = (unsigned char)(v >> (8 * i)); }
static void wr64(unsigned char *b, size_t at, uint64_t v) { for (int i = 0; i < 8; i++) b[at + i] = (unsigned char)(v >> (8 * i)); }

/* The checksum as docs/model-format.md defines it, written the plain way:
 * assemble each word byte by byte, keep the lanes in an array. */
static uint64_t ref_checksum(const unsigned char *p, size_t n)
{
    const uint64_t P = 0x100000001b3ull, B = 0xcbf29ce484222325ull;
    uint64_t lane[4] = { B, B + 1, B + 2, B + 3 };
    for (size_t j = 0; j * 8 < n; j++) {
        uint64_t w = 0;
        for (size_t k = 0; k < 8 && j * 8 + k < n; k++) w |= (uint64_t)p[j * 8 + k] << (8 * k);
        uint64_t x = (lane[j % 4] ^ w) * P;
        lane[j % 4] = (x << 31) | (x >> 33);
    }
    uint64_t r = B;
    for (int i = 0; i < 4; i++) r = (r ^ lane[i]) * P;
    r ^= (uint64_t)n;
    r ^= r >> 33; r *= 0xff51afd7ed558ccdull; r ^= r >> 33; r *= 0xc4ceb53fe63bc4bbull; r ^= r >> 33;
    return r;
}

TH_TEST(test_checksum, "checksum equals the documented definition")
{
    unsigned char buf[203];
    rn_rng rng;
    rn_rng_seed(&rng, 5);
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)rn_rng_below(&rng, 256);
    for (size_t n = 0; n <= sizeof buf; n++) CU_ASSERT_EQUAL(rn_checksum64(buf, n), ref_checksum(buf, n));
    /* every single-bit change is seen */
    uint64_t h = rn_checksum64(buf, 64);
    int missed = 0;
    for (int bit = 0; bit < 64 * 8; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        missed += rn_checksum64(buf, 64) == h;
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    CU_ASSERT_EQUAL(missed, 0);
    /* length matters even for zero bytes */
    unsigned char z[16] = {0};
    CU_ASSERT_NOT_EQUAL(rn_checksum64(z, 8), rn_checksum64(z, 16));
}

/* The header fields sit where docs/model-format.md says, and the block is
 * the model's block byte for byte. */
TH_TEST(test_bin_layout, "model.bin byte layout and mmap load")
{
    char path[512];
    snprintf(path, sizeof path, "%s", th_path("layout.bin"));
    int64_t nb;
    rn_real *block = write_model(path, 1, &nb);
    size_t len;
    unsigned char *f = (unsigned char *)th_read_file(path, &len);
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT_EQUAL(memcmp(f, "RAMNETMB", 8), 0);
    CU_ASSERT_EQUAL(rd32(f, 8), 1);
    CU_ASSERT_EQUAL(rd32(f, 12), 2176);
    CU_ASSERT_EQUAL(rd64(f, 16), (uint64_t)len);
    CU_ASSERT_EQUAL((uint64_t)len, 2176 + (uint64_t)nb * 4);
    CU_ASSERT_EQUAL(rd64(f, 24), (uint64_t)nb);
    CU_ASSERT_EQUAL(rd64(f, 32), ref_checksum(f + 2176, (size_t)nb * 4));
    CU_ASSERT_EQUAL(rd32(f, 40), 1);
    CU_ASSERT_EQUAL(rd32(f, 44), 1 + 11 * 2 + 1);
    const int dims[10] = { 257, 16, 2, 2, 4, 2, 8, 4, 3, 24 };
    for (int i = 0; i < 10; i++) CU_ASSERT_EQUAL(rd32(f, 48 + 4 * (size_t)i), (uint32_t)dims[i]);
    float g;
    uint32_t u = rd32(f, 88);
    memcpy(&g, &u, 4);
    CU_ASSERT_EQUAL(g, 0.75f);
    CU_ASSERT_EQUAL(rd32(f, 104), 1);
    CU_ASSERT_EQUAL(rd32(f, 108), 0);
    CU_ASSERT_EQUAL(rd64(f, 128), 3);
    CU_ASSERT_EQUAL(rd64(f, 136), 2);
    CU_ASSERT_EQUAL(rd64(f, 144), 0);
    CU_ASSERT_EQUAL(memcmp(f + 2176, block, (size_t)nb * 4), 0);

    rn_model m;
    rn_error err = {0};
    CU_ASSERT_FATAL(rn_model_load(&m, path, &err) == RN_OK);
    CU_ASSERT_PTR_NOT_NULL(m.map);
    CU_ASSERT_PTR_NULL(m.owned);
    CU_ASSERT_EQUAL((uintptr_t)m.params % 64, 0);
    CU_ASSERT_EQUAL(m.n_block, nb);
    CU_ASSERT_EQUAL(memcmp(m.params, block, (size_t)nb * 4), 0);
    CU_ASSERT_EQUAL(rn_model_checksum(&m), ref_checksum((const unsigned char *)block, (size_t)nb * 4));
    CU_ASSERT_EQUAL(m.cfg.top_k, 3);
    CU_ASSERT_EQUAL(m.cfg.tau, 0.5f);
    CU_ASSERT_EQUAL(m.cfg.cape_mask[1], 2);
    CU_ASSERT_PTR_EQUAL(m.w.lm_head, m.w.embed);
    CU_ASSERT_EQUAL(m.w.layer[1].k_alpha[1], -0.4f);
    rn_model_free(&m);
    free(f);
    free(block);
}


/* Scan the JSON header of a safetensors file the simple way and check each
 * tensor's bytes against the block (independent of the reader). */
static void check_st_against_block(const char *path, const rn_config *c, const rn_real *block)
{
    size_t len;
    unsigned char *f = (unsigned char *)th_read_file(path, &len);
    CU_ASSERT_FATAL(f != NULL && len > 8);
    uint64_t hl = rd64(f, 0);
    CU_ASSERT_EQUAL(hl % 8, 0);
    char *json = malloc(hl + 1);
    memcpy(json, f + 8, hl);
    json[hl] = 0;
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"ramnet.cape_masks\":\"3,2\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"ramnet.gamma\":\"0.75\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"ramnet.tokenizer\":\"bytes\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"ramnet.tie_embeddings\":\"" ));
    static rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
    int n = rn_params_count_tensors(c);
    rn_params_layout(c, d);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, "\"%s\":{", d[i].name);
        char *at = strstr(json, key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        long long b = -1, e = -1, s0 = -1, s1 = -1;
        char *so = strstr(at, "\"shape\":["), *oo = strstr(at, "\"data_offsets\":[");
        CU_ASSERT_FATAL(so && oo);
        int got = d[i].ndim == 2 ? sscanf(so, "\"shape\":[%lld,%lld]", &s0, &s1) : sscanf(so, "\"shape\":[%lld]", &s0);
        CU_ASSERT_EQUAL(got, d[i].ndim);
        CU_ASSERT_EQUAL(s0, d[i].shape[0]);
        if (d[i].ndim == 2) CU_ASSERT_EQUAL(s1, d[i].shape[1]);
        CU_ASSERT_EQUAL(sscanf(oo, "\"data_offsets\":[%lld,%lld]", &b, &e), 2);
        CU_ASSERT_EQUAL(e - b, d[i].numel * 4);
        if (8 + hl + (uint64_t)e > len || memcmp(f + 8 + hl + b, block + d[i].offset, (size_t)(e - b))) bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(strstr(json, "lm_head.weight") != NULL, !c->tie_embeddings);
    free(json);
    free(f);
}

static void round_trip(int tied)
{
    char a[512], s1[512], b[512], s2[512];
    snprintf(a, sizeof a, "%s", th_path("rt_a.bin"));
    snprintf(s1, sizeof s1, "%s", th_path("rt_1.safetensors"));
    snprintf(b, sizeof b, "%s", th_path("rt_b.bin"));
    snprintf(s2, sizeof s2, "%s", th_path("rt_2.safetensors"));
    int64_t nb;
    rn_real *block = write_model(a, tied, &nb);
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(a, s1, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(s1, b, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_convert(b, s2, &err), RN_OK);
    CU_ASSERT(th_files_equal(a, b));   /* bin -> st -> bin: same bytes */
    CU_ASSERT(th_files_equal(s1, s2)); /* st -> bin -> st: same bytes */
    rn_config c;
    small_cfg(&c, tied);
    check_st_against_block(s1, &c, block);
    rn_model m;
    CU_ASSERT_FATAL(rn_model_load(&m, s1, &err) == RN_OK);
    CU_ASSERT_PTR_NOT_NULL(m.owned);
    CU_ASSERT_EQUAL(memcmp(&m.cfg, &c, sizeof c), 0);
    CU_ASSERT_EQUAL(m.n_block, nb);
    CU_ASSERT_EQUAL(memcmp(m.params, block, (size_t)nb * 4), 0);
    CU_ASSERT_EQUAL(m.w.lm_head == m.w.embed, tied);
    rn_model_free(&m);
    free(block);
}

TH_TEST(test_round_trip_tied, "round trips are bit-exact (tied)")
{ round_trip(1); }
TH_TEST(test_round_trip_untied, "round trips are bit-exact (untied)")
{ round_trip(0); }

/* A safetensors file written by "another tool": tensors in reverse order,
 * whitespace, extra non-ramnet metadata, floats spelled differently. */
TH_TEST(test_foreign_safetensors, "foreign safetensors (order, spacing, spelling)")
{
    rn_config c;
    small_cfg(&c, 0);
    rn_model src;
    rn_error err = {0};
    CU_ASSERT_FATAL(rn_model_create_random(&src, &c, 9, &err) == RN_OK);
    static rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
    int n = rn_params_count_tensors(&c);
    rn_params_layout(&c, d);
    size_t cap = 1 << 16, hl = 0;
    char *json = malloc(cap);
    hl += (size_t)snprintf(json + hl, cap - hl,
        "{\n  \"__metadata__\" : {\"format\": \"pt\", \"ramnet.tokenizer\":\"bytes\", \"ramnet.cape_masks\":\"3, 2\","
        " \"ramnet.vocab_size\":\"257\",\"ramnet.d_model\":\"16\",\"ramnet.n_layers\":\"2\",\"ramnet.n_heads\":\"2\","
        "\"ramnet.d_p\":\"4\",\"ramnet.order\":\"2\",\"ramnet.d_v\":\"4\",\"ramnet.top_k\":\"3\",\"ramnet.d_ff\":\"24\","
        "\"ramnet.gamma\":\"7.5e-1\",\"ramnet.tau\":\"0.50\",\"ramnet.eps\":\"0.000001\",\"ramnet.norm_eps\":\"1e-5\","
        "\"ramnet.tie_embeddings\":\"0\"}");
    uint64_t at = 0;
    for (int i = n - 1; i >= 0; i--) {
        uint64_t bytes = (uint64_t)d[i].numel * 4;
        hl += (size_t)snprintf(json + hl, cap - hl, ",\n  \"%s\": { \"data_offsets\": [%" PRIu64 ", %" PRIu64 "], \"shape\": [%" PRId64 "%s%.0" PRId64 "], \"dtype\": \"F32\" }",
                               d[i].name, at, at + bytes, d[i].shape[0], d[i].ndim == 2 ? ", " : "", d[i].ndim == 2 ? d[i].shape[1] : 0);
        at += bytes;
    }
    hl += (size_t)snprintf(json + hl, cap - hl, "\n}\n");
    size_t flen = 8 + hl + at;
    unsigned char *f = malloc(flen);
    wr64(f, 0, hl);
    memcpy(f + 8, json, hl);
    size_t pos = 8 + hl;
    for (int i = n - 1; i >= 0; i--) {
        memcpy(f + pos, src.params + d[i].offset, (size_t)d[i].numel * 4);
        pos += (size_t)d[i].numel * 4;
    }
    const char *p = th_path("foreign.safetensors");
    CU_ASSERT_FATAL(th_write_file(p, f, flen) == 0);
    rn_model m;
    int rc = rn_model_load(&m, p, &err);
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    if (rc) printf("%s\n", err.msg);
    CU_ASSERT_EQUAL(memcmp(&m.cfg, &c, sizeof c), 0);
    CU_ASSERT_EQUAL(memcmp(m.params, src.params, (size_t)src.n_block * 4), 0);
    CU_ASSERT_EQUAL(rn_model_checksum(&m), rn_model_checksum(&src));
    rn_model_free(&m);
    rn_model_free(&src);
    free(f);
    free(json);
}

/* ---------- corrupt model.bin ---------- */

static unsigned char *g_good;
static size_t g_good_len;

static void load_good_bin(void)
{
    if (g_good) return;
    int64_t nb;
    char path[512];
    snprintf(path, sizeof path, "%s", th_path("good.bin"));
    free(write_model(path, 1, &nb));
    g_good = (unsigned char *)th_read_file(path, &g_good_len);
}

/* Load bytes (a copy of the good file, patched by the caller) and expect
 * RN_EINPUT with a message containing want (and the file name). */
static void expect_bad(const char *name, const unsigned char *bytes, size_t len, const char *want)
{
    char path[512];
    snprintf(path, sizeof path, "%s", th_path(name));
    CU_ASSERT_FATAL(th_write_file(path, bytes, len) == 0);
    rn_model m;
    rn_error err = {0};
    int rc = rn_model_load(&m, path, &err);
    CU_ASSERT_EQUAL(rc, RN_EINPUT);
    int ok = rc == RN_EINPUT && strstr(err.msg, want) && strstr(err.msg, path) && !strchr(err.msg, '\n');
    if (!ok) printf("\n  %s: rc %d, message '%s' (wanted '%s')\n", name, rc, err.msg, want);
    CU_ASSERT(ok);
    if (rc == RN_OK) rn_model_free(&m);
}

static unsigned char *patched(void)
{
    load_good_bin();
    unsigned char *b = malloc(g_good_len + 64);
    memcpy(b, g_good, g_good_len);
    return b;
}

static void fix_checksum(unsigned char *b, size_t len)
{
    wr64(b, 32, ref_checksum(b + 2176, len - 2176));
}

TH_TEST(test_bad_bin, "corrupt model.bin files")
{
    unsigned char *b;
    size_t n;
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_EQUAL(rn_model_load(&m, th_path("no-such-file.bin"), &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cannot open"));
    expect_bad("empty.bin", (const unsigned char *)"", 0, "empty file");
    b = patched(); n = g_good_len;
    expect_bad("short.bin", b, 100, "truncated header");
    expect_bad("trunc.bin", b, n - 1, "truncated");
    expect_bad("trunc2.bin", b, 3000, "truncated");
    memset(b + n, 0, 8);
    expect_bad("trailing.bin", b, n + 8, "trailing bytes");
    b[0] = 'X';
    expect_bad("magic.bin", b, n, "bad magic");
    free(b);
    expect_bad("text.bin", (const unsigned char *)"hello", 5, "bad magic");
#define PATCH32(file, at, val, want) do { b = patched(); wr32(b, at, (uint32_t)(val)); expect_bad(file, b, n, want); free(b); } while (0)
    PATCH32("version.bin", 8, 3, "unsupported format version 3");
    PATCH32("version2.bin", 8, 2, "header size 2176 is not 2432"); /* version 2 is the SentencePiece header */
    PATCH32("tokspm.bin", 108, 2, "SentencePiece models are version 2");
    PATCH32("hdrsize.bin", 12, 4096, "header size");
    PATCH32("dtype.bin", 40, 4, "unknown parameter dtype 4");
    PATCH32("dtype16.bin", 40, 2, "disagrees with its parameter count"); /* bf16: half the bytes */
    PATCH32("reserved.bin", 116, 1, "reserved");
    PATCH32("dmodel0.bin", 52, 0, "d_model must be > 0");
    PATCH32("nheadsneg.bin", 60, (uint32_t)-3, "n_heads must be > 0");
    PATCH32("vocab0.bin", 48, 0, "vocab_size must be > 0");
    PATCH32("dff0.bin", 84, 0, "d_ff must be > 0");
    PATCH32("dk0.bin", 72, 0, "d_k must be > 0");
    PATCH32("order40.bin", 68, 40, "exceeds 2^31");
    PATCH32("topk.bin", 80, 17, "top_k = 17 exceeds M = 16");
    PATCH32("dk.bin", 72, 7, "d_k = 7 but order x d_p");
    PATCH32("nlayers.bin", 56, 3, "parameter block");
    PATCH32("ntensors.bin", 44, 99, "99 tensors");
    PATCH32("filesize.bin", 16, 123, "file size");
    PATCH32("tie.bin", 104, 7, "tie_embeddings");
    PATCH32("tok.bin", 108, 9, "tokenizer");
    PATCH32("gammanan.bin", 88, 0x7fc00000u, "gamma must be a finite");
    PATCH32("tauinf.bin", 92, 0x7f800000u, "tau must be a finite");
    PATCH32("tau0.bin", 92, 0, "tau must be a finite number > 0");
    PATCH32("epsneg.bin", 96, 0xbf800000u, "eps must be a finite");
    PATCH32("normeps.bin", 100, 0xff800000u, "norm_eps must be a finite");
    /* dimensions whose products overflow: V = D = 2^30 */
    b = patched(); wr32(b, 48, 1u << 30); wr32(b, 52, 1u << 30); expect_bad("overflow.bin", b, n, "overflow"); free(b);
    b = patched(); wr64(b, 128, 4); expect_bad("mask.bin", b, n, "names a head"); free(b);
    b = patched(); wr64(b, 128 + 8 * 5, 1); expect_bad("mask5.bin", b, n, "layer 5"); free(b);
    b = patched(); b[n - 7] ^= 0x10; expect_bad("flip.bin", b, n, "checksum mismatch"); free(b);
    b = patched(); b[2176] ^= 1; expect_bad("flip0.bin", b, n, "checksum mismatch"); free(b);
    b = patched(); wr64(b, 32, rd64(b, 32) + 1); expect_bad("sum.bin", b, n, "checksum mismatch"); free(b);
    /* layers.0.attn.q_alpha holds H = 2 floats and is padded to 16: a
     * non-zero float in its padding */
    {
        rn_config c;
        small_cfg(&c, 1);
        static rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
        rn_params_layout(&c, d);
        CU_ASSERT_STRING_EQUAL_FATAL(d[5].name, "layers.0.attn.q_alpha");
        b = patched(); b[2176 + 4 * (d[5].offset + 3) + 1] = 1; fix_checksum(b, n);
        expect_bad("pad.bin", b, n, "padding after tensor layers.0.attn.q_alpha");
        free(b);
    }
    /* with the checksum fixed, the same edit inside a tensor loads fine */
    b = patched(); b[2176 + 4 * 4000] ^= 1; fix_checksum(b, n);
    CU_ASSERT_FATAL(th_write_file(th_path("fixed.bin"), b, n) == 0);
    CU_ASSERT_EQUAL(rn_model_load(&m, th_path("fixed.bin"), &err), RN_OK);
    rn_model_free(&m);
    free(b);
#undef PATCH32
}

/* ---------- corrupt safetensors ---------- */

static char *g_st_json;        /* the good header (NUL-terminated) */
static unsigned char *g_st_data;
static size_t g_st_hlen, g_st_dlen;

static void load_good_st(int tied)
{
    free(g_st_json);
    free(g_st_data);
    int64_t nb;
    char bin[512], st[512];
    snprintf(bin, sizeof bin, "%s", th_path("st_src.bin"));
    snprintf(st, sizeof st, "%s", th_path("st_good.safetensors"));
    free(write_model(bin, tied, &nb));
    rn_error err = {0};
    CU_ASSERT_FATAL(rn_model_convert(bin, st, &err) == RN_OK);
    size_t len;
    unsigned char *f = (unsigned char *)th_read_file(st, &len);
    g_st_hlen = (size_t)rd64(f, 0);
    g_st_json = malloc(g_st_hlen + 1);
    memcpy(g_st_json, f + 8, g_st_hlen);
    g_st_json[g_st_hlen] = 0;
    g_st_dlen = len - 8 - g_st_hlen;
    g_st_data = malloc(g_st_dlen + 64);
    memcpy(g_st_data, f + 8 + g_st_hlen, g_st_dlen);
    memset(g_st_data + g_st_dlen, 0, 64);
    free(f);
}

/* Write a safetensors file from the good one with the first occurrence of
 * find replaced by repl in the JSON, the data section resized by ddata bytes,
 * and expect RN_EINPUT mentioning want. */
static void st_bad(const char *name, const char *find, const char *repl, long ddata, const char *want)
{
    const char *at = find ? strstr(g_st_json, find) : NULL;
    if (find && !at) {
        printf("\n  %s: '%s' not found in the header\n", name, find);
        CU_FAIL("pattern not found");
        return;
    }
    size_t hl = find ? g_st_hlen - strlen(find) + strlen(repl) : g_st_hlen;
    size_t dl = (size_t)((long)g_st_dlen + ddata);
    unsigned char *f = malloc(8 + hl + dl);
    wr64(f, 0, hl);
    if (find) {
        size_t pre = (size_t)(at - g_st_json);
        memcpy(f + 8, g_st_json, pre);
        memcpy(f + 8 + pre, repl, strlen(repl));
        memcpy(f + 8 + pre + strlen(repl), at + strlen(find), g_st_hlen - pre - strlen(find));
    } else
        memcpy(f + 8, g_st_json, hl);
    memcpy(f + 8 + hl, g_st_data, dl);
    expect_bad(name, f, 8 + hl + dl, want);
    free(f);
}

TH_TEST(test_bad_safetensors, "corrupt safetensors files")
{
    load_good_st(1);
    char buf[256], rep[256];
    /* header length larger than the file */
    {
        size_t len = 8 + g_st_hlen + g_st_dlen;
        unsigned char *f = malloc(len);
        wr64(f, 0, len);
        memcpy(f + 8, g_st_json, g_st_hlen);
        memcpy(f + 8 + g_st_hlen, g_st_data, g_st_dlen);
        expect_bad("hlen.safetensors", f, len, "header length");
        wr64(f, 0, UINT64_MAX);
        expect_bad("hlen2.safetensors", f, len, "header length");
        expect_bad("tiny.safetensors", f, 5, "truncated");
        free(f);
    }
    expect_bad("empty.safetensors", (const unsigned char *)"", 0, "empty file");
    st_bad("json1.safetensors", "\"__metadata__\":{", "\"__metadata__\" {", 0, "expected ':'");
    st_bad("json2.safetensors", "{\"__metadata__\"", "[\"__metadata__\"", 0, "malformed");
    st_bad("json3.safetensors", "\"ramnet.d_model\":\"16\",", "\"ramnet.d_model\":16,", 0, "must be strings");
    st_bad("json4.safetensors", "\"shape\":[257,16]", "\"shape\":[257,16.0]", 0, "integer");
    st_bad("json5.safetensors", "\"shape\":[257,16]", "\"shape\":[257,-16]", 0, "non-negative integer");
    st_bad("json6.safetensors", "\"dtype\":\"F32\",", "\"dtype\":\"F32\",,", 0, "malformed");
    st_bad("json7.safetensors", "\"ramnet.tau\":\"0.5\"", "\"ramnet.tau\":\"0.5\x01\"", 0, "control character");
    st_bad("json8.safetensors", "}}", "}}}", 0, "malformed"); /* trailing '}' after the object */
    st_bad("meta1.safetensors", "\"ramnet.order\":\"2\",", "", 0, "missing metadata key 'ramnet.order'");
    st_bad("meta2.safetensors", "\"ramnet.order\":\"2\"", "\"ramnet.orderx\":\"2\"", 0, "unknown metadata key 'ramnet.orderx'");
    st_bad("meta3.safetensors", "\"ramnet.order\":\"2\"", "\"ramnet.order\":\"two\"", 0, "not an integer");
    st_bad("meta4.safetensors", "\"ramnet.top_k\":\"3\"", "\"ramnet.top_k\":\"30\"", 0, "top_k = 30 exceeds M = 16");
    st_bad("meta5.safetensors", "\"ramnet.tokenizer\":\"bytes\"", "\"ramnet.tokenizer\":\"bpe\"", 0, "tokenizer");
    st_bad("meta6.safetensors", "\"ramnet.gamma\":\"0.75\"", "\"ramnet.gamma\":\"nan\"", 0, "gamma");
    st_bad("meta7.safetensors", "\"__metadata__\":{", "\"__metadata__\":{\"ramnet.d_p\":\"4\",", 0, "duplicate metadata key");
    st_bad("dtype.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"F64\"", 0, "has dtype F64, expected F32, BF16 or F16");
    st_bad("dtype16.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"F16\"", 0, "span 16448 bytes but its shape needs 8224");
    st_bad("shape.safetensors", "\"shape\":[257,16]", "\"shape\":[16,257]", 0, "has shape [16,257], expected [257,16]");
    st_bad("shape2.safetensors", "\"shape\":[257,16]", "\"shape\":[4112]", 0, "has shape [4112]");
    /* the first tensor is embed.weight: [0,16448] */
    st_bad("off1.safetensors", "[0,16448]", "[16448,0]", 0, "end 0 < begin 16448");
    st_bad("off2.safetensors", "[0,16448]", "[0,16444]", 0, "span 16444 bytes but its shape needs 16448");
    st_bad("off3.safetensors", "[16448,16512]", "[16444,16508]", 0, "overlap");
    st_bad("off4.safetensors", NULL, NULL, -4, "beyond the");
    st_bad("off5.safetensors", NULL, NULL, 4, "cover");
    st_bad("off6.safetensors", "\"data_offsets\":[0,16448]", "\"data_offsets\":[0,16448,3]", 0, "array too long");
    /* gap: move the last tensor (norm.weight, 64 bytes) 64 bytes later */
    {
        const char *last = strstr(g_st_json, "\"norm.weight\"");
        long long b0 = 0, e0 = 0;
        CU_ASSERT_FATAL(last && sscanf(strstr(last, "data_offsets"), "data_offsets\":[%lld,%lld]", &b0, &e0) == 2);
        snprintf(buf, sizeof buf, "[%lld,%lld]", b0, e0);
        snprintf(rep, sizeof rep, "[%lld,%lld]", b0 + 64, e0 + 64);
        st_bad("gap.safetensors", buf, rep, 64, "gap");
    }
    st_bad("missing.safetensors", "\"norm.weight\"", "\"xnorm.weight\"", 0, "unknown tensor 'xnorm.weight'");
    st_bad("extra.safetensors", "\"norm.weight\"", "\"lm_head.weight\"", 0, "lm_head.weight is present but ramnet.tie_embeddings = 1");
    st_bad("dup.safetensors", "\"norm.weight\"", "\"embed.weight\"", 0, "listed twice");
    st_bad("field.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"F32\",\"foo\":1", 0, "unknown field 'foo'");
    /* a missing tensor: drop it from the header and its bytes from the data */
    st_bad("missing2.safetensors", "\"ramnet.tie_embeddings\":\"1\"", "\"ramnet.tie_embeddings\":\"0\"", 0,
           "lm_head.weight is missing but ramnet.tie_embeddings = 0");
    /* an untied file without its lm_head bytes */
    load_good_st(0);
    {
        const char *lm = strstr(g_st_json, ",\"lm_head.weight\"");
        CU_ASSERT_FATAL(lm != NULL);
        const char *end = strchr(lm + 1, '}') + 1;
        char cut[512];
        snprintf(cut, sizeof cut, "%.*s", (int)(end - lm), lm);
        st_bad("nolm.safetensors", cut, "", -(257 * 16 * 4), "lm_head.weight is missing");
        /* and one that drops a layer tensor instead */
        const char *q = strstr(g_st_json, ",\"layers.1.mlp_norm.weight\"");
        CU_ASSERT_FATAL(q != NULL);
        end = strchr(q + 1, '}') + 1;
        snprintf(cut, sizeof cut, "%.*s", (int)(end - q), q);
        st_bad("notensor.safetensors", cut, "", 0, "missing tensor 'layers.1.mlp_norm.weight'");
    }
    free(g_st_json);
    free(g_st_data);
    g_st_json = NULL;
    g_st_data = NULL;
}

/* ---------- CLI ---------- */

/* stderr of the last run is exactly one line */
static int one_line_err(void) { return th_count_lines(th_err()) == 1; }

TH_TEST(test_cli_init_info, "CLI init and info")
{
    const char *bin = th_bin();
    char out[512];
    snprintf(out, sizeof out, "%s", th_path("cli_tiny.bin"));
    CU_ASSERT_EQUAL(th_run("%s init --help", bin), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "usage: ramtrace init"));
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --seed 3 --d-v 8 -o %s", bin, out), 0);
    CU_ASSERT(th_file_exists(out));
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_FATAL(rn_model_load(&m, out, &err) == RN_OK);
    CU_ASSERT_EQUAL(m.cfg.d_v, 8);       /* flag overrode the file */
    CU_ASSERT_EQUAL(m.cfg.d_model, 64);  /* from the file */
    CU_ASSERT_EQUAL(m.cfg.cape_mask[0], 15);
    CU_ASSERT_EQUAL(m.cfg.cape_mask[1], 0);
    /* the same seed gives the same weights as the library's init */
    rn_model ref;
    CU_ASSERT_FATAL(rn_model_create_random(&ref, &m.cfg, 3, &err) == RN_OK);
    CU_ASSERT_EQUAL(memcmp(ref.params, m.params, (size_t)m.n_block * 4), 0);
    rn_model_free(&ref);
    CU_ASSERT_EQUAL(th_run("%s info %s", bin, out), 0);
    const char *o = th_out();
    char want[128];
    snprintf(want, sizeof want, "checksum          %016" PRIx64, rn_model_checksum(&m));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    /* state sizes, computed here by hand: L*H*M*(d_v+1) and L*H*2K*(d_v+1) */
    long long tot = 2LL * 4 * 512 * 9, act = 2LL * 4 * 2 * 8 * 9;
    snprintf(want, sizeof want, "total state     %lld floats = %lld bytes", tot, tot * 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    snprintf(want, sizeof want, "active state    %lld floats = %lld bytes", act, act * 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "slots M         512"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "d_k             24"));
    /* params: embed V*D + per layer (2D + 2*H*dk*D + 2*H*dv*D + 2H + 3*F*D) + D */
    long long D = 64, per = 2 * D + 2 * 96 * D + 2 * 32 * D + 8 + 3 * 192 * D, np = 257 * D + 2 * per + D;
    snprintf(want, sizeof want, "parameters      %lld (", np);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    snprintf(want, sizeof want, "%lld without embeddings", np - 257 * D);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "layer 0         4/4 (all)"));
    rn_model_free(&m);
    /* safetensors output by extension, and info reads it */
    char st[512];
    snprintf(st, sizeof st, "%s", th_path("cli_tiny.safetensors"));
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --cape-masks 5,1 -o %s", bin, st), 0);
    CU_ASSERT_EQUAL(th_run("%s info %s", bin, st), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "format            safetensors"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "layer 0         2/4: 0 2"));
    /* stories15m: the sample config is valid and has the documented shape */
    rn_config c;
    rn_config_default(&c);
    CU_ASSERT_EQUAL_FATAL(rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    CU_ASSERT(c.d_model == 288 && c.n_layers == 6 && c.n_heads == 6 && c.d_ff == 768 && c.vocab_size == 32000);
    CU_ASSERT(c.d_v == 48 && c.order == 4 && c.d_p == 4 && c.top_k == 8 && c.tokenizer == RN_TOK_IDS);
    CU_ASSERT(c.cape_mask[0] == 63 && c.cape_mask[2] == 63 && c.cape_mask[3] == 0);
}

TH_TEST(test_cli_errors, "CLI bad input")
{
    const char *bin = th_bin();
    char out[512], keep[512];
    snprintf(out, sizeof out, "%s", th_path("cli_bad.bin"));
    snprintf(keep, sizeof keep, "%s", th_path("cli_keep.bin"));
    struct { const char *args, *want; } cases[] = {
        { "--top-k 600", "top_k = 600 exceeds M = 512" },
        { "--d-p 0", "d_p must be > 0" },
        { "--order 40", "exceeds 2^31" },
        { "--d-model abc", "--d-model" },
        { "--tokenizer bpe", "tokenizer" },
        { "--cape sideways", "--cape" },
        { "--bogus 3", "unknown option '--bogus'" },
        { "--gamma -1", "gamma" },
        { "--n-heads 100", "n_heads must be <= 64" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = th_run("%s init --config samples/configs/tiny.cfg %s -o %s", bin, cases[i].args, out);
        int ok = rc == 2 && one_line_err() && strstr(th_err(), cases[i].want) && !th_file_exists(out);
        if (!ok) printf("\n  init %s: rc %d, stderr '%s'\n", cases[i].args, rc, th_err());
        CU_ASSERT(ok);
    }
    CU_ASSERT_EQUAL(th_run("%s init -o %s --d-v", bin, out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--d-v needs a value"));
    CU_ASSERT(!th_file_exists(out));
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg", bin), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "-o"));
    /* a config file error names the file and line */
    const char *cfg = th_path("bad.cfg");
    char cfgp[512];
    snprintf(cfgp, sizeof cfgp, "%s", cfg);
    th_write_file(cfgp, "d_model = 32\n\nwidth = 9\n", 24);
    CU_ASSERT_EQUAL(th_run("%s init --config %s -o %s", bin, cfgp, out), 2);
    snprintf(keep, sizeof keep, "%s:3: unknown", cfgp);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), keep));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "'width'"));
    CU_ASSERT(one_line_err());
    CU_ASSERT_EQUAL(th_run("%s init --config %s -o %s", bin, th_path("none.cfg"), out), 2);
    CU_ASSERT(!th_file_exists(out));

    /* corrupt input: info and convert fail with one line; an existing output
     * is left untouched */
    snprintf(keep, sizeof keep, "%s", th_path("cli_keep.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s init -o %s", bin, keep), 0);
    size_t len;
    unsigned char *f = (unsigned char *)th_read_file(keep, &len);
    f[len - 5] ^= 0x40;
    char bad[512];
    snprintf(bad, sizeof bad, "%s", th_path("cli_corrupt.bin"));
    th_write_file(bad, f, len);
    CU_ASSERT_EQUAL(th_run("%s info %s", bin, bad), 2);
    CU_ASSERT(one_line_err());
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "checksum mismatch"));
    CU_ASSERT_EQUAL(th_run("%s convert %s %s", bin, bad, keep), 2);
    CU_ASSERT(one_line_err());
    size_t len2;
    unsigned char *g = (unsigned char *)th_read_file(keep, &len2);
    f[len - 5] ^= 0x40;
    CU_ASSERT(g && len2 == len && !memcmp(f, g, len)); /* untouched */
    free(g);
    th_write_file(bad, f, len / 2);
    CU_ASSERT_EQUAL(th_run("%s convert %s %s", bin, bad, th_path("cli_out.safetensors")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "truncated"));
    CU_ASSERT(!th_file_exists(th_path("cli_out.safetensors")));
    CU_ASSERT_EQUAL(th_run("%s info %s", bin, th_path("missing.bin")), 2);
    CU_ASSERT(one_line_err());
    CU_ASSERT_EQUAL(th_run("%s convert %s", bin, keep), 2);
    CU_ASSERT_EQUAL(th_run("%s convert --help", bin), 0);
    CU_ASSERT_EQUAL(th_run("%s info --help", bin), 0);
    /* a round trip through the CLI */
    CU_ASSERT_EQUAL(th_run("%s convert %s %s && %s convert %s %s", bin, keep, th_path("cli_rt.safetensors"),
                           bin, th_path("cli_rt.safetensors"), th_path("cli_rt.bin")), 0);
    g = (unsigned char *)th_read_file(th_path("cli_rt.bin"), &len2);
    CU_ASSERT(g && len2 == len && !memcmp(f, g, len));
    free(g);
    free(f);
    /* no temp files left behind in the scratch directory */
    CU_ASSERT_EQUAL(th_run("ls %s | grep -c '\\.tmp\\.'", th_tmpdir()), 1);
}

static int cleanup(void)
{
    free(g_good);
    g_good = NULL;
    return 0;
}

TH_SUITE(modelfile, NULL, cleanup);
