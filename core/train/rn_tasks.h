/* rn_tasks.h — training and evaluation data: the synthetic MQAR task
 * (Zoology's multi-query associative recall generator) and byte-level text
 * from a corpus file with a held-out split.  Everything is drawn from
 * rn_rng so a batch depends only on the seed it is given. */
#ifndef RN_TASKS_H
#define RN_TASKS_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_rng.h"

/* ---- MQAR ---- */

typedef struct { int L, N; } rn_mqar_seg;

#define RN_MQAR_POWER_A 0.01

/* Default segments: training (L, N) pairs and the test ladder. */
extern const rn_mqar_seg rn_mqar_train_segs[];
extern const int rn_mqar_n_train_segs;
extern const rn_mqar_seg rn_mqar_test_segs[];
extern const int rn_mqar_n_test_segs;

/* Check that (V, L, N) is a valid MQAR shape: L even, 4N <= L, N < V/2 − 1. */
int rn_mqar_check(int V, int L, int N, rn_error *err);

/* One example: tokens[L], targets[L] (−100 except at query keys, where the
 * target is the key's value).  Keys from [1, V/2) and values from [V/2, V),
 * both without replacement; the context k0 v0 k1 v1 … fills the first 2N
 * positions; key i is queried at 2N + 2·gap_i with distinct gaps drawn
 * sequentially without replacement with p(gap) ∝ a·(gap+1)^(a−1),
 * gap ∈ [0, space), space = (L − 2N)/2; other positions are uniform over
 * [0, V).  pbuf is scratch of `space` doubles.  pair_of (optional, NULL
 * for none) receives [L]: at each query position the index i of the pair
 * queried there (its key was written at 2i), −1 elsewhere; it draws
 * nothing, so the example is the same with or without it. */
void rn_mqar_example(rn_rng *rng, int V, int L, int N, double a, int *tokens, int *targets,
                     double *pbuf, int *pair_of);

/* Bin b of B equal bins over the pair indices 0..N−1 (1 ≤ B ≤ N): pairs
 * *from..*to inclusive, from = ⌊b·N/B⌋, to = ⌊(b+1)·N/B⌋ − 1 (every bin
 * holds ⌊N/B⌋ or ⌈N/B⌉ pairs). */
void rn_mqar_pair_bin(int N, int B, int b, int *from, int *to);

/* ---- text ---- */

typedef struct {
    uint8_t *data;    /* the corpus's bytes, which are its tokens; or NULL and: */
    int *ids;         /* a SentencePiece config's token ids of the whole corpus */
    int64_t n;        /* tokens (bytes when data) */
    int64_t n_train;  /* [0, n_train) trains, [n_train, n) is held out */
} rn_text;

/* Load a corpus as bytes; the last val_frac of it is the held-out split.
 * Both parts must hold at least one window of T+1 bytes (RN_EINPUT naming
 * the file otherwise: missing, empty, too short); val_frac = 1 holds all of
 * it out (nothing to train on: for evaluating a whole file). */
int rn_text_load(rn_text *t, const char *path, double val_frac, int T, rn_error *err);

/* The same for a model's config: a SentencePiece config's corpus is its
 * token ids (the whole file tokenized at once, BOS first), the split at the
 * last val_frac of the tokens; any other config's is rn_text_load's bytes.
 * A shard file or directory (rn_shard.h) gives the ids it holds, which are
 * those of the text it was made from. */
int rn_text_load_for(rn_text *t, const rn_config *c, const char *path, double val_frac, int T, rn_error *err);
void rn_text_free(rn_text *t);

/* Token i of the corpus. */
static inline int rn_text_at(const rn_text *t, int64_t i) { return t->data ? t->data[i] : t->ids[i]; }

/* B random training windows: tokens[B·T] = tokens, targets = next tokens. */
void rn_text_batch(const rn_text *t, rn_rng *rng, int B, int T, int *tokens, int *targets);

/* Number of disjoint held-out windows of T+1 tokens, and window i of them. */
int64_t rn_text_n_val(const rn_text *t, int T);
void rn_text_val_window(const rn_text *t, int64_t i, int T, int *tokens, int *targets);

#endif
