/* tr_record.h — driving the model while a writer records it: prefilling a
 * token sequence in chunks (recording each chunk's tokens after its events)
 * and the whole `ramtrace trace` job, so the commands stay thin. */
#ifndef TR_RECORD_H
#define TR_RECORD_H

#include "rn_runtime.h"
#include "tr_writer.h"

/* Called after each chunk with the tokens done so far. */
typedef void (*tr_progress_fn)(void *user, int64_t done, int64_t total);

/* Prefill toks[0..n) in chunks of `chunk` rows (the runtime's max_chunk or
 * less), recording every processed position as a token (phase prompt) with
 * rn_token_piece.  Between chunks: stops with RN_EINTR when *stop is set
 * (only whole positions are ever recorded) and with the writer's error when
 * it failed.  logits: NULL or [V] for the last row. */
int tr_record_prefill(rn_runtime *rt, tr_writer *w, const rn_config *cfg, const int *toks,
                      int n, int chunk, float *logits, volatile int *stop,
                      tr_progress_fn progress, void *user, rn_error *err);

/* Tracing options of a command (`run --trace ...`). */
typedef struct {
    const char *db_path;              /* NULL: not tracing */
    const char *layers, *heads, *ops; /* selection (NULL: all) */
    const char *name;
    int build_index;
    const char *weights;              /* "f32" (NULL: exact) or "f16" */
    const char *const *interventions; /* specs to record (tr_run_meta) */
    int n_interventions;
} tr_trace_opts;

/* Start a traced run of model m for a command: parse the selection against
 * m's config (RN_EINPUT naming the option), record the model path and hash,
 * config, prompt text and sampling settings, and open the writer.  The
 * caller attaches tr_writer_probe(*w) and calls tr_writer_finish. */
int tr_record_begin(const tr_trace_opts *o, const char *command, const char *model_path,
                    const rn_model *m, const char *prompt, const char *sampling, tr_writer **w,
                    rn_error *err);

/* A patch-source resolver for interventions (rn_iv_source_fn of
 * core/infer/rn_intervene.h): "TRACE.db" (its latest run) or "TRACE.db#N" (run
 * N) names a traced run whose tokens, prompt and generated, become the
 * source; it must be complete from position 0 and recorded with the same
 * model (the model hash), else RN_EINPUT.  Any other source is left to the
 * caller (an input file). */
int tr_iv_source(void *user, const char *source, const rn_model *m, int **toks, int *n,
                 int *handled, rn_error *err);

/* Record one generated token fed to the model at position pos. */
void tr_record_generated(tr_writer *w, const rn_config *cfg, int64_t pos, int token);

typedef struct {
    const char *model_path, *input_path, *db_path;
    const char *name;          /* NULL: the input's file name */
    const char *layers, *heads, *ops; /* selection (NULL: all) */
    int chunk;                 /* prefill rows per chunk (default 256) */
    int top_k;                 /* 0: the model's top_k; else K slots read and written per
                                * token (the run's recorded config says which) */
    rn_device device;          /* where the model runs (default cpu) */
    rn_precision precision;    /* --precision (rn_precision.h; 0: fp32) */
    int build_index;
    const char *weights;       /* "f32" (NULL: exact) or "f16" */
    const char *const *intervene; /* --intervene arguments (rn_iv_add_arg; CPU only) */
    int n_intervene;
    const rn_state_opts *state; /* NULL or budget 0: dense memory state; else tiered (CPU only) */
    volatile int *stop;        /* polled between chunks (Ctrl-C) */
    tr_progress_fn progress;
    void *user;
} tr_trace_job;

typedef struct {
    int64_t run_id;
    int64_t tokens, events;    /* committed to the file (not merely produced) */
    double seconds;
    tr_writer_stats ws;
    int tiered;                /* the run used a tiered state: its counters (also in state_counters) */
    rn_state_counters state;
} tr_trace_result;

/* Seconds on the monotonic clock (the jobs' timings). */
double tr_seconds(void);

/* Load the model of a job; top_k non-zero: the forward's K instead of the
 * model's (RN_EINPUT naming --top-k unless 1..min(M, RN_MAX_TOPK)). */
int tr_model_load(const char *path, int top_k, rn_model *m, rn_error *err);

/* Add a command's --intervene arguments to iv (rn_iv_add_arg) and list the
 * specs for the run's metadata in *specs (malloc'd, NULL for none; the
 * strings are iv's). */
int tr_iv_add_args(rn_iv_set *iv, const char *const *args, int n, const char ***specs, rn_error *err);

/* Run iv's patch sources in chunks of source_chunk rows (rn_iv_prepare)
 * and attach iv to rt. */
int tr_iv_attach(rn_iv_set *iv, const rn_model *m, rn_runtime *rt, int source_chunk, rn_error *err);
/* The runtime's precision (--precision; rn_runtime_set_precision) and that
 * of iv's patch sources, which run as the patched run does. */
int tr_set_precision(rn_runtime *rt, rn_iv_set *iv, rn_precision p, rn_error *err);

/* Check the tiered state options of a command: RN_EINPUT for a state file
 * without a budget, or a budget on a non-CPU device. */
int tr_state_device_check(const rn_state_opts *so, rn_device dev, rn_error *err);

/* `ramtrace trace`: load the model, tokenize the input, prefill it all
 * with a writer attached (no generation).  Returns RN_EINTR (run marked
 * interrupted, everything produced flushed) when *stop was set. */
int tr_trace_run(const tr_trace_job *job, tr_trace_result *res, rn_error *err);

#endif
