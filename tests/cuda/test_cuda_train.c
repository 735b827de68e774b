/* test_cuda_train.c — the GPU trainer (core/cuda/rn_cuda_train.h) against
 * the CPU trainer (core/train/rn_train.h) and AdamW (core/nn/rn_adamw.h).  Linked
 * into the parity binary (mk/cuda.mk), whose main registers these tests
 * only when a CUDA device is usable (it skips otherwise).
 *
 * Over random small models (CAPE on/off, tied/untied head, γ ∈ {0, 0.5, 1,
 * 2}, U from 1 to 4, d_p 4–16, K 4–16, the reads' K below, equal to and
 * above the writes'):
 *   - the mean cross-entropy of one forward: relative difference < 1e-4;
 *   - every parameter gradient after a backward: max|g − c| / max|c| per
 *     tensor < 1e-3 (the worst tensor is printed);
 *   - 20 AdamW steps (rn_cuda_train_test_steps; two accumulated micro-batches each, clipping on, a
 *     warm-up and cosine schedule) on both: losses within 1e-3 of each
 *     other at every step, and the parameters brought back from the GPU
 *     close to the CPU's;
 *   - the training loop (rn_train_run, MQAR, top-K annealing, evaluation
 *     and checkpoints) with device = cuda: its step losses track the CPU
 *     run's, and a checkpoint written on either device resumes on the
 *     other to the same losses; the text task's losses track the CPU's.
 * And the training scan alone (rn_cuda_pdma_train_run) against the CPU's
 * rn_pdma_train_forward/_backward on hot and cold slots: the same floats
 * (test_pdma_scan).
 * Summary line: "cuda train parity: N tensors, worst gradient relative
 * error E; 20-step loss max diff D".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "cuda_tests.h"

#include "rn_cuda_train.h"
#include "rn_decoder.h"
#include "rn_layers.h"
#include "rn_adamw.h"
#include "rn_model.h"
#include "rn_params.h"
#include "rn_rng.h"
#include "rn_device.h"
#include "rn_train.h"
#include "rn_train_loop.h"

typedef struct { int U, dp, K, Kr, cape, tied; float gamma; } tshape;

static const tshape g_tshapes[] = {
    { 2, 8, 4, 4, 0, 1, 1.0f },  { 2, 8, 4, 2, 1, 1, 0.5f }, /* reads' K below the writes' */
    { 3, 4, 8, 8, 1, 0, 0.0f },  { 3, 4, 8, 16, 0, 0, 2.0f }, /* reads' K above (annealing) */
    { 1, 16, 4, 4, 1, 0, 0.5f }, { 4, 4, 16, 16, 1, 1, 2.0f },
    { 1, 256, 4, 4, 1, 0, 1.0f }, /* keys wider than the warp decoder's: the thread-per-key one */
};
#define N_TSHAPES (int)(sizeof g_tshapes / sizeof g_tshapes[0])

/* AdamW steps of the step test (the host emulation runs fewer). */
int rn_cuda_train_test_steps = 20;

static long g_tensors;
static double g_worst_grad, g_worst_loss_rel, g_worst_step_diff, g_worst_param, g_worst_loop_diff,
    g_worst_eval_diff;
static char g_worst_name[80];

int cuda_test_model(rn_model *m, int U, int dp, int K, int cape, int tied, float gamma, uint64_t seed)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 97;
    c.tokenizer = RN_TOK_IDS;
    c.d_model = 64;
    c.n_layers = 2;
    c.n_heads = 4;
    c.order = U;
    c.d_p = dp;
    c.top_k = K;
    c.d_v = 16;
    c.d_ff = 96;
    c.gamma = gamma;
    c.tie_embeddings = tied;
    for (int l = 0; l < c.n_layers; l++) c.cape_mask[l] = cape ? 0x5u : 0; /* heads 0, 2 */
    rn_error err = { 0 };
    if (rn_config_validate(&c, &err)) {
        fprintf(stderr, "config: %s\n", err.msg);
        return -1;
    }
    return rn_model_create_random(m, &c, seed, &err);
}

static int make_tmodel(rn_model *m, const tshape *s, uint64_t seed)
{
    return cuda_test_model(m, s->U, s->dp, s->K, s->cape, s->tied, s->gamma, seed);
}

