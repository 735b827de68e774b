/* rn_labels.h — the labelled rows of a training batch: which positions
 * carry a target (RN_IGNORE marks the others) and the check that tokens
 * and targets lie in the vocabulary.  Shared by the CPU trainer
 * (core/train/rn_train.c) and the GPU trainer (core/cuda/), so it sits
 * below both. */
#ifndef RN_LABELS_H
#define RN_LABELS_H

#include "rn_error.h"

#define RN_IGNORE (-100)

/* Check a batch of n rows and list its labelled rows: every token and
 * every target other than RN_IGNORE must lie in [0, V); at most max_lab
 * rows may be labelled.  rows[i], tgt[i] receive the i-th labelled row and
 * its target, in row order; *n_lab their count.  RN_EINPUT naming the row
 * otherwise.  Shared by the CPU and the GPU trainer. */
int rn_train_label_rows(const int *tokens, const int *targets, int n, int V, int max_lab,
                        int *rows, int *tgt, int *n_lab, rn_error *err);

#endif
