/* test_gpu_train.c — scripts/gpu-train, the kernel language model's recipe
 * for one GPU window, run on the CPU with a tiny model: a run stopped
 * early and resumed by a second command gives, once its parts are joined,
 * the same bf16 model file as one uninterrupted `train` converted to bf16;
 * the parts, their SHA-256 list, the loss log and the summary are there;
 * a damaged part is refused by the join; a later window starts from the
 * joined model; the speed measurement sizes a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "th.h"
#include "kfix.h"

static char g_tok[512], g_shards[512], g_cfg[512], g_text[512];

static const char tiny_cfg[] =
    "vocab_size = 600\nd_model = 32\nn_layers = 2\nn_heads = 2\nd_p = 4\norder = 2\nd_v = 16\ntop_k = 4\n"
    "d_ff = 64\ncape_masks = 3,0\nlr = 3e-3\nsteps = 12\nbatch = 2\nseq_len = 32\nval_frac = 0.1\n"
    "eval_every = 6\neval_windows = 2\nckpt_every = 100\nlog_every = 1\nseed = 3\n";

/* The fixture's tokenizer and text (kfix.h), the text's shards, and a
 * tiny config (the tokenizer comes from gpu-train's --tokenizer). */
static int setup(void)
{
    snprintf(g_shards, sizeof g_shards, "%s", th_path("gpt_shards"));
    snprintf(g_cfg, sizeof g_cfg, "%s", th_path("gpt_tiny.cfg"));
    if (kfix_make("gpt", 600, g_tok, g_text, sizeof g_tok)) return -1;
    if (th_run("%s -q tokenizer shards %s %s -o %s", th_bin(), g_tok, g_text, g_shards)) return -1;
    if (th_write_file(g_cfg, tiny_cfg, strlen(tiny_cfg))) return -1;
    return 0;
}
TH_SUITE(gpu_train, setup, NULL);

/* scripts/gpu-train on the CPU with the suite's data, work and out dirs
 * named by tag, and extra arguments. */
static int gpu_train(const char *tag, const char *extra)
{
    char work[512], out[512];
    snprintf(work, sizeof work, "%s/gpt_%s_work", th_tmpdir(), tag);
    snprintf(out, sizeof out, "%s/gpt_%s_out", th_tmpdir(), tag);
    return th_run("scripts/gpu-train --device cpu --threads 1 --minutes 1 --config %s --shards %s --tokenizer %s "
                  "--ramtrace %s --work %s --out %s %s",
                  g_cfg, g_shards, g_tok, th_bin(), work, out, extra);
}

TH_TEST(test_gpu_train_resume_join, "stopped, resumed, joined: the bf16 model of one uninterrupted run")
{
    CU_ASSERT_EQUAL_FATAL(gpu_train("a", "--steps 12 --set stop_after=5 --part-bytes 20000"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "gpu-train: step 5/12 on cpu"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "stopped early: continue with --resume"));
    CU_ASSERT_EQUAL_FATAL(gpu_train("a", "--resume --part-bytes 20000"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "gpu-train: step 12/12 on cpu"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "finished"));
    char out[512], joined[512], ref[512], ref16[512];
    snprintf(out, sizeof out, "%s", th_path("gpt_a_out"));
    /* several parts of at most 20000 bytes, the list, the log, the summary */
    CU_ASSERT_EQUAL(th_run("ls %s | tr '\\n' ' '", out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "kernel-lm.bin.part00 kernel-lm.bin.part01 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "loss.jsonl parts.sha256 summary.txt"));
    CU_ASSERT_EQUAL(th_run("find %s -name 'kernel-lm.bin.part*' -size +20000c | wc -l", out), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "0\n");
    CU_ASSERT_EQUAL(th_run("grep -c '\"loss\"' %s/loss.jsonl", out), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "12\n"); /* steps 1..12, across both commands */
    /* joined: the bf16 file of the same run made in one go */
    snprintf(joined, sizeof joined, "%s", th_path("gpt_joined/kernel-lm.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("scripts/gpu-train --join %s -o %s --tokenizer %s --ramtrace %s", out, joined, g_tok, th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "it loads"));
    snprintf(ref, sizeof ref, "%s", th_path("gpt_ref/m.bin"));
    snprintf(ref16, sizeof ref16, "%s", th_path("gpt_ref/kernel-lm.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s && %s -q train --task text --config %s --set tokenizer=spm:%s --data %s "
                                 "--threads 1 -o %s && %s -q convert %s %s --storage bf16",
                                 th_path("gpt_ref"), th_bin(), g_cfg, g_tok, g_shards, ref, th_bin(), ref, ref16), 0);
    CU_ASSERT(th_files_equal(joined, ref16));
    /* a damaged part: the join refuses it and writes nothing */
    CU_ASSERT_EQUAL(th_run("printf x | dd of=%s/kernel-lm.bin.part01 bs=1 seek=7 conv=notrunc 2>/dev/null", out), 0);
    CU_ASSERT_EQUAL(th_run("scripts/gpu-train --join %s -o %s --tokenizer %s --ramtrace %s", out,
                           th_path("gpt_never/m.bin"), g_tok, th_bin()), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "a part does not match parts.sha256"));
    CU_ASSERT(!th_file_exists(th_path("gpt_never/m.bin")));
    /* a later window: a new run from the joined model (its tokenizer beside it) */
    char extra[700];
    snprintf(extra, sizeof extra, "--steps 4 --init-from %s", joined);
    CU_ASSERT_EQUAL(gpu_train("c", extra), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "gpu-train: step 4/4 on cpu"));
    /* a second run in the same work directory is refused (resume it instead) */
    CU_ASSERT_EQUAL(gpu_train("a", "--steps 12"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "a run is there already"));
}

TH_TEST(test_gpu_train_speed, "without --steps the run is sized from the speed measured")
{
    CU_ASSERT_EQUAL_FATAL(gpu_train("b", "--minutes 0.02 --command-seconds 30"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "gpu-train: measured "));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), " tokens/s; 0.02 minutes buy "));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "steps of 64 tokens"));
    char steps[512];
    snprintf(steps, sizeof steps, "%s/gpt_b_work/steps", th_tmpdir());
    char *s = th_read_file(steps, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(atoi(s) > 0);
    free(s);
    CU_ASSERT(th_file_exists(th_path("gpt_b_out/summary.txt")));
}