void cuda_test_batch(rn_rng *r, int V, int n, int *tok, int *tgt)
{
    for (int i = 0; i < n; i++) {
        tok[i] = (int)(rn_rng_u64(r) % (uint64_t)V);
        tgt[i] = rn_rng_uniform(r) < 0.5 ? RN_IGNORE : (int)(rn_rng_u64(r) % (uint64_t)V);
    }
}

double cuda_test_rel(const float *g, const float *c, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)g[i] - c[i]));
        m = fmax(m, fabs((double)c[i]));
    }
    return m > 0 ? d / m : d;
}

/* One forward and backward on each trainer: the loss and every gradient. */
static void test_train_grad_parity(void)
{
    rn_rng r;
    rn_rng_seed(&r, 21);
    const double eps_g = 0.01;
    for (int si = 0; si < N_TSHAPES; si++) {
        const tshape *sh = &g_tshapes[si];
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_tmodel(&m, sh, 500 + si), RN_OK);
        const int B = 3, T = 40, n = B * T, V = m.cfg.vocab_size;
        int tok[120], tgt[120];
        cuda_test_batch(&r, V, n, tok, tgt);
        rn_error err = { 0 };
        rn_trainer *ct = NULL;
        rn_cuda_trainer *gt = NULL;
        CU_ASSERT_EQUAL_FATAL(rn_trainer_create_kr(&ct, &m, n, n, eps_g, sh->Kr, &err), RN_OK);
        if (rn_cuda_trainer_create(&gt, &m, n, n, eps_g, sh->K, sh->Kr, RN_PREC_FP32, &err) ||
            rn_cuda_trainer_set_topk(gt, sh->K, sh->Kr, &err)) {
            fprintf(stderr, "cuda trainer: %s\n", err.msg);
            CU_FAIL_FATAL("rn_cuda_trainer_create");
        }
        double lc, lg;
        CU_ASSERT_EQUAL(rn_trainer_forward(ct, tok, tgt, B, T, &lc, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gt, tok, tgt, B, T, &lg, &err), RN_OK);
        double lrel = fabs(lg - lc) / fabs(lc);
        g_worst_loss_rel = fmax(g_worst_loss_rel, lrel);
        CU_ASSERT(lrel < 1e-4);
        CU_ASSERT_EQUAL(rn_cuda_trainer_n_labelled(gt), rn_trainer_n_labelled(ct));
        CU_ASSERT(fabs(rn_cuda_trainer_loss_sum(gt) - rn_trainer_loss_sum(ct)) <= 1e-4 * rn_trainer_loss_sum(ct));
        /* the argmax flags (a logit near-tie could flip one; none expected here) */
        CU_ASSERT(!memcmp(rn_cuda_trainer_correct(gt), rn_trainer_correct(ct), (size_t)rn_trainer_n_labelled(ct)));
        /* two backwards accumulate (scale 0.5 each, as grad_accum = 2) */
        rn_trainer_backward(ct, 0.5);
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gt, 0.5, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_trainer_forward(ct, tok, tgt, B, T, &lc, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gt, tok, tgt, B, T, &lg, &err), RN_OK);
        rn_trainer_backward(ct, 0.5);
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gt, 0.5, &err), RN_OK);
        float *gg = malloc(sizeof(float) * (size_t)m.n_block);
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_grads(gt, gg, &err), RN_OK);
        const float *cg = rn_trainer_grads(ct);
        const int nt = rn_params_count_tensors(&m.cfg);
        for (int i = 0; i < nt; i++) {
            rn_tensor_desc t;
            rn_params_tensor(&m.cfg, i, &t);
            double e = cuda_test_rel(gg + t.offset, cg + t.offset, t.numel);
            g_tensors++;
            if (e > g_worst_grad) {
                g_worst_grad = e;
                snprintf(g_worst_name, sizeof g_worst_name, "%s (shape %d)", t.name, si);
            }
            if (!(e < 1e-3)) fprintf(stderr, "shape %d: %s gradient relative error %.3g\n", si, t.name, e);
            CU_ASSERT(e < 1e-3);
        }
        /* zero_grads really zeroes */
        CU_ASSERT_EQUAL(rn_cuda_trainer_zero_grads(gt, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_grads(gt, gg, &err), RN_OK);
        double gn = 0;
        CU_ASSERT_EQUAL(rn_cuda_trainer_grad_norm(gt, &gn, &err), RN_OK);
        CU_ASSERT_EQUAL(gn, 0.0);
        free(gg);
        rn_trainer_free(ct);
        rn_cuda_trainer_free(gt);
        rn_model_free(&m);
    }
}

