/* cmd_run.c — `ramtrace run model.bin prompt.txt`: prefill the prompt, then
 * generate a continuation token by token; prints the continuation on stdout
 * and prefill/generation speed on stderr.  The job itself is tr_generate_run
 * (trace/tr_generate.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_intervene.h"
#include "rn_tokenizer.h"
#include "tr_generate.h"

const char cmd_run_summary[] = "run a model on a prompt and generate a continuation";

static void usage(void)
{
    printf("usage: ramtrace run MODEL PROMPT [options]\n\n"
           "Prefill PROMPT (a text file: raw text for the bytes tokenizer, whitespace-\n"
           "separated token ids for the ids tokenizer) and generate a continuation.\n\n"
           "options:\n"
           "  -n, --tokens N        tokens to generate (default 64; 0 = prefill only)\n"
           "  -t, --temperature T   sampling temperature, 0 = greedy (default 0.8)\n"
           "  -p, --top-p P         nucleus sampling mass in (0, 1] (default 0.9)\n"
           "  -s, --seed S          sampling seed (default 42)\n"
           "  -j, --threads N       threads (default: the free cores, rechecked as it runs)\n"
           "      --top-k K         read and write K slots per token instead of the model's\n"
           "                        top_k (1..min(M, 1024); a --trace records K)\n"
           "      --chunk N         prompt rows per prefill chunk (default 256; 1024 with\n"
           "                        --device cuda; 1: the step's access order)\n"
           "      --trace FILE      record every memory access into a trace database\n"
           "      --layers LIST     traced layers, e.g. 0-3,7 (default all)\n"
           "      --heads LIST      traced heads (default all)\n"
           "      --ops OPS         traced accesses: r, w or rw (default rw)\n"
           "      --name NAME       run name in the trace\n"
           "      --weights FMT     trace weights: f32 exact (default) or f16 (rounded)\n"
           "      --no-index        accepted; has no effect since trace schema v2\n"
           "      --device DEV      cpu (default) or cuda (a CUDA build and a GPU)\n"
           "      --precision P     fp32 (default) or bf16: the weight matrices in bf16,\n"
           "                        FP32 arithmetic (half the bytes a generated token reads;\n"
           "                        with --device cuda the prefill's products run on bf16\n"
           "                        tensor cores over bf16 activations)\n"
           CLI_STATE_HELP
           "      --state-save      at the end, run the last generated token too and flush\n"
           "                        the state into --state-file (clean: resumable)\n"
           "      --state-resume    go on from the sequence a --state-save left in\n"
           "                        --state-file: PROMPT continues it\n"
           "      --intervene SPEC  ablate, scale or patch slots, heads or layers while the\n"
           "                        model runs (repeatable; @FILE: one spec a line; CPU only):\n");
    /* the kinds, two a line, from their table (rn_intervene.c) */
    int i = 0;
    for (; rn_iv_kind_usage(i); i++)
        printf("%s%s%s", i % 2 ? "  " : "                          ", rn_iv_kind_usage(i), i % 2 ? "\n" : "");
    printf("%s                        (docs/interventions.md)\n"
           "  -h, --help            this text\n\n", i % 2 ? "\n" : "");
    cli_print_policies(stdout, 1); /* --state-policy's, from the registry */
}

/* Print each generated token as it comes; stop once standard output's
 * reader left (`| head`) — a traced run goes on recording. */
static int emit(void *user, const rn_config *cfg, int token, int first)
{
    const tr_generate_job *job = user;
    rn_token_print(cfg, token, first, stdout);
    fflush(stdout);
    return !job->trace.db_path && ferror(stdout) && cli_stdout_gone();
}

