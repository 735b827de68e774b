/* tr_record.c — chunked prefill with a trace writer attached, and the
 * `ramtrace trace` job (model + input file -> one run in a trace database). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdio.h>

#include "rn_patch_source.h"
#include "rn_modelfile.h"
#include "tr_reader.h"
#include "rn_tokenizer.h"
#include "tr_block.h"
#include "tr_record.h"

int tr_record_prefill(rn_runtime *rt, tr_writer *w, const rn_config *cfg, const int *toks,
                      int n, int chunk, float *logits, volatile int *stop,
                      tr_progress_fn progress, void *user, rn_error *err)
{
    if (chunk < 1) chunk = 256;
    char piece[64];
    for (int i = 0; i < n;) {
        if (stop && *stop) return rn_seterr(err, RN_EINTR, "interrupted after %d of %d tokens", i, n);
        if (tr_writer_failed(w, err)) return err ? err->code : RN_EIO;
        int len = n - i < chunk ? n - i : chunk;
        int64_t pos0 = rn_runtime_pos(rt);
        int rc = rn_prefill(rt, toks + i, len, i + len == n ? logits : NULL, 0, err);
        if (rc) return rc;
        for (int t = 0; t < len; t++) {
            rn_token_piece(cfg, toks[i + t], piece, sizeof piece);
            tr_writer_add_token(w, pos0 + t, toks[i + t], piece, 0);
        }
        i += len;
        if (progress) progress(user, i, n);
    }
    return RN_OK;
}

int tr_record_begin(const tr_trace_opts *o, const char *command, const char *model_path,
                    const rn_model *m, const char *prompt, const char *sampling, tr_writer **w,
                    rn_error *err)
{
    tr_select sel;
    int rc = tr_select_parse(&sel, o->layers, o->heads, o->ops, &m->cfg, err);
    if (rc) return rc;
    tr_run_meta meta = { .name = o->name, .command = command, .model_path = model_path,
                         .model_hash = rn_model_checksum(m), .cfg = &m->cfg, .prompt = prompt,
                         .sampling = sampling, .interventions = o->interventions,
                         .n_interventions = o->n_interventions };
    tr_writer_opts wo = { .build_index = o->build_index, .weights = tr_weights_parse(o->weights ? o->weights : "f32") };
    if (wo.weights < 0) return rn_seterr(err, RN_EINPUT, "--weights %s: expected f32 or f16", o->weights);
    return tr_writer_open(o->db_path, &meta, &sel, &wo, w, err);
}

int tr_iv_source(void *user, const char *source, const rn_model *m, int **toks, int *n,
                 int *handled, rn_error *err)
{
    (void)user;
    *handled = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s", source);
    char *hash = strrchr(path, '#');
    long long run = 0;
    if (hash) {
        char *end;
        run = strtoll(hash + 1, &end, 10);
        if (end == hash + 1 || *end || run < 1) hash = NULL; /* not a run number: a file name */
        else *hash = 0;
    }
    /* a trace is an SQLite file */
    FILE *f = fopen(path, "rb");
    char head[16] = { 0 };
    int is_db = f && fread(head, 1, 16, f) == 16 && !memcmp(head, "SQLite format 3", 16);
    if (f) fclose(f);
    if (!is_db) {
        if (hash) return rn_seterr(err, RN_EINPUT, "%s: not a trace database", path);
        return RN_OK;
    }
    *handled = 1;
    tr_db *db = NULL;
    tr_run_info info;
    tr_token *tk = NULL;
    int64_t nt = 0;
    int rc = tr_open_read(path, &db, err);
    if (!rc) rc = tr_run_get(db, run, &info, err);
    if (!rc) {
        char want[32];
        snprintf(want, sizeof want, "%016llx", (unsigned long long)rn_model_checksum(m));
        if (strcmp(info.model_hash, want))
            rc = rn_seterr(err, RN_EINPUT, "run %lld of %s was made by another model (hash %s, this model %s)",
                           (long long)info.run_id, path, info.model_hash, want);
    }
    if (!rc) rc = tr_load_tokens(db, info.run_id, &tk, &nt, err);
    if (!rc && nt == 0) rc = rn_seterr(err, RN_EINPUT, "run %lld of %s has no tokens", (long long)info.run_id, path);
    for (int64_t i = 0; i < nt && !rc; i++)
        if (tk[i].pos != i)
            rc = rn_seterr(err, RN_EINPUT, "run %lld of %s does not hold every position from 0",
                           (long long)info.run_id, path);
    if (!rc && !(*toks = malloc(sizeof(int) * (size_t)nt))) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int64_t i = 0; i < nt && !rc; i++) (*toks)[i] = tk[i].token_id;
    if (!rc) *n = (int)nt;
    free(tk);
    if (db) tr_close(db);
    return rc;
}

void tr_record_generated(tr_writer *w, const rn_config *cfg, int64_t pos, int token)
{
    char piece[64];
    rn_token_piece(cfg, token, piece, sizeof piece);
    tr_writer_add_token(w, pos, token, piece, 1);
}

double tr_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int tr_model_load(const char *path, int top_k, rn_model *m, rn_error *err)
{
    int rc = rn_model_load(m, path, err);
    if (rc || !top_k) return rc;
    /* only the forward's K: the parameters do not depend on it */
    if (top_k < 1 || top_k > RN_MAX_TOPK || top_k > rn_config_slots(&m->cfg)) {
        rc = rn_seterr(err, RN_EINPUT, "--top-k: %d is not in 1..min(%lld slots, %d)", top_k,
                       (long long)rn_config_slots(&m->cfg), RN_MAX_TOPK);
        rn_model_free(m);
        return rc;
    }
    m->cfg.top_k = top_k;
    return RN_OK;
}