/* 20 optimiser steps of 2 micro-batches on each device, from the same
 * model, batches and schedule: the losses track each other. */
static void test_train_steps_parity(void)
{
    rn_rng r;
    rn_rng_seed(&r, 22);
    const double eps_g = 0.01;
    for (int si = 0; si < N_TSHAPES; si++) {
        const tshape *sh = &g_tshapes[si];
        rn_model m;
        CU_ASSERT_EQUAL_FATAL(make_tmodel(&m, sh, 600 + si), RN_OK);
        const int B = 2, T = 48, n = B * T, V = m.cfg.vocab_size, accum = 2;
        const int steps = rn_cuda_train_test_steps;
        const int64_t nb = m.n_block;
        rn_adamw_opts o;
        rn_adamw_defaults(&o);
        o.lr = 3e-3;
        o.min_lr = 3e-4;
        o.warmup = 4;
        o.steps = steps;
        o.clip = 0.5; /* clipping engages in some steps */
        rn_error err = { 0 };
        rn_trainer *ct = NULL;
        rn_cuda_trainer *gt = NULL;
        CU_ASSERT_EQUAL_FATAL(rn_trainer_create_kr(&ct, &m, n, n, eps_g, sh->Kr, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_create(&gt, &m, n, n, eps_g, sh->K, sh->Kr, RN_PREC_FP32, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_set_topk(gt, sh->K, sh->Kr, &err), RN_OK);
        float *mom = calloc(2 * (size_t)nb, sizeof(float));
        int tok[96], tgt[96];
        for (int step = 0; step < steps; step++) {
            rn_trainer_zero_grads(ct);
            CU_ASSERT_EQUAL(rn_cuda_trainer_zero_grads(gt, &err), RN_OK);
            double lc = 0, lg = 0;
            for (int mi = 0; mi < accum; mi++) {
                double a, b;
                cuda_test_batch(&r, V, n, tok, tgt);
                CU_ASSERT_EQUAL(rn_trainer_forward(ct, tok, tgt, B, T, &a, &err), RN_OK);
                CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gt, tok, tgt, B, T, &b, &err), RN_OK);
                rn_trainer_backward(ct, 1.0 / accum);
                CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gt, 1.0 / accum, &err), RN_OK);
                lc += a / accum;
                lg += b / accum;
            }
            double d = fabs(lc - lg);
            g_worst_step_diff = fmax(g_worst_step_diff, d);
            CU_ASSERT(d < 1e-3);
            double gnc = rn_grad_norm(rn_trainer_grads(ct), nb), gng = 0;
            CU_ASSERT_EQUAL(rn_cuda_trainer_grad_norm(gt, &gng, &err), RN_OK);
            CU_ASSERT(fabs(gnc - gng) <= 1e-3 * gnc);
            double lr = rn_lr_at(&o, step);
            double sc = (o.clip > 0 && gnc > o.clip) ? o.clip / gnc : 1.0;
            double sg = (o.clip > 0 && gng > o.clip) ? o.clip / gng : 1.0;
            rn_adamw_update(&m.cfg, m.params, rn_trainer_grads(ct), mom, mom + nb, &o, step, lr, sc);
            CU_ASSERT_EQUAL(rn_cuda_trainer_adamw(gt, &o, step, lr, sg, &err), RN_OK);
        }
        /* the state comes back in the host layout, near the CPU's */
        float *gp = malloc(sizeof(float) * 3 * (size_t)nb);
        CU_ASSERT_EQUAL(rn_cuda_trainer_get_state(gt, gp, gp + nb, gp + 2 * nb, &err), RN_OK);
        double pe = cuda_test_rel(gp, m.params, nb);
        g_worst_param = fmax(g_worst_param, pe);
        CU_ASSERT(pe < 1e-2);
        /* and set_state round-trips */
        CU_ASSERT_EQUAL(rn_cuda_trainer_set_state(gt, m.params, mom, mom + nb, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_get_state(gt, gp, gp + nb, gp + 2 * nb, &err), RN_OK);
        CU_ASSERT(!memcmp(gp, m.params, sizeof(float) * (size_t)nb));
        CU_ASSERT(!memcmp(gp + nb, mom, sizeof(float) * 2 * (size_t)nb));
        free(gp);
        free(mom);
        rn_trainer_free(ct);
        rn_cuda_trainer_free(gt);
        rn_model_free(&m);
    }
}

