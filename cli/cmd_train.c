/* cmd_train.c — `ramtrace train`: parse flags, load the config (model and
 * training keys in one .cfg), print progress; the loop itself is
 * rn_train_run in core/train/rn_train_loop.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rn_device.h"
#include "rn_modelfile.h"
#include "rn_train_loop.h"

const char cmd_train_summary[] = "train a model on MQAR or byte-level text";

static const char usage[] =
    "usage: ramtrace train --task mqar|text [options] -o MODEL\n"
    "\n"
    "Train a RAM-Net model and save it to MODEL (model.bin format; .safetensors\n"
    "by extension).  One .cfg file holds the model keys (d_model, n_layers, ...)\n"
    "and the training keys (lr, steps, batch, ...); flags override file keys.\n"
    "See docs/training.md.\n"
    "\n"
    "options:\n"
    "  --task mqar|text     the task (default mqar)\n"
    "  --config FILE        model + training keys (key = value lines)\n"
    "  --data FILE          text corpus (required for --task text; scripts/setup\n"
    "                       writes data/kjv.txt in a source checkout)\n"
    "  -o, --output MODEL   the trained model (required)\n"
    "  --resume CKPT        continue a run from its checkpoint; --steps beyond its\n"
    "                       steps extends the run (the added steps at min_lr)\n"
    "  --init-from MODEL    start a new run from MODEL's weights (fresh AdamW\n"
    "                       moments, step 0); the config is MODEL's: model keys\n"
    "                       that differ from it are refused.  Its resume takes\n"
    "                       the same --init-from MODEL\n"
    "  --ckpt PATH          checkpoint path (default MODEL.ckpt)\n"
    "  --log PATH           metrics log, one JSON object per line\n"
    "  --set KEY=VALUE      set any config key (repeatable)\n"
    "  --steps N, --lr X, --batch N, --seq-len N, --seed N, --eps-g X,\n"
    "  --eval-every N, --ckpt-every N, --max-seconds S, --stop-after N\n"
    "                       shortcuts for the keys of the same name\n"
    "  --eval-windows N     text: held-out windows each evaluation scores, spread\n"
    "                       evenly over the split (key eval_windows, default 256;\n"
    "                       0 = the whole split)\n"
    "  -j, --threads N      OpenMP/BLAS threads (default: the free cores)\n"
    "  --device DEV         cpu (default) or cuda: the training steps on the GPU\n"
    "                       (a CUDA build; evaluation stays on the CPU)\n"
    "  --precision P        fp32 (default) or bf16: the forward and backward over\n"
    "                       the weight matrices rounded to bf16, FP32 master\n"
    "                       weights, moments and checkpoints (docs/training.md);\n"
    "                       with --device cuda every product on bf16 tensor\n"
    "                       cores, or tf32 (docs/cuda.md)\n"
    "  --dist KIND          data-parallel training across processes started by\n"
    "                       mpirun or srun: mpi, fs:DIR (the ranks meet in the\n"
    "                       shared directory DIR) or none (default); each rank\n"
    "                       trains its share of every batch (docs/training.md)\n"
    "  --dist-timeout S     --dist: give up when the other ranks have been silent\n"
    "                       for S seconds (default 60)\n"
    "  -h, --help           this text\n"
    "\n"
    "Checkpoints are written atomically every ckpt_every steps and on Ctrl-C;\n"
    "with one thread a resumed run repeats the uninterrupted loss curve (the\n"
    "checkpoint records the training keys; a resume that changes one is refused).\n"
    "A resume with more steps than the run had extends it: warm-up and cosine\n"
    "decay keep the run's schedule_steps, and the steps past them train at\n"
    "min_lr (the run that --set schedule_steps=N would have made from scratch).\n"
    "Sparse addresses learn faster started dense: --set top_k_start=M anneals\n"
    "the training K down to top_k over the first top_k_anneal of the steps.\n"
    "MQAR: --set mqar_first=16:2,32:4 --set mqar_first_steps=N trains on short\n"
    "segments first (samples/configs/mqar.cfg; docs/training.md).\n";

/* Route a key to the model config or the training options. */
static int set_key(rn_config *c, rn_train_opts *o, const char *key, const char *val, rn_error *err)
{
    int rc = rn_config_set(c, key, val, err);
    if (rc == -1) return rn_train_opts_set(o, key, val, err);
    return rc;
}

