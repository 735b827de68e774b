/* cmd_run.c — `ramtrace run model.bin prompt.txt`: prefill the prompt, then
 * generate a continuation token by token; prints the continuation on stdout
 * and prefill/generation speed on stderr. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rn_patch_source.h"
#include "rn_modelfile.h"
#include "rn_runtime.h"
#include "rn_sampler.h"
#include "rn_tokenizer.h"
#include "tr_record.h"

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
           CLI_STATE_HELP
           "      --state-save      at the end, run the last generated token too and flush\n"
           "                        the state into --state-file (clean: resumable)\n"
           "      --state-resume    go on from the sequence a --state-save left in\n"
           "                        --state-file: PROMPT continues it\n"
           "      --intervene SPEC  ablate, scale or patch slots, heads or layers while the\n"
           "                        model runs (repeatable; @FILE: one spec a line; CPU only):\n"
           "                          ablate-slots L.H:S1,S2,...[@T0-T1]  ablate-head L.H[@T0-T1]\n"
           "                          ablate-layer L[@T0-T1]  scale-slots L.H:S1,...=F[@T0-T1]\n"
           "                          patch-head L.H from FILE|TRACE.db[#RUN][@T0-T1]\n"
           "                        (docs/interventions.md)\n"
           "  -h, --help            this text\n\n");
    cli_print_policies(stdout, 1); /* --state-policy's, from the registry */
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
        CLI_STATE_LONGOPTS, { 0, 0, 0, 0 }
    };
    long n_gen = 64, threads = 0, chunk = 0, top_k = 0;
    double temperature = 0.8, top_p = 0.9;
    uint64_t seed = 42;
    rn_error err = { 0 };
    rn_state_opts so = { .scope = RN_CACHE_SCOPE_MODEL };
    tr_trace_opts topt = { .build_index = 1 };
    tr_writer *tw = NULL;
    char *prompt_text = NULL;
    const char *device_arg = NULL;
    rn_device device;
    enum { MAX_IV_ARGS = 256 };
    const char *iv_args[MAX_IV_ARGS];
    int n_iv_args = 0, save = 0;
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
        case 'n': rc = cli_parse_long("--tokens", optarg, 0, 1L << 30, &n_gen, &err); break;
        case 't': rc = cli_parse_double("--temperature", optarg, 0, 100, &temperature, &err); break;
        case 'p': rc = cli_parse_double("--top-p", optarg, 1e-6, 1, &top_p, &err); break;
        case 's': rc = cli_parse_u64("--seed", optarg, &seed, &err); break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case 1000: topt.db_path = optarg; break;
        case 1001: topt.layers = optarg; break;
        case 1002: topt.heads = optarg; break;
        case 1003: topt.ops = optarg; break;
        case 1004: topt.name = optarg; break;
        case 1005: topt.build_index = 0; break;
        case 1006: device_arg = optarg; break;
        case 1007: topt.weights = optarg; break;
        case 1009: rc = cli_parse_long("--chunk", optarg, 1, 1 << 16, &chunk, &err); break;
        case 1010: save = 1; break;
        case 1011: so.resume = 1; break;
        case 1012: rc = cli_parse_long("--top-k", optarg, 1, RN_MAX_TOPK, &top_k, &err); break;
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
    if (topt.db_path && !strcmp(topt.db_path, "-"))
        return cli_usage_error("run", "--trace -: a trace database cannot go to standard output; give a file name");
    const char *model_path = argv[optind], *prompt_path = argv[optind + 1];
    cli_threads(threads);
    if (rn_device_select(device_arg, &device, &err)) return cli_fail(&err);
    if (n_iv_args && device != RN_DEVICE_CPU)
        return cli_usage_error("run", "--intervene: interventions run on the CPU only (--device cpu)");
    if (tr_state_device_check(&so, device, &err)) return cli_usage_error("run", "%s", err.msg);
    if (n_iv_args && so.budget)
        return cli_usage_error("run", "--intervene: interventions need the dense memory state (no --state-budget)");
    if ((save || so.resume) && !so.budget)
        return cli_usage_error("run", "%s: needs --state-budget and --state-file", save ? "--state-save" : "--state-resume");
    if ((save || so.resume) && topt.db_path)
        return cli_usage_error("run", "%s: not with --trace (a trace starts its sequence at position 0)",
                               save ? "--state-save" : "--state-resume");

    rn_model model;
    int rc = rn_model_load(&model, model_path, &err);
    if (rc) cli_hint_swapped(&err, model_path, prompt_path, "MODEL PROMPT");
    if (rc) return cli_fail(&err);
    if (top_k) { /* only the forward's K, as trace --top-k: the parameters do not depend on it */
        if (top_k > rn_config_slots(&model.cfg)) {
            rn_seterr(&err, RN_EINPUT, "--top-k: %ld is not in 1..min(%lld slots, %d)", top_k,
                      (long long)rn_config_slots(&model.cfg), RN_MAX_TOPK);
            rn_model_free(&model);
            return cli_fail(&err);
        }
        model.cfg.top_k = (int)top_k;
    }
    rn_iv_set iv;
    const char **iv_specs = NULL;
    rn_iv_init(&iv, &model.cfg);
    iv.source_fn = tr_iv_source; /* patch-head from a traced run */
    int *prompt = NULL, n_prompt = 0;
    rn_runtime *rt = NULL;
    rn_sampler sampler = { 0 };
    float *logits = NULL;
    rc = rn_tokenize_file(&model.cfg, prompt_path, &prompt, &n_prompt, &err);
    /* --state-resume: PROMPT continues the saved sequence, without a BOS of its own */
    const int p0 = !rc && so.resume && n_prompt > 0 && prompt[0] == RN_BOS ? 1 : 0;
    if (!chunk) chunk = rn_device_default_chunk(device);
    if (!rc) rc = so.budget ? rn_runtime_create_state(&model, (int)chunk, &so, &rt, &err)
                            : rn_runtime_create_on(&model, (int)chunk, device, &rt, &err);
    if (!rc) rc = rn_sampler_init(&sampler, model.cfg.vocab_size, (float)temperature, (float)top_p, seed, &err);
    if (!rc && !(logits = malloc(sizeof(float) * model.cfg.vocab_size)))
        rc = rn_seterr(&err, RN_ENOMEM, "out of memory");
    for (int i = 0; i < n_iv_args && !rc; i++) rc = rn_iv_add_arg(&iv, iv_args[i], &err);
    if (!rc && iv.n && !(iv_specs = malloc(sizeof *iv_specs * iv.n))) rc = rn_seterr(&err, RN_ENOMEM, "out of memory");
    for (int i = 0; i < iv.n && !rc; i++) iv_specs[i] = iv.iv[i].spec;
    /* patch sources in the prompt's chunking (rn_intervene.h; a traced
     * prefill runs chunks of at most 256 rows) */
    iv.source_chunk = (int)(topt.db_path && chunk > 256 ? 256 : chunk);
    if (!rc) rc = rn_iv_prepare(&iv, &model, &err);
    if (!rc) rc = rn_runtime_set_interventions(rt, &iv, &err);
    topt.interventions = iv_specs;
    topt.n_interventions = iv.n;
    if (rc) goto done;
    if (topt.db_path) {
        char sampling[192];
        size_t plen;
        snprintf(sampling, sizeof sampling, "temperature=%g top_p=%g seed=%llu tokens=%ld",
                 temperature, top_p, (unsigned long long)seed, n_gen);
        if (!(rc = rn_read_file(prompt_path, &prompt_text, &plen, &err)))
            rc = tr_record_begin(&topt, "run", model_path, &model, prompt_text, sampling, &tw, &err);
        if (rc) goto done;
        rn_runtime_set_probe(rt, tr_writer_probe(tw));
    }
    /* A traced prefill stops between its chunks (tr_record_prefill), so the
     * trace only ever holds whole positions. */
    rn_runtime_set_stop_flag(rt, tw ? NULL : &cli_stop_flag);

    double t0 = cli_now();
    rc = tw ? tr_record_prefill(rt, tw, &model.cfg, prompt, n_prompt, chunk < 256 ? (int)chunk : 256, logits, &cli_stop_flag,
                                NULL, NULL, &err)
            : rn_prefill(rt, prompt + p0, n_prompt - p0, logits, 0, &err);
    double t1 = cli_now();
    if (rc) goto done;
    long made = 0;
    int next = -1;
    for (; made < n_gen && !cli_interrupted; made++) {
        next = rn_sample(&sampler, logits);
        rn_token_print(&model.cfg, next, made == 0, stdout);
        fflush(stdout);
        if (!tw && ferror(stdout) && cli_stdout_gone()) { made++; break; } /* `| head`: nobody reads on */
        if (made + 1 < n_gen) {
            int64_t pos = rn_runtime_pos(rt);
            if ((rc = rn_step(rt, next, logits, &err))) goto done;
            if (tw) tr_record_generated(tw, &model.cfg, pos, next);
            if (tw && tr_writer_failed(tw, &err)) { rc = err.code; goto done; }
        }
    }
    double t2 = cli_now();
    if (model.cfg.tokenizer == RN_TOK_IDS || made) putchar('\n');
    fflush(stdout);
    cli_info("prefill: %d tokens in %.3f s (%.1f tok/s); generation: %ld tokens in %.3f s (%.1f tok/s)\n",
            n_prompt - p0, t1 - t0, (n_prompt - p0) / (t1 - t0 > 0 ? t1 - t0 : 1e-9), made, t2 - t1,
            made / (t2 - t1 > 0 ? t2 - t1 : 1e-9));
    if (cli_interrupted) rc = rn_seterr(&err, RN_EINTR, "interrupted after %ld generated tokens", made);
    /* --state-save: the state after every token printed (the last one was
     * sampled, not yet run), flushed clean, so --state-resume goes on from it */
    if (save && !rc && made && (rc = rn_step(rt, next, logits, &err))) goto done;
    if (save && !rc) rc = rn_runtime_flush_state(rt, &err);
