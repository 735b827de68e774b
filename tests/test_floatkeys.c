/* test_floatkeys.c — the float hyper-parameters (gamma, tau, eps, norm_eps)
 * survive every path a config travels, bit for bit: config text
 * (rn_config_format -> rn_config_parse_text), model.bin headers, safetensors
 * metadata, `ramtrace convert` both ways.  Extreme but accepted values
 * (the smallest subnormal, the largest subnormal, FLT_MIN, FLT_MAX, -0) are
 * included; values a float cannot hold (underflow to 0, overflow) are
 * refused with a message naming the key. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_config.h"
#include "rn_modelfile.h"
#include "th.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* A small valid model config with the given hyper-parameters. */
static void cfg_with(rn_config *c, float gamma, float tau, float eps, float norm_eps)
{
    rn_config_default(c);
    c->d_model = 8;
    c->n_layers = 1;
    c->n_heads = 2;
    c->d_p = 4;
    c->order = 2;
    c->d_v = 2;
    c->top_k = 2;
    c->d_ff = 8;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 1;
    c->gamma = gamma;
    c->tau = tau;
    c->eps = eps;
    c->norm_eps = norm_eps;
}

static int same_floats(const rn_config *a, const rn_config *b)
{
    return bits(a->gamma) == bits(b->gamma) && bits(a->tau) == bits(b->tau) &&
           bits(a->eps) == bits(b->eps) && bits(a->norm_eps) == bits(b->norm_eps);
}

/* The extreme values every key must carry; 0 and -0 only where the key
 * accepts 0 (gamma, eps). */
static const float g_pos[] = { 0x1p-149f /* smallest subnormal */, 1e-40f,
                               0x1.fffffcp-127f /* largest subnormal */, FLT_MIN,
                               FLT_MAX, 0.1f, 1.0f / 3.0f, 3.0e38f };

TH_TEST(test_text_round_trip, "every float key: format then parse gives the same bits")
{
    rn_error err = {0};
    int bad = 0;
    for (size_t i = 0; i < sizeof g_pos / sizeof g_pos[0]; i++)
        for (int k = 0; k < 4; k++) {
            float v[4] = { 1.0f, 1.0f, 1e-6f, 1e-5f };
            v[k] = g_pos[i];
            rn_config c, d;
            cfg_with(&c, v[0], v[1], v[2], v[3]);
            CU_ASSERT_EQUAL_FATAL(rn_config_validate(&c, &err), RN_OK);
            char text[8192];
            rn_config_format(&c, text, sizeof text);
            rn_config_default(&d);
            int rc = rn_config_parse_text(&d, text, "fmt", NULL, NULL, &err);
            if (rc || !same_floats(&c, &d) || memcmp(&c, &d, sizeof c)) {
                printf("\n  key %d value %a: rc %d '%s'\n", k, (double)g_pos[i], rc, err.msg);
                bad++;
            }
        }
    /* -0 for the keys that accept 0 */
    rn_config c, d;
    cfg_with(&c, -0.0f, 1.0f, -0.0f, 1e-5f);
    CU_ASSERT_EQUAL(rn_config_validate(&c, &err), RN_OK);
    char text[8192];
    rn_config_format(&c, text, sizeof text);
    rn_config_default(&d);
    CU_ASSERT_EQUAL(rn_config_parse_text(&d, text, "fmt", NULL, NULL, &err), RN_OK);
    CU_ASSERT(same_floats(&c, &d));
    CU_ASSERT_EQUAL(bad, 0);
}

TH_TEST(test_text_subnormal, "a subnormal literal is accepted as the nearest float")
{
    static const char *keys[] = { "gamma", "tau", "eps", "norm_eps" };
    for (int k = 0; k < 4; k++) {
        rn_config c;
        rn_config_default(&c);
        rn_error err = {0};
        char line[64];
        snprintf(line, sizeof line, "%s = 1e-40\n", keys[k]);
        CU_ASSERT_EQUAL(rn_config_parse_text(&c, line, "t.cfg", NULL, NULL, &err), RN_OK);
        float got[4] = { c.gamma, c.tau, c.eps, c.norm_eps };
        /* 1e-40f is the compiler's rounding of the same literal */
        CU_ASSERT_EQUAL(bits(got[k]), bits(1e-40f));
        CU_ASSERT_EQUAL(fpclassify(got[k]), FP_SUBNORMAL);
        snprintf(line, sizeof line, "%s = 0x1p-149\n", keys[k]);
        CU_ASSERT_EQUAL(rn_config_parse_text(&c, line, "t.cfg", NULL, NULL, &err), RN_OK);
        float got2[4] = { c.gamma, c.tau, c.eps, c.norm_eps };
        CU_ASSERT_EQUAL(bits(got2[k]), 1u);
    }
}

