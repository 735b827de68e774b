/* rn_train_loop.c — the training loop, its options and the evaluations
 * (see rn_train_loop.h).  Float builds only (it writes files). */
#include "rn_train_loop.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_checksum.h"
#include "rn_cuda_nccl.h"
#include "rn_cuda_train.h"
#include "rn_checkpoint.h"
#include "rn_device.h"
#include "rn_precision.h"
#include "rn_memlimit.h"
#include "rn_modelfile.h"
#include "rn_threads.h"
#include "rn_tokenizer.h"
#include "rn_train.h"

void rn_train_opts_default(rn_train_opts *o, int task)
{
    memset(o, 0, sizeof *o);
    o->task = task;
    rn_adamw_defaults(&o->opt);
    o->batch = task == RN_TASK_MQAR ? 16 : 16;
    o->seq_len = 256;
    o->opt.warmup = -1; /* auto: steps / 20 */
    o->grad_accum = 1;
    o->eps_g = 0.01;
    o->eval_every = 200;
    o->ckpt_every = 200;
    o->log_every = 10;
    o->seed = 1;
    o->eval_examples = 100;
    o->eval_windows = 256; /* spread over the split: within 1% of the whole split's bits/byte (docs/training.md) */
    o->val_frac = 0.05;
    o->n_segs = rn_mqar_n_train_segs;
    memcpy(o->segs, rn_mqar_train_segs, sizeof(rn_mqar_seg) * (size_t)rn_mqar_n_train_segs);
    o->top_k_anneal = 0.5;
    o->n_eval_segs = rn_mqar_n_test_segs;
    memcpy(o->eval_segs, rn_mqar_test_segs, sizeof(rn_mqar_seg) * (size_t)rn_mqar_n_test_segs);
}

/* mqar_train / mqar_first / mqar_eval = 64:4*5,128:8 — a list of MQAR
 * segments, each with an optional weight W (1..64, default 1: the
 * segment's steps per training cycle).  w may be NULL (mqar_eval: no
 * weights allowed). */
static int parse_segs(const char *key, rn_mqar_seg *segs, int *w, int *n_out, const char *v, rn_error *err)
{
    int n = 0;
    const char *p = v;
    const char *what = w ? "L:N or L:N*W (W 1..64)" : "L:N";
    while (*p) {
        int L, N, W = 1, used;
        if (n == 16 || sscanf(p, "%d:%d%n", &L, &N, &used) != 2 || L < 4 || N < 1)
            return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list of up to 16 %s pairs", key, v, what);
        p += used;
        if (*p == '*' && w) {
            if (sscanf(p + 1, "%d%n", &W, &used) != 1 || W < 1 || W > 64)
                return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list of up to 16 %s pairs", key, v, what);
            p += 1 + used;
        }
        segs[n].L = L;
        segs[n].N = N;
        if (w) w[n] = W;
        n++;
        if (*p == ',') p++;
        else if (*p) return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list of up to 16 %s pairs", key, v, what);
    }
    if (!n) return rn_seterr(err, RN_EINPUT, "%s: empty list", key);
    *n_out = n;
    return RN_OK;
}

/* top_k_anneal_layers = 0 or 0,2 — a list of layer indices, as a bit mask. */
static int parse_layers(const char *key, uint64_t *mask, const char *v, rn_error *err)
{
    uint64_t m = 0;
    const char *p = v;
    while (*p) {
        int l, used;
        if (sscanf(p, "%d%n", &l, &used) != 1 || l < 0 || l >= 64 || p[0] == '+' || p[0] == ' ')
            return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list of layer indices (0..63)", key, v);
        m |= 1ull << l;
        p += used;
        if (*p == ',') p++;
        else if (*p) return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list of layer indices (0..63)", key, v);
    }
    if (!m) return rn_seterr(err, RN_EINPUT, "%s: empty list", key);
    *mask = m;
    return RN_OK;
}

int rn_mqar_seg_at(const int *w, int n, int64_t pos)
{
    int total = 0, cur[16] = { 0 };
    assert(n >= 1 && n <= 16);
    for (int i = 0; i < n; i++) total += w[i] > 0 ? w[i] : 1;
    const int64_t r = pos % total;
    int pick = 0;
    for (int64_t t = 0; t <= r; t++) {
        pick = 0;
        for (int i = 0; i < n; i++) {
            cur[i] += w[i] > 0 ? w[i] : 1;
            if (cur[i] > cur[pick]) pick = i;
        }
        cur[pick] -= total;
    }
    return pick;
}

/* Appends "L:N[*W],..." to a recipe line (weights of 1 are not written,
 * so recipes of unweighted runs read as before). */
static size_t seg_list(char *buf, size_t n, const rn_mqar_seg *segs, const int *w, int count)
{
    size_t k = 0;
    for (int i = 0; i < count; i++) {
        int r = snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, w[i] > 1 ? "%s%d:%d*%d" : "%s%d:%d",
                         i ? "," : "", segs[i].L, segs[i].N, w[i]);
        if (r > 0) k += (size_t)r;
    }
    return k;
}

static int num(const char *key, const char *v, double lo, double hi, double *out, rn_error *err)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a number in [%g, %g]", key, v, lo, hi);
    *out = x;
    return RN_OK;
}

int rn_train_opts_set(void *user, const char *key, const char *v, rn_error *err)
{
    rn_train_opts *o = user;
    double x;
#define D(name, field, lo, hi) if (!strcmp(key, name)) { \
        if (num(key, v, lo, hi, &x, err)) return err->code; \
        o->field = x; \
        return RN_OK; \
    }
#define IN(name, field, lo, hi) if (!strcmp(key, name)) { \
        if (num(key, v, lo, hi, &x, err)) return err->code; \
        if (x != floor(x)) return rn_seterr(err, RN_EINPUT, "%s: '%s' is not an integer", key, v); \
        o->field = (int64_t)x; \
        return RN_OK; \
    }
    D("lr", opt.lr, 0, 10);
    D("min_lr", opt.min_lr, 0, 10);
    IN("warmup", opt.warmup, 0, 1e9);
    IN("steps", opt.steps, 1, 1e9);
    IN("schedule_steps", schedule_steps, 0, 1e9);
    D("beta1", opt.beta1, 0, 0.999999);
    D("beta2", opt.beta2, 0, 0.999999);
    D("adam_eps", opt.eps, 0, 1);
    D("weight_decay", opt.weight_decay, 0, 10);
    D("clip", opt.clip, 0, 1e9);
    IN("batch", batch, 1, 65536);
    IN("seq_len", seq_len, 2, 1 << 20);
    IN("grad_accum", grad_accum, 1, 65536);
    D("eps_g", eps_g, 0, 0.999);
    IN("eval_every", eval_every, 0, 1e9);
    IN("ckpt_every", ckpt_every, 0, 1e9);
    IN("ckpt_keep", ckpt_keep, 0, 1);
    IN("log_every", log_every, 1, 1e9);
    IN("seed", seed, 0, 9e15);
    IN("eval_examples", eval_examples, 1, 1e6);
    IN("eval_windows", eval_windows, 0, 1e9);
    D("val_frac", val_frac, 0.001, 0.5);
    D("max_seconds", max_seconds, 0, 1e9);
    IN("stop_after", stop_after, 0, 1e9);
    IN("top_k_start", top_k_start, 0, RN_MAX_TOPK);
    IN("top_k_read_start", top_k_read_start, 0, RN_MAX_TOPK);
    D("top_k_anneal", top_k_anneal, 0.001, 1);
    if (!strcmp(key, "top_k_anneal_layers")) return parse_layers(key, &o->anneal_layers, v, err);
    D("alpha_init", alpha_init, -10, 10);
    D("alpha_init_cape", alpha_init_cape, -10, 10);
    if (!strcmp(key, "mqar_train")) return parse_segs(key, o->segs, o->seg_w, &o->n_segs, v, err);
    if (!strcmp(key, "mqar_eval")) return parse_segs(key, o->eval_segs, NULL, &o->n_eval_segs, v, err);
    if (!strcmp(key, "mqar_first")) return parse_segs(key, o->first_segs, o->first_w, &o->n_first_segs, v, err);
    IN("mqar_first_steps", first_steps, 0, 1e9);
#undef D
#undef IN
    return rn_seterr(err, RN_EINPUT, "unknown config key '%s'", key);
}

int64_t rn_train_schedule(const rn_train_opts *o)
{
    return o->schedule_steps > 0 ? o->schedule_steps : o->opt.steps;
}

double rn_train_lr_at(const rn_train_opts *o, int64_t step)
{
    rn_adamw_opts a = o->opt;
    a.steps = rn_train_schedule(o);
    if (a.warmup < 0) a.warmup = a.steps / 20;
    return rn_lr_at(&a, step);
}

