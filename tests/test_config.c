/* test_config.c — `key = value` config parsing (errors with line numbers,
 * the cape shorthand, comments), validation of every field, formatting
 * that parses back to the same struct, and the derived sizes against
 * hand-computed values. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rn_config.h"
#include "rn_modelinfo.h"
#include "th.h"

static int parse(rn_config *c, const char *text, rn_error *err)
{
    rn_config_default(c);
    return rn_config_parse_text(c, text, "t.cfg", NULL, NULL, err);
}

/* text must fail with RN_EINPUT and a message containing want */
static void bad(const char *text, const char *want)
{
    rn_config c;
    rn_error err = {0};
    int rc = parse(&c, text, &err);
    int ok = rc == RN_EINPUT && strstr(err.msg, want) && !strchr(err.msg, '\n');
    if (!ok) printf("\n  '%s': rc %d '%s' (wanted '%s')\n", text, rc, err.msg, want);
    CU_ASSERT(ok);
}

TH_TEST(test_parse, "key = value parsing and cape shorthand")
{
    rn_config c;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(parse(&c, "# comment\n\n  d_model = 48   # trailing\nn_heads=3\ncape_masks = 5, 1\n"
                                    "gamma = 0.5\ntokenizer = ids\nvocab_size = 100\ntie_embeddings = 0", &err), RN_OK);
    CU_ASSERT_EQUAL(c.d_model, 48);
    CU_ASSERT_EQUAL(c.n_heads, 3);
    CU_ASSERT_EQUAL(c.cape_mask[0], 5);
    CU_ASSERT_EQUAL(c.cape_mask[1], 1);
    CU_ASSERT_EQUAL(c.gamma, 0.5f);
    CU_ASSERT_EQUAL(c.tokenizer, RN_TOK_IDS);
    CU_ASSERT_EQUAL(c.tie_embeddings, 0);
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    /* cape shorthand uses the file's n_layers / n_heads wherever it appears */
    CU_ASSERT_EQUAL_FATAL(parse(&c, "cape = first:2\nn_layers = 3\nn_heads = 6\n", &err), RN_OK);
    CU_ASSERT_EQUAL(c.cape_mask[0], 63);
    CU_ASSERT_EQUAL(c.cape_mask[1], 63);
    CU_ASSERT_EQUAL(c.cape_mask[2], 0);
    CU_ASSERT_EQUAL_FATAL(parse(&c, "n_layers = 3\ncape = all\n", &err), RN_OK);
    CU_ASSERT(c.cape_mask[0] == 15 && c.cape_mask[1] == 15 && c.cape_mask[2] == 15 && c.cape_mask[3] == 0);
    CU_ASSERT_EQUAL_FATAL(parse(&c, "cape = none\n", &err), RN_OK);
    CU_ASSERT_EQUAL(c.cape_mask[0], 0);
}

TH_TEST(test_parse_errors, "parse errors name file and line")
{
    bad("d_model = 32\nwidth = 3\n", "t.cfg:2: unknown key 'width'");
    bad("\n\n\nd_model = abc\n", "t.cfg:4: d_model: 'abc' is not an integer");
    bad("d_model = 12.5\n", "t.cfg:1: d_model");
    bad("d_model = 99999999999999\n", "out of range");
    bad("gamma = fast\n", "t.cfg:1: gamma");
    bad("tau = inf\n", "tau");
    bad("d_model 32\n", "t.cfg:1: expected 'key = value'");
    bad("tokenizer = bpe\n", "tokenizer: 'bpe' is not bytes, ids or spm:FILE");
    bad("cape = most\n", "t.cfg:1: cape");
    bad("n_layers = 2\ncape = first:x\n", "t.cfg:2: cape");
    bad("cape_masks = 1;2\n", "cape_masks");
    bad("cape_masks = -1\n", "cape_masks");
    rn_config c;
    rn_error err = {0};
    rn_config_default(&c);
    CU_ASSERT_EQUAL(rn_config_load_file(&c, "no/such/file.cfg", NULL, NULL, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no/such/file.cfg"));
}

/* set key=value on the default config; validation must fail naming want */
static void invalid(const char *key, const char *value, const char *want)
{
    rn_config c;
    rn_error err = {0};
    rn_config_default(&c);
    CU_ASSERT_EQUAL_FATAL(rn_config_set(&c, key, value, &err), RN_OK);
    int rc = rn_config_validate(&c, &err);
    int ok = rc == RN_EINPUT && strstr(err.msg, want);
    if (!ok) printf("\n  %s = %s: rc %d '%s' (wanted '%s')\n", key, value, rc, err.msg, want);
    CU_ASSERT(ok);
}

TH_TEST(test_validate, "validation of every field")
{
    rn_config c;
    rn_error err = {0};
    rn_config_default(&c);
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    const char *dims[] = { "vocab_size", "d_model", "n_layers", "n_heads", "d_p", "order", "d_v", "top_k", "d_ff" };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "%s must be > 0", dims[i]);
        invalid(dims[i], "0", want);
        invalid(dims[i], "-5", want);
    }
    invalid("d_p", "1", "d_p must be >= 2");
    invalid("order", "40", "exceeds 2^31");
    invalid("order", "11", "exceeds 2^31");  /* 8^11 = 2^33 */
    invalid("top_k", "513", "top_k = 513 exceeds M = 512");
    invalid("n_heads", "65", "n_heads must be <= 64");
    invalid("n_layers", "257", "n_layers must be <= 256");
    invalid("vocab_size", "100", "bytes tokenizer needs vocab_size >= 257");
    invalid("d_ff", "2000000000", "overflow");
    invalid("gamma", "-1", "gamma");
    invalid("tau", "0", "tau");
    invalid("eps", "-1e-9", "eps");
    invalid("norm_eps", "0", "norm_eps");
    invalid("tie_embeddings", "2", "tie_embeddings must be 0 or 1");
    invalid("cape_masks", "16", "names a head");
    invalid("cape_masks", "1,1,1", "layer 2");
    /* M = 2^31 exactly is allowed: d_p = 2, order = 31 */
    rn_config_default(&c);
    c.d_p = 2;
    c.order = 31;
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_config_slots(&c), 1LL << 31);
    c.order = 32;
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_EINPUT);
}