static void record_loss(void *user, const rn_train_event *ev)
{
    cuda_loss_log *lg = user;
    if (ev->kind == RN_TRAIN_EV_STEP && ev->step >= 1 && ev->step <= CUDA_TEST_MAX_STEPS) {
        lg->loss[ev->step - 1] = ev->loss;
        if (ev->step > lg->n) lg->n = (int)ev->step;
    }
}

int cuda_test_loop_run(const rn_config *c, const rn_train_opts *base, int device, int64_t stop_after,
                    const char *resume, const char *out, cuda_loss_log *lg)
{
    rn_train_opts o = *base;
    o.device = device;
    o.stop_after = stop_after;
    snprintf(o.out, sizeof o.out, "%s", out);
    snprintf(o.ckpt, sizeof o.ckpt, "%s.ckpt", out);
    snprintf(o.resume, sizeof o.resume, "%s", resume ? resume : "");
    rn_error err = { 0 };
    int rc = rn_train_run(&o, c, record_loss, lg, NULL, &err);
    if (rc) fprintf(stderr, "train (%s): %s\n", device == RN_DEVICE_CUDA ? "cuda" : "cpu", err.msg);
    return rc;
}

int cuda_test_loop_config(rn_config *c, rn_train_opts *o)
{
    rn_config_default(c);
    rn_train_opts_default(o, RN_TASK_MQAR);
    const char *cfg = "vocab_size = 600\ntokenizer = ids\nd_model = 16\nn_layers = 2\nn_heads = 2\n"
                      "d_p = 4\norder = 2\nd_v = 8\ntop_k = 2\nd_ff = 32\ncape = first:1\n"
                      "steps = 8\nbatch = 2\nseq_len = 64\nlr = 3e-3\nwarmup = 2\neval_every = 4\n"
                      "eval_examples = 2\nckpt_every = 4\nlog_every = 1\ngrad_accum = 2\n"
                      "mqar_train = 32:4,64:8\nmqar_eval = 64:8\ntop_k_start = 8\ntop_k_read_start = 16\n";
    rn_error err = { 0 };
    int rc = rn_config_parse_text(c, cfg, "loop.cfg", rn_train_opts_set, o, &err);
    if (rc) fprintf(stderr, "loop config: %s\n", err.msg);
    return rc;
}

int cuda_test_split_run(const rn_config *c, const rn_train_opts *first, int dev1, const rn_train_opts *second,
                        int dev2, const char *out, cuda_loss_log *lg)
{
    char ck[300];
    snprintf(ck, sizeof ck, "%s.ckpt", out);
    int rc = cuda_test_loop_run(c, first, dev1, 4, NULL, out, lg);
    return rc ? rc : cuda_test_loop_run(c, second, dev2, 0, ck, out, lg);
}

void cuda_test_remove_run(const char *out)
{
    char p[300];
    remove(out);
    snprintf(p, sizeof p, "%s.ckpt", out);
    remove(p);
}

static void test_train_loop_devices(void)
{
    rn_config c;
    rn_train_opts o;
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_config(&c, &o), RN_OK);
    char cpu[256], gpu[256], g2c[256], c2g[256];
    const int pid = (int)getpid();
    snprintf(cpu, sizeof cpu, "/tmp/rn_cuda_train_%d_cpu.bin", pid);
    snprintf(gpu, sizeof gpu, "/tmp/rn_cuda_train_%d_gpu.bin", pid);
    snprintf(g2c, sizeof g2c, "/tmp/rn_cuda_train_%d_g2c.bin", pid);
    snprintf(c2g, sizeof c2g, "/tmp/rn_cuda_train_%d_c2g.bin", pid);
    cuda_loss_log lc = { { 0 }, 0 }, lg = { { 0 }, 0 }, lx = { { 0 }, 0 }, ly = { { 0 }, 0 };
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &o, RN_DEVICE_CPU, 0, NULL, cpu, &lc), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &o, RN_DEVICE_CUDA, 0, NULL, gpu, &lg), RN_OK);
    CU_ASSERT_EQUAL(lc.n, 8);
    CU_ASSERT_EQUAL(lg.n, 8);
    for (int i = 0; i < lc.n; i++) {
        g_worst_loop_diff = fmax(g_worst_loop_diff, fabs(lc.loss[i] - lg.loss[i]));
        CU_ASSERT(fabs(lc.loss[i] - lg.loss[i]) < 1e-3);
    }
    /* GPU for 4 steps, then the CPU resumes its checkpoint; and back */
    CU_ASSERT_EQUAL_FATAL(cuda_test_split_run(&c, &o, RN_DEVICE_CUDA, &o, RN_DEVICE_CPU, g2c, &lx), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_split_run(&c, &o, RN_DEVICE_CPU, &o, RN_DEVICE_CUDA, c2g, &ly), RN_OK);
    CU_ASSERT_EQUAL(lx.n, 8);
    CU_ASSERT_EQUAL(ly.n, 8);
    for (int i = 0; i < 8; i++) {
        g_worst_loop_diff = fmax(g_worst_loop_diff, fabs(lx.loss[i] - lc.loss[i]));
        g_worst_loop_diff = fmax(g_worst_loop_diff, fabs(ly.loss[i] - lc.loss[i]));
        CU_ASSERT(fabs(lx.loss[i] - lc.loss[i]) < 1e-3);
        CU_ASSERT(fabs(ly.loss[i] - lc.loss[i]) < 1e-3);
    }
    const char *outs[] = { cpu, gpu, g2c, c2g };
    for (int i = 0; i < 4; i++) cuda_test_remove_run(outs[i]);
}