size_t rn_train_recipe(const rn_train_opts *o, char *buf, size_t n)
{
    const int64_t sched = rn_train_schedule(o);
    int64_t warmup = o->opt.warmup < 0 ? sched / 20 : o->opt.warmup;
    size_t k = 0;
#define ADD(...) do { int w_ = snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__); if (w_ > 0) k += (size_t)w_; } while (0)
    ADD("task = %s\n", o->task == RN_TASK_MQAR ? "mqar" : "text");
    ADD("steps = %lld\nwarmup = %lld\n", (long long)o->opt.steps, (long long)warmup);
    /* only when shorter than steps, so the recipes of other runs read as before */
    if (sched != o->opt.steps) ADD("schedule_steps = %lld\n", (long long)sched);
    ADD("lr = %.17g\nmin_lr = %.17g\n", o->opt.lr, o->opt.min_lr);
    ADD("beta1 = %.17g\nbeta2 = %.17g\nadam_eps = %.17g\n", o->opt.beta1, o->opt.beta2, o->opt.eps);
    ADD("weight_decay = %.17g\nclip = %.17g\n", o->opt.weight_decay, o->opt.clip);
    ADD("batch = %d\nseq_len = %d\ngrad_accum = %d\n", o->batch, o->seq_len, o->grad_accum);
    ADD("eps_g = %.17g\n", o->eps_g);
    ADD("top_k_start = %d\ntop_k_read_start = %d\ntop_k_anneal = %.17g\n", o->top_k_start,
        o->top_k_read_start, o->top_k_anneal);
    /* only when set, so checkpoints from before these keys still resume */
    if (o->anneal_layers) {
        ADD("top_k_anneal_layers = ");
        for (int l = 0, first = 1; l < 64; l++)
            if (o->anneal_layers >> l & 1) { ADD("%s%d", first ? "" : ",", l); first = 0; }
        ADD("\n");
    }
    if (o->alpha_init != 0) ADD("alpha_init = %.17g\n", o->alpha_init);
    if (o->alpha_init_cape != 0) ADD("alpha_init_cape = %.17g\n", o->alpha_init_cape);
    if (o->task == RN_TASK_MQAR) {
        ADD("mqar_train = ");
        k += seg_list(buf + (k < n ? k : n), k < n ? n - k : 0, o->segs, o->seg_w, o->n_segs);
        ADD("\n");
        if (o->first_steps > 0) {
            ADD("mqar_first = ");
            k += seg_list(buf + (k < n ? k : n), k < n ? n - k : 0, o->first_segs, o->first_w, o->n_first_segs);
            ADD("\nmqar_first_steps = %lld\n", (long long)o->first_steps);
        }
    } else {
        ADD("val_frac = %.17g\n", o->val_frac);
    }
#undef ADD
    return k;
}

int rn_train_opts_validate(const rn_train_opts *o, const rn_config *c, rn_error *err)
{
    if (o->opt.min_lr > o->opt.lr)
        return rn_seterr(err, RN_EINPUT, "min_lr (%g) must not exceed lr (%g)", o->opt.min_lr, o->opt.lr);
    const int64_t sched = rn_train_schedule(o);
    if (sched > o->opt.steps)
        return rn_seterr(err, RN_EINPUT, "schedule_steps (%lld) must not exceed steps (%lld) (stop_after ends a run early)",
                         (long long)sched, (long long)o->opt.steps);
    if (o->opt.warmup >= 0 && o->opt.warmup > sched)
        return rn_seterr(err, RN_EINPUT, "warmup (%lld) must not exceed %s (%lld)", (long long)o->opt.warmup,
                         sched < o->opt.steps ? "schedule_steps" : "steps", (long long)sched);
    if (sched < o->opt.steps && o->opt.min_lr == 0)
        return rn_seterr(err, RN_EINPUT, "the %lld steps past the %lld-step schedule would train at min_lr = 0, "
                                         "which changes nothing (set min_lr > 0)",
                         (long long)(o->opt.steps - sched), (long long)sched);
    if (o->init_from[0] && (o->alpha_init != 0 || o->alpha_init_cape != 0))
        return rn_seterr(err, RN_EINPUT, "alpha_init sets the α of a random init; --init-from starts from the model's");
    if ((int64_t)o->batch * o->seq_len > (1 << 22))
        return rn_seterr(err, RN_EINPUT, "batch x seq_len = %lld rows is too large (max 4194304)", (long long)o->batch * o->seq_len);
    if (o->anneal_layers && (c->n_layers >= 64 || o->anneal_layers >> c->n_layers))
        return rn_seterr(err, RN_EINPUT, "top_k_anneal_layers names a layer past the model's %d", c->n_layers);
    if (o->dist && o->device == RN_DEVICE_CUDA && !rn_nccl_available()) {
        rn_nccl_select_device(0, err); /* its message says what the build lacks */
        return RN_EINPUT;
    }
    if (o->dist && o->batch < rn_dist_size(o->dist))
        return rn_seterr(err, RN_EINPUT, "--dist: batch = %d sequences cannot be shared by %d ranks (at least one each)",
                         o->batch, rn_dist_size(o->dist));
    if (o->anneal_layers && o->device == RN_DEVICE_CUDA)
        return rn_seterr(err, RN_EINPUT, "top_k_anneal_layers: per-layer K is in the CPU trainer only; "
                                         "the GPU trainer anneals every layer (leave the key out or use --device cpu)");
    if (o->top_k_start > 0 && o->top_k_start < c->top_k)
        return rn_seterr(err, RN_EINPUT, "top_k_start (%d) must not be below top_k (%d)", o->top_k_start, c->top_k);
    if (o->top_k_start > 0 && o->top_k_start > rn_config_slots(c))
        return rn_seterr(err, RN_EINPUT, "top_k_start (%d) exceeds the %lld memory slots", o->top_k_start,
                         (long long)rn_config_slots(c));
    if (o->top_k_read_start > 0 && o->top_k_read_start < c->top_k)
        return rn_seterr(err, RN_EINPUT, "top_k_read_start (%d) must not be below top_k (%d)", o->top_k_read_start, c->top_k);
    if (o->top_k_read_start > 0 && o->top_k_read_start > rn_config_slots(c))
        return rn_seterr(err, RN_EINPUT, "top_k_read_start (%d) exceeds the %lld memory slots", o->top_k_read_start,
                         (long long)rn_config_slots(c));
    if (o->task == RN_TASK_MQAR) {
        if (c->tokenizer != RN_TOK_IDS)
            return rn_seterr(err, RN_EINPUT, "mqar needs tokenizer = ids (the config says bytes)");
        if (o->first_steps > 0 && !o->n_first_segs)
            return rn_seterr(err, RN_EINPUT, "mqar_first_steps = %lld needs mqar_first (the segments of those steps)",
                             (long long)o->first_steps);
        const int n_first = o->first_steps > 0 ? o->n_first_segs : 0; /* unused otherwise */
        for (int i = 0; i < o->n_segs + n_first; i++) {
            const rn_mqar_seg *s = i < o->n_segs ? &o->segs[i] : &o->first_segs[i - o->n_segs];
            int rc = rn_mqar_check(c->vocab_size, s->L, s->N, err);
            if (rc) return rc;
            if (s->L > o->seq_len)
                return rn_seterr(err, RN_EINPUT, "mqar: seq_len %d is shorter than the train segment length %d", o->seq_len, s->L);
        }
        for (int i = 0; i < o->n_eval_segs; i++) {
            int rc = rn_mqar_check(c->vocab_size, o->eval_segs[i].L, o->eval_segs[i].N, err);
            if (rc) {
                char why[RN_ERRMSG_LEN];
                snprintf(why, sizeof why, "%s", err->msg);
                return rn_seterr(err, RN_EINPUT, "mqar_eval: %s", why);
            }
        }
    } else if (c->vocab_size < 256) {
        return rn_seterr(err, RN_EINPUT, "text: vocab_size must be >= 256 for bytes (got %d)", c->vocab_size);
    }
    return RN_OK;
}

/* K at `step` of a schedule that starts at `start` and halves in equal
 * phases over the first anneal·steps steps, never below k_final. */
static int anneal_k(int start, double anneal, int64_t steps, int k_final, int64_t step)
{
    if (start <= k_final) return k_final;
    int phases = 0; /* halvings from start down to k_final */
    while ((start >> phases) > k_final) phases++;
    double span = anneal * (double)steps;
    if ((double)step >= span) return k_final;
    int i = (int)((double)step / span * phases);
    int k = start >> i;
    return k > k_final ? k : k_final;
}