/* Progress on stderr: a line per logged step (rewritten in place on a
 * terminal), per evaluation and, off a terminal, per checkpoint.  The start
 * and the end are printed by cmd_train itself. */
static void report(void *user, const rn_train_event *ev)
{
    int tty = *(int *)user;
    if (cli_quiet) return;
    switch (ev->kind) {
    case RN_TRAIN_EV_STEP: {
        int eta = (int)ev->eta_s;
        char k[32]; /* "K 8", or "K 8/64" (writes/reads) while only the reads anneal */
        if (ev->read_k == ev->top_k) snprintf(k, sizeof k, "%d", ev->top_k);
        else snprintf(k, sizeof k, "%d/%d", ev->top_k, ev->read_k);
        fprintf(stderr, "%sstep %lld/%lld  loss %.4f  lr %.2e  |g| %.3f  K %s  %.0f tok/s  ETA %d:%02d:%02d%s",
                tty ? "\r\033[K" : "", (long long)ev->step, (long long)ev->steps, ev->loss, ev->lr,
                ev->grad_norm, k, ev->tok_per_s, eta / 3600, eta / 60 % 60, eta % 60, tty ? "" : "\n");
        break;
    }
    case RN_TRAIN_EV_EVAL:
        fprintf(stderr, "%seval at step %lld (%.0f s): %s\n", tty ? "\r\033[K" : "", (long long)ev->step,
                ev->elapsed_s, ev->text);
        break;
    case RN_TRAIN_EV_CHECKPOINT:
        if (!tty) fprintf(stderr, "checkpoint at step %lld: %s\n", (long long)ev->step, ev->text);
        break;
    case RN_TRAIN_EV_START:
    case RN_TRAIN_EV_DONE:
        return;
    }
    fflush(stderr);
}

/* Defaults per task: MQAR uses ids and Zoology's V = 8192. */
static void task_defaults(rn_config *c, int task)
{
    rn_config_default(c);
    if (task == RN_TASK_MQAR) {
        c->vocab_size = 8192;
        c->tokenizer = RN_TOK_IDS;
        c->d_p = 16;
        c->order = 2;
        c->top_k = 4;
    }
}

/* ", on N ranks (--dist KIND)" for the start line. */
static const char *dist_line(const rn_dist *d)
{
    static char buf[1200];
    snprintf(buf, sizeof buf, ", on %d ranks (--dist %s)", rn_dist_size(d), rn_dist_spec(d));
    return buf;
}

/* --dist: the rank of this process (0 without --dist). */
static int dist_rank;

/* --dist's watchdog: the other ranks have been silent past the timeout
 * (rn_dist.h).  One line and the process ends, whatever MPI is waiting
 * for. */
static void dist_timed_out(const char *msg)
{
    rn_error e;
    rn_seterr(&e, RN_EIO, "%s", msg);
    int rc = cli_fail(&e);
    fflush(stderr);
    _exit(rc);
}

/* The run itself, after the options: checks, threads and signals, the
 * start line, the loop, the end line (rank 0 alone prints, --dist). */
static int train(rn_train_opts *o, const rn_config *c, const char *task_s, long threads, rn_error *err)
{
    if (rn_train_opts_validate(o, c, err)) return err->code;
    cli_threads(threads);
    cli_install_signals();
    int tty = cli_stderr_tty();
    if (dist_rank == 0)
        cli_info("training %s: %lld parameters, %lld steps%s%s%s\n", task_s, (long long)rn_config_param_count(c),
                 (long long)o->opt.steps, o->resume[0] ? ", resuming from " : o->init_from[0] ? ", from the weights of " : "",
                 o->resume[0] ? o->resume : o->init_from[0] ? o->init_from : "", o->dist ? dist_line(o->dist) : "");
    int rc = rn_train_run(o, c, report, &tty, &cli_stop_flag, err);
    if (tty && !cli_quiet && dist_rank == 0) fputc('\n', stderr);
    if (rc) return rc;
    if (dist_rank == 0) cli_info("saved %s\n", o->out);
    return 0;
}