/* The text task on cuda: a small byte-level model on a generated corpus,
 * step losses against the CPU run's. */
static void test_train_loop_text(void)
{
    rn_config c;
    rn_train_opts o;
    rn_config_default(&c);
    rn_train_opts_default(&o, RN_TASK_TEXT);
    const char *cfg = "vocab_size = 257\ntokenizer = bytes\nd_model = 16\nn_layers = 2\nn_heads = 2\n"
                      "d_p = 4\norder = 2\nd_v = 8\ntop_k = 4\nd_ff = 32\ncape = first:1\ngamma = 0.5\n"
                      "steps = 6\nbatch = 3\nseq_len = 32\nlr = 3e-3\nwarmup = 2\neval_every = 3\n"
                      "eval_windows = 4\nckpt_every = 0\nlog_every = 1\nval_frac = 0.1\n";
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, cfg, "text.cfg", rn_train_opts_set, &o, &err), RN_OK);
    char data[256], cpu[256], gpu[256];
    const int pid = (int)getpid();
    snprintf(data, sizeof data, "/tmp/rn_cuda_train_%d_corpus.txt", pid);
    snprintf(cpu, sizeof cpu, "/tmp/rn_cuda_train_%d_tcpu.bin", pid);
    snprintf(gpu, sizeof gpu, "/tmp/rn_cuda_train_%d_tgpu.bin", pid);
    FILE *f = fopen(data, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    rn_rng r;
    rn_rng_seed(&r, 23);
    for (int i = 0; i < 400; i++)
        fprintf(f, "verse %d: the %s went %s.\n", i, rn_rng_uniform(&r) < 0.5 ? "scribe" : "reader",
                rn_rng_uniform(&r) < 0.5 ? "home" : "out");
    fclose(f);
    snprintf(o.data, sizeof o.data, "%s", data);
    cuda_loss_log lc = { { 0 }, 0 }, lg = { { 0 }, 0 };
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &o, RN_DEVICE_CPU, 0, NULL, cpu, &lc), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &o, RN_DEVICE_CUDA, 0, NULL, gpu, &lg), RN_OK);
    CU_ASSERT_EQUAL(lc.n, 6);
    CU_ASSERT_EQUAL(lg.n, 6);
    for (int i = 0; i < lc.n; i++) {
        g_worst_loop_diff = fmax(g_worst_loop_diff, fabs(lc.loss[i] - lg.loss[i]));
        CU_ASSERT(fabs(lc.loss[i] - lg.loss[i]) < 1e-3);
    }
    remove(data);
    remove(cpu);
    remove(gpu);
    char p[300];
    snprintf(p, sizeof p, "%s.ckpt", cpu);
    remove(p);
    snprintf(p, sizeof p, "%s.ckpt", gpu);
    remove(p);
}

/* eval --device cuda: the GPU trainer's forward behind rn_eval_mqar and
 * rn_eval_text, against the CPU's on the same random models.  MQAR
 * accuracies come from argmax flags, so they agree exactly unless a
 * logit's argmax is a near-tie (at most one flip allowed: 1/64 here). */