int cmd_run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    static const struct option opts[] = {
        { "tokens", required_argument, 0, 'n' }, { "temperature", required_argument, 0, 't' },
        { "top-p", required_argument, 0, 'p' },  { "seed", required_argument, 0, 's' },
        { "threads", required_argument, 0, 'j' }, { "trace", required_argument, 0, 1000 },
        { "layers", required_argument, 0, 1001 }, { "heads", required_argument, 0, 1002 },
        { "ops", required_argument, 0, 1003 }, { "name", required_argument, 0, 1004 },
        { "no-index", no_argument, 0, 1005 }, { "device", required_argument, 0, 1006 },
        { "weights", required_argument, 0, 1007 }, { "intervene", required_argument, 0, 1008 },
        { "chunk", required_argument, 0, 1009 }, { "state-save", no_argument, 0, 1010 },
        { "state-resume", no_argument, 0, 1011 }, { "top-k", required_argument, 0, 1012 },
        { "precision", required_argument, 0, 1013 },
        CLI_STATE_LONGOPTS, { 0, 0, 0, 0 }
    };
    tr_generate_job job = { .n_gen = 64, .temperature = 0.8, .top_p = 0.9, .seed = 42,
                            .trace = { .build_index = 1 } };
    tr_trace_opts *topt = &job.trace;
    long threads = 0, chunk = 0, top_k = 0;
    rn_error err = { 0 };
    rn_state_opts so = { .scope = RN_CACHE_SCOPE_MODEL };
    const char *device_arg = NULL;
    rn_device device;
    enum { MAX_IV_ARGS = 256 };
    const char *iv_args[MAX_IV_ARGS];
    int n_iv_args = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":n:t:p:s:j:", opts, NULL)) != -1) {
        int rc = 0;
        if (cli_state_option(c, optarg, &so, &rc, &err)) {
            if (rc) return cli_usage_error("run", "%s", err.msg);
            continue;
        }
        switch (c) {
        case 'n': rc = cli_parse_long("--tokens", optarg, 0, 1L << 30, &job.n_gen, &err); break;
        case 't': rc = cli_parse_double("--temperature", optarg, 0, 100, &job.temperature, &err); break;
        case 'p': rc = cli_parse_double("--top-p", optarg, 1e-6, 1, &job.top_p, &err); break;
        case 's': rc = cli_parse_u64("--seed", optarg, &job.seed, &err); break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case 1000: topt->db_path = optarg; break;
        case 1001: topt->layers = optarg; break;
        case 1002: topt->heads = optarg; break;
        case 1003: topt->ops = optarg; break;
        case 1004: topt->name = optarg; break;
        case 1005: topt->build_index = 0; break;
        case 1006: device_arg = optarg; break;
        case 1007: topt->weights = optarg; break;
        case 1009: rc = cli_parse_long("--chunk", optarg, 1, 1 << 16, &chunk, &err); break;
        case 1010: job.save = 1; break;
        case 1011: so.resume = 1; break;
        case 1012: rc = cli_parse_long("--top-k", optarg, 1, RN_MAX_TOPK, &top_k, &err); break;
        case 1013: rc = rn_precision_parse(optarg, &job.precision, &err); break;
        case 1008:
            if (n_iv_args == MAX_IV_ARGS) return cli_usage_error("run", "more than %d --intervene options (use @FILE)", MAX_IV_ARGS);
            iv_args[n_iv_args++] = optarg;
            break;
        case ':': return cli_usage_error("run", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("run", "unknown option %s", argv[optind - 1]);
        }
        if (rc) return cli_usage_error("run", "%s", err.msg);
    }
    if (argc - optind != 2) return cli_usage_error("run", "expected MODEL and PROMPT");
    if (topt->db_path && !strcmp(topt->db_path, "-"))
        return cli_usage_error("run", "--trace -: a trace database cannot go to standard output; give a file name");
    cli_threads(threads);
    if (rn_device_select(device_arg, &device, &err)) return cli_fail(&err);
    if (n_iv_args && device != RN_DEVICE_CPU)
        return cli_usage_error("run", "--intervene: interventions run on the CPU only (--device cpu)");
    if (tr_state_device_check(&so, device, &err) || rn_device_check_infer_precision(device, job.precision, &err))
        return cli_usage_error("run", "%s", err.msg);
    if (n_iv_args && so.budget)
        return cli_usage_error("run", "--intervene: interventions need the dense memory state (no --state-budget)");
    if ((job.save || so.resume) && !so.budget)
        return cli_usage_error("run", "%s: needs --state-budget and --state-file", job.save ? "--state-save" : "--state-resume");
    if ((job.save || so.resume) && topt->db_path)
        return cli_usage_error("run", "%s: not with --trace (a trace starts its sequence at position 0)",
                               job.save ? "--state-save" : "--state-resume");

    job.model_path = argv[optind];
    job.prompt_path = argv[optind + 1];
    job.device = device;
    job.state = &so;
    job.chunk = chunk ? (int)chunk : rn_device_default_chunk(device);
    job.top_k = (int)top_k;
    job.intervene = iv_args;
    job.n_intervene = n_iv_args;
    job.stop = &cli_stop_flag;
    job.emit = emit;
    job.user = &job;
    tr_generate_result res;
    int rc = tr_generate_run(&job, &res, &err);
    if (rc && !res.model_loaded) cli_hint_swapped(&err, job.model_path, job.prompt_path, "MODEL PROMPT");
    if (res.generated) {
        if (res.tokenizer == RN_TOK_IDS || res.made) putchar('\n');
        fflush(stdout);
        double tp = res.prefill_s, tg = res.generate_s;
        cli_info("prefill: %d tokens in %.3f s (%.1f tok/s); generation: %ld tokens in %.3f s (%.1f tok/s)\n",
                 (int)res.prompt_tokens, tp, res.prompt_tokens / (tp > 0 ? tp : 1e-9), res.made, tg,
                 res.made / (tg > 0 ? tg : 1e-9));
    }
    if (res.tiered) cli_state_report(&so, &res.state);
    if (res.run_id)
        cli_info("trace: run %lld in %s: %lld tokens, %lld events committed\n", (long long)res.run_id,
                 job.trace.db_path, (long long)res.ws.committed_tokens, (long long)res.ws.committed_events);
    return rc ? cli_fail(&err) : 0;
}
