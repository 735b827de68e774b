/* rn_train_loop.h — the logic of `ramtrace train` and `ramtrace eval`:
 * training options (the training keys of a .cfg file, beside the model
 * keys), the training loop (data, forward/backward, gradient accumulation,
 * clipping, AdamW, periodic evaluation, checkpoints, resume, metrics log),
 * and the evaluation of a model on MQAR or text.  The CLI only parses
 * flags and prints the progress reported through a callback. */
#ifndef RN_TRAIN_LOOP_H
#define RN_TRAIN_LOOP_H

#include <stdint.h>

#include "rn_adamw.h"
#include "rn_dist.h"
#include "rn_model.h"
#include "rn_tasks.h"

enum { RN_TASK_MQAR = 0, RN_TASK_TEXT = 1 };

typedef struct {
    int task;                 /* RN_TASK_* */
    rn_adamw_opts opt;        /* lr, min_lr, warmup, steps, betas, weight_decay, clip */
    int batch;                /* sequences per micro-batch (MQAR: of length seq_len) */
    int seq_len;              /* text: window; MQAR: the longest train segment */
    int grad_accum;           /* micro-batches per optimiser step */
    double eps_g;             /* proxy gradient ε (0 = exact) */
    int64_t eval_every, ckpt_every, log_every;
    int ckpt_keep;            /* keep every periodic checkpoint as CKPT.STEP too (key ckpt_keep) */
    uint64_t seed;
    int eval_examples;        /* MQAR: examples per ladder segment */
    int eval_windows;         /* text: held-out windows, spread evenly over the split (0 = all) */
    double val_frac;          /* text: held-out fraction of the corpus */
    double max_seconds;       /* stop (and save) after this wall time; 0 = none */
    int64_t stop_after;       /* stop (and save) after this step; 0 = none */
    int top_k_start;          /* top-K annealing: K at step 0 (0 = off; key top_k_start) */
    int top_k_read_start;     /* the reads' K at step 0 (0 = top_k_start; key top_k_read_start) */
    double top_k_anneal;      /* fraction of the steps over which K halves down to top_k */
    uint64_t anneal_layers;   /* layers whose K anneals, a bit each (key top_k_anneal_layers;
                               * 0: all); the others use top_k from step 0.  CPU only */
    double alpha_init;        /* initial α of every q and k (key alpha_init; 0: the model's init) */
    double alpha_init_cape;   /* the same for CAPE heads only (key alpha_init_cape; 0: alpha_init) */
    rn_mqar_seg segs[16];     /* MQAR training segments (key mqar_train) */
    int n_segs;
    int seg_w[16];            /* their weights (L:N*W; 0 reads as 1): steps per cycle */
    rn_mqar_seg first_segs[16]; /* MQAR segments of the first first_steps steps (key mqar_first) */
    int n_first_segs;
    int first_w[16];          /* their weights */
    int64_t first_steps;      /* key mqar_first_steps (0 = no such stage) */
    rn_mqar_seg eval_segs[16]; /* periodic evaluation segments (key mqar_eval; default the test ladder) */
    int n_eval_segs;
    char data[1024];          /* text corpus */
    char out[1024];           /* final model path */
    char ckpt[1024];          /* checkpoint path ("" = out + ".ckpt") */
    char log[1024];           /* metrics log (JSONL; "" = none) */
    char resume[1024];        /* checkpoint to resume from ("" = none) */
    int64_t schedule_steps;   /* the length of the schedule (key schedule_steps; 0 = steps):
                               * warm-up, cosine decay and the top-K annealing span its
                               * steps; the steps past it train at min_lr.  A resume with
                               * more steps than its checkpoint's run extends that run so */
    char init_from[1024];     /* model.bin to start from instead of a random init ("" =
                               * none): its weights, with fresh AdamW moments, at step 0 */
    int device;               /* RN_DEVICE_CPU or RN_DEVICE_CUDA (rn_device.h): where the
                               * steps run; evaluation always runs on the CPU.  Not part
                               * of the recipe: a checkpoint resumes on either device. */
    int precision;            /* rn_precision: fp32 (0) or bf16 (CPU: matrices rounded for the
                               * forward, FP32 master weights, moments and checkpoints).
                               * Not part of the recipe: a checkpoint resumes in either. */
    rn_dist *dist;            /* data-parallel training (rn_dist.h; NULL: one process): each
                               * rank trains its share of every batch, the gradients are
                               * summed in rank order, each rank updates its shard of the
                               * parameters and moments (ZeRO-1); rank 0 alone reports,
                               * evaluates and writes the log, checkpoints and model.  Not
                               * part of the recipe: a checkpoint resumes on any rank count. */
} rn_train_opts;