static void test_eval_devices(void)
{
    rn_config c;
    rn_model m;
    rn_error err = { 0 };
    rn_config_default(&c);
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, "vocab_size = 600\ntokenizer = ids\nd_model = 16\n"
                                               "n_layers = 2\nn_heads = 2\nd_p = 4\norder = 2\nd_v = 8\n"
                                               "top_k = 2\nd_ff = 32\ncape = first:1\n",
                                               "eval.cfg", NULL, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 31, &err), RN_OK);
    const rn_mqar_seg segs[] = { { 64, 8 }, { 32, 4 } };
    double ac[2], ag[2], mc, mg;
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar(&m, RN_DEVICE_CPU, segs, 2, 8, 5, 256, ac, &mc, NULL, &err), RN_OK);
    int rc = rn_eval_mqar(&m, RN_DEVICE_CUDA, segs, 2, 8, 5, 256, ag, &mg, NULL, &err);
    if (rc) fprintf(stderr, "eval mqar (cuda): %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    for (int i = 0; i < 2; i++) CU_ASSERT(fabs(ac[i] - ag[i]) <= 1.0 / 64 + 1e-12);
    /* eval --by-pair's tallies: the same queries per pair on either device,
     * the correct counts as the accuracies (at most one near-tie flip) */
    rn_mqar_tally pc[12], pg[12];
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar_pairs(&m, RN_DEVICE_CPU, segs, 2, 8, 5, 256, ac, &mc, pc, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_eval_mqar_pairs(&m, RN_DEVICE_CUDA, segs, 2, 8, 5, 256, ag, &mg, pg, NULL, &err), RN_OK);
    int64_t flips = 0, cg = 0;
    for (int i = 0; i < 12; i++) {
        CU_ASSERT_EQUAL(pc[i].queries, 8);
        CU_ASSERT_EQUAL(pg[i].queries, 8);
        flips += llabs(pc[i].correct - pg[i].correct);
        cg += pg[i].correct;
    }
    CU_ASSERT(flips <= 1);
    CU_ASSERT(fabs((double)cg - 8 * (8 * ag[0] + 4 * ag[1])) < 1e-9); /* Σ correct = Σ examples·N·acc */
    rn_model_free(&m);

    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, "vocab_size = 257\ntokenizer = bytes\ntop_k = 4\n"
                                               "gamma = 0.5\n", "eval.cfg", NULL, NULL, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 32, &err), RN_OK);
    char data[256];
    snprintf(data, sizeof data, "/tmp/rn_cuda_eval_%d_corpus.txt", (int)getpid());
    FILE *f = fopen(data, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int i = 0; i < 300; i++) fprintf(f, "line %d of the held-out test corpus.\n", i);
    fclose(f);
    rn_text t;
    CU_ASSERT_EQUAL_FATAL(rn_text_load(&t, data, 0.2, 32, &err), RN_OK);
    double lc, bc, lg, bg;
    CU_ASSERT_EQUAL(rn_eval_text(&m, RN_DEVICE_CPU, &t, 32, 6, 3, &lc, &bc, NULL, &err), RN_OK);
    rc = rn_eval_text(&m, RN_DEVICE_CUDA, &t, 32, 6, 3, &lg, &bg, NULL, &err);
    if (rc) fprintf(stderr, "eval text (cuda): %s\n", err.msg);
    CU_ASSERT_EQUAL(rc, RN_OK);
    CU_ASSERT(fabs(lg - lc) <= 1e-4 * fabs(lc));
    CU_ASSERT(fabs(bg - bc) <= 1e-4 * fabs(bc));
    g_worst_eval_diff = fmax(fabs(lg - lc) / fabs(lc), fmax(fabs(ag[0] - ac[0]), fabs(ag[1] - ac[1])));
    rn_text_free(&t);
    remove(data);
    rn_model_free(&m);
}

/* 1: the scan test demands the CPU's floats for every γ (the host
 * emulation, whose pow is the CPU's); 0 (a GPU): for γ ∈ {0, 1} only. */
int rn_cuda_train_test_exact;

static double g_worst_scan;
static long g_scan_values, g_scan_differ;

typedef struct { int B, T, H, M, Kw, Kr, dv, cape; float gamma; } scan_shape;

/* K distinct slots for row t of each (row, head): random addresses, then
 * CAPE's rotation when cape (as the decoder gives them). */