TH_TEST(test_text_unrepresentable, "underflow to 0 and overflow are refused, naming the key")
{
    static const struct { const char *text, *want; } cases[] = {
        { "tau = 1e-50\n", "t.cfg:1: tau: '1e-50' is too small for a float" },
        { "eps = 1e-46\n", "t.cfg:1: eps: '1e-46' is too small for a float" },
        { "gamma = 1e39\n", "t.cfg:1: gamma: '1e39' is not a finite number" },
        { "norm_eps = -1e39\n", "t.cfg:1: norm_eps: '-1e39' is not a finite number" },
        { "tau = nan\n", "t.cfg:1: tau: 'nan' is not a finite number" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rn_config c;
        rn_config_default(&c);
        rn_error err = {0};
        int rc = rn_config_parse_text(&c, cases[i].text, "t.cfg", NULL, NULL, &err);
        int ok = rc == RN_EINPUT && strstr(err.msg, cases[i].want) && !strchr(err.msg, '\n');
        if (!ok) printf("\n  '%s': rc %d '%s'\n", cases[i].text, rc, err.msg);
        CU_ASSERT(ok);
    }
    /* "0" itself is zero, not an underflow */
    rn_config c;
    rn_config_default(&c);
    rn_error err = {0};
    CU_ASSERT_EQUAL(rn_config_parse_text(&c, "eps = 0.0e-50\n", "t.cfg", NULL, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL(bits(c.eps), 0u);
}


/* model.bin -> safetensors -> model.bin (same bytes), -> safetensors (same
 * bytes), and the loaded config carries the same bits. */
static void file_round_trip(float gamma, float tau, float eps, float norm_eps)
{
    rn_config c;
    cfg_with(&c, gamma, tau, eps, norm_eps);
    rn_error err = {0};
    rn_model m;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 5, &err), RN_OK);
    char a[512], s1[512], b[512], s2[512];
    snprintf(a, sizeof a, "%s", th_path("fk_a.bin"));
    snprintf(s1, sizeof s1, "%s", th_path("fk_1.safetensors"));
    snprintf(b, sizeof b, "%s", th_path("fk_b.bin"));
    snprintf(s2, sizeof s2, "%s", th_path("fk_2.safetensors"));
    CU_ASSERT_EQUAL_FATAL(rn_model_save(&m, a, &err), RN_OK);
    rn_model_free(&m);
    int rc = rn_model_convert(a, s1, &err);
    if (!rc) rc = rn_model_convert(s1, b, &err);
    if (!rc) rc = rn_model_convert(b, s2, &err);
    if (rc) printf("\n  %a %a %a %a: %s\n", (double)gamma, (double)tau, (double)eps, (double)norm_eps, err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    CU_ASSERT(th_files_equal(a, b));
    CU_ASSERT(th_files_equal(s1, s2));
    for (int i = 0; i < 2; i++) {
        rn_model l;
        CU_ASSERT_EQUAL_FATAL(rn_model_load(&l, i ? s1 : b, &err), RN_OK);
        CU_ASSERT(same_floats(&l.cfg, &c));
        CU_ASSERT_EQUAL(memcmp(&l.cfg, &c, sizeof c), 0);
        rn_model_free(&l);
    }
}

TH_TEST(test_file_round_trip, "model.bin <-> safetensors keeps extreme float keys byte for byte")
{
    file_round_trip(0x1p-149f, 1e-40f, 0x1.fffffcp-127f, 0x1p-149f); /* all subnormal */
    file_round_trip(FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX);
    file_round_trip(-0.0f, FLT_MIN, -0.0f, FLT_MIN);
    file_round_trip(0.1f, 1.0f / 3.0f, 1e-45f, 1e-38f);
}

TH_TEST(test_cli_convert_subnormal, "CLI: init --tau 1e-40, convert both ways, same bytes")
{
    const char *bin = th_bin();
    char a[512], s[512], b[512];
    snprintf(a, sizeof a, "%s", th_path("fk_cli.bin"));
    snprintf(s, sizeof s, "%s", th_path("fk_cli.safetensors"));
    snprintf(b, sizeof b, "%s", th_path("fk_cli2.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s init --config samples/configs/tiny.cfg --tau 1e-40 --eps 1e-45 -o %s", bin, a), 0);
    CU_ASSERT_EQUAL(th_run("%s convert %s %s", bin, a, s), 0);
    CU_ASSERT_EQUAL(th_run("%s convert %s %s", bin, s, b), 0);
    CU_ASSERT_EQUAL(th_run("%s info %s", bin, s), 0);
    CU_ASSERT(th_files_equal(a, b));
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&m, s, &err), RN_OK);
    CU_ASSERT_EQUAL(bits(m.cfg.tau), bits(1e-40f));
    CU_ASSERT_EQUAL(bits(m.cfg.eps), 1u);
    rn_model_free(&m);
    /* a value no float holds is one line, exit 2, no file */
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --tau 1e-50 -o %s", bin, th_path("fk_no.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "tau: '1e-50' is too small for a float"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT(!th_file_exists(th_path("fk_no.bin")));
}