int tr_iv_add_args(rn_iv_set *iv, const char *const *args, int n, const char ***specs, rn_error *err)
{
    int rc = RN_OK;
    for (int i = 0; i < n && !rc; i++) rc = rn_iv_add_arg(iv, args[i], err);
    if (!rc && iv->n && !(*specs = malloc(sizeof **specs * iv->n))) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int i = 0; i < iv->n && !rc; i++) (*specs)[i] = iv->iv[i].spec;
    return rc;
}

int tr_iv_attach(rn_iv_set *iv, const rn_model *m, rn_runtime *rt, int source_chunk, rn_error *err)
{
    iv->source_chunk = source_chunk;
    int rc = rn_iv_prepare(iv, m, err);
    return rc ? rc : rn_runtime_set_interventions(rt, iv, err);
}

int tr_set_precision(rn_runtime *rt, rn_iv_set *iv, rn_precision p, rn_error *err)
{
    iv->source_precision = (int)p;
    return rn_runtime_set_precision(rt, p, err);
}

int tr_state_device_check(const rn_state_opts *so, rn_device dev, rn_error *err)
{
    if (so && so->file && !so->budget) return rn_seterr(err, RN_EINPUT, "--state-file: needs --state-budget");
    if (so && so->budget && dev != RN_DEVICE_CPU)
        return rn_seterr(err, RN_EINPUT, "--state-budget: the tiered memory state runs on the CPU only (--device cpu)");
    return RN_OK;
}

int tr_trace_run(const tr_trace_job *job, tr_trace_result *res, rn_error *err)
{
    memset(res, 0, sizeof *res);
    rn_model m;
    int rc = tr_model_load(job->model_path, job->top_k, &m, err);
    if (rc) return rc;
    int *toks = NULL, n = 0;
    rn_runtime *rt = NULL;
    tr_writer *w = NULL;
    tr_select sel;
    rn_iv_set iv;
    const char **specs = NULL;
    rn_iv_init(&iv, &m.cfg);
    iv.source_fn = tr_iv_source;
    int chunk = job->chunk > 0 ? job->chunk : 256;
    int wfmt = tr_weights_parse(job->weights ? job->weights : "f32");
    rc = wfmt < 0 ? rn_seterr(err, RN_EINPUT, "--weights %s: expected f32 or f16", job->weights)
                  : tr_select_parse(&sel, job->layers, job->heads, job->ops, &m.cfg, err);
    if (!rc) rc = tr_iv_add_args(&iv, job->intervene, job->n_intervene, &specs, err);
    if (!rc) rc = rn_tokenize_file(&m.cfg, job->input_path, &toks, &n, err);
    if (!rc) rc = tr_state_device_check(job->state, job->device, err);
    if (!rc) rc = job->state && job->state->budget ? rn_runtime_create_state(&m, chunk, job->state, &rt, err)
                                                   : rn_runtime_create_on(&m, chunk, job->device, &rt, err);
    if (!rc) rc = tr_set_precision(rt, &iv, job->precision, err);
    /* patch sources in the run's chunking (rn_intervene.h) */
    if (!rc) rc = tr_iv_attach(&iv, &m, rt, chunk, err);
    if (rc) goto done;
    const char *base = strrchr(job->input_path, '/');
    base = base ? base + 1 : job->input_path;
    tr_run_meta meta = { .name = job->name ? job->name : base, .command = "trace",
                         .model_path = job->model_path, .model_hash = rn_model_checksum(&m),
                         .cfg = &m.cfg, .input_path = job->input_path,
                         .sampling = job->precision == RN_PREC_FP32 ? "none (prefill only)"
                                                                    : "none (prefill only) precision=bf16",
                         .interventions = specs,
                         .n_interventions = iv.n };
    tr_writer_opts wo = { .build_index = job->build_index, .weights = wfmt };
    if ((rc = tr_writer_open(job->db_path, &meta, &sel, &wo, &w, err))) goto done;
    res->run_id = tr_writer_run_id(w);
    rn_runtime_set_probe(rt, tr_writer_probe(w));
    double t0 = tr_seconds();
    rc = tr_record_prefill(rt, w, &m.cfg, toks, n, chunk, NULL, job->stop, job->progress,
                           job->user, err);
    res->seconds = tr_seconds() - t0;
    if ((res->tiered = rn_runtime_state_counters(rt, &res->state))) {
        tr_state_row sr = { job->state->policy, job->state->budget, job->state->direct, chunk,
                            job->state->scope, res->state };
        tr_writer_set_state(w, &sr);
    }
    rn_error ferr = { 0 };
    int frc = tr_writer_finish(w, rc ? TR_STATUS_INTERRUPTED : TR_STATUS_COMPLETE, &res->ws, &ferr);
    w = NULL;
    if (frc && (!rc || rc == RN_EINTR)) { rc = frc; if (err) *err = ferr; }
    /* What the file holds, not what the model produced: after a writer
     * failure (disk full) the two differ. */
    res->tokens = res->ws.committed_tokens;
    res->events = res->ws.committed_events;
done:
    if (w) tr_writer_finish(w, TR_STATUS_INTERRUPTED, NULL, NULL);
    rn_runtime_free(rt);
    rn_iv_free(&iv);
    free(specs);
    free(toks);
    rn_model_free(&m);
    return rc;
}