static void scan_slots(rn_rng *r, uint32_t *slot, int n, int T, int H, int K, int M, int cape)
{
    for (int i = 0; i < n * H; i++) {
        uint32_t *s = slot + (size_t)i * K;
        for (int j = 0; j < K; j++) {
            int dup;
            do {
                s[j] = (uint32_t)(rn_rng_u64(r) % (uint64_t)M);
                dup = 0;
                for (int q = 0; q < j; q++) dup |= s[q] == s[j];
            } while (dup);
        }
        if (cape)
            for (int j = 0; j < K; j++) s[j] = rn_cape_slot(s[j], (i / H) % T, M);
    }
}

/* Compares one output tensor of the GPU scan with the CPU's: the count of
 * differing floats and max|g − c| / max|c|. */
static double scan_cmp(const float *g, const float *c, size_t n, int exact, const char *what, int si)
{
    long diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&g[i], &c[i], sizeof(float)) != 0;
    g_scan_values += (long)n;
    g_scan_differ += diff;
    double e = cuda_test_rel(g, c, (int64_t)n);
    if (diff && exact) fprintf(stderr, "scan shape %d: %s: %ld of %zu floats differ (rel %.3g)\n", si, what, diff, n, e);
    CU_ASSERT(!exact || diff == 0);
    CU_ASSERT(e < 1e-5);
    return e;
}

/* The trainer's segment-parallel PDMA scan (rn_cuda_pdma_train_run) against
 * the CPU's sequential one (rn_pdma_train_forward/_backward per sequence and
 * head) on hot slots (M small, T long: long segments, many reads of each
 * written state), cold ones (M large: segments of one or two writes, reads
 * of the reset state), CAPE and not, the reads' K below and above the
 * writes', every γ, and the edges T = 1, K = 1.  The same floats are
 * expected (see rn_cuda_segtrain.cuh); on a GPU, where its pow may round
 * differently, within 1e-5 relative per tensor for γ ∉ {0, 1}. */
