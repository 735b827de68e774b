/* test_train_extend.c — training beyond a run's first plan: a resume with
 * more steps extends a finished run (the schedule keeps its length, the
 * added steps train at min_lr), --init-from starts a new run from a
 * model's weights with fresh AdamW moments, and the text corpus is never
 * looked for in the working directory (train/eval need --data). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_adamw.h"
#include "rn_checkpoint.h"
#include "rn_device.h"
#include "rn_modelfile.h"
#include "rn_tasks.h"
#include "rn_train.h"
#include "rn_train_loop.h"
#include "th.h"

/* A scratch path that stays valid (th_path's buffers rotate). */
static const char *P(const char *name)
{
    static char pool[32][512];
    static int next;
    char *p = pool[next++ % 32];
    snprintf(p, 512, "%s", th_path(name));
    return p;
}

/* The tiny MQAR run of tests/test_train.c: 6 steps, warm-up 2, cosine to
 * the default min_lr 1e-4, a checkpoint every 3 steps. */
static const char *tiny_cfg(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s", P("ext_tiny.cfg"));
    const char *t = "vocab_size = 600\ntokenizer = ids\nd_model = 16\nn_layers = 2\nn_heads = 2\n"
                    "d_p = 4\norder = 2\nd_v = 8\ntop_k = 2\nd_ff = 32\ncape = first:1\n"
                    "steps = 6\nbatch = 1\nseq_len = 256\nlr = 3e-3\nwarmup = 2\neval_every = 0\n"
                    "eval_examples = 2\nckpt_every = 3\nlog_every = 1\n";
    th_write_file(p, t, strlen(t));
    return p;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = th_read_file(a, &la), *y = th_read_file(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* The "step S/N  loss X" line of a run's progress: X as printed, or "". */
static const char *loss_of(const char *log, const char *step, char *out, size_t n)
{
    const char *p = strstr(log, step);
    out[0] = 0;
    if (p && (p = strstr(p, "loss "))) snprintf(out, n, "%.*s", (int)strcspn(p + 5, " "), p + 5);
    return out;
}

/* A checkpoint's step and recipe, read by the layout of rn_checkpoint.h
 * (not through the library's reader). */
static int ckpt_header(const char *path, int64_t *step, char *recipe, size_t n)
{
    size_t len;
    unsigned char *f = (unsigned char *)th_read_file(path, &len);
    if (!f || len < 20) { free(f); return -1; }
    uint32_t clen, rlen;
    memcpy(&clen, f + 12, 4);
    memcpy(&rlen, f + 16 + clen, 4);
    size_t at = 16 + (size_t)clen + 4;
    if (at + rlen + 8 > len || rlen >= n) { free(f); return -1; }
    memcpy(recipe, f + at, rlen);
    recipe[rlen] = 0;
    memcpy(step, f + at + rlen, 8);
    free(f);
    return 0;
}

/* The schedule over schedule_steps: the rate of every step against the
 * warm-up/cosine formula written out here; past the schedule, min_lr. */
TH_TEST(test_schedule_steps_lr, "schedule_steps: warm-up and cosine over the schedule, min_lr past it")
{
    rn_train_opts o;
    rn_train_opts_default(&o, RN_TASK_MQAR);
    o.opt.lr = 1e-2;
    o.opt.min_lr = 1e-3;
    o.opt.warmup = 10;
    o.opt.steps = 300;
    o.schedule_steps = 110;
    CU_ASSERT_EQUAL(rn_train_schedule(&o), 110);
    int bad = 0;
    for (int64_t s = 0; s < 300; s++) {
        double want = s < 10 ? 1e-2 * (double)(s + 1) / 10
                    : s < 110 ? 1e-3 + 0.5 * 9e-3 * (1 + cos(M_PI * (double)(s - 10) / 100)) : 1e-3;
        if (fabs(rn_train_lr_at(&o, s) - want) > 1e-12) bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* the rate at the end of the schedule's cosine is min_lr: no jump
     * beyond what the cosine's last step already had */
    CU_ASSERT(fabs(rn_train_lr_at(&o, 109) - 1e-3) < 1e-5);
    /* without the key the schedule is steps: the cosine runs to step 300 */
    o.schedule_steps = 0;
    CU_ASSERT_EQUAL(rn_train_schedule(&o), 300);
    CU_ASSERT(rn_train_lr_at(&o, 150) > 5e-3);
    /* auto warm-up (-1) is the schedule's twentieth, not the steps' */
    o.schedule_steps = 100;
    o.opt.warmup = -1;
    CU_ASSERT_DOUBLE_EQUAL(rn_train_lr_at(&o, 4), 1e-2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(rn_train_lr_at(&o, 3), 1e-2 * 4 / 5, 1e-12);
    /* top-K annealing spans the schedule too: K 8 halves twice to 2 over
     * the first half of 100 steps, not of 300 */
    o.top_k_start = 8;
    o.top_k_anneal = 0.5;
    CU_ASSERT_EQUAL(rn_train_top_k_at(&o, 2, 0), 8);
    CU_ASSERT_EQUAL(rn_train_top_k_at(&o, 2, 25), 4);
    CU_ASSERT_EQUAL(rn_train_top_k_at(&o, 2, 50), 2);
    /* the recipe names it only when it differs from steps */
    char rec[4096];
    rn_train_recipe(&o, rec, sizeof rec);
    CU_ASSERT_PTR_NOT_NULL(strstr(rec, "steps = 300\nwarmup = 5\nschedule_steps = 100\n"));
    o.schedule_steps = 300;
    rn_train_recipe(&o, rec, sizeof rec);
    CU_ASSERT_PTR_NULL(strstr(rec, "schedule_steps"));
    /* checks: no longer than steps; a tail at min_lr = 0 would not train */
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 600;
    c.tokenizer = RN_TOK_IDS;
    o.top_k_start = 0;
    o.opt.warmup = 5;
    rn_error err;
    o.schedule_steps = 301;
    CU_ASSERT_EQUAL(rn_train_opts_validate(&o, &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "schedule_steps (301) must not exceed steps (300)"));
    o.schedule_steps = 100;
    CU_ASSERT_EQUAL(rn_train_opts_validate(&o, &c, &err), RN_OK);
    o.opt.min_lr = 0;
    CU_ASSERT_EQUAL(rn_train_opts_validate(&o, &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "min_lr = 0"));
    o.opt.min_lr = 1e-3;
    o.opt.warmup = 150;
    CU_ASSERT_EQUAL(rn_train_opts_validate(&o, &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "warmup (150) must not exceed schedule_steps (100)"));
}

/* A finished 6-step run resumed with --steps 9, then 12: the step count
 * goes on from the checkpoint, the added steps run at min_lr, each
 * extension's checkpoint records its new steps, and the model is byte for
 * byte the one a single run given those steps and schedule_steps = 6
 * makes (one thread) — not the one of a 9-step schedule.  Fewer steps
 * than done, or than the schedule, are refused and touch nothing. */
TH_TEST(test_cli_resume_extends, "train --resume with more steps extends a finished run")
{
    const char *cfg = tiny_cfg();
    const char *six = P("ext_six.bin"), *ck6 = P("ext_six.ckpt"), *ext = P("ext_ext9.bin"), *ck9 = P("ext_ext9.ckpt");
    const char *ref = P("ext_ref9.bin"), *cos9 = P("ext_cos9.bin");
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s --threads 1 --ckpt %s -o %s", th_bin(), cfg, ck6,
                                 six), 0);
    char ref_out[8192], l7[32], l7ref[32];
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s --threads 1 --steps 9 --set schedule_steps=6 -o %s",
                                 th_bin(), cfg, ref), 0);
    snprintf(ref_out, sizeof ref_out, "%s", th_err());
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s --threads 1 --steps 9 --resume %s --ckpt %s -o %s",
                                 th_bin(), cfg, ck6, ck9, ext), 0);
    /* the count goes on from 6 (no step 1..6 again), at min_lr = 1e-4 */
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "step 7/9  loss"));
    CU_ASSERT_PTR_NULL(strstr(th_err(), "step 6/9"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "step 9/9  loss"));
    const char *p = strstr(th_err(), "step 7/9");
    CU_ASSERT(p && strstr(p, "lr 1.00e-04") != NULL);
    /* the loss goes on as the single run's does */
    loss_of(th_err(), "step 7/9", l7, sizeof l7);
    loss_of(ref_out, "step 7/9", l7ref, sizeof l7ref);
    CU_ASSERT(l7[0] && strcmp(l7, l7ref) == 0);
    CU_ASSERT(same_file(ext, ref));
    /* the 9-step cosine is another run */
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 9 -o %s", th_bin(), cfg, cos9), 0);
    CU_ASSERT_FALSE(same_file(ext, cos9));
    /* the checkpoints: the first still records 6 steps, the extension's 9
     * of a 6-step schedule */
    int64_t step = -1;
    char rec[4096];
    CU_ASSERT_EQUAL_FATAL(ckpt_header(ck6, &step, rec, sizeof rec), 0);
    CU_ASSERT_EQUAL(step, 6);
    CU_ASSERT(strstr(rec, "\nsteps = 6\n") && !strstr(rec, "schedule_steps"));
    CU_ASSERT_EQUAL_FATAL(ckpt_header(ck9, &step, rec, sizeof rec), 0);
    CU_ASSERT_EQUAL(step, 9);
    CU_ASSERT_PTR_NOT_NULL(strstr(rec, "\nsteps = 9\nwarmup = 2\nschedule_steps = 6\n"));
    char *peeked = NULL;
    rn_error err;
    CU_ASSERT_EQUAL(rn_checkpoint_peek(ck9, &peeked, &step, &err), RN_OK);
    CU_ASSERT(peeked && strcmp(peeked, rec) == 0 && step == 9);
    free(peeked);
    /* extended again, to 12: the same as the single run of 12 steps on the
     * 6-step schedule (the schedule comes from the checkpoint) */
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 12 --resume %s --ckpt %s -o %s",
                           th_bin(), cfg, ck9, P("ext_ext12.ckpt"), P("ext_ext12.bin")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "step 10/12"));
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 12 --set schedule_steps=6 -o %s",
                           th_bin(), cfg, P("ext_ref12.bin")), 0);
    CU_ASSERT(same_file(P("ext_ext12.bin"), P("ext_ref12.bin")));
    /* resuming the extension's checkpoint as it was (steps 9) trains no
     * more and keeps the model */
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 9 --resume %s --ckpt %s -o %s",
                           th_bin(), cfg, ck9, P("ext_again.ckpt"), P("ext_again.bin")), 0);
    CU_ASSERT(same_file(P("ext_again.bin"), ext));
    /* fewer steps than done: refused, one line, nothing written */
    size_t l0, l1;
    char *c0 = th_read_file(ck9, &l0);
    CU_ASSERT_EQUAL(th_run("%s -q train --task mqar --config %s --steps 7 --resume %s --ckpt %s -o %s", th_bin(), cfg,
                           ck9, ck9, P("ext_fewer.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "the run has done 9 steps; steps = 7 cannot be fewer"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_FALSE(th_file_exists(P("ext_fewer.bin")));
    char *c1 = th_read_file(ck9, &l1);
    CU_ASSERT(c0 && c1 && l0 == l1 && memcmp(c0, c1, l0) == 0);
    free(c0);
    free(c1);
    /* a run stopped at step 3 of 6 resumed with 5 steps would end its
     * cosine early (a different run): refused; with 8 it is extended */
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s --threads 1 --stop-after 3 --ckpt %s -o %s",
                                 th_bin(), cfg, P("ext_three.ckpt"), P("ext_three.bin")), 0);
    CU_ASSERT_EQUAL(th_run("%s -q train --task mqar --config %s --steps 5 --resume %s -o %s", th_bin(), cfg,
                           P("ext_three.ckpt"), P("ext_short.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "steps = 5 would cut the run's 6-step schedule short"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_FALSE(th_file_exists(P("ext_short.bin")));
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 8 --resume %s --ckpt %s -o %s",
                           th_bin(), cfg, P("ext_three.ckpt"), P("ext_three8.ckpt"), P("ext_three8.bin")), 0);
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config %s --threads 1 --steps 8 --set schedule_steps=6 -o %s",
                           th_bin(), cfg, P("ext_ref8.bin")), 0);
    CU_ASSERT(same_file(P("ext_three8.bin"), P("ext_ref8.bin")));
    /* an explicit schedule other than the checkpoint's is another recipe */
    CU_ASSERT_EQUAL(th_run("%s -q train --task mqar --config %s --steps 12 --set schedule_steps=9 --resume %s -o %s",
                           th_bin(), cfg, ck9, P("ext_other.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "'schedule_steps = 6', this run has 'schedule_steps = 9'"));
    CU_ASSERT_FALSE(th_file_exists(P("ext_other.bin")));
    /* extending a schedule that ends at min_lr = 0 would not train */
    CU_ASSERT_EQUAL_FATAL(th_run("%s train --task mqar --config %s --threads 1 --set min_lr=0 --ckpt %s -o %s",
                                 th_bin(), cfg, P("ext_zero.ckpt"), P("ext_zero.bin")), 0);
    CU_ASSERT_EQUAL(th_run("%s -q train --task mqar --config %s --set min_lr=0 --steps 9 --resume %s -o %s", th_bin(),
                           cfg, P("ext_zero.ckpt"), P("ext_zero9.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "min_lr = 0"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_FALSE(th_file_exists(P("ext_zero9.bin")));
}

/* A corpus whose training split and held-out split are the same 65 bytes
 * (val_frac 0.5): with seq_len 64 and batch 1 the only training window is
 * the only held-out window, so step 0's batch is what eval scores. */
static const char *twice_corpus(void)
{
    static char path[512];
    size_t n;
    char *t = th_read_file("samples/prompts/kjv.txt", &n);
    if (!t || n < 65) { free(t); return NULL; }
    char buf[130];
    memcpy(buf, t, 65);
    memcpy(buf + 65, t, 65);
    free(t);
    snprintf(path, sizeof path, "%s", P("ext_twice.txt"));
    th_write_file(path, buf, sizeof buf);
    return path;
}

typedef struct { double loss; int64_t step, steps; int n; } first_step;

static void record_first(void *user, const rn_train_event *ev)
{
    first_step *f = user;
    if (ev->kind != RN_TRAIN_EV_STEP || f->n++) return;
    f->loss = ev->loss;
    f->step = ev->step;
    f->steps = ev->steps;
}

/* --init-from: step 0 of the new run scores the model's weights (its loss
 * is the model's eval loss on the same window, and not a random init's),
 * and its one update is AdamW's first from zero moments at step 0,
 * computed here with the trainer and rn_adamw_update directly. */
TH_TEST(test_train_init_from, "--init-from: step 0 is the model's eval loss; fresh moments at step 0")
{
    const char *corpus = twice_corpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(corpus);
    rn_error err;
    rn_model src;
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&src, "samples/kjv.bin", &err), RN_OK);
    rn_train_opts o;
    rn_train_opts_default(&o, RN_TASK_TEXT);
    o.seq_len = 64;
    o.batch = 1;
    o.val_frac = 0.5;
    o.opt.steps = 1;
    o.opt.warmup = 0;
    o.opt.lr = 1e-3;
    o.eval_every = 0;
    o.ckpt_every = 0;
    o.eval_windows = 0;
    o.log_every = 1;
    snprintf(o.data, sizeof o.data, "%s", corpus);
    snprintf(o.out, sizeof o.out, "%s", P("ext_init.bin"));
    snprintf(o.init_from, sizeof o.init_from, "%s", "samples/kjv.bin");
    first_step f = { 0, 0, 0, 0 };
    int rc = rn_train_run(&o, &src.cfg, record_first, &f, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    CU_ASSERT_EQUAL(f.step, 1);
    CU_ASSERT_EQUAL(f.steps, 1);
    /* the model's eval loss on the held-out window (= the training window) */
    rn_text t;
    CU_ASSERT_EQUAL_FATAL(rn_text_load(&t, corpus, 0.5, 64, &err), RN_OK);
    double eval_loss, bpb;
    CU_ASSERT_EQUAL_FATAL(rn_eval_text(&src, RN_DEVICE_CPU, &t, 64, 0, 16, &eval_loss, &bpb, NULL, &err), RN_OK);
    CU_ASSERT(fabs(f.loss - eval_loss) <= 1e-5 * eval_loss);
    /* a random init of the same config starts elsewhere (near ln 257) */
    first_step r = { 0, 0, 0, 0 };
    o.init_from[0] = 0;
    snprintf(o.out, sizeof o.out, "%s", P("ext_random.bin"));
    CU_ASSERT_EQUAL_FATAL(rn_train_run(&o, &src.cfg, record_first, &r, NULL, &err), RN_OK);
    CU_ASSERT(fabs(r.loss - eval_loss) > 1.0);
    /* the one update: trainer forward/backward on the window (batch 1),
     * clipping, AdamW from zero moments at step 0 with lr(0) */
    rn_model m;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &src.cfg, 99, &err), RN_OK);
    memcpy(m.params, src.params, sizeof(rn_real) * (size_t)m.n_block);
    rn_trainer *tr = NULL;
    CU_ASSERT_EQUAL_FATAL(rn_trainer_create(&tr, &m, 64, 64, o.eps_g, &err), RN_OK);
    int tok[64], tgt[64];
    rn_text_val_window(&t, 0, 64, tok, tgt);
    double loss;
    rn_trainer_zero_grads(tr);
    CU_ASSERT_EQUAL_FATAL(rn_trainer_forward(tr, tok, tgt, 1, 64, &loss, &err), RN_OK);
    rn_trainer_backward(tr, 1.0);
    double gn = rn_grad_norm(rn_trainer_grads(tr), m.n_block);
    double gscale = gn > o.opt.clip ? o.opt.clip / gn : 1.0;
    rn_real *mom = calloc(2 * (size_t)m.n_block, sizeof(rn_real));
    CU_ASSERT_PTR_NOT_NULL_FATAL(mom);
    rn_adamw_update(&m.cfg, m.params, rn_trainer_grads(tr), mom, mom + m.n_block, &o.opt, 0,
                    rn_train_lr_at(&o, 0), gscale);
    rn_model got;
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&got, P("ext_init.bin"), &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(got.n_block, m.n_block);
    int64_t far = 0, moved = 0;
    for (int64_t i = 0; i < m.n_block; i++) {
        if (fabs((double)got.params[i] - m.params[i]) > 1e-6 * (1 + fabs(m.params[i]))) far++;
        if (fabs((double)got.params[i] - src.params[i]) > 1e-4) moved++;
    }
    CU_ASSERT_EQUAL(far, 0);
    CU_ASSERT(moved > m.n_block / 2); /* the step moved the weights: the comparison can fail */
    /* its checkpoint counts the new run's steps */
    char *rec = NULL;
    int64_t step = -1;
    CU_ASSERT_EQUAL(rn_checkpoint_peek(P("ext_init.bin.ckpt"), &rec, &step, &err), RN_OK);
    CU_ASSERT_EQUAL(step, 1);
    free(rec);
    rn_model_free(&got);
    free(mom);
    rn_trainer_free(tr);
    rn_model_free(&m);
    rn_text_free(&t);
    rn_model_free(&src);
}

/* `train --init-from` on the command line: the config is the model's
 * (4 layers, not the text default's 2); a model key that differs from it,
 * a missing or damaged model file: one line, exit 2, no output.  Its
 * checkpoints name the model (checksum 372b9aaf62b6b705, as `ramtrace
 * info samples/kjv.bin` shows): a resume needs the same --init-from. */
TH_TEST(test_cli_init_from, "train --init-from: the model's config; conflicts and bad files refused")
{
    const char *corpus = twice_corpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(corpus);
    const char *out = P("ext_cli_init.bin");
    const char *common = "--task text --seq-len 64 --batch 1 --set val_frac=0.5 --steps 2 --set eval_every=0 "
                         "--set ckpt_every=0";
    CU_ASSERT_EQUAL(th_run("%s train %s --data %s --init-from samples/kjv.bin --threads 1 -o %s", th_bin(), common,
                           corpus, out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "from the weights of samples/kjv.bin"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "step 2/2"));
    rn_model a, b;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&a, out, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&b, "samples/kjv.bin", &err), RN_OK);
    char ca[8192], cb[8192];
    rn_config_format(&a.cfg, ca, sizeof ca);
    rn_config_format(&b.cfg, cb, sizeof cb);
    CU_ASSERT_STRING_EQUAL(ca, cb);
    CU_ASSERT_EQUAL(a.cfg.n_layers, 4);
    rn_model_free(&a);
    rn_model_free(&b);
    /* the sample's own config file: the same model keys, accepted */
    CU_ASSERT_EQUAL(th_run("%s -q train %s --config samples/configs/kjv.cfg --seq-len 64 --batch 1 --data %s "
                           "--init-from samples/kjv.bin --threads 1 --set val_frac=0.5 --steps 1 --set warmup=0 -o %s",
                           th_bin(), "--task text", corpus, P("ext_cfg_init.bin")), 0);
    CU_ASSERT_EQUAL(th_err()[0], '\0');
    /* a conflicting model key: named, with the model's value */
    static const char *const bad[] = { "--set d_model=64", "--set n_layers=2", "--set top_k=4",
                                       "--config samples/configs/tiny.cfg" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from samples/kjv.bin %s -o %s", th_bin(), common,
                               corpus, bad[i], P("ext_conflict.bin")), 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--init-from samples/kjv.bin: the model has '"));
        CU_ASSERT_FALSE(th_file_exists(P("ext_conflict.bin")));
    }
    CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from samples/kjv.bin --set d_model=64 -o %s", th_bin(),
                           common, corpus, P("ext_conflict.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "'d_model = 128', this run has 'd_model = 64'"));
    /* missing, damaged, not a model */
    CU_ASSERT_EQUAL(th_run("head -c 5000 samples/kjv.bin > %s", P("ext_cut.bin")), 0);
    th_write_file(P("ext_junk.bin"), "not a model at all\n", 19);
    const char *files[] = { P("ext_nope.bin"), P("ext_cut.bin"), P("ext_junk.bin") };
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from %s -o %s", th_bin(), common, corpus, files[i],
                               P("ext_bad_init.bin")), 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--init-from"));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), files[i]));
        CU_ASSERT_FALSE(th_file_exists(P("ext_bad_init.bin")));
    }
    /* its resume: the same command with --resume (config from the model,
     * weights from the checkpoint) continues it exactly; without
     * --init-from, or from another model of that config, it is another run */
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q train %s --data %s --init-from samples/kjv.bin --threads 1 --stop-after 1 "
                                 "--ckpt %s -o %s",
                                 th_bin(), common, corpus, P("ext_half.ckpt"), P("ext_half.bin")), 0);
    CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from samples/kjv.bin --threads 1 --resume %s -o %s",
                           th_bin(), common, corpus, P("ext_half.ckpt"), P("ext_resumed.bin")), 0);
    CU_ASSERT(same_file(P("ext_resumed.bin"), out));
    CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --config samples/configs/kjv.cfg --seq-len 64 --batch 1 "
                           "--set warmup=0 --steps 2 --lr 1e-3 --set min_lr=1e-4 --resume %s -o %s",
                           th_bin(), common, corpus, P("ext_half.ckpt"), P("ext_both.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "'init_from = 372b9aaf62b6b705', this run has no such key"));
    CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from %s --resume %s -o %s", th_bin(), common, corpus, out,
                           P("ext_half.ckpt"), P("ext_both.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "'init_from = 372b9aaf62b6b705', this run has 'init_from = "));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    /* with alpha_init (an init of its own): refused */
    CU_ASSERT_EQUAL(th_run("%s -q train %s --data %s --init-from samples/kjv.bin --set alpha_init=1 -o %s", th_bin(),
                           common, corpus, P("ext_both.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "alpha_init"));
    CU_ASSERT_FALSE(th_file_exists(P("ext_both.bin")));
}

/* Outside the source tree there is no data/kjv.txt: train and eval --task
 * text ask for --data in one line (they used to fail on the missing
 * default file); with --data a relative path works from there. */
TH_TEST(test_cli_text_needs_data, "train/eval --task text without --data: one line naming --data, from any directory")
{
    const char *corpus = twice_corpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(corpus);
    char bin[PATH_MAX], model[PATH_MAX];
    CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(th_bin(), bin));
    CU_ASSERT_PTR_NOT_NULL_FATAL(realpath("samples/kjv.bin", model));
    const char *dir = th_tmpdir();
    CU_ASSERT_EQUAL(th_run("cd %s && %s train --task text -o ext_fresh.bin", dir, bin), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--task text needs a corpus: --data FILE"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_FALSE(th_file_exists(P("ext_fresh.bin")));
    CU_ASSERT_EQUAL(th_run("cd %s && %s eval %s --task text", dir, bin, model), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--task text needs a corpus: --data FILE"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_out()[0], '\0');
    /* the same from the repository root: no default there either */
    CU_ASSERT_EQUAL(th_run("%s eval samples/kjv.bin --task text", th_bin()), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--data FILE"));
    /* --data relative to the directory the command runs in */
    CU_ASSERT_EQUAL(th_run("cd %s && %s eval %s --task text --data ext_twice.txt --seq-len 64 --val-frac 0.5 "
                           "-f csv", dir, bin, model), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "loss_nats_per_byte,bits_per_byte,loss_nats_per_token\n"));
    CU_ASSERT_EQUAL(th_run("cd %s && %s -q train --task text --data ext_twice.txt --seq-len 64 --batch 1 "
                           "--set val_frac=0.5 --steps 1 --threads 1 -o ext_fresh.bin", dir, bin), 0);
    CU_ASSERT(th_file_exists(P("ext_fresh.bin")));
}
