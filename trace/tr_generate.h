/* tr_generate.h — the `ramtrace run` job: load a model, prefill a prompt,
 * then sample a continuation token by token, with interventions, a tiered
 * memory state and a trace writer when asked; beside tr_trace_run
 * (tr_record.h), so the command only parses options and prints. */
#ifndef TR_GENERATE_H
#define TR_GENERATE_H

#include <stdint.h>

#include "rn_device.h"
#include "rn_state.h"
#include "tr_record.h"

typedef struct {
    const char *model_path, *prompt_path;
    long n_gen;                 /* tokens to generate (0: prefill only) */
    double temperature, top_p;  /* sampling (rn_sampler.h) */
    uint64_t seed;
    int chunk;                  /* prefill rows per chunk (a traced prefill: at most 256) */
    int top_k;                  /* 0: the model's top_k; else K slots per token */
    rn_device device;
    rn_precision precision;     /* --precision (rn_precision.h; 0: fp32) */
    const rn_state_opts *state; /* NULL or budget 0: dense memory state; else tiered (CPU only) */
    int save;                   /* at the end run the last generated token too and flush
                                 * the state (clean: resumable, --state-save) */
    const char *const *intervene; /* --intervene arguments (rn_iv_add_arg; CPU only) */
    int n_intervene;
    tr_trace_opts trace;        /* .db_path NULL: not tracing */
    volatile int *stop;         /* Ctrl-C: polled between prefill chunks and tokens */
    /* Called with each sampled token in order (first: the first one);
     * non-zero stops the generation after it (its reader left). */
    int (*emit)(void *user, const rn_config *cfg, int token, int first);
    void *user;
} tr_generate_job;

typedef struct {
    int model_loaded;           /* failures before it may name swapped arguments */
    int tokenizer;              /* the model's RN_TOK_* */
    int generated;              /* the generation ran to its end (interrupted or not): */
    int64_t prompt_tokens;      /* positions prefilled */
    double prefill_s;
    long made;                  /* tokens sampled */
    double generate_s;
    int tiered;                 /* the run used a tiered state and ended without an error
                                 * other than an interrupt: its counters to report */
    rn_state_counters state;
    int64_t run_id;             /* traced: the run (0: none), and the writer's final stats */
    tr_writer_stats ws;
} tr_generate_result;

/* Run the job.  RN_EINTR when *stop was set (the trace, if any, marked
 * interrupted and flushed); res holds what was done in every case. */
int tr_generate_run(const tr_generate_job *job, tr_generate_result *res, rn_error *err);

#endif