void rn_train_opts_default(rn_train_opts *o, int task);

/* rn_config_extra_fn for the training keys (lr, min_lr, warmup, steps, schedule_steps,
 * batch, seq_len, grad_accum, weight_decay, clip, beta1, beta2, eps_g,
 * eval_every, ckpt_every, ckpt_keep, log_every, seed, eval_examples, eval_windows,
 * val_frac, max_seconds, stop_after, top_k_start, top_k_read_start,
 * top_k_anneal, top_k_anneal_layers, alpha_init, alpha_init_cape, mqar_train = L:N[*W],L:N[*W],..., mqar_first = L:N[*W],...,
 * mqar_first_steps, mqar_eval = L:N,...); user is an rn_train_opts. */
int rn_train_opts_set(void *user, const char *key, const char *value, rn_error *err);

/* The recipe: the training keys that shape the run's trajectory (task,
 * schedule, optimiser, batch shape, proxy ε, top-K annealing, MQAR
 * segments, text split), as canonical `key = value` lines with warm-up
 * resolved.  Checkpoints store it and --resume refuses a different one, so
 * a resumed run is the run it continues.  Returns the length (as snprintf). */
size_t rn_train_recipe(const rn_train_opts *o, char *buf, size_t n);

/* The segment of position pos of the MQAR training cycle: segment i has
 * w[i] of the sum(w) steps of each cycle (w[i] <= 0 reads as 1), spread by
 * smooth weighted round robin (each step goes to the segment furthest
 * behind its share; ties to the lower index), so equal weights give
 * 0, 1, ..., n-1 in turn.  Returns an index in [0, n). */
int rn_mqar_seg_at(const int *w, int n, int64_t pos);

/* Cross-field checks (ranges, the task's shapes against the config). */
int rn_train_opts_validate(const rn_train_opts *o, const rn_config *c, rn_error *err);

/* The schedule's length: schedule_steps, or steps when it is 0. */
int64_t rn_train_schedule(const rn_train_opts *o);

/* The learning rate of 0-based `step`: rn_lr_at over the schedule's
 * length (warm-up as given, or schedule/20 when warmup < 0), so every step
 * past the schedule has min_lr. */
double rn_train_lr_at(const rn_train_opts *o, int64_t step);

/* Top-K annealing: the K the training forward uses at 0-based `step` for
 * a model whose K is k_final.  Off (top_k_start <= k_final): k_final.  On:
 * K starts at top_k_start and halves in equal phases over the first
 * top_k_anneal·steps steps, never below k_final; the rest of the run (and
 * every evaluation) uses k_final.  Dense early addressing lets queries and
 * keys align before the reads become sparse (docs/training.md). */
int rn_train_top_k_at(const rn_train_opts *o, int k_final, int64_t step);

/* The same for the reads: from top_k_read_start (0 = top_k_start) over the
 * same span.  Annealing the reads alone (top_k_start = 0) keeps the writes
 * sparse while the queries see many slots, at a fraction of the cost of a
 * dense start (docs/training.md). */
int rn_train_read_k_at(const rn_train_opts *o, int k_final, int64_t step);

/* What the loop reports, in the order a run reports it: START once (step =
 * the first step, 0 or the resumed checkpoint's; text = the checkpoint
 * path), then per step a STEP every log_every steps and at the last step,
 * an EVAL every eval_every and a CHECKPOINT every ckpt_every steps short
 * of the end (and a CHECKPOINT on an early stop), then the final EVAL and,
 * once the final checkpoint and model are written, DONE (text = the model
 * path).  A run that fails or is interrupted reports no DONE. */
typedef enum {
    RN_TRAIN_EV_START,
    RN_TRAIN_EV_STEP,
    RN_TRAIN_EV_EVAL,
    RN_TRAIN_EV_CHECKPOINT,
    RN_TRAIN_EV_DONE,
} rn_train_event_kind;

typedef struct {
    rn_train_event_kind kind;
    int64_t step, steps;      /* steps done (STEP: including this one), of steps */
    double loss, lr, grad_norm, tok_per_s, eta_s; /* STEP */
    double elapsed_s;         /* STEP, EVAL, DONE: seconds since the loop started */
    const char *text;         /* EVAL: the summary (JSON); CHECKPOINT, START: the checkpoint
                               * path; DONE: the model path */
    int top_k;                /* STEP: the K the forward used (annealing): writes */
    int read_k;               /* STEP: the reads' K */
} rn_train_event;

