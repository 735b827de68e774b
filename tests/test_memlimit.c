/* test_memlimit.c — models that demand absurd memory are refused before
 * anything is allocated (core/base/rn_memlimit.h): the limit itself (half the
 * physical memory by default, RAMTRACE_MEM_LIMIT capped at the physical
 * memory), the inference state (`run`), the training workspace, the
 * parameter block (`init`), each a one-line message with the size needed
 * and the limit, exit 2.  The sizes in the messages are checked against
 * sizes computed here from the config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_memlimit.h"
#include "rn_model.h"
#include "rn_runtime.h"
#include "rn_train.h"
#include "th.h"

static int one_line(const char *s) { return th_count_lines(s) == 1; }

/* Set RAMTRACE_MEM_LIMIT to v in this process (NULL: unset it). */
static void with_limit(const char *v)
{
    if (v) setenv("RAMTRACE_MEM_LIMIT", v, 1);
    else unsetenv("RAMTRACE_MEM_LIMIT");
}

TH_TEST(test_limit_value, "the limit: half of physical memory, RAMTRACE_MEM_LIMIT, capped")
{
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    rn_memlimit lim;
    rn_error err = {0};
    with_limit(NULL);
    CU_ASSERT_EQUAL_FATAL(rn_memlimit_get(&lim, &err), RN_OK);
    CU_ASSERT_EQUAL(lim.phys, phys);
    CU_ASSERT_EQUAL(lim.bytes, phys / 2);
    with_limit("64M");
    CU_ASSERT_EQUAL(rn_memlimit_get(&lim, &err), RN_OK);
    CU_ASSERT_EQUAL(lim.bytes, 64.0 * 1024 * 1024);
    with_limit("1.5G");
    CU_ASSERT_EQUAL(rn_memlimit_get(&lim, &err), RN_OK);
    CU_ASSERT_EQUAL(lim.bytes, 1.5 * 1024 * 1024 * 1024);
    with_limit("123456");
    CU_ASSERT_EQUAL(rn_memlimit_get(&lim, &err), RN_OK);
    CU_ASSERT_EQUAL(lim.bytes, 123456.0);
    with_limit("100000T"); /* more than any machine here: capped */
    CU_ASSERT_EQUAL(rn_memlimit_get(&lim, &err), RN_OK);
    CU_ASSERT_EQUAL(lim.bytes, phys);
    CU_ASSERT_PTR_NOT_NULL(strstr(lim.why, "physical memory"));
    static const char *bad[] = { "abc", "-5G", "0", "4X", "1e400" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        with_limit(bad[i]);
        CU_ASSERT_EQUAL(rn_memlimit_get(&lim, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "RAMTRACE_MEM_LIMIT"));
    }
    with_limit(NULL);
}

/* A 1-layer, 1-head bytes model with M = 2^order slots and d_v = 1. */
static void wide_cfg(rn_config *c, int order)
{
    rn_config_default(c);
    c->d_model = 8;
    c->n_layers = 1;
    c->n_heads = 1;
    c->d_p = 2;
    c->order = order;
    c->d_v = 1;
    c->top_k = 1;
    c->d_ff = 8;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
}

TH_TEST(test_runtime_refused, "runtime state over the limit: RN_EINPUT, needed size and limit")
{
    rn_config c;
    wide_cfg(&c, 20); /* state 2^20 * 2 floats = 8 MiB */
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 1, &err), RN_OK);
    rn_runtime *rt = NULL;
    with_limit("4M");
    CU_ASSERT_EQUAL(rn_runtime_create(&m, 16, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(rt);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "2097152 floats"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "needs 8.0 MiB but the memory limit is 4.0 MiB (RAMTRACE_MEM_LIMIT=4M)"));
    /* just above the need: it is made */
    with_limit("9M");
    CU_ASSERT_EQUAL(rn_runtime_create(&m, 16, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    with_limit(NULL);
    rn_model_free(&m);
}

TH_TEST(test_trainer_refused, "training workspace over the limit: RN_EINPUT")
{
    rn_config c;
    wide_cfg(&c, 20); /* per thread: a dense state and its gradient, 2 * 8 MiB */
    rn_model m;
    rn_error err = {0};
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 1, &err), RN_OK);
    rn_trainer *tr = NULL;
    with_limit("12M");
    CU_ASSERT_EQUAL(rn_trainer_create(&tr, &m, 8, 8, 0.0, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(tr);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "training workspace"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "but the memory limit is 12.0 MiB"));
    with_limit(NULL);
    CU_ASSERT_EQUAL_FATAL(rn_trainer_create(&tr, &m, 8, 8, 0.0, &err), RN_OK);
    /* the refusal was about this many bytes: at least the 2 dense states */
    CU_ASSERT(rn_trainer_bytes(tr) >= 2u * (1u << 20) * 2 * sizeof(rn_real));
    rn_trainer_free(tr);
    rn_model_free(&m);
}

