/* an_patch.h — the activation-patching sweep of `ramtrace patch`: how much
 * of the difference between a clean and a corrupted input each head
 * carries.
 *
 * The model runs on CLEAN (recording every head's read output o at every
 * position) and on CORRUPT (same number of tokens).  Then, for each head
 * (l, h) in turn, CORRUPT runs again with that head's o replaced at every
 * position by its clean value (patch-head, core/infer/rn_intervene.h), and a
 * metric of the last position's logits is taken:
 *   logit-diff  logit(answer) − logit(wrong)
 *   prob        softmax(logits)[answer]
 *   loss        −log softmax(logits)[answer]
 * The head recovers (m_patched − m_corrupt) / (m_clean − m_corrupt) of the
 * effect (1: the head alone carries it; NaN when clean and corrupt agree).
 * L·H + 2 forward passes over the input.
 *
 * Then, per slot: in the slot_heads heads that recover most, every slot
 * the corrupted run reads at the last position is restored on its own —
 * its state (S[s], z[s]) at that read set to the clean run's, read with
 * the corrupted query's weight r:
 *   o' = o_corrupt + r·(S_clean[s]/(z_clean[s] + ε) − S_corrupt[s]/(z_corrupt[s] + ε))
 * at the last position only (patch-head with a buffer that is the
 * corrupted o elsewhere), and the same metric taken.  2 + slot_heads·K
 * more forward passes.
 */
#ifndef AN_PATCH_H
#define AN_PATCH_H

#include <stdio.h>

#include "rn_error.h"
#include "rn_model.h"

enum { AN_METRIC_LOGIT_DIFF = 0, AN_METRIC_PROB, AN_METRIC_LOSS };

/* "logit-diff", "prob" or "loss" -> *metric; RN_EINPUT naming --metric. */
int an_metric_parse(const char *s, int *metric, rn_error *err);
const char *an_metric_name(int metric);

/* A token named on the command line (opt names the option in errors): for
 * the bytes tokenizer one byte ("e", " "), an escape \n, \t or \\, or
 * <bos>; for ids its decimal id; for SentencePiece the piece as traces show
 * it (rn_token_piece: " in", "}", "\n"; a piece rather than the byte token
 * showing the same); for all "#N" is the id N. */
int an_token_parse(const rn_config *c, const char *opt, const char *s, int *id, rn_error *err);

typedef struct {
    int layer, head;
    int slot, rank;            /* -1: the whole head; else the read slot and its rank */
    double r;                  /* the corrupted read's weight of the slot */
    double metric, recovered;
} an_patch_row;

typedef struct {
    int metric, answer, wrong, n_tokens;
    double clean, corrupt;     /* the metric on each input */
    an_patch_row *rows;        /* L·H heads (layer-major), then the slots */
    int n_rows;
    int forward_passes;
    double seconds;
} an_patch_result;

/* The sweep over every head of m, then the read slots of the slot_heads
 * (0: none) heads that recover most.  wrong < 0: the corrupted run's most
 * likely token other than answer (used by logit-diff only). */
int an_patch_heads(const rn_model *m, const int *clean, int n_clean, const int *corrupt,
                   int n_corrupt, int answer, int wrong, int metric, int slot_heads,
                   an_patch_result *out, rn_error *err);
void an_patch_free(an_patch_result *r);

/* Table (a summary line, then layer, head, slot, rank, r, metric,
 * recovered %; slot, rank and r empty for whole heads), CSV or JSON (the
 * summary as fields, the rows as "rows"). */
int an_patch_print(FILE *f, int fmt, const an_patch_result *r, const rn_config *c, rn_error *err);

#endif
