/* rn_train.h — the model-level training step: a forward pass over a batch
 * of sequences that saves every activation the backward needs, the
 * cross-entropy loss (targets −100 are ignored), and the backward pass that
 * accumulates parameter gradients.  Same function as the inference forward
 * of rn_runtime.c (tests check the logits agree), but over B independent
 * sequences that each start at position 0 with a fresh memory state.
 *
 * Memory: everything is allocated once by rn_trainer_create for up to
 * `max_rows` = B·T rows and `max_lab` labelled rows (logits are computed
 * only for labelled rows, which matters for MQAR with V = 8192).  The PDMA
 * part saves per (row, head, rank) the written slot's pre-write row and z
 * and the read slot's row and z: 2·rows·H·K·(d_v+1) values per layer; the
 * reverse scan uses one dense gradient accumulator of M·(d_v+1) values per
 * thread (and the forward one dense state of the same size per thread).
 *
 * Compiled in float for training and in double (-DRN_DOUBLE) for the
 * gradient check.
 */
#ifndef RN_TRAIN_H
#define RN_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "rn_labels.h" /* RN_IGNORE, rn_train_label_rows */
#include "rn_model.h"

typedef struct rn_trainer rn_trainer;

/* Trainer for model m (whose parameters it reads at every forward) with
 * room for max_rows rows and max_lab labelled rows.  eps_g is the proxy
 * gradient's ε (0: exact derivative of (1−w)^γ). */
int rn_trainer_create(rn_trainer **out, const rn_model *m, int max_rows, int max_lab,
                      double eps_g, rn_error *err);
/* The same with the reads' top-K set apart from the writes' (read_k, 0 =
 * the model's top_k; 1..min(M, RN_MAX_TOPK)): top-K annealing of the reads
 * alone (rn_train_loop.h).  The writes always use the model's top_k. */
int rn_trainer_create_kr(rn_trainer **out, const rn_model *m, int max_rows, int max_lab,
                         double eps_g, int read_k, rn_error *err);
/* Layer `layer` writes k and reads kr slots per token instead of the
 * trainer's K and read K (which size its buffers: k and kr may not exceed
 * them).  RN_EINPUT otherwise.  The CPU trainer only. */
int rn_trainer_set_layer_k(rn_trainer *tr, int layer, int k, int kr, rn_error *err);
/* A forward-only trainer (evaluation): the forward, loss and per-label
 * correctness of rn_trainer_create's, in a workspace without what only
 * the backward needs: one layer's activations (reused by every layer), no
 * gradient block or backward scratch, and the logits of at most 8192
 * labelled rows at a time (rn_trainer_logits then holds the last block's;
 * up to 8192 labelled rows it is all of them, as before).  So a window of
 * 65536 tokens needs a few GiB, not a training workspace.  No backward. */
int rn_trainer_create_eval(rn_trainer **out, const rn_model *m, int max_rows, int max_lab, rn_error *err);
void rn_trainer_free(rn_trainer *tr);
/* Bytes of the trainer's one allocation (activations, PDMA saves, dense
 * per-thread state, gradients), checked against rn_memlimit.h at create. */
size_t rn_trainer_bytes(const rn_trainer *tr);

/* Forward B sequences of length T (tokens[B·T], targets[B·T], RN_IGNORE
 * for unlabelled positions).  *loss receives the mean cross-entropy over
 * labelled positions (0 when there are none).  Returns RN_OK, or RN_EINPUT
 * when B·T or the labelled count exceed the trainer's room or a token or
 * target is outside the vocabulary. */
int rn_trainer_forward(rn_trainer *tr, const int *tokens, const int *targets, int B, int T,
                       double *loss, rn_error *err);

/* After a forward: the number of labelled rows, their row indices
 * (b·T + t), their logits [n_lab, V] (valid until the backward), and per
 * labelled row whether the argmax equals the target. */
int rn_trainer_n_labelled(const rn_trainer *tr);
const int *rn_trainer_label_rows(const rn_trainer *tr);
const rn_real *rn_trainer_logits(const rn_trainer *tr);
const uint8_t *rn_trainer_correct(const rn_trainer *tr);
/* Sum over labelled rows of −log p(target) (before averaging). */
double rn_trainer_loss_sum(const rn_trainer *tr);

/* Backward of the last forward's loss multiplied by scale (1/grad_accum
 * for accumulation); gradients are added into the trainer's gradient block
 * (rn_trainer_grads, the parameter layout).  Overwrites the logits. */
void rn_trainer_backward(rn_trainer *tr, double scale);

rn_real *rn_trainer_grads(rn_trainer *tr);
void rn_trainer_zero_grads(rn_trainer *tr);

#endif