TH_TEST(test_cli_run_refused, "CLI: a 15 KB model with M = 2^28 is refused by run, exit 2")
{
    const char *bin = th_bin();
    char model[512], prompt[512];
    snprintf(model, sizeof model, "%s", th_path("ml_big.bin"));
    snprintf(prompt, sizeof prompt, "%s", th_path("ml_prompt.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(prompt, "hello", 5), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s init --vocab-size 257 --d-model 8 --n-layers 1 --n-heads 1 --d-p 2 "
                                 "--order 28 --d-v 1 --top-k 1 --d-ff 8 --cape none -o %s", bin, model), 0);
    size_t len = 0;
    free(th_read_file(model, &len));
    CU_ASSERT(len < 16 * 1024);
    /* state L*H*M*(d_v+1) = 2^28 * 2 floats = 2 GiB */
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=64M %s run %s %s -n 1", bin, model, prompt), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "536870912 floats"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "needs 2.0 GiB but the memory limit is 64.0 MiB"));
    CU_ASSERT(one_line(th_err()));
    CU_ASSERT_EQUAL(th_out()[0], 0);
    /* trace refuses it the same way, and leaves no database */
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=64M %s trace %s %s -o %s", bin, model, prompt, th_path("ml.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "needs 2.0 GiB but the memory limit is 64.0 MiB"));
    CU_ASSERT(one_line(th_err()));
    /* a malformed limit is bad input too */
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=lots %s run %s %s -n 1", bin, model, prompt), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "RAMTRACE_MEM_LIMIT: 'lots' is not a size"));
    CU_ASSERT(one_line(th_err()));
}

TH_TEST(test_cli_init_train_refused, "CLI: init and train over the limit: exit 2, no file")
{
    const char *bin = th_bin();
    char out[512];
    snprintf(out, sizeof out, "%s", th_path("ml_params.bin"));
    /* parameters: embed 257*512 + 1 layer (2D + 2*H*dk*D + 2*H*dv*D + 2H + 3*F*D) + D */
    double D = 512, per = 2 * D + 2 * 4 * 24 * D + 2 * 4 * 32 * D + 8 + 3 * 384 * D;
    double need = 4 * (257 * D + per + D);
    CU_ASSERT(need > 2 * 1024 * 1024);
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=2M %s init --d-model 512 --n-layers 1 --d-p 8 --order 3 "
                           "--d-v 32 --d-ff 384 -o %s", bin, out), 2);
    char want[96];
    snprintf(want, sizeof want, "the parameter block needs %.1f MiB", need / 1048576);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), want));
    CU_ASSERT(one_line(th_err()));
    CU_ASSERT(!th_file_exists(out));
    /* train: the wide model's workspace */
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=24M %s train --task mqar --set d_p=2 --set order=20 --set n_layers=1 "
                           "--set n_heads=1 --set d_v=1 --set top_k=1 --steps 1 --threads 2 -o %s", bin, out), 2);
    /* (after train's one-line header) */
    const char *e = strstr(th_err(), "ramtrace: training workspace (");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "but the memory limit is 24.0 MiB"));
    CU_ASSERT(one_line(e));
    CU_ASSERT(!th_file_exists(out));
    /* a run whose workspace fits but whose parameters, gradients and two
     * AdamW moments (16 bytes a parameter) with it do not */
    char corpus[512], text[20001];
    snprintf(corpus, sizeof corpus, "%s", th_path("ml_corpus.txt"));
    for (int i = 0; i < 20000; i++) text[i] = "the memory of a head "[i % 21];
    CU_ASSERT_EQUAL_FATAL(th_write_file(corpus, text, 20000), 0);
    CU_ASSERT_EQUAL(th_run("RAMTRACE_MEM_LIMIT=24M %s train --task text --data %s --set d_model=256 "
                           "--set d_ff=2048 --set n_layers=2 --batch 1 --seq-len 8 --steps 1 --threads 1 -o %s",
                           bin, corpus, out), 2);
    /* parameters: 257*256 + 2 * (2D + 2*4*24*D + 2*4*32*D + 8 + 3*2048*D) + D, D = 256 */
    long long P = 257LL * 256 + 2 * (2LL * 256 + 2LL * 4 * 24 * 256 + 2LL * 4 * 32 * 256 + 8 + 3LL * 2048 * 256) + 256;
    snprintf(want, sizeof want, "ramtrace: training (%lld parameters, AdamW moments, workspace) needs ", P);
    e = strstr(th_err(), want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    double mib = atof(e + strlen(want));
    CU_ASSERT(mib * 1048576 >= 16.0 * (double)P * 0.999); /* at least params + grads + 2 moments */
    CU_ASSERT(mib * 1048576 < 16.0 * (double)P * 1.2);    /* and the small workspace besides */
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "but the memory limit is 24.0 MiB"));
    CU_ASSERT(one_line(e));
    CU_ASSERT(!th_file_exists(out));
}