int rn_train_top_k_at(const rn_train_opts *o, int k_final, int64_t step)
{
    return anneal_k(o->top_k_start, o->top_k_anneal, rn_train_schedule(o), k_final, step);
}

int rn_train_read_k_at(const rn_train_opts *o, int k_final, int64_t step)
{
    int start = o->top_k_read_start ? o->top_k_read_start : o->top_k_start;
    return anneal_k(start, o->top_k_anneal, rn_train_schedule(o), k_final, step);
}

static uint64_t stream_seed(uint64_t seed, uint64_t stream, uint64_t i)
{
    return seed * 0x9E3779B97F4A7C15ull + stream * 0xBF58476D1CE4E5B9ull + i * 0x94D049BB133111EBull;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The forward pass an evaluation runs: the CPU trainer's or the GPU
 * trainer's (eval --device cuda), behind one face. */
typedef struct {
    rn_trainer *cpu;
    rn_cuda_trainer *gpu;
} evaluator;

static int ev_forward(evaluator *e, const int *tok, const int *tgt, int B, int T, double *loss,
                      rn_error *err)
{
    return e->cpu ? rn_trainer_forward(e->cpu, tok, tgt, B, T, loss, err)
                  : rn_cuda_trainer_forward(e->gpu, tok, tgt, B, T, loss, err);
}

static int ev_n_labelled(const evaluator *e)
{
    return e->cpu ? rn_trainer_n_labelled(e->cpu) : rn_cuda_trainer_n_labelled(e->gpu);
}

static const int *ev_label_rows(const evaluator *e)
{
    return e->cpu ? rn_trainer_label_rows(e->cpu) : rn_cuda_trainer_label_rows(e->gpu);
}

static const uint8_t *ev_correct(const evaluator *e)
{
    return e->cpu ? rn_trainer_correct(e->cpu) : rn_cuda_trainer_correct(e->gpu);
}

static double ev_loss_sum(const evaluator *e)
{
    return e->cpu ? rn_trainer_loss_sum(e->cpu) : rn_cuda_trainer_loss_sum(e->gpu);
}

/* An evaluator for model m on device dev with room for max_rows rows. */
static int ev_create(evaluator *e, const rn_model *m, int dev, int prec, int max_rows, rn_error *err)
{
    memset(e, 0, sizeof *e);
    if (dev != RN_DEVICE_CUDA) return rn_trainer_create_eval(&e->cpu, m, max_rows, max_rows, err);
    return rn_cuda_trainer_create(&e->gpu, m, max_rows, max_rows, 0.0, 0, 0, prec, err);
}

static void ev_free(evaluator *e)
{
    rn_trainer_free(e->cpu);
    rn_cuda_trainer_free(e->gpu);
}

uint64_t rn_eval_mqar_seed(uint64_t seed, int s)
{
    return stream_seed(seed, 2, (uint64_t)s);
}

/* Evaluate the ladder with an existing evaluator (forward only).  pairs
 * (optional) receives per-pair tallies as rn_eval_mqar_pairs describes,
 * with pair_of scratch of max_rows ints (unused without pairs). */
static int eval_mqar_with(evaluator *tr, int V, const rn_mqar_seg *segs, int n_segs, int examples,
                          uint64_t seed, int max_rows, int *tok, int *tgt, double *pbuf,
                          double *acc, double *mean, rn_mqar_tally *pairs, int *pair_of,
                          const rn_eval_ctl *ctl, rn_error *err)
{
    double sum = 0;
    rn_mqar_tally *seg_pairs = pairs;
    for (int s = 0; s < n_segs; s++) {
        int L = segs[s].L, N = segs[s].N;
        int rc = rn_mqar_check(V, L, N, err);
        if (rc) return rc;
        if (L > max_rows) return rn_seterr(err, RN_EINPUT, "mqar eval: segment length %d exceeds %d rows", L, max_rows);
        if (pairs) memset(seg_pairs, 0, sizeof *seg_pairs * (size_t)N);
        rn_rng rng;
        rn_rng_seed(&rng, rn_eval_mqar_seed(seed, s));
        int per = max_rows / L, done = 0;
        double a = 0;
        while (done < examples) {
            if (ctl && ctl->stop && *ctl->stop) return rn_seterr(err, RN_EINTR, "interrupted during evaluation");
            rn_threads_poll(); /* follow the machine's load (rn_threads.h) */
            int B = examples - done < per ? examples - done : per;
            for (int b = 0; b < B; b++)
                rn_mqar_example(&rng, V, L, N, RN_MQAR_POWER_A, tok + (size_t)b * L, tgt + (size_t)b * L,
                                pbuf, pairs ? pair_of + (size_t)b * L : NULL);
            double loss;
            rc = ev_forward(tr, tok, tgt, B, L, &loss, err);
            if (rc) return rc;
            /* labelled rows are in row order: N per example */
            const uint8_t *ok = ev_correct(tr);
            const int *rows = ev_label_rows(tr);
            int nl = ev_n_labelled(tr), i = 0;
            for (int b = 0; b < B; b++) {
                int c = 0, n = 0;
                for (; i < nl && rows[i] / L == b; i++) {
                    c += ok[i];
                    n++;
                    if (pairs) {
                        int p = pair_of[rows[i]];
                        if (p < 0 || p >= N) return rn_seterr(err, RN_EINTERNAL, "mqar eval: labelled row %d is no query", rows[i]);
                        seg_pairs[p].queries++;
                        seg_pairs[p].correct += ok[i];
                    }
                }
                a += n ? (double)c / n : 0;
            }
            done += B;
            if (ctl && ctl->progress)
                ctl->progress(ctl->user, (int64_t)s * examples + done, (int64_t)n_segs * examples);
        }
        acc[s] = a / examples;
        sum += acc[s];
        if (pairs) seg_pairs += N;
    }
    *mean = sum / n_segs;
    return RN_OK;
}

/* Scratch doubles the generator needs for any segment of segs. */
static int max_space(const rn_mqar_seg *segs, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int s = (segs[i].L - 2 * segs[i].N) / 2;
        if (s > m) m = s;
    }
    return m + 1024;
}

int rn_eval_mqar(const rn_model *m, int device, const rn_mqar_seg *segs, int n_segs, int examples,
                 uint64_t seed, int max_rows, double *acc, double *mean, const rn_eval_ctl *ctl,
                 rn_error *err)
{
    return rn_eval_mqar_pairs(m, device, segs, n_segs, examples, seed, max_rows, acc, mean, NULL,
                              ctl, err);
}

int rn_eval_mqar_pairs(const rn_model *m, int device, const rn_mqar_seg *segs, int n_segs,
                       int examples, uint64_t seed, int max_rows, double *acc, double *mean,
                       rn_mqar_tally *pairs, const rn_eval_ctl *ctl, rn_error *err)
{
    for (int s = 0; s < n_segs; s++)
        if (segs[s].L > max_rows) max_rows = segs[s].L;
    evaluator ev, *tr = &ev;
    int rc = ev_create(&ev, m, device, ctl ? ctl->precision : RN_PREC_FP32, max_rows, err);
    if (rc) {
        ev_free(&ev);
        return rc;
    }
    int *tok = malloc(sizeof(int) * 3 * (size_t)max_rows); /* tokens, targets, pair_of */
    double *pbuf = malloc(sizeof(double) * (size_t)(max_rows + max_space(segs, n_segs)));
    if (!tok || !pbuf) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    else rc = eval_mqar_with(tr, m->cfg.vocab_size, segs, n_segs, examples, seed, max_rows, tok,
                             tok + max_rows, pbuf, acc, mean, pairs, tok + 2 * (size_t)max_rows,
                             ctl, err);
    free(tok);
    free(pbuf);
    ev_free(tr);
    return rc;
}

/* The bytes of text the targets tgt[0..n) stand for: one each for a byte
 * corpus, each token's decoded length (rn_token_nbytes) for token ids. */
static int64_t target_bytes(const rn_config *c, const rn_text *t, const int *tgt, int64_t n)
{
    if (t->data) return n;
    int64_t b = 0;
    for (int64_t i = 0; i < n; i++) b += (int64_t)rn_token_nbytes(c, tgt[i]);
    return b;
}

/* Mean loss per token over the held-out windows, and bits per byte: their
 * summed loss over ln 2 and the bytes of text the scored tokens stand for.
 * `windows` (0: all) of the split's windows are scored, spread evenly over
 * it (window w·all/windows for w < windows): the first few alone are the
 * files that happen to open the split, not a sample of it. */
