/* cmd_simulate.c — `ramtrace simulate`: replay a trace run through cache
 * policies at given capacities (analysis/an_simrun.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_load.h"
#include "an_runset.h"
#include "an_shards.h"
#include "an_simrun.h"
#include "an_stats.h"
#include "cli.h"
#include "rn_atomic.h"

const char cmd_simulate_summary[] = "simulate hot-slot caches under each cache policy (simulate --help lists them)";

static const char usage[] =
    "usage: ramtrace simulate TRACE.db... [--policy LIST] (--capacity LIST | --sweep) [options]\n"
    "\n"
    "Replay a run's memory accesses through cache policies and report hit\n"
    "ratio, misses and bytes moved ((d_v+1)*4 bytes per miss) per capacity.\n"
    "Capacity is in slots per cache.  Accesses replay in the one-token step's\n"
    "order, (pos, layer, head, op, rank), whatever chunks the run used;\n"
    "--order run replays its prefill chunks as they ran (layer by layer, head\n"
    "by head, position by position), the order to predict a --state-budget run.\n"
    "Several runs (several files, or --all-runs) of one model replay as one\n"
    "stream, file by file, each file's runs by id, each run's slots keys of\n"
    "its own (docs/analysis.md).\n"
    "\n"
    "options:\n"
    "  -p, --policy LIST     comma-separated policies (below) or all (default all)\n"
    "  -c, --capacity LIST   comma-separated capacities in slots, e.g. 64,256,1024\n"
    "      --sweep           capacities 1, 2, 4, ... up to the distinct keys\n"
    "                        (default when no --capacity is given)\n"
    "      --scope S         head (a cache per head), layer (per layer) or model\n"
    "                        (one cache for all heads; default, as in plot mrc)\n"
    "      --ops OPS         rw (default), r (reads only) or w\n"
    "      --order O         step (default: every position alone, the order of a\n"
    "                        one-token step, as plot mrc and stats use) or run\n"
    "                        (the recorded prefill chunks, layer by layer: the\n"
    "                        order a --state-budget run touches its rows in)\n"
    "      --warmup T        tokens that warm the caches uncounted (default 0; in\n"
    "                        run order, the chunks that start before T)\n"
    "      --layer L         only layer L (default all)\n"
    "      --head H          only head H (default all)\n"
    "      --run R           run id in each file (default: the latest)\n"
    "      --all-runs        every run of every file\n"
    "      --mrc             add the exact LRU curve ('lru-exact' rows, from\n"
    "                        one stack-distance pass)\n"
    "      --mrc-out FILE    write the exact LRU curve at every capacity (CSV;\n"
    "                        - is stdout, and the table then goes to stderr)\n"
    "      --sample R        estimate from the accesses to keys sampled at rate R\n"
    "                        (0.01, 1%%) or by a fixed size (8192keys: at most so\n"
    "                        many keys per cache): SHARDS for the LRU curve\n"
    "                        ('lru-shards' rows), mini-simulations at capacity C*R\n"
    "                        for every policy (docs/analysis.md gives the errors)\n"
    "  -f, --format F        table (default), csv or json\n"
    "  -j, --threads N       run the policy x capacity cells on N threads at once\n"
    "                        (default: the free cores; the results are the same)\n"
    "  -h, --help            this text\n"
    "\n";

static const char example[] =
    "\n"
    "example: ramtrace simulate trace.db --policy lru,s3fifo,opt --capacity 256,1024 --scope head\n";

static int progress(void *user, int done, int total)
{
    double *t0 = user;
    if (!cli_quiet && (cli_now() - *t0 > 1.0 || done == total)) {
        fprintf(stderr, "%ssimulate: %d/%d simulations%s", cli_stderr_tty() ? "\r" : "", done, total,
                cli_stderr_tty() && done < total ? "" : "\n");
        *t0 = cli_now();
    }
    return cli_stop_flag;
}

static int parse_caps(const char *s, uint64_t *out, int cap, int *n, rn_error *err)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ',') || *p == '-')
            return rn_seterr(err, RN_EINPUT, "--capacity: '%s' is not a list of integers", s);
        if (v == 0) return rn_seterr(err, RN_EINPUT, "--capacity: 0 is not a capacity (at least 1 slot)");
        if (*n >= cap) return rn_seterr(err, RN_EINPUT, "--capacity: too many capacities (at most %d)", cap);
        out[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    if (!*n) return rn_seterr(err, RN_EINPUT, "--capacity: empty list");
    return RN_OK;
}

int cmd_simulate(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        cli_print_policies(stdout, 0); /* the registry, core/cache/rn_cache.h */
        fputs(example, stdout);
        return 0;
    }
    enum { O_SWEEP = 256, O_SCOPE, O_OPS, O_WARMUP, O_LAYER, O_HEAD, O_RUN, O_MRC, O_MRCOUT, O_ORDER, O_SAMPLE, O_ALL };
    static const struct option opts[] = {
        { "policy", required_argument, 0, 'p' }, { "capacity", required_argument, 0, 'c' },
        { "sweep", no_argument, 0, O_SWEEP }, { "scope", required_argument, 0, O_SCOPE },
        { "ops", required_argument, 0, O_OPS }, { "warmup", required_argument, 0, O_WARMUP },
        { "layer", required_argument, 0, O_LAYER }, { "head", required_argument, 0, O_HEAD },
        { "run", required_argument, 0, O_RUN }, { "mrc", no_argument, 0, O_MRC },
        { "mrc-out", required_argument, 0, O_MRCOUT }, { "format", required_argument, 0, 'f' },
        { "threads", required_argument, 0, 'j' }, { "order", required_argument, 0, O_ORDER },
        { "sample", required_argument, 0, O_SAMPLE }, { "all-runs", no_argument, 0, O_ALL },
        { 0, 0, 0, 0 } };
    const char *pol_s = "all", *cap_s = NULL, *mrc_out = NULL;
    int step_order = 1;
    an_shards_opts sample = { 0, 0 };
    int all = 0, sweep = 0, scope = RN_CACHE_SCOPE_MODEL, ops = RN_OPS_BOTH, fmt = RN_FMT_TABLE, want_mrc = 0;
    long warmup = 0, layer = -1, head = -1, run = 0, threads = 0;
    rn_error err = { 0 };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:c:f:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case 'p': pol_s = optarg; break;
        case 'c': cap_s = optarg; break;
        case O_SWEEP: sweep = 1; break;
        case O_SCOPE: rc = rn_scope_parse("--scope", optarg, &scope, &err); break;
        case O_OPS: rc = rn_ops_parse(optarg, &ops, &err); break;
        case O_WARMUP: rc = cli_parse_long("--warmup", optarg, 0, INT32_MAX, &warmup, &err); break;
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_RUN: rc = cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err); break;
        case O_MRC: want_mrc = 1; break;
        case O_ALL: all = 1; break;
        case O_ORDER:
            if (!strcmp(optarg, "run") || !strcmp(optarg, "step")) step_order = !strcmp(optarg, "step");
            else rc = rn_seterr(&err, RN_EINPUT, "--order: expected run or step, not '%s'", optarg);
            break;
        case O_MRCOUT: mrc_out = optarg; want_mrc = 1; break;
        case O_SAMPLE: rc = an_shards_parse(optarg, &sample, &err); break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (optind >= argc) return cli_usage_error(argv[0], "expected one or more trace databases");
    if (all && run) return cli_usage_error(argv[0], "--run and --all-runs exclude each other");
    if (sweep && cap_s) return cli_usage_error(argv[0], "--capacity and --sweep exclude each other");
    const rn_policy *pol[32];
    int np = 0, nc = 0;
    uint64_t caps[64];
    if (rn_policy_parse_list(pol_s, pol, 32, &np, &err)) return cli_usage_error(argv[0], "%s", err.msg);
    if (cap_s && parse_caps(cap_s, caps, 64, &nc, &err)) return cli_usage_error(argv[0], "%s", err.msg);

    cli_install_signals();
    cli_threads(threads);
    an_runset rs;
    an_spill sp = { .fd_key = -1, .fd_next = -1 };
    an_simgrid g = { 0 };
    an_mrc mrc = { 0 };
    tr_chunk **chunks = NULL;
    int *n_chunks = NULL;
    an_runsel sel = { run, all };
    int rc = an_runset_open((const char *const *)argv + optind, argc - optind, sel, 1, &rs, &err);
    if (rc) return cli_fail(&err);
    const an_run *r = &rs.r[0];
    if ((rc = an_runset_check_head(&rs, (int)layer, (int)head, &err))) goto out;
    /* what the config bounds is refused before the run is read: the keys a
     * cache of the scope can hold (M, H·M or L·H·M, times the runs), the
     * positions to warm */
    const uint64_t universe =
        (uint64_t)rs.n * rn_scope_universe(scope, r->run.cfg.n_layers, r->run.cfg.n_heads, r->M);
    for (int i = 0; i < nc; i++)
        if (caps[i] > universe) {
            rc = rn_seterr(&err, RN_EINPUT, "--capacity: %llu is larger than the %llu keys a %s cache can "
                           "hold%s", (unsigned long long)caps[i], (unsigned long long)universe,
                           rn_scope_name(scope), rs.n > 1 ? " over these runs" : "");
            goto out;
        }
    if (warmup > 0 && rs.n > 1) {
        rc = rn_seterr(&err, RN_EINPUT, "--warmup: applies to one run only (several runs replay as one stream)");
        goto out;
    }
    if (warmup > 0 && warmup >= r->run.n_tokens) {
        rc = rn_seterr(&err, RN_EINPUT, "--warmup: %ld is not below the run's %lld tokens (nothing would be counted)",
                       warmup, (long long)r->run.n_tokens);
        goto out;
    }
    int total_chunks = 0;
    if (!step_order) {
        chunks = calloc((size_t)rs.n, sizeof *chunks);
        n_chunks = calloc((size_t)rs.n, sizeof *n_chunks);
        if (!chunks || !n_chunks) { rc = rn_seterr(&err, RN_ENOMEM, "out of memory"); goto out; }
        for (int i = 0; i < rs.n; i++) {
            if ((rc = tr_load_chunks(rs.r[i].db, rs.r[i].run.run_id, &chunks[i], &n_chunks[i], &err))) goto out;
            total_chunks += n_chunks[i];
        }
    }
    double t0 = cli_now();
    /* the accesses stream from the traces into a temporary key file */
    if ((rc = an_spill_build_runs(rs.r, rs.n, (int)layer, (int)head, scope, ops, (int32_t)warmup,
                                  (const tr_chunk *const *)chunks, n_chunks, &cli_stop_flag, &sp, &err)))
        goto out;
    char what[64];
    an_runset_describe(&rs, what, sizeof what);
    if (step_order)
        cli_info("simulate: %s, %llu accesses, %d %s cache(s), loaded in %.2f s\n", what,
                 (unsigned long long)an_spill_total(&sp), sp.n, rn_scope_name(scope), cli_now() - t0);
    else
        cli_info("simulate: %s, %llu accesses, %d %s cache(s), run order (%d prefill chunks), loaded in "
                 "%.2f s\n", what, (unsigned long long)an_spill_total(&sp), sp.n,
                 rn_scope_name(scope), total_chunks, cli_now() - t0);
    if (sp.n == 0) { rc = rn_seterr(&err, RN_EINPUT, "%s: the selection has no events", r->path); goto out; }
    if (!cap_s) nc = an_sweep_capacities_upto(an_spill_max_keys(&sp), caps, 64);
    double tp = cli_now();
    if (sample.rate > 0) {
        /* sampled: the LRU curve (where a fixed size finds its rate), then
         * the grid's mini-simulations at that rate */
        double rate = sample.rate;
        if ((want_mrc || sample.max_keys) && (rc = an_shards_mrc(&sp, &sample, &mrc, &rate, &err))) goto out;
        if (!want_mrc) an_mrc_free(&mrc);
        if ((rc = an_shards_grid(&sp, rate, pol, np, caps, nc, (uint64_t)(r->run.cfg.d_v + 1) * 4, progress, &tp,
                                 &g, &err)))
            goto out;
        cli_info("simulate: estimates from the keys sampled at rate %.4g (SHARDS, mini-simulations)\n", rate);
    } else {
        if ((rc = an_simgrid_run_spill(&sp, pol, np, caps, nc, (uint64_t)(r->run.cfg.d_v + 1) * 4, progress, &tp,
                                       &g, &err)))
            goto out;
        if (want_mrc && (rc = an_mrc_build_spill(&sp, &mrc, &err))) goto out;
    }
    if (mrc_out) {
        rn_atomic_file af;
        for (int i = 0; i < rs.n; i++)
            if ((rc = rn_atomic_check_not_input(rs.r[i].path, mrc_out, &err))) goto out;
        if ((rc = rn_atomic_open_text(&af, mrc_out, &err))) goto out;
        if ((rc = an_mrc_print_csv(af.f, &mrc, &err))) { rn_atomic_abort(&af); goto out; }
        if ((rc = rn_atomic_commit(&af, &err))) goto out;
    }
    /* with --mrc-out - the curve has stdout; the table goes to stderr */
    rc = an_simgrid_print(mrc_out && !strcmp(mrc_out, "-") ? stderr : stdout, fmt, &g, want_mrc ? &mrc : NULL, &err);
out:
    for (int i = 0; chunks && i < rs.n; i++) free(chunks[i]);
    free(chunks);
    free(n_chunks);
    an_mrc_free(&mrc);
    an_simgrid_free(&g);
    an_spill_free(&sp);
    an_runset_close(&rs);
    return rc ? cli_fail(&err) : 0;
}
