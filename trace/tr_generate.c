/* tr_generate.c — the `ramtrace run` job (tr_generate.h): prefill, then the
 * sampling loop, optionally traced, intervened and with a tiered state. */
#include "tr_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_file.h"
#include "rn_patch_source.h"
#include "rn_sampler.h"
#include "rn_tokenizer.h"

/* Open the trace of the run (the prompt text and the sampling recorded). */
static int begin_trace(const tr_generate_job *job, const rn_model *m, const char *const *specs,
                       int n_specs, char **prompt_text, tr_writer **tw, rn_error *err)
{
    char sampling[192];
    size_t plen;
    snprintf(sampling, sizeof sampling, "temperature=%g top_p=%g seed=%llu tokens=%ld%s%s",
             job->temperature, job->top_p, (unsigned long long)job->seed, job->n_gen,
             job->precision == RN_PREC_FP32 ? "" : " precision=", /* recorded when not the default */
             job->precision == RN_PREC_FP32 ? "" : rn_precision_name(job->precision));
    tr_trace_opts topt = job->trace;
    topt.interventions = specs;
    topt.n_interventions = n_specs;
    int rc = rn_read_file(job->prompt_path, prompt_text, &plen, err);
    return rc ? rc : tr_record_begin(&topt, "run", job->model_path, m, *prompt_text, sampling, tw, err);
}

/* Sample up to n_gen tokens after the prefill's logits, feeding each but
 * the last back into the model (and the trace). */
static int generate(const tr_generate_job *job, const rn_config *cfg, rn_runtime *rt,
                    rn_sampler *sampler, float *logits, tr_writer *tw, int *last,
                    tr_generate_result *res, rn_error *err)
{
    long made = 0;
    int rc = RN_OK;
    for (; made < job->n_gen && !(job->stop && *job->stop); made++) {
        *last = rn_sample(sampler, logits);
        if (job->emit && job->emit(job->user, cfg, *last, made == 0)) { made++; break; }
        if (made + 1 < job->n_gen) {
            int64_t pos = rn_runtime_pos(rt);
            if ((rc = rn_step(rt, *last, logits, err))) return rc;
            if (tw) tr_record_generated(tw, cfg, pos, *last);
            if (tw && tr_writer_failed(tw, err)) return err->code;
        }
    }
    res->made = made;
    return rc;
}

int tr_generate_run(const tr_generate_job *job, tr_generate_result *res, rn_error *err)
{
    memset(res, 0, sizeof *res);
    rn_model m;
    int rc = tr_model_load(job->model_path, job->top_k, &m, err);
    if (rc) return rc;
    res->model_loaded = 1;
    res->tokenizer = m.cfg.tokenizer;
    const rn_state_opts *so = job->state;
    const int tiered = so && so->budget, traced = job->trace.db_path != NULL;
    const int trace_chunk = job->chunk < 256 ? job->chunk : 256; /* a traced prefill's */
    rn_iv_set iv;
    const char **specs = NULL;
    rn_iv_init(&iv, &m.cfg);
    iv.source_fn = tr_iv_source; /* patch-head from a traced run */
    int *prompt = NULL, n_prompt = 0, last = -1;
    rn_runtime *rt = NULL;
    rn_sampler sampler = { 0 };
    float *logits = NULL;
    char *prompt_text = NULL;
    tr_writer *tw = NULL;
    rc = rn_tokenize_file(&m.cfg, job->prompt_path, &prompt, &n_prompt, err);
    /* --state-resume: the prompt continues the saved sequence, without a BOS of its own */
    const int p0 = !rc && tiered && so->resume && n_prompt > 0 && prompt[0] == RN_BOS ? 1 : 0;
    if (!rc) rc = tiered ? rn_runtime_create_state(&m, job->chunk, so, &rt, err)
                         : rn_runtime_create_on(&m, job->chunk, job->device, &rt, err);
    if (!rc) rc = rn_sampler_init(&sampler, m.cfg.vocab_size, (float)job->temperature, (float)job->top_p,
                                  job->seed, err);
    if (!rc && !(logits = malloc(sizeof(float) * m.cfg.vocab_size)))
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    if (!rc) rc = tr_iv_add_args(&iv, job->intervene, job->n_intervene, &specs, err);
    if (!rc) rc = tr_set_precision(rt, &iv, job->precision, err);
    /* patch sources in the prompt's chunking (rn_intervene.h) */
    if (!rc) rc = tr_iv_attach(&iv, &m, rt, traced ? trace_chunk : job->chunk, err);
    if (!rc && traced && !(rc = begin_trace(job, &m, specs, iv.n, &prompt_text, &tw, err))) {
        res->run_id = tr_writer_run_id(tw);
        rn_runtime_set_probe(rt, tr_writer_probe(tw));
    }
    if (rc) goto done;
    /* A traced prefill stops between its chunks (tr_record_prefill), so the
     * trace only ever holds whole positions. */
    rn_runtime_set_stop_flag(rt, tw ? NULL : job->stop);
    double t0 = tr_seconds();
    rc = tw ? tr_record_prefill(rt, tw, &m.cfg, prompt, n_prompt, trace_chunk, logits, job->stop, NULL,
                                NULL, err)
            : rn_prefill(rt, prompt + p0, n_prompt - p0, logits, 0, err);
    double t1 = tr_seconds();
    res->prompt_tokens = n_prompt - p0;
    res->prefill_s = t1 - t0;
    if (rc || (rc = generate(job, &m.cfg, rt, &sampler, logits, tw, &last, res, err))) goto done;
    res->generate_s = tr_seconds() - t1;
    res->generated = 1;
    if (job->stop && *job->stop)
        rc = rn_seterr(err, RN_EINTR, "interrupted after %ld generated tokens", res->made);
    /* --state-save: the state after every token emitted (the last one was
     * sampled, not yet run), flushed clean, so --state-resume goes on from it */
    if (job->save && !rc && res->made && (rc = rn_step(rt, last, logits, err))) goto done;
    if (job->save && !rc) rc = rn_runtime_flush_state(rt, err);
done:
    res->tiered = rt && rn_runtime_state_counters(rt, &res->state) && (!rc || rc == RN_EINTR);
    if (res->tiered && tw) {
        tr_state_row sr = { so->policy, so->budget, so->direct, trace_chunk, so->scope, res->state };
        tr_writer_set_state(tw, &sr);
    }
    if (tw) {
        rn_error ferr = { 0 };
        int frc = tr_writer_finish(tw, rc || (job->stop && *job->stop) ? TR_STATUS_INTERRUPTED
                                                                       : TR_STATUS_COMPLETE, &res->ws, &ferr);
        if (frc && (!rc || rc == RN_EINTR)) { rc = frc; if (err) *err = ferr; }
    }
    free(prompt_text);
    free(logits);
    rn_sampler_free(&sampler);
    rn_runtime_free(rt);
    rn_iv_free(&iv);
    free(specs);
    free(prompt);
    rn_model_free(&m);
    return rc;
}