static int eval_text_with(evaluator *tr, const rn_config *c, const rn_text *t, int T, int windows, int batch,
                          int *tok, int *tgt, double *loss, double *bpb, const rn_eval_ctl *ctl,
                          rn_error *err)
{
    const int64_t all = rn_text_n_val(t, T);
    int64_t nw = all;
    if (windows > 0 && windows < nw) nw = windows;
    double sum = 0;
    int64_t count = 0, bytes = 0;
    for (int64_t w = 0; w < nw; w += batch) {
        if (ctl && ctl->stop && *ctl->stop) return rn_seterr(err, RN_EINTR, "interrupted during evaluation");
        rn_threads_poll(); /* follow the machine's load (rn_threads.h) */
        int B = nw - w < batch ? (int)(nw - w) : batch;
        for (int b = 0; b < B; b++)
            rn_text_val_window(t, (w + b) * all / nw, T, tok + (size_t)b * T, tgt + (size_t)b * T);
        double l;
        int rc = ev_forward(tr, tok, tgt, B, T, &l, err);
        if (rc) return rc;
        sum += ev_loss_sum(tr);
        count += (int64_t)B * T;
        bytes += target_bytes(c, t, tgt, (int64_t)B * T);
        if (ctl && ctl->progress) ctl->progress(ctl->user, w + B, nw);
    }
    *loss = count ? sum / (double)count : 0;
    *bpb = bytes ? sum / (double)bytes / log(2.0) : 0;
    return RN_OK;
}

int rn_eval_text(const rn_model *m, int device, const rn_text *t, int T, int windows, int batch,
                 double *loss, double *bpb, const rn_eval_ctl *ctl, rn_error *err)
{
    if (rn_text_n_val(t, T) < 1) return rn_seterr(err, RN_EINPUT, "text eval: held-out split is shorter than one window of %d bytes", T);
    int64_t nw = rn_text_n_val(t, T);
    if (windows > 0 && windows < nw) nw = windows;
    if (batch > nw) batch = (int)nw; /* room for the windows there are, not more */
    if ((int64_t)batch * T > INT_MAX) batch = (int)(INT_MAX / T);
    evaluator ev, *tr = &ev;
    int rc = ev_create(&ev, m, device, ctl ? ctl->precision : RN_PREC_FP32, batch * T, err);
    if (rc) {
        ev_free(&ev);
        return rc;
    }
    int *tok = malloc(sizeof(int) * 2 * (size_t)batch * T);
    if (!tok) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    else rc = eval_text_with(tr, &m->cfg, t, T, windows, batch, tok, tok + (size_t)batch * T, loss, bpb, ctl, err);
    free(tok);
    ev_free(tr);
    return rc;
}

/* Everything a run owns, released in one place, and what its pieces share. */
typedef struct {
    const rn_train_opts *o;  /* the options, warm-up resolved */
    const rn_config *c;
    rn_train_report_fn report;
    void *user;
    volatile int *stop;
    rn_model m;         /* the parameters: what AdamW updates and checkpoints hold (FP32) */
    rn_model mb;        /* --precision bf16: m with its matrices rounded to bf16, which the
                         * trainers compute with (refreshed after each update) */
    rn_trainer *tr;     /* the model's own K: evaluation, and training after annealing */
    rn_model ma;        /* s.m's weights viewed with the annealing K (owns nothing) */
    rn_trainer *tra;    /* training while annealing (K = ma.cfg.top_k), else NULL */
    int tra_kr;         /* the read K of tra */
    rn_cuda_trainer *gtr; /* --device cuda: the GPU trainer, which owns the training copy of
                           * the parameters and moments (m.params and mom are brought up
                           * to date before each evaluation and checkpoint) */
    int64_t nb;         /* parameters (the length of m.params, grads and each moment) */
    rn_real *mom;       /* m1 then m2: the whole block's (on rank 0 of a --dist run, whose
                         * shard starts the block; the other ranks hold their shard's) */
    rn_dist *dist;      /* --dist: the ranks (NULL: one process) */
    rn_nccl *nccl;      /* --dist --device cuda: the GPUs' communicator */
    int rank;           /* this process's rank (0 without --dist) */
    int64_t lo, hi;     /* the parameters whose AdamW update is this rank's: [lo, hi) */
    rn_real *m1, *m2;   /* the moments of [lo, hi): m1[0] is element lo's */
    int *tok, *tgt;
    double *pbuf;
    int max_rows;       /* rows of tok/tgt and of s.tr (training batch or longest eval segment) */
    rn_text text;
    FILE *log;
    char ckpt[1100];    /* checkpoint path */
    char recipe[2048];  /* rn_train_recipe of o (and the --init-from line: run_recipe) */
    uint64_t init_sum;  /* --init-from: the model's checksum (rn_model_checksum) */
    int64_t start;      /* first step (> 0 when resumed) */
    int64_t ck_steps;   /* --resume: the steps of the checkpoint's run (its recipe's) */
    int64_t ckpt_at;    /* the step of the checkpoint last written by this run (-1: none) */
    double t0, tokens;  /* loop start time; tokens trained since */
    char summary[1024]; /* the last evaluation's JSON */
} run_state;

/* The model the trainers compute with: the bf16-rounded copy under
 * --precision bf16 (gradients then flow to the FP32 master through the
 * rounding, llm.c's recipe), else the parameters themselves. */
static rn_model *compute_model(run_state *s) { return s->mb.params ? &s->mb : &s->m; }

/* One optimiser step's numbers, for the progress event and the log. */
typedef struct {
    double loss, lr, grad_norm;
    int top_k, read_k;
} step_stats;

static void run_free(run_state *s)
{
    rn_trainer_free(s->tr);
    rn_trainer_free(s->tra);
    rn_nccl_close(s->nccl);
    rn_cuda_trainer_free(s->gtr);
    rn_model_free(&s->m);
    rn_model_free(&s->mb);
    free(s->mom);
    free(s->tok);
    free(s->pbuf);
    rn_text_free(&s->text);
    if (s->log) fclose(s->log);
}

static void emit(const run_state *s, const rn_train_event *ev)
{
    if (s->report && s->rank == 0) s->report(s->user, ev);
}

/* Fill one micro-batch for the step; returns B and T used. */
static void make_batch(const rn_train_opts *o, run_state *s, int V, int64_t step, int micro,
                       int *B, int *T)
{
    rn_rng rng;
    rn_rng_seed(&rng, stream_seed(o->seed, 1, (uint64_t)step * (uint64_t)o->grad_accum + (uint64_t)micro));
    if (o->task == RN_TASK_TEXT) {
        *B = o->batch;
        *T = o->seq_len;
        rn_text_batch(&s->text, &rng, *B, *T, s->tok, s->tgt);
        return;
    }
    /* MQAR: segments in turn (mqar_first's during the first first_steps
     * steps); the same number of rows at every step. */
    const int first = step < o->first_steps && o->n_first_segs > 0;
    const rn_mqar_seg *segs = first ? o->first_segs : o->segs;
    const int n_segs = first ? o->n_first_segs : o->n_segs;
    const rn_mqar_seg *sg = &segs[rn_mqar_seg_at(first ? o->first_w : o->seg_w, n_segs,
                                                 step * o->grad_accum + micro)];
    *T = sg->L;
    *B = o->batch * o->seq_len / sg->L;
    assert(*B >= 1 && *B * *T <= s->max_rows); /* validated: L <= seq_len */
    for (int b = 0; b < *B; b++)
        rn_mqar_example(&rng, V, sg->L, sg->N, RN_MQAR_POWER_A, s->tok + (size_t)b * sg->L,
                        s->tgt + (size_t)b * sg->L, s->pbuf, NULL);
}

/* Evaluate s.m with s.tr (the model's own K) into s.summary (JSON);
 * *metric is the MQAR mean accuracy or the text bits per byte. */
static int do_eval(run_state *s, double *metric, rn_error *err)
{
    const rn_train_opts *o = s->o;
    char *buf = s->summary;
    const size_t cap = sizeof s->summary;
    if (o->task == RN_TASK_MQAR) {
        double acc[16], mean;
        assert(o->n_eval_segs >= 1 && o->n_eval_segs <= 16); /* parse_segs keeps 1..16 */
        evaluator ev = { s->tr, NULL };
        rn_eval_ctl ctl = { s->stop, NULL, NULL, RN_PREC_FP32 };
        int rc = eval_mqar_with(&ev, s->m.cfg.vocab_size, o->eval_segs, o->n_eval_segs,
                                o->eval_examples, 4242, s->max_rows, s->tok, s->tgt, s->pbuf, acc,
                                &mean, NULL, NULL, &ctl, err);
        if (rc) return rc;
        size_t n = (size_t)snprintf(buf, cap, "{\"task\":\"mqar\",\"mean_acc\":%.5f,\"acc\":{", mean);
        for (int i = 0; i < o->n_eval_segs && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s\"%d,%d\":%.5f", i ? "," : "",
                                  o->eval_segs[i].L, o->eval_segs[i].N, acc[i]);
        if (n < cap) snprintf(buf + n, cap - n, "}}");
        *metric = mean;
        return RN_OK;
    }
    double loss, bpb;
    evaluator ev = { s->tr, NULL };
    rn_eval_ctl ctl = { s->stop, NULL, NULL, RN_PREC_FP32 };
    int rc = eval_text_with(&ev, s->c, &s->text, o->seq_len, o->eval_windows, o->batch, s->tok, s->tgt,
                            &loss, &bpb, &ctl, err);
    if (rc) return rc;
    snprintf(buf, cap, "{\"task\":\"text\",\"val_loss\":%.5f,\"val_bpb\":%.5f}", loss, bpb);
    *metric = bpb;
    return RN_OK;
}