done:;
    rn_state_counters sc;
    if (rt && rn_runtime_state_counters(rt, &sc) && (!rc || rc == RN_EINTR)) {
        cli_state_report(&so, &sc);
        if (tw) {
            tr_state_row sr = { so.policy, so.budget, so.direct, chunk < 256 ? (int)chunk : 256, so.scope, sc };
            tr_writer_set_state(tw, &sr);
        }
    }
    if (tw) {
        rn_error ferr = { 0 };
        tr_writer_stats ws;
        int64_t run_id = tr_writer_run_id(tw);
        int frc = tr_writer_finish(tw, rc || cli_interrupted ? TR_STATUS_INTERRUPTED
                                                             : TR_STATUS_COMPLETE, &ws, &ferr);
        cli_info("trace: run %lld in %s: %lld tokens, %lld events committed\n", (long long)run_id,
                topt.db_path, (long long)ws.committed_tokens, (long long)ws.committed_events);
        if (frc && (!rc || rc == RN_EINTR)) { rc = frc; err = ferr; }
    }
    free(prompt_text);
    free(logits);
    rn_sampler_free(&sampler);
    rn_runtime_free(rt);
    rn_iv_free(&iv);
    free(iv_specs);
    free(prompt);
    rn_model_free(&model);
    return rc ? cli_fail(&err) : 0;
}