typedef void (*rn_train_report_fn)(void *user, const rn_train_event *ev);

/* Train a model of config c per o, reporting progress to report(user, ev)
 * (optional; see rn_train_event).  stop (optional) is polled every step:
 * when set, a checkpoint is written and RN_EINTR returned.  A non-finite
 * loss stops with RN_EINPUT naming the step (the last checkpoint stays).
 * On success the model is saved to o->out.
 *
 * o->resume continues the run of a checkpoint: its recipe must be this
 * run's, except for steps.  steps below the steps done is refused; steps
 * that end the checkpoint's schedule early are refused too (a different
 * run); more steps than the checkpoint's run had extend it: the schedule
 * keeps its length (schedule_steps, taken from the checkpoint when not
 * set) and the added steps train at min_lr, so the extended run is the
 * run that was given those steps and that schedule from the start.  Its
 * checkpoints record the new steps.
 *
 * o->init_from starts from that model's weights (a model.bin or
 * safetensors file whose config must be c: RN_EINPUT naming the first key
 * that differs) with zero AdamW moments at step 0; not with alpha_init.
 * The checkpoints' recipe names the model by its checksum, so a resume of
 * such a run gives the same init_from (the checkpoint's weights replace
 * the model's) and one without it, or with another model, is refused. */
int rn_train_run(const rn_train_opts *o, const rn_config *c, rn_train_report_fn report,
                 void *user, volatile int *stop, rn_error *err);

/* --init-from's check: a run of config c may start from the model at
 * path, whose config is model_cfg, only when they are equal; RN_EINPUT
 * naming the first key that differs otherwise. */
int rn_train_check_init_config(const char *path, const rn_config *model_cfg, const rn_config *c,
                               rn_error *err);

/* What an evaluation polls and reports: stop (optional) is polled between
 * batches (set: RN_EINTR); progress (optional) is called after each batch
 * with the examples (MQAR) or windows (text) done and the total.
 * precision (rn_precision; 0 = fp32, also with no ctl) is the GPU
 * trainer's on --device cuda (tf32, bf16: rn_cuda_train.h); the CPU
 * evaluates the model it is given (eval rounds it for bf16). */
typedef struct {
    volatile int *stop;
    void (*progress)(void *user, int64_t done, int64_t total);
    void *user;
    int precision;
} rn_eval_ctl;

/* MQAR evaluation on device (RN_DEVICE_CPU or RN_DEVICE_CUDA; the forward
 * of the CPU trainer or of the GPU trainer): accuracy per segment (mean
 * over examples of the fraction of correct query positions) into
 * acc[n_segs]; returns the mean over segments in *mean.  Examples come
 * from seed (fixed per segment), so every model is scored on the same
 * data. */
int rn_eval_mqar(const rn_model *m, int device, const rn_mqar_seg *segs, int n_segs, int examples,
                 uint64_t seed, int max_rows, double *acc, double *mean, const rn_eval_ctl *ctl,
                 rn_error *err);

/* Per-pair tallies of an MQAR evaluation: of the queries whose key is
 * pair i of its example (the i-th pair written into the context), how many
 * were asked and how many answered correctly. */
typedef struct { int64_t queries, correct; } rn_mqar_tally;

/* rn_eval_mqar, and per-pair tallies: segment s's N_s pairs at
 * pairs[Σ_{t<s} N_t ...] (Σ N_s entries, zeroed here).  The tallies use
 * the same per-query correctness as the accuracy, so on either device the
 * queries-weighted mean over a segment's pairs is its accuracy. */
int rn_eval_mqar_pairs(const rn_model *m, int device, const rn_mqar_seg *segs, int n_segs,
                       int examples, uint64_t seed, int max_rows, double *acc, double *mean,
                       rn_mqar_tally *pairs, const rn_eval_ctl *ctl, rn_error *err);

/* The seed of segment s's examples in rn_eval_mqar(seed): rn_mqar_example
 * drawn from it, in order, gives the examples the evaluation scores. */
uint64_t rn_eval_mqar_seed(uint64_t seed, int s);

/* Text evaluation on the held-out split, on device as rn_eval_mqar: mean
 * loss (nats per token: per byte for a byte corpus) and bits per byte (the
 * summed loss / ln 2 / the bytes of text the scored tokens stand for,
 * rn_token_nbytes) over up to `windows` windows of T tokens (0 = all). */
int rn_eval_text(const rn_model *m, int device, const rn_text *t, int T, int windows, int batch,
                 double *loss, double *bpb, const rn_eval_ctl *ctl, rn_error *err);

#endif