/* alpha_init / alpha_init_cape: the per-head scalars α of q and k start at
 * the given value instead of 0, so the addresses start e^α times sharper
 * (α > 0) or flatter.  Only the initial parameters change (the forward and
 * backward are the same, on either device); a resumed run overwrites them
 * from its checkpoint. */
static void init_alpha(rn_model *m, const rn_train_opts *o)
{
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int h = 0; h < m->cfg.n_heads; h++) {
            int cape = (m->cfg.cape_mask[l] >> h) & 1;
            double a = cape && o->alpha_init_cape != 0 ? o->alpha_init_cape : o->alpha_init;
            if (a == 0) continue;
            m->w.layer[l].q_alpha[h] = (rn_real)a;
            m->w.layer[l].k_alpha[h] = (rn_real)a;
        }
}

int rn_train_check_init_config(const char *path, const rn_config *model_cfg, const rn_config *c,
                               rn_error *err)
{
    char a[8192], b[8192];
    size_t la = rn_config_format(model_cfg, a, sizeof a), lb = rn_config_format(c, b, sizeof b);
    if (la >= sizeof a || lb >= sizeof b) return rn_seterr(err, RN_EINTERNAL, "%s: config text too long", path);
    if (!strcmp(a, b)) return RN_OK;
    char why[600];
    rn_checkpoint_diff_lines(a, b, why, sizeof why);
    return rn_seterr(err, RN_EINPUT, "--init-from %s: the model has %s (the run takes the model's config: "
                                     "leave out the keys that change it)", path, why);
}

/* --init-from: m (made for this run's config) takes the weights of the
 * model file at path, whose config must be m's. */
static int init_from_model(rn_model *m, const char *path, uint64_t *sum, rn_error *err)
{
    rn_model src;
    int rc = rn_model_load(&src, path, err);
    if (rc) return rc;
    if ((rc = rn_train_check_init_config(path, &src.cfg, &m->cfg, err))) {
        /* named */
    } else if (src.n_block != m->n_block) {
        rc = rn_seterr(err, RN_EINTERNAL, "%s: %lld parameters, the config has %lld", path,
                       (long long)src.n_block, (long long)m->n_block);
    } else {
        memcpy(m->params, src.params, sizeof(rn_real) * (size_t)m->n_block);
        *sum = rn_model_checksum(&src);
    }
    rn_model_free(&src);
    return rc;
}

/* The recipe of o for the checkpoints of run s: rn_train_recipe, and for
 * a run started with --init-from a last line naming the model by its
 * checksum (the start shapes the run as the training keys do, so a resume
 * needs the same model).  Nonzero when buf is too small. */
static int run_recipe(const run_state *s, const rn_train_opts *o, char *buf, size_t n)
{
    size_t k = rn_train_recipe(o, buf, n);
    if (k >= n) return 1;
    if (o->init_from[0])
        k += (size_t)snprintf(buf + k, n - k, "init_from = %016llx\n", (unsigned long long)s->init_sum);
    return k >= n;
}

/* Setup: check the options, build the model, trainer and buffers, resume
 * from a checkpoint and open the metrics log.  s is zeroed except for o, c
 * and the callback; whatever it allocates run_free releases, on success or
 * not. */
static int run_setup(run_state *s, rn_error *err)
{
    const rn_train_opts *o = s->o;
    const rn_config *c = s->c;
    int rc = rn_config_validate(c, err);
    if (rc) return rc;
    if ((rc = rn_train_opts_validate(o, c, err))) return rc;
    if (!o->out[0]) return rn_seterr(err, RN_EINPUT, "no output model path (-o)");
    if (!strcmp(o->out, "-"))
        return rn_seterr(err, RN_EINPUT, "-o -: a model cannot go to standard output; give a file name");
    snprintf(s->ckpt, sizeof s->ckpt, "%s", o->ckpt[0] ? o->ckpt : o->out);
    if (!o->ckpt[0]) strncat(s->ckpt, ".ckpt", sizeof s->ckpt - strlen(s->ckpt) - 1);
    if (o->task == RN_TASK_TEXT) {
        if (!o->data[0]) return rn_seterr(err, RN_EINPUT, "text: no corpus (--data FILE)");
        if ((rc = rn_text_load_for(&s->text, c, o->data, o->val_frac, o->seq_len, err))) return rc;
    }
    if ((rc = rn_model_create_random(&s->m, c, o->seed, err))) return rc;
    init_alpha(&s->m, o);
    if (o->init_from[0] && (rc = init_from_model(&s->m, o->init_from, &s->init_sum, err))) return rc;
    if ((rc = rn_device_check_train_precision(o->device, o->precision, err))) return rc;
    if (o->precision == RN_PREC_BF16 && (rc = rn_model_copy_bf16(&s->mb, &s->m, err))) return rc;
    int max_rows = o->batch * o->seq_len, max_lab = max_rows;
    if (o->task == RN_TASK_MQAR) {
        for (int i = 0; i < o->n_eval_segs; i++)
            if (o->eval_segs[i].L > max_rows) max_rows = o->eval_segs[i].L;
        max_lab = max_rows / 4;
    }
    s->max_rows = max_rows;
    if ((rc = rn_trainer_create(&s->tr, compute_model(s), max_rows, max_lab, o->eps_g, err))) return rc;
    s->nb = s->m.n_block;
    /* the whole run: parameters, the two AdamW moments, the workspace */
    char what[96];
    snprintf(what, sizeof what, "training (%lld parameters, AdamW moments, workspace)",
             (long long)rn_config_param_count(c));
    if ((rc = rn_memlimit_check(what, 3.0 * sizeof(rn_real) * (double)s->nb + (double)rn_trainer_bytes(s->tr), err)))
        return rc;
    s->lo = 0;
    s->hi = s->nb;
    if (s->dist) rn_dist_share(s->nb, rn_dist_size(s->dist), s->rank, &s->lo, &s->hi);
    /* the moments: the whole block's, but on the ranks past 0 of a --dist
     * run on the CPU (on the GPU the host copy is only a download's) */
    const int64_t nmom = s->rank && o->device != RN_DEVICE_CUDA ? s->hi - s->lo : s->nb;
    s->mom = calloc(2 * (size_t)nmom, sizeof(rn_real));
    s->tok = malloc(sizeof(int) * 2 * (size_t)max_rows);
    s->pbuf = malloc(sizeof(double) * (size_t)(max_rows + max_space(o->eval_segs, o->n_eval_segs)));
    if (!s->mom || !s->tok || !s->pbuf) return rn_seterr(err, RN_ENOMEM, "out of memory");
    s->m1 = s->mom;
    s->m2 = s->mom + nmom;
    s->tgt = s->tok + max_rows;
    if (run_recipe(s, o, s->recipe, sizeof s->recipe))
        return rn_seterr(err, RN_EINTERNAL, "training recipe too long");
    return RN_OK;
}

/* --resume on one process or rank 0: the checkpoint's parameters,
 * moments and step into s. */
static int load_resume(run_state *s, rn_error *err)
{
    const rn_train_opts *o = s->o;
    /* the checkpoint's recipe is this run's with its own steps (an
     * extension only adds steps; resume_plan checked the rest) */
    rn_train_opts ck = *o;
    ck.opt.steps = s->ck_steps;
    char want[sizeof s->recipe];
    if (run_recipe(s, &ck, want, sizeof want))
        return rn_seterr(err, RN_EINTERNAL, "training recipe too long");
    uint64_t seed;
    int rc = rn_checkpoint_load(o->resume, s->c, want, &s->start, &seed, s->m.params, s->mom,
                                s->mom + s->nb, s->nb, err);
    if (rc) return rc;
    if (seed != o->seed)
        return rn_seterr(err, RN_EINPUT, "%s: checkpoint was written with --seed %llu, not %llu", o->resume,
                         (unsigned long long)seed, (unsigned long long)o->seed);
    if (s->start > o->opt.steps)
        return rn_seterr(err, RN_EINPUT, "%s: checkpoint is at step %lld, past steps = %lld", o->resume,
                         (long long)s->start, (long long)o->opt.steps);
    return RN_OK;
}

