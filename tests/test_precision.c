/* test_precision.c — `--precision` from the command line: bad values are
 * one-line refusals (exit 2) naming the option; eval in bf16 evaluates a
 * different (rounded) model whose loss stays close to fp32's; a bf16
 * training run checkpoints FP32 and resumes in fp32 (and the other way),
 * since checkpoints do not record a precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

static const char *prec_cfg(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s", th_path("prec_tiny.cfg"));
    const char *t = "vocab_size = 257\ntokenizer = bytes\nd_model = 32\nn_layers = 2\nn_heads = 2\n"
                    "d_p = 4\norder = 2\nd_v = 8\ntop_k = 2\nd_ff = 64\ncape = first:1\n"
                    "steps = 8\nbatch = 2\nseq_len = 64\nlr = 3e-3\nwarmup = 2\neval_every = 0\n"
                    "eval_windows = 4\nckpt_every = 4\nlog_every = 1\n";
    th_write_file(p, t, strlen(t));
    return p;
}

/* bits_per_byte of `eval ... -f csv` (the second field of the data row). */
static double eval_bpb(const char *model, const char *data, const char *prec)
{
    if (th_run("%s eval %s --task text --data %s --precision %s -f csv -q", th_bin(), model, data, prec)) return -1;
    const char *row = strchr(th_out(), '\n');
    const char *comma = row ? strchr(row, ',') : NULL;
    return comma ? atof(comma + 1) : -1;
}

TH_TEST(test_precision_cli, "--precision: refusals, bf16 eval close to fp32, bf16 training resumes in fp32")
{
    const char *cfg = prec_cfg();
    char data[512], model[512], model2[512], ckpt[512];
    snprintf(data, sizeof data, "%s", th_path("prec_corpus.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_verses(data, 6000), 0);
    snprintf(model, sizeof model, "%s", th_path("prec_model.bin"));
    snprintf(model2, sizeof model2, "%s", th_path("prec_model2.bin"));
    snprintf(ckpt, sizeof ckpt, "%s", th_path("prec_model.ckpt"));
    /* refusals: exit 2, one line naming the option */
    CU_ASSERT_EQUAL(th_run("%s train --task text --config %s --data %s --precision fp16 -o %s", th_bin(), cfg, data, model), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--precision: 'fp16'"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s train --task text --config %s --data %s --precision tf32 -o %s", th_bin(), cfg, data, model), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--precision tf32"));
    CU_ASSERT(!th_file_exists(model));
    /* a bf16 run: 8 steps, checkpoints at 4 and 8 */
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task text --config %s --data %s --precision bf16 -o %s --ckpt %s -q",
                                 th_bin(), cfg, data, model, ckpt), 0);
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --precision tf32", th_bin(), model, data), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--precision tf32"));
    double b32 = eval_bpb(model, data, "fp32"), b16 = eval_bpb(model, data, "bf16");
    CU_ASSERT(b32 > 0 && b16 > 0);
    CU_ASSERT(b32 != b16);                    /* the rounding is real */
    CU_ASSERT(fabs(b16 - b32) < 0.01 * b32);  /* and small */
    /* the checkpoint is FP32: extending the run in fp32 resumes it */
    CU_ASSERT_EQUAL(th_run("%s train --task text --config %s --data %s --set steps=10 --resume %s -o %s -q",
                           th_bin(), cfg, data, ckpt, model2), 0);
    CU_ASSERT(th_file_exists(model2));
}