int cmd_train(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    static const struct option lo[] = {
        { "task", 1, 0, 't' }, { "config", 1, 0, 'c' }, { "data", 1, 0, 'd' }, { "output", 1, 0, 'o' },
        { "resume", 1, 0, 'r' }, { "ckpt", 1, 0, 'k' }, { "log", 1, 0, 'l' }, { "set", 1, 0, 's' },
        { "steps", 1, 0, 1 }, { "lr", 1, 0, 2 }, { "batch", 1, 0, 3 }, { "seq-len", 1, 0, 4 },
        { "seed", 1, 0, 5 }, { "eps-g", 1, 0, 6 }, { "eval-every", 1, 0, 7 }, { "ckpt-every", 1, 0, 8 },
        { "max-seconds", 1, 0, 9 }, { "threads", 1, 0, 10 }, { "stop-after", 1, 0, 11 }, { "device", 1, 0, 12 }, { "precision", 1, 0, 14 },
        { "init-from", 1, 0, 13 }, { "dist", 1, 0, 15 }, { "dist-timeout", 1, 0, 16 },
        { "eval-windows", 1, 0, 17 }, { 0, 0, 0, 0 } };
    static const char *const keyname[] = { "", "steps", "lr", "batch", "seq_len", "seed", "eps_g",
                                           "eval_every", "ckpt_every", "max_seconds", "", "stop_after",
                                           "", "", "", "", "", "eval_windows" };
    const char *task_s = "mqar", *cfg_path = NULL, *data = NULL, *out = NULL, *resume = NULL,
               *ckpt = NULL, *log = NULL;
    /* overrides are applied after the file, in order */
    const char *ok[128], *ov[128];
    char kvbuf[128][256];
    int nov = 0;
    long threads = 0;
    const char *device_arg = NULL, *init_from = NULL, *precision_arg = "fp32", *dist_arg = "none";
    double dist_timeout = 60;
    rn_precision precision;
    rn_device device;
    rn_error err = { 0, "" };
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":o:j:", lo, NULL)) != -1) {
        switch (ch) {
        case 't': task_s = optarg; break;
        case 'c': cfg_path = optarg; break;
        case 'd': data = optarg; break;
        case 'o': out = optarg; break;
        case 'r': resume = optarg; break;
        case 'k': ckpt = optarg; break;
        case 'l': log = optarg; break;
        case 12: device_arg = optarg; break;
        case 14: precision_arg = optarg; break;
        case 13: init_from = optarg; break;
        case 15: dist_arg = optarg; break;
        case 16:
            if (cli_parse_double("--dist-timeout", optarg, 0.1, 1e6, &dist_timeout, &err)) return cli_fail(&err);
            break;
        case 's': {
            if (nov == 128) return cli_usage_error("train", "too many --set options");
            snprintf(kvbuf[nov], sizeof kvbuf[nov], "%s", optarg);
            char *eq = strchr(kvbuf[nov], '=');
            if (!eq || eq == kvbuf[nov]) return cli_usage_error("train", "--set needs KEY=VALUE (got '%s')", optarg);
            *eq = 0;
            ok[nov] = kvbuf[nov];
            ov[nov] = eq + 1;
            nov++;
            break;
        }
        case 10:
        case 'j':
            if (cli_parse_long("--threads", optarg, 1, 1024, &threads, &err)) return cli_fail(&err);
            break;
        case ':': return cli_usage_error("train", "option '%s' needs a value", argv[optind - 1]);
        case '?': return cli_usage_error("train", "unknown option '%s'", argv[optind - 1]);
        default:
            if ((ch >= 1 && ch <= 9) || ch == 11 || ch == 17) {
                if (nov == 128) return cli_usage_error("train", "too many options");
                ok[nov] = keyname[ch];
                ov[nov] = optarg;
                nov++;
            }
        }
    }
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (rn_device_select(device_arg, &device, &err)) return cli_fail(&err);
    if (rn_precision_parse(precision_arg, &precision, &err) || rn_device_check_train_precision(device, precision, &err))
        return cli_usage_error("train", "%s", err.msg);
    int task;
    if (!strcmp(task_s, "mqar")) task = RN_TASK_MQAR;
    else if (!strcmp(task_s, "text")) task = RN_TASK_TEXT;
    else return cli_usage_error("train", "unknown task '%s' (expected mqar or text)", task_s);
    if (!out) return cli_usage_error("train", "no output model (-o MODEL)");
    if (task == RN_TASK_TEXT && !data)
        return cli_usage_error("train", "--task text needs a corpus: --data FILE (none is installed; "
                                        "scripts/setup writes data/kjv.txt in a source checkout)");
    rn_config c, init_cfg;
    rn_train_opts o;
    if (init_from) {
        /* the model's config is the run's; --config or --set keys that
         * change it are refused below, naming the first */
        rn_model im;
        if (rn_model_load(&im, init_from, &err)) {
            rn_preferr(&err, "--init-from");
            return cli_fail(&err);
        }
        c = init_cfg = im.cfg;
        rn_model_free(&im);
    } else {
        task_defaults(&c, task);
    }
    rn_train_opts_default(&o, task);
    if (cfg_path && rn_config_load_file(&c, cfg_path, rn_train_opts_set, &o, &err)) return cli_fail(&err);
    int shape_set = 0, cape_set = 0;
    for (int i = 0; i < nov; i++) {
        if (set_key(&c, &o, ok[i], ov[i], &err)) return cli_fail(&err);
        shape_set |= !strcmp(ok[i], "n_heads") || !strcmp(ok[i], "n_layers");
        cape_set |= !strcmp(ok[i], "cape") || !strcmp(ok[i], "cape_masks");
    }
    /* as in init: an override that shrinks the shape drops stale CAPE bits */
    if (shape_set && !cape_set) rn_config_clip_masks(&c);
    /* before the config's own checks: the key that changed it is the news */
    if (init_from && rn_train_check_init_config(init_from, &init_cfg, &c, &err)) return cli_fail(&err);
    o.device = device;
    o.precision = precision;
    snprintf(o.out, sizeof o.out, "%s", out);
    if (ckpt) snprintf(o.ckpt, sizeof o.ckpt, "%s", ckpt);
    if (log) snprintf(o.log, sizeof o.log, "%s", log);
    if (resume) snprintf(o.resume, sizeof o.resume, "%s", resume);
    if (init_from) snprintf(o.init_from, sizeof o.init_from, "%s", init_from);
    snprintf(o.data, sizeof o.data, "%s", data ? data : "");
    if (rn_config_validate(&c, &err)) return cli_fail(&err);
    if (strcmp(dist_arg, "none")) {
        if (rn_dist_open(&o.dist, dist_arg, dist_timeout, dist_timed_out, &err)) return cli_fail(&err);
        dist_rank = rn_dist_rank(o.dist);
    }
    int rc = train(&o, &c, task_s, threads, &err);
    /* --dist: rank 0 speaks for the run; another rank only for a failure
     * of its own link (MPI, the rendezvous directory) */
    if (rc && (dist_rank == 0 || err.code == RN_EIO)) {
        if (o.dist) rn_preferr(&err, "rank %d of %d", dist_rank, rn_dist_size(o.dist));
        rc = cli_fail(&err);
    } else if (rc) {
        rc = err.code == RN_EINTR ? cli_interrupt_status() : rn_exit_status(err.code);
    }
    rn_dist_close(o.dist);
    return rc;
}