/* --dist, after each rank's run_setup: every rank's outcome, then the
 * rendezvous comparing what shapes the run (config, recipe, initial
 * weights, seed, data), so ranks given different inputs stop at once. */
static int dist_meet(run_state *s, int rc, rn_error *err)
{
    const rn_train_opts *o = s->o;
    if ((rc = rn_dist_agree(s->dist, rc, err))) return rc;
    char ident[RN_DIST_IDENT_MAX];
    size_t n = rn_config_format(s->c, ident, sizeof ident / 2);
    if (n >= sizeof ident / 2) return rn_seterr(err, RN_EINTERNAL, "config text too long");
    uint64_t data = 0;
    if (s->text.data) data = rn_checksum64(s->text.data, (size_t)s->text.n);
    else if (s->text.ids) data = rn_checksum64(s->text.ids, sizeof(int) * (size_t)s->text.n);
    n += (size_t)snprintf(ident + n, sizeof ident - n, "%sranks = %d\nseed = %llu\ninitial weights = %016llx\n"
                          "data = %016llx\nresume = %s\n", s->recipe, rn_dist_size(s->dist),
                          (unsigned long long)o->seed, (unsigned long long)rn_model_checksum(&s->m),
                          (unsigned long long)data, o->resume[0] ? "yes" : "no");
    if (n >= sizeof ident) return rn_seterr(err, RN_EINTERNAL, "run identity too long");
    if ((rc = rn_dist_rendezvous(s->dist, ident, err))) return rc;
    return rn_dist_prepare(s->dist, s->nb, err);
}

/* The start of a run after setup: the resumed checkpoint (--dist: read by
 * rank 0 and sent to the others: the parameters and step to all, each
 * rank its shard of the moments), the bf16 copy, the GPU trainer and the
 * metrics log (rank 0's). */
static int run_start(run_state *s, rn_error *err)
{
    const rn_train_opts *o = s->o;
    const rn_config *c = s->c;
    int rc = RN_OK;
    if (o->resume[0] && !s->dist) {
        if ((rc = load_resume(s, err))) return rc;
    } else if (o->resume[0]) {
        if (s->rank == 0) rc = load_resume(s, err);
        if ((rc = rn_dist_from_root(s->dist, rc, 1, err))) return rc;
        if ((rc = rn_dist_bcast(s->dist, &s->start, sizeof s->start, err)) ||
            (rc = rn_dist_bcast(s->dist, s->m.params, sizeof(rn_real) * (size_t)s->nb, err)))
            return rc;
        if (o->device == RN_DEVICE_CUDA) /* each GPU uploads the whole moments */
            rc = rn_dist_bcast(s->dist, s->mom, 2 * sizeof(rn_real) * (size_t)s->nb, err);
        else if (!(rc = rn_dist_scatter(s->dist, s->mom, s->m1, s->nb, err)))
            rc = rn_dist_scatter(s->dist, s->rank ? NULL : s->mom + s->nb, s->m2, s->nb, err);
        if (rc) return rc;
    }
    if (s->mb.params) rn_model_round_bf16(&s->mb, &s->m); /* the resumed parameters */
    if (o->device == RN_DEVICE_CUDA) {
        /* room for the largest K annealing uses (K only shrinks over the run) */
        int kw = rn_train_top_k_at(o, c->top_k, 0), kr = rn_train_read_k_at(o, c->top_k, 0);
        int rows = o->batch * o->seq_len;
        if (s->dist && (rc = rn_nccl_select_device(rn_dist_local_rank(s->dist), err))) return rc;
        if ((rc = rn_cuda_trainer_create(&s->gtr, &s->m, rows, rows, o->eps_g, kw, kr, o->precision, err)))
            return rc;
        if ((rc = rn_cuda_trainer_set_state(s->gtr, s->m.params, s->mom, s->mom + s->nb, err))) return rc;
        if (s->dist) {
            /* NCCL's id from rank 0 through the rendezvous (MPI, or a file in DIR) */
            unsigned char id[RN_NCCL_ID_BYTES];
            rc = s->rank == 0 ? rn_nccl_unique_id(id, err) : RN_OK;
            if ((rc = rn_dist_from_root(s->dist, rc, 0, err)) ||
                (rc = rn_dist_share_blob(s->dist, id, sizeof id, "nccl-id", err)))
                return rc;
            rc = rn_nccl_open(&s->nccl, s->gtr, id, rn_dist_size(s->dist), s->rank, err);
            if ((rc = rn_dist_agree(s->dist, rc, err))) return rc;
        }
    }
    if (o->log[0] && s->rank == 0 && !(s->log = fopen(o->log, s->start ? "a" : "w")))
        rc = rn_seterr(err, RN_EINPUT, "%s: cannot open metrics log: %s", o->log, strerror(errno));
    return s->dist ? rn_dist_from_root(s->dist, rc, 0, err) : rc;
}

/* The trainer for `step`: s.tr at the model's K, or, while top-K annealing
 * gives a larger K, s.tra over s.ma — a shallow copy of s.m (same weights,
 * owning nothing) whose config carries the annealed K.  s.tra is made again
 * only when K changes and freed once annealing is over. */
static int step_trainer(run_state *s, int64_t step, rn_trainer **out, int *k, int *kr, rn_error *err)
{
    const rn_train_opts *o = s->o;
    const int k_final = s->c->top_k;
    *k = rn_train_top_k_at(o, k_final, step);
    *kr = rn_train_read_k_at(o, k_final, step);
    if (*k == k_final && *kr == k_final) {
        rn_trainer_free(s->tra);
        s->tra = NULL;
        *out = s->tr;
        return RN_OK;
    }
    if (!s->tra || s->ma.cfg.top_k != *k || s->tra_kr != *kr) {
        rn_trainer_free(s->tra);
        s->tra = NULL;
        s->ma = *compute_model(s);
        s->ma.owned = NULL;
        s->ma.map = NULL;
        s->ma.cfg.top_k = *k;
        s->tra_kr = *kr;
        int rows = o->batch * o->seq_len;
        int rc = rn_trainer_create_kr(&s->tra, &s->ma, rows, rows, o->eps_g, *kr, err);
        if (rc) return rc;
        /* top_k_anneal_layers: the layers not listed use the final K now */
        for (int l = 0; l < s->c->n_layers && o->anneal_layers && !rc; l++)
            if (!(o->anneal_layers >> l & 1)) rc = rn_trainer_set_layer_k(s->tra, l, k_final, k_final, err);
        if (rc) return rc;
    }
    *out = s->tra;
    return RN_OK;
}

/* --device cuda: bring the host model and moments up to date with the
 * GPU's (before an evaluation, a checkpoint or the final save). */
static int sync_host(run_state *s, rn_error *err)
{
    if (!s->gtr) return RN_OK;
    int rc = s->nccl ? rn_nccl_gather_moments(s->nccl, err) : RN_OK;
    if (!rc) rc = rn_cuda_trainer_get_state(s->gtr, s->m.params, s->mom, s->mom + s->nb, err);
    if (!rc && s->mb.params) rn_model_round_bf16(&s->mb, &s->m); /* the CPU evaluation's bf16 weights */
    return rc;
}

/* One micro-batch of `step` (0-based) on the CPU trainer tr, or on the
 * GPU trainer when tr is NULL: the batch is drawn whole and this rank
 * trains its share of its sequences (rn_dist_share; all of them without
 * --dist).  With --dist the labelled rows and the loss sums are added over
 * the ranks first (in rank order), so each rank's backward weighs its rows
 * by 1/(all ranks' labelled rows), as one process over the whole batch
 * does.  *loss: the micro-batch's mean loss over all ranks' rows. */
