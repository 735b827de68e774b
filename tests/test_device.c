/* test_device.c — the --device choice and the host-testable parts of the
 * CUDA backend: the device-portable beam top-K (core/cuda/rn_cuda_topk.h)
 * against the CPU decoder, bit for bit, ties included; its CAPE and
 * quantisation against rn_decoder.h; and the refusals of --device cuda in a
 * build without CUDA (this suite links the stub backend). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_cuda.h"
#include "rn_cuda_topk.h"
#include "rn_decoder.h"
#include "rn_device.h"
#include "rn_model.h"
#include "rn_rng.h"
#include "rn_runtime.h"
#include "th.h"

TH_TEST(test_device_parse, "--device accepts cpu and cuda and names itself on anything else")
{
    rn_device d = RN_DEVICE_CUDA;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(rn_device_parse("cpu", &d, &err), RN_OK);
    CU_ASSERT_EQUAL(d, RN_DEVICE_CPU);
    CU_ASSERT_EQUAL(rn_device_parse("cuda", &d, &err), RN_OK);
    CU_ASSERT_EQUAL(d, RN_DEVICE_CUDA);
    CU_ASSERT_EQUAL(rn_device_parse("gpu", &d, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--device"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'gpu'"));
    CU_ASSERT_EQUAL(rn_device_select(NULL, &d, &err), RN_OK);
    CU_ASSERT_EQUAL(d, RN_DEVICE_CPU);
    CU_ASSERT_EQUAL(rn_device_select("cpu", &d, &err), RN_OK);
}

TH_TEST(test_device_no_cuda, "without CUDA, --device cuda is refused (RN_EINPUT) by check and runtime")
{
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(rn_cuda_built(), 0);
    CU_ASSERT_EQUAL(rn_cuda_device_count(), -1);
    CU_ASSERT_EQUAL(rn_device_check(RN_DEVICE_CUDA, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--device cuda"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "without CUDA"));
    rn_config c;
    rn_config_default(&c);
    rn_model m;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 1, &err), RN_OK);
    rn_runtime *rt = (rn_runtime *)1;
    err.msg[0] = 0;
    CU_ASSERT_EQUAL(rn_runtime_create_on(&m, 8, RN_DEVICE_CUDA, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(rt);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "without CUDA"));
    CU_ASSERT_EQUAL(rn_runtime_create_on(&m, 8, RN_DEVICE_CPU, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    rn_model_free(&m);
}

/* One key of U·dp floats: random, or (ties) drawn from 3 values so chunk
 * log-probs repeat and many full addresses tie exactly. */
static void make_key(float *a, int n, rn_rng *r, int ties)
{
    for (int i = 0; i < n; i++) {
        double x = rn_rng_uniform(r) * 4 - 2;
        a[i] = ties ? (float)((int)(x + 2) % 3) * 0.5f : (float)x;
    }
}

TH_TEST(test_device_topk_matches_cpu, "GPU-portable top-K == rn_decode_topk (addresses and weights bitwise)")
{
    static const int shapes[][3] = { /* U, d_p, K */
        { 1, 8, 8 }, { 2, 4, 4 }, { 2, 16, 4 }, { 3, 4, 8 }, { 5, 4, 8 }, { 4, 8, 16 },
        { 2, 64, 32 }, { 8, 2, 64 }, { 3, 3, 27 }, { 6, 5, 1 },
    };
    rn_rng r;
    rn_rng_seed(&r, 77);
    long compared = 0, mismatches = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int U = shapes[s][0], dp = shapes[s][1], K = shapes[s][2];
        void *mem = malloc(rn_decode_ws_bytes(U, dp, K));
        rn_decode_ws *ws = rn_decode_ws_init(mem, U, dp, K);
        float a[512];
        uint32_t ca[RN_CUDA_MAX_K], ga[RN_CUDA_MAX_K];
        float cw[RN_CUDA_MAX_K], gw[RN_CUDA_MAX_K];
        for (int trial = 0; trial < 200; trial++) {
            int ties = trial % 2;
            make_key(a, U * dp, &r, ties);
            double scale = exp(rn_rng_uniform(&r) * 2 - 1) / 0.7;
            rn_decode_topk(a, U, dp, K, scale, ca, cw, ws);
            rn_cu_topk(a, U, dp, K, scale, ga, gw);
            for (int j = 0; j < K; j++) {
                compared++;
                if (ca[j] != ga[j] || memcmp(&cw[j], &gw[j], sizeof(float))) mismatches++;
            }
        }
        free(mem);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(compared > 10000);
}

TH_TEST(test_device_topk_tie_rule, "equal weights rank the smaller address first (all-equal key: 0..K-1)")
{
    float a[4 * 8] = { 0 };
    uint32_t addr[16];
    float w[16];
    rn_cu_topk(a, 4, 8, 16, 1.0, addr, w);
    for (int j = 0; j < 16; j++) {
        CU_ASSERT_EQUAL(addr[j], (uint32_t)j);
        CU_ASSERT_DOUBLE_EQUAL(w[j], 1.0 / 4096, 1e-9);
    }
}

TH_TEST(test_device_quantize_cape, "device copies of the quantiser and CAPE equal rn_decoder.h's")
{
    rn_rng r;
    rn_rng_seed(&r, 5);
    for (int i = 0; i < 10000; i++) {
        double lp = -30 * rn_rng_uniform(&r);
        CU_ASSERT_EQUAL(rn_cu_quantize(lp), rn_quantize_logp(lp));
        uint32_t a = (uint32_t)(rn_rng_uniform(&r) * 4096);
        int64_t t = (int64_t)(rn_rng_uniform(&r) * 1e6), M = 4096;
        CU_ASSERT_EQUAL(rn_cu_cape(a, t, M), rn_cape_slot(a, t, M));
    }
    CU_ASSERT_EQUAL(rn_cu_quantize(-INFINITY), rn_quantize_logp(-INFINITY));
    CU_ASSERT_EQUAL(rn_cu_quantize(NAN), rn_quantize_logp(NAN));
}

TH_TEST(test_device_cli, "run/trace/train/eval --device cuda: exit 2, one line naming --device")
{
    const char *m = "build/test_device_model.bin", *p = "build/test_device_prompt.txt";
    CU_ASSERT_EQUAL_FATAL(th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), m), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("printf 'hello world' > %s", p), 0);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 --temperature 0 --device cuda", th_bin(), m, p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--device cuda: this ramtrace was built without CUDA"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 --device tpu", th_bin(), m, p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--device: expected cpu or cuda"));
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o build/test_device.db --device cuda", th_bin(), m, p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--device cuda"));
    CU_ASSERT_EQUAL(th_run("%s train -o build/test_device_out.bin --device cuda", th_bin()), 2);
    /* training runs on the GPU in a CUDA build; here the refusal is the build's */
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--device cuda: this ramtrace was built without CUDA"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --device cuda", th_bin(), m), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--device cuda: this ramtrace was built without CUDA"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    /* --device cpu is the default path: same greedy output */
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 6 --temperature 0", th_bin(), m, p), 0);
    char *plain = strdup(th_out());
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 6 --temperature 0 --device cpu", th_bin(), m, p), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), plain);
    free(plain);
    remove(m);
    remove(p);
}
