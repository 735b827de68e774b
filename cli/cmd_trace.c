/* cmd_trace.c — `ramtrace trace MODEL INPUT -o OUT.db`: trace a long input in
 * prefill only (no generation), for corpus-scale traces.  The job itself is
 * tr_trace_run (trace/tr_record.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_device.h"
#include "tr_record.h"

const char cmd_trace_summary[] = "trace a model's memory accesses over an input file into SQLite";

static void usage(void)
{
    printf("usage: ramtrace trace MODEL INPUT -o OUT.db [options]\n\n"
           "Prefill INPUT (tokenized like a prompt; no generation) and record every\n"
           "memory write and read of the selected layers and heads as a new run in\n"
           "OUT.db (created if missing; earlier runs are kept).  Ctrl-C stops\n"
           "cleanly: everything produced is kept and the run is marked interrupted.\n\n"
           "options:\n"
           "  -o, --output FILE     trace database (required)\n"
           "      --layers LIST     layers to trace, e.g. 0-3,7 (default all)\n"
           "      --heads LIST      heads to trace (default all)\n"
           "      --ops OPS         r, w or rw (default rw)\n"
           "      --name NAME       run name (default: the input's file name)\n"
           "      --weights FMT     f32: exact float32 weights (default); f16: rounded to\n"
           "                        float16, 2 bytes less per event (recorded in runs)\n"
           "      --no-index        accepted; has no effect since trace schema v2\n"
           "      --chunk N         prefill rows per chunk (default 256; 1024 with --device cuda)\n"
           "      --top-k K         read and write K slots per token instead of the model's\n"
           "                        top_k (the run's config records K)\n"
           "  -j, --threads N       threads (default: the free cores, rechecked as it runs)\n"
           CLI_STATE_HELP
           "                        (counters recorded in the table state_counters; they\n"
           "                        equal simulate --scope model's, which replays the\n"
           "                        prefill chunks the run recorded)\n"
           "      --device DEV      cpu (default) or cuda (a CUDA build and a GPU)\n"
           "      --precision P     fp32 (default) or bf16: the weight matrices in bf16,\n"
           "                        FP32 arithmetic (half the bytes a generated token reads;\n"
           "                        with --device cuda the prefill's products run on bf16\n"
           "                        tensor cores over bf16 activations)\n"
           "      --intervene SPEC  ablate, scale or patch slots, heads or layers while the\n"
           "                        model runs (repeatable; @FILE: one spec a line; CPU only;\n"
           "                        recorded in the table interventions; see ramtrace run\n"
           "                        --help and docs/interventions.md)\n"
           "  -h, --help            this text\n\n");
    cli_print_policies(stdout, 1); /* --state-policy's, from the registry */
}

typedef struct { double t0, last; int tty; } progress_state;

static void progress(void *user, int64_t done, int64_t total)
{
    progress_state *p = user;
    double t = cli_now();
    if (done < total && t - p->last < (p->tty ? 0.2 : 5.0)) return;
    p->last = t;
    if (cli_quiet) return;
    fprintf(stderr, "%strace: %lld/%lld tokens (%.0f%%), %.0f tok/s%s", p->tty ? "\r" : "",
            (long long)done, (long long)total, 100.0 * done / (total ? total : 1),
            done / (t - p->t0 > 0 ? t - p->t0 : 1e-9), p->tty ? "" : "\n");
    if (p->tty && done == total) fputc('\n', stderr);
}