static void test_pdma_scan(void)
{
    static const scan_shape shapes[] = {
        { 2, 256, 2, 4, 3, 4, 8, 0, 0.5f },    /* hot: 4 slots, 3 writes a row */
        { 2, 128, 2, 8, 6, 2, 8, 1, 2.0f },    /* hot, CAPE, reads' K below */
        { 2, 40, 3, 4096, 4, 8, 16, 0, 1.0f }, /* cold, reads' K above */
        { 3, 33, 2, 1024, 8, 3, 16, 1, 0.0f }, /* cold, CAPE */
        { 1, 100, 2, 16, 1, 2, 5, 1, 2.0f },   /* one write a row */
        { 1, 1, 1, 2, 1, 1, 1, 0, 0.5f },      /* one row */
    };
    rn_rng r;
    rn_rng_seed(&r, 77);
    const float eps = 1e-6f, eps_g = 0.01f;
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
        const scan_shape *sh = &shapes[si];
        const int B = sh->B, T = sh->T, H = sh->H, Kw = sh->Kw, Kr = sh->Kr, dv = sh->dv, n = B * T;
        const size_t nv = (size_t)n * H * dv, nw = (size_t)n * H * Kw, nr = (size_t)n * H * Kr, C = (size_t)dv + 1;
        const size_t M = (size_t)sh->M;
        float *v = malloc(sizeof(float) * nv), *dout = malloc(sizeof(float) * nv);
        float *ww = malloc(sizeof(float) * nw), *rw = malloc(sizeof(float) * nr);
        uint32_t *wslot = malloc(sizeof(uint32_t) * nw), *rslot = malloc(sizeof(uint32_t) * nr);
        float *o[2], *dvo[2], *dww[2], *drw[2]; /* [0] GPU, [1] CPU */
        for (int d = 0; d < 2; d++) {
            o[d] = malloc(sizeof(float) * nv); dvo[d] = malloc(sizeof(float) * nv);
            dww[d] = malloc(sizeof(float) * nw); drw[d] = malloc(sizeof(float) * nr);
        }
        float *wsave = malloc(sizeof(float) * (size_t)T * Kw * C), *rsave = malloc(sizeof(float) * (size_t)T * Kr * C);
        float *S = malloc(sizeof(float) * M * dv), *z = malloc(sizeof(float) * M);
        float *dS = calloc(M * dv, sizeof(float)), *dz = calloc(M, sizeof(float));
        CU_ASSERT_FATAL(v && dout && ww && rw && wslot && rslot && wsave && rsave && S && z && dS && dz);
        for (size_t i = 0; i < nv; i++) { v[i] = (float)(2 * rn_rng_uniform(&r) - 1); dout[i] = (float)(2 * rn_rng_uniform(&r) - 1); }
        for (size_t i = 0; i < nw; i++) ww[i] = (float)(0.9 * rn_rng_uniform(&r));
        for (size_t i = 0; i < nr; i++) rw[i] = (float)rn_rng_uniform(&r);
        scan_slots(&r, wslot, n, T, H, Kw, sh->M, sh->cape);
        scan_slots(&r, rslot, n, T, H, Kr, sh->M, sh->cape);
        rn_pdma_reset(S, z, (int64_t)M, dv);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const size_t ov = (size_t)b * T * H * dv + (size_t)h * dv, ow = ((size_t)b * T * H + h) * Kw,
                             orr = ((size_t)b * T * H + h) * Kr;
                rn_pdma_train_forward(o[1] + ov, wsave, rsave, S, z, v + ov, wslot + ow, ww + ow, rslot + orr,
                                      rw + orr, T, H * dv, H * Kw, Kw, H * Kr, Kr, dv, (int64_t)M, sh->gamma, eps);
                rn_pdma_train_backward(dvo[1] + ov, dww[1] + ow, drw[1] + orr, dS, dz, dout + ov, wsave, rsave,
                                       v + ov, wslot + ow, ww + ow, rslot + orr, rw + orr, T, H * dv, H * Kw, Kw,
                                       H * Kr, Kr, dv, sh->gamma, eps, eps_g);
            }
        rn_error err = { 0 };
        int rc = rn_cuda_pdma_train_run(o[0], dvo[0], dww[0], drw[0], v, wslot, ww, rslot, rw, dout, B, T, H, Kw,
                                        Kr, dv, (int64_t)M, sh->gamma, eps, eps_g, &err);
        if (rc) fprintf(stderr, "GPU scan: %s\n", err.msg);
        CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
        const int exact = rn_cuda_train_test_exact || sh->gamma == 0 || sh->gamma == 1;
        double e = scan_cmp(o[0], o[1], nv, exact, "o", si);
        e = fmax(e, scan_cmp(dvo[0], dvo[1], nv, exact, "dv", si));
        e = fmax(e, scan_cmp(dww[0], dww[1], nw, exact, "dww", si));
        e = fmax(e, scan_cmp(drw[0], drw[1], nr, exact, "drw", si));
        g_worst_scan = fmax(g_worst_scan, e);
        for (int d = 0; d < 2; d++) { free(o[d]); free(dvo[d]); free(dww[d]); free(drw[d]); }
        free(v); free(dout); free(ww); free(rw); free(wslot); free(rslot);
        free(wsave); free(rsave); free(S); free(z); free(dS); free(dz);
    }
}

void rn_cuda_train_tests(CU_pSuite s)
{
    CU_add_test(s, "GPU training scan (slot segments) == the CPU's sequential scan, hot and cold slots",
                test_pdma_scan);
    CU_add_test(s, "GPU trainer: loss and every parameter gradient == CPU's", test_train_grad_parity);
    CU_add_test(s, "GPU trainer: AdamW steps track the CPU's losses", test_train_steps_parity);
    CU_add_test(s, "train loop on cuda: losses track the CPU run's; checkpoints resume across devices",
                test_train_loop_devices);
    CU_add_test(s, "train loop on cuda, text task: losses track the CPU run's", test_train_loop_text);
    CU_add_test(s, "eval on cuda: MQAR accuracy and text loss == the CPU's", test_eval_devices);
}

void rn_cuda_train_summary(void)
{
    printf("cuda train parity: %ld tensors, worst gradient relative error %.3g (%s); "
           "%d-step loss max diff %.3g\n", g_tensors, g_worst_grad, g_worst_name[0] ? g_worst_name : "-",
           rn_cuda_train_test_steps, g_worst_step_diff);
    printf("cuda train parity: worst first-forward loss relative error %.3g; parameters after %d steps "
           "max relative difference %.3g; training loop step losses max diff %.3g; eval max diff %.3g\n",
           g_worst_loss_rel, rn_cuda_train_test_steps, g_worst_param, g_worst_loop_diff, g_worst_eval_diff);
    printf("cuda train parity: training scan against the CPU's: %ld of %ld floats differ, worst relative "
           "error %.3g\n", g_scan_differ, g_scan_values, g_worst_scan);
}