static int micro_step(run_state *s, rn_trainer *tr, int64_t step, int mi, double *loss, rn_error *err)
{
    const rn_train_opts *o = s->o;
    int B, T, rc;
    int64_t b0, b1;
    make_batch(o, s, s->c->vocab_size, step, mi, &B, &T);
    rn_dist_share(B, s->dist ? rn_dist_size(s->dist) : 1, s->rank, &b0, &b1);
    double l = 0, v[2] = { 0, 0 }; /* labelled rows, loss sum */
    if (b1 > b0) {
        const int *tok = s->tok + b0 * T, *tgt = s->tgt + b0 * T, nb = (int)(b1 - b0);
        if ((rc = tr ? rn_trainer_forward(tr, tok, tgt, nb, T, &l, err)
                     : rn_cuda_trainer_forward(s->gtr, tok, tgt, nb, T, &l, err)))
            return rc;
        v[0] = tr ? rn_trainer_n_labelled(tr) : rn_cuda_trainer_n_labelled(s->gtr);
        v[1] = tr ? rn_trainer_loss_sum(tr) : rn_cuda_trainer_loss_sum(s->gtr);
    }
    const double mine = v[0];
    if (s->dist) {
        if ((rc = rn_dist_sum_f64(s->dist, v, 2, err))) return rc;
        l = v[0] > 0 ? v[1] / v[0] : 0;
    }
    if (!isfinite(l))
        return rn_seterr(err, RN_EINPUT, "loss is not finite at step %lld; stopped (last checkpoint kept: %s)",
                         (long long)step, s->ckpt);
    if (mine > 0) {
        const double scale = mine / v[0] / o->grad_accum; /* 1/grad_accum on one process */
        if (tr) rn_trainer_backward(tr, scale);
        else if ((rc = rn_cuda_trainer_backward(s->gtr, scale, err))) return rc;
    }
    *loss = l;
    s->tokens += (double)B * T;
    return RN_OK;
}

/* train_step on the GPU: the same batches, annealed K, accumulation,
 * clipping and AdamW, with parameters, gradients and moments on the
 * device.  --dist: each rank's GPU trains its share as micro_step
 * describes, the gradients reduce-scattered and the parameters gathered
 * with NCCL (rn_cuda_nccl.h). */
static int train_step_cuda(run_state *s, int64_t step, step_stats *st, rn_error *err)
{
    const rn_train_opts *o = s->o;
    st->top_k = rn_train_top_k_at(o, s->c->top_k, step);
    st->read_k = rn_train_read_k_at(o, s->c->top_k, step);
    int rc = rn_cuda_trainer_set_topk(s->gtr, st->top_k, st->read_k, err);
    if (!rc) rc = rn_cuda_trainer_zero_grads(s->gtr, err);
    if (rc) return rc;
    double loss = 0;
    for (int mi = 0; mi < o->grad_accum; mi++) {
        double l;
        if ((rc = micro_step(s, NULL, step, mi, &l, err))) return rc;
        loss += l / o->grad_accum;
    }
    double gn;
    if (s->nccl) {
        if ((rc = rn_nccl_reduce_grads(s->nccl, &gn, err)) || (rc = rn_dist_sum_f64(s->dist, &gn, 1, err))) return rc;
        gn = sqrt(gn);
    } else if ((rc = rn_cuda_trainer_grad_norm(s->gtr, &gn, err))) {
        return rc;
    }
    if (!isfinite(gn))
        return rn_seterr(err, RN_EINPUT, "gradient is not finite at step %lld; stopped (last checkpoint kept: %s)",
                         (long long)step, s->ckpt);
    double lr = rn_train_lr_at(o, step);
    double gscale = (o->opt.clip > 0 && gn > o->opt.clip) ? o->opt.clip / gn : 1.0;
    rc = s->nccl ? rn_nccl_adamw(s->nccl, &o->opt, step, lr, gscale, err)
                 : rn_cuda_trainer_adamw(s->gtr, &o->opt, step, lr, gscale, err);
    if (rc) return rc;
    st->loss = loss;
    st->lr = lr;
    st->grad_norm = gn;
    return RN_OK;
}

/* One optimiser step (0-based `step`): grad_accum micro-batches of forward
 * and backward, the gradient norm, clipping and AdamW.  A non-finite loss
 * or gradient stops the run with RN_EINPUT. */
static int train_step(run_state *s, int64_t step, step_stats *st, rn_error *err)
{
    const rn_train_opts *o = s->o;
    if (s->gtr) return train_step_cuda(s, step, st, err);
    rn_trainer *tr;
    int rc = step_trainer(s, step, &tr, &st->top_k, &st->read_k, err);
    if (rc) return rc;
    rn_trainer_zero_grads(tr);
    double loss = 0;
    for (int mi = 0; mi < o->grad_accum; mi++) {
        double l;
        if ((rc = micro_step(s, tr, step, mi, &l, err))) return rc;
        loss += l / o->grad_accum;
    }
    rn_real *g = rn_trainer_grads(tr);
    double gn;
    if (s->dist) {
        /* ZeRO-1: this rank's shard [lo, hi) of the summed gradients (in
         * rank order); the norm is the global one, the shards' sums of
         * squares added in rank order */
        if ((rc = rn_dist_reduce_scatter(s->dist, g, s->nb, err))) return rc;
        gn = rn_grad_norm(g + s->lo, s->hi - s->lo);
        gn *= gn;
        if ((rc = rn_dist_sum_f64(s->dist, &gn, 1, err))) return rc;
        gn = sqrt(gn);
    } else {
        gn = rn_grad_norm(g, s->nb);
    }
    if (!isfinite(gn))
        return rn_seterr(err, RN_EINPUT, "gradient is not finite at step %lld; stopped (last checkpoint kept: %s)",
                         (long long)step, s->ckpt);
    double lr = rn_train_lr_at(o, step);
    double gscale = (o->opt.clip > 0 && gn > o->opt.clip) ? o->opt.clip / gn : 1.0;
    /* the whole block on one process; the shard, then every rank's, with --dist */
    rn_adamw_update_range(s->c, s->m.params, g, s->m1, s->m2, &o->opt, step, lr, gscale, s->lo, s->hi);
    if (s->dist && (rc = rn_dist_allgather(s->dist, s->m.params, s->nb, err))) return rc;
    if (s->mb.params) rn_model_round_bf16(&s->mb, &s->m); /* the next forward's weights */
    st->loss = loss;
    st->lr = lr;
    st->grad_norm = gn;
    return RN_OK;
}

/* Report the step that finished with `done` steps done (event and log). */
static void log_step(run_state *s, int64_t done, const step_stats *st)
{
    const rn_train_opts *o = s->o;
    double el = now_s() - s->t0;
    rn_train_event ev = { .kind = RN_TRAIN_EV_STEP, .step = done, .steps = o->opt.steps,
                          .loss = st->loss, .lr = st->lr, .grad_norm = st->grad_norm,
                          .tok_per_s = s->tokens / el,
                          .eta_s = el / (done - s->start) * (o->opt.steps - done), .elapsed_s = el,
                          .top_k = st->top_k, .read_k = st->read_k };
    emit(s, &ev);
    if (s->log)
        fprintf(s->log, "{\"step\":%lld,\"loss\":%.9g,\"lr\":%.6g,\"grad_norm\":%.5g,\"tok_per_s\":%.1f,\"elapsed\":%.2f,\"top_k\":%d,\"read_k\":%d}\n",
                (long long)done, st->loss, st->lr, st->grad_norm, s->tokens / el, el, st->top_k, st->read_k);
}

/* Evaluate after `step` steps and report it (event and log); the final
 * evaluation is marked so in the log. */
static int evaluate(run_state *s, int64_t step, int final, rn_error *err)
{
    double metric;
    int rc = sync_host(s, err);
    /* --dist: rank 0 evaluates while the others wait for its outcome */
    if (!rc && s->rank == 0) rc = do_eval(s, &metric, err);
    if (s->dist) rc = rn_dist_from_root(s->dist, rc, 1, err);
    if (rc || s->rank) return rc;
    rn_train_event ev = { .kind = RN_TRAIN_EV_EVAL, .step = step, .steps = s->o->opt.steps,
                          .elapsed_s = now_s() - s->t0, .text = s->summary };
    emit(s, &ev);
    if (s->log && final) {
        fprintf(s->log, "{\"step\":%lld,\"eval\":%s,\"final\":true}\n", (long long)step, s->summary);
    } else if (s->log) {
        fprintf(s->log, "{\"step\":%lld,\"eval\":%s}\n", (long long)step, s->summary);
        fflush(s->log);
    }
    return RN_OK;
}

/* Write the checkpoint at `step` steps done; `announce` reports it.  A
 * checkpoint at the step of the last one written is already on disk (a
 * periodic one that an early stop or the end falls on): nothing is written
 * or reported again. */