int cmd_trace(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    enum { O_LAYERS = 1000, O_HEADS, O_OPS, O_NAME, O_NOINDEX, O_CHUNK, O_DEVICE, O_WEIGHTS, O_INTERVENE, O_TOPK, O_PRECISION };
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "layers", required_argument, 0, O_LAYERS },
        { "heads", required_argument, 0, O_HEADS }, { "ops", required_argument, 0, O_OPS },
        { "name", required_argument, 0, O_NAME }, { "no-index", no_argument, 0, O_NOINDEX },
        { "chunk", required_argument, 0, O_CHUNK }, { "threads", required_argument, 0, 'j' },
        { "device", required_argument, 0, O_DEVICE }, { "weights", required_argument, 0, O_WEIGHTS },
        { "precision", required_argument, 0, O_PRECISION },
        { "intervene", required_argument, 0, O_INTERVENE }, { "top-k", required_argument, 0, O_TOPK },
        CLI_STATE_LONGOPTS,
        { 0, 0, 0, 0 }
    };
    tr_trace_job job = { .build_index = 1, .chunk = 256, .stop = &cli_stop_flag };
    long chunk = 0, threads = 0, top_k = 0;
    const char *device_arg = NULL;
    rn_device device;
    rn_error err = { 0 };
    rn_state_opts so = { .scope = RN_CACHE_SCOPE_MODEL };
    enum { MAX_IV_ARGS = 256 };
    const char *iv_args[MAX_IV_ARGS];
    int n_iv_args = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:j:", opts, NULL)) != -1) {
        int rc = 0;
        if (cli_state_option(c, optarg, &so, &rc, &err)) {
            if (rc) return cli_usage_error("trace", "%s", err.msg);
            continue;
        }
        switch (c) {
        case 'o': job.db_path = optarg; break;
        case O_LAYERS: job.layers = optarg; break;
        case O_HEADS: job.heads = optarg; break;
        case O_OPS: job.ops = optarg; break;
        case O_NAME: job.name = optarg; break;
        case O_NOINDEX: job.build_index = 0; break;
        case O_WEIGHTS: job.weights = optarg; break;
        case O_CHUNK: rc = cli_parse_long("--chunk", optarg, 1, 1 << 16, &chunk, &err); break;
        case O_TOPK: rc = cli_parse_long("--top-k", optarg, 1, RN_MAX_TOPK, &top_k, &err); break;
        case O_DEVICE: device_arg = optarg; break;
        case O_PRECISION: rc = rn_precision_parse(optarg, &job.precision, &err); break;
        case O_INTERVENE:
            if (n_iv_args == MAX_IV_ARGS) return cli_usage_error("trace", "more than %d --intervene options (use @FILE)", MAX_IV_ARGS);
            iv_args[n_iv_args++] = optarg;
            break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error("trace", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("trace", "unknown option %s", argv[optind - 1]);
        }
        if (rc) return cli_usage_error("trace", "%s", err.msg);
    }
    if (argc - optind != 2) return cli_usage_error("trace", "expected MODEL and INPUT");
    if (!job.db_path) return cli_usage_error("trace", "-o OUT.db is required");
    if (!strcmp(job.db_path, "-"))
        return cli_usage_error("trace", "-o -: a trace database cannot go to standard output; give a file name");
    if (rn_device_select(device_arg, &device, &err)) return cli_fail(&err);
    job.device = device;
    job.state = &so;
    if (tr_state_device_check(&so, device, &err) || rn_device_check_infer_precision(device, job.precision, &err))
        return cli_usage_error("trace", "%s", err.msg);
    if (n_iv_args && so.budget)
        return cli_usage_error("trace", "--intervene: interventions need the dense memory state (no --state-budget)");
    if (n_iv_args && device != RN_DEVICE_CPU)
        return cli_usage_error("trace", "--intervene: interventions run on the CPU only (--device cpu)");
    job.intervene = iv_args;
    job.n_intervene = n_iv_args;
    job.model_path = argv[optind];
    job.input_path = argv[optind + 1];
    job.chunk = chunk ? (int)chunk : rn_device_default_chunk(device);
    job.top_k = (int)top_k;
    cli_threads(threads);
    progress_state ps = { cli_now(), 0, cli_stderr_tty() };
    job.progress = progress;
    job.user = &ps;
    tr_trace_result res;
    int rc = tr_trace_run(&job, &res, &err);
    if (rc && rc != RN_EINTR) cli_hint_swapped(&err, job.model_path, job.input_path, "MODEL INPUT");
    if (res.run_id) {
        double s = res.seconds > 0 ? res.seconds : 1e-9;
        cli_info("trace: run %lld in %s: %lld tokens, %lld events in %.2f s (%.2fM events/s)"
                "%s; writer %.2f s, model waited %.2f s, index %.2f s\n", (long long)res.run_id, job.db_path, (long long)res.tokens,
                (long long)res.events, res.seconds, res.events / s / 1e6,
                rc == RN_EINTR ? " (interrupted)" : "", res.ws.insert_s, res.ws.producer_wait_s,
                res.ws.index_s);
    }
    if (res.tiered) cli_state_report(&so, &res.state);
    if (rc == RN_EINTR) {
        fprintf(stderr, "ramtrace: %s\n", err.msg);
        return cli_interrupt_status();
    }
    return rc ? cli_fail(&err) : 0;
}