TH_TEST(test_format_round_trip, "format parses back to the same config")
{
    rn_config a, b;
    rn_error err = {0};
    rn_config_default(&a);
    a.n_layers = 5;
    a.n_heads = 64;
    a.cape_mask[0] = ~0ull;
    a.cape_mask[3] = 0x8000000000000001ull;
    a.gamma = 0.1f;
    a.tau = 1.0f / 3.0f;
    a.eps = 1e-7f;
    a.norm_eps = 1.17549435e-38f;
    a.tokenizer = RN_TOK_IDS;
    a.vocab_size = 50257;
    a.tie_embeddings = 0;
    CU_ASSERT_EQUAL_FATAL(rn_config_validate(&a, &err), RN_OK);
    char text[8192];
    size_t n = rn_config_format(&a, text, sizeof text);
    CU_ASSERT(n > 0 && n < sizeof text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gamma = 0.1\n"));  /* shortest exact text */
    memset(&b, 0x55, sizeof b);
    rn_config_default(&b);
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&b, text, "fmt", NULL, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof a), 0);
}

/* derived sizes against the paper's Table 3 model shapes, by hand */
TH_TEST(test_sizes, "parameter and state sizes")
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 1000;
    c.d_model = 10;
    c.n_layers = 3;
    c.n_heads = 2;
    c.d_p = 4;
    c.order = 3;    /* M = 64, dk = 12 */
    c.d_v = 5;
    c.top_k = 7;
    c.d_ff = 20;
    c.tie_embeddings = 0;
    c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_config_validate(&c, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_config_dk(&c), 12);
    CU_ASSERT_EQUAL(rn_config_slots(&c), 64);
    CU_ASSERT_EQUAL(rn_config_total_state(&c), 3 * 2 * 64 * 6);
    CU_ASSERT_EQUAL(rn_config_active_state(&c), 3 * 2 * 2 * 7 * 6);
    /* count the layout's tensors one by one */
    static rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
    int nt = rn_params_count_tensors(&c);
    rn_params_layout(&c, d);
    int64_t sum = 0, emb = 0;
    for (int i = 0; i < nt; i++) {
        sum += d[i].numel;
        if (!strcmp(d[i].name, "embed.weight") || !strcmp(d[i].name, "lm_head.weight")) emb += d[i].numel;
    }
    CU_ASSERT_EQUAL(rn_config_param_count(&c), sum);
    CU_ASSERT_EQUAL(rn_config_param_count_noembed(&c), sum - emb);
    CU_ASSERT_EQUAL(emb, 2 * 1000 * 10);
}

/* Shrinking the shape after masks were set drops exactly the stale bits. */
TH_TEST(test_clip_masks, "clipping CAPE masks to a smaller shape")
{
    rn_config c;
    rn_config_default(&c);
    rn_error err;
    c.n_layers = 3;
    c.n_heads = 4;
    c.cape_mask[0] = 15;
    c.cape_mask[1] = 6;
    c.cape_mask[2] = 8;
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    c.n_heads = 2;
    c.n_layers = 2;
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_EINPUT); /* stale bits */
    rn_config_clip_masks(&c);
    CU_ASSERT_EQUAL(c.cape_mask[0], 3u);
    CU_ASSERT_EQUAL(c.cape_mask[1], 2u);
    CU_ASSERT_EQUAL(c.cape_mask[2], 0u);
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
}