static int checkpoint(run_state *s, int64_t step, int announce, rn_error *err)
{
    if (step == s->ckpt_at) return RN_OK;
    int rc = sync_host(s, err);
    if (s->dist) {
        /* rank 0 gathers the moments' shards (on the GPU sync_host has) and
         * writes alone */
        if (!rc && !s->gtr && !(rc = rn_dist_gather(s->dist, s->mom, s->m1, s->nb, err)))
            rc = rn_dist_gather(s->dist, s->rank ? NULL : s->mom + s->nb, s->m2, s->nb, err);
        if (rc) return rc;
        if (s->rank) {
            if ((rc = rn_dist_from_root(s->dist, RN_OK, 1, err))) return rc;
            s->ckpt_at = step;
            return RN_OK;
        }
    }
    if (!rc)
        rc = rn_checkpoint_save(s->ckpt, s->c, s->recipe, step, s->o->seed, s->m.params, s->mom,
                                s->mom + s->nb, s->nb, err);
    if (!rc && announce && s->o->ckpt_keep) {
        /* ckpt_keep: the periodic checkpoint also under its step's name, so
         * the early steps of a run can be converted and traced one by one */
        char kept[1200];
        snprintf(kept, sizeof kept, "%s.%06lld", s->ckpt, (long long)step);
        rc = rn_checkpoint_save(kept, s->c, s->recipe, step, s->o->seed, s->m.params, s->mom,
                                s->mom + s->nb, s->nb, err);
    }
    if (s->dist) rc = rn_dist_from_root(s->dist, rc, 1, err);
    if (rc) return rc;
    s->ckpt_at = step;
    if (!announce) return RN_OK;
    rn_train_event ev = { .kind = RN_TRAIN_EV_CHECKPOINT, .step = step, .steps = s->o->opt.steps,
                          .text = s->ckpt };
    emit(s, &ev);
    return RN_OK;
}

/* Whether the run stops early before `step`: Ctrl-C, max_seconds or
 * stop_after. */
static int stop_requested(const run_state *s, int64_t step)
{
    const rn_train_opts *o = s->o;
    return (s->stop && *s->stop) || (o->max_seconds > 0 && now_s() - s->t0 > o->max_seconds) ||
           (o->stop_after > 0 && step == o->stop_after);
}

/* Whether a period (eval_every, ckpt_every; 0 = never) falls after `done`
 * steps, short of the end, `steps` or the stop_after before it (the end
 * has its own evaluation and checkpoint). */
static int due(int64_t every, int64_t done, int64_t end)
{
    return every > 0 && done % every == 0 && done < end;
}

/* The steps from s.start, each followed by its due log line, evaluation
 * and checkpoint; then the final evaluation, checkpoint and model.  An
 * early stop writes a checkpoint first (and a model, unless interrupted). */
static int run_loop(run_state *s, rn_error *err)
{
    const rn_train_opts *o = s->o;
    int rc;
    int64_t step = s->start;
    /* a stop_after ahead is the end for the periods: its stop writes the
     * checkpoint and the final evaluation, once */
    const int64_t end = o->stop_after > s->start && o->stop_after < o->opt.steps ? o->stop_after : o->opt.steps;
    for (; step < o->opt.steps; step++) {
        /* --dist: the ranks stop together (2: interrupted, 1: an early stop) */
        int stop = s->stop && *s->stop ? 2 : stop_requested(s, step);
        if (s->dist && (rc = rn_dist_max_int(s->dist, &stop, err))) return rc;
        if (stop) {
            if ((rc = checkpoint(s, step, 1, err))) return rc;
            if (stop == 2)
                return rn_seterr(err, RN_EINTR, "interrupted at step %lld; checkpoint %s", (long long)step, s->ckpt);
            break;
        }
        step_stats st = { 0 };
        rn_threads_poll(); /* follow the machine's load (rn_threads.h) */
        if ((rc = train_step(s, step, &st, err))) return rc;
        const int64_t done = step + 1;
        if (done % o->log_every == 0 || done == o->opt.steps) log_step(s, done, &st);
        if (due(o->eval_every, done, end) && (rc = evaluate(s, done, 0, err))) {
            if (rc == RN_EINTR) continue; /* the loop top checkpoints `done` steps and stops */
            return rc;
        }
        if (due(o->ckpt_every, done, end) && (rc = checkpoint(s, done, 1, err))) return rc;
    }
    if ((rc = evaluate(s, step, 1, err))) return rc;
    if ((rc = checkpoint(s, step, 0, err))) return rc;
    if (s->rank == 0) rc = rn_model_save(&s->m, o->out, err);
    if (s->dist) rc = rn_dist_from_root(s->dist, rc, 1, err);
    if (rc) return rc;
    rn_train_event ev = { .kind = RN_TRAIN_EV_DONE, .step = step, .steps = o->opt.steps,
                          .elapsed_s = now_s() - s->t0, .text = o->out };
    emit(s, &ev);
    return RN_OK;
}

/* The first line `key = N` of a recipe: N, or -1 when there is none. */
static int64_t recipe_int(const char *rec, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = rec; *p; p += strcspn(p, "\n"), p += *p == '\n') {
        if (!strncmp(p, key, kl) && !strncmp(p + kl, " = ", 3)) {
            char *end;
            errno = 0;
            long long v = strtoll(p + kl + 3, &end, 10);
            return errno || end == p + kl + 3 || (*end && *end != '\n') || v < 0 ? -1 : (int64_t)v;
        }
    }
    return -1;
}

/* --resume: the checkpoint's run (its steps done, steps and schedule,
 * from the header) against o's steps.  Fewer steps than done, or than the
 * schedule, are refused; the schedule is the checkpoint's unless o sets
 * one (then the recipes must agree).  *ck_steps: the checkpoint's steps. */
static int resume_plan(rn_train_opts *o, int64_t *ck_steps, rn_error *err)
{
    char *rec = NULL;
    int64_t done;
    int rc = rn_checkpoint_peek(o->resume, &rec, &done, err);
    if (rc) return rc;
    int64_t total = recipe_int(rec, "steps"), sched = recipe_int(rec, "schedule_steps");
    free(rec);
    if (total < 1 || done > total)
        return rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (steps)", o->resume);
    if (sched < 1) sched = total;
    if (o->opt.steps < done)
        return rn_seterr(err, RN_EINPUT, "%s: the run has done %lld steps; steps = %lld cannot be fewer "
                                         "(a resume trains up to steps: give more to extend it)",
                         o->resume, (long long)done, (long long)o->opt.steps);
    if (o->schedule_steps && o->schedule_steps != sched)
        return rn_seterr(err, RN_EINPUT, "%s: checkpoint was written with 'schedule_steps = %lld', this run has "
                                         "'schedule_steps = %lld' (resume needs the same training keys)",
                         o->resume, (long long)sched, (long long)o->schedule_steps);
    if (!o->schedule_steps) o->schedule_steps = sched;
    if (o->opt.steps < o->schedule_steps)
        return rn_seterr(err, RN_EINPUT, "%s: steps = %lld would cut the run's %lld-step schedule short (a different "
                                         "run): stop_after ends a run early, more steps extend it",
                         o->resume, (long long)o->opt.steps, (long long)o->schedule_steps);
    *ck_steps = total;
    return RN_OK;
}

int rn_train_run(const rn_train_opts *opts, const rn_config *c, rn_train_report_fn report,
                 void *user, volatile int *stop, rn_error *err)
{
    rn_train_opts o = *opts;
    int64_t ck_steps = 0;
    const int rank = o.dist ? rn_dist_rank(o.dist) : 0;
    /* --dist: rank 0 alone reads the checkpoint's header; the others take
     * its plan (so only rank 0 needs the file) */
    int rc = o.resume[0] && rank == 0 ? resume_plan(&o, &ck_steps, err) : RN_OK;
    if (o.dist && o.resume[0]) {
        int64_t plan[2] = { ck_steps, o.schedule_steps };
        if ((rc = rn_dist_from_root(o.dist, rc, 0, err)) || (rc = rn_dist_bcast(o.dist, plan, sizeof plan, err)))
            return rc;
        ck_steps = plan[0];
        o.schedule_steps = plan[1];
    }
    if (rc) return rc;
    if (o.opt.warmup < 0) o.opt.warmup = rn_train_schedule(&o) / 20;
    run_state s;
    memset(&s, 0, sizeof s);
    s.ck_steps = ck_steps;
    s.o = &o;
    s.c = c;
    s.report = report;
    s.user = user;
    s.stop = stop;
    s.ckpt_at = -1;
    s.dist = o.dist;
    s.rank = rank;
    rc = run_setup(&s, err);
    if (s.dist) rc = dist_meet(&s, rc, err);
    if (!rc) rc = run_start(&s, err);
    if (!rc) {
        s.t0 = now_s();
        rn_train_event ev = { .kind = RN_TRAIN_EV_START, .step = s.start, .steps = o.opt.steps,
                              .text = s.ckpt };
        emit(&s, &ev);
        rc = run_loop(&s, err);
    }
    run_free(&s);
    return rc;
}
