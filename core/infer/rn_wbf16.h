/* rn_wbf16.h — a model's weight matrices in bf16, for a runtime that runs
 * with --precision bf16 (rn_precision.h): one allocation holding every
 * matrix and the embedding (lm_head shares it when tied) rounded to bf16,
 * half the bytes the FP32 matrices take, so the generation step — which
 * streams every matrix once per token — reads half as much.  Built once
 * when the runtime's precision is set; read-only after. */
#ifndef RN_WBF16_H
#define RN_WBF16_H

#include <stdint.h>

#include "rn_error.h"
#include "rn_model.h"

typedef struct {
    const uint16_t *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down;
} rn_layer_wbf16;

typedef struct {
    const uint16_t *embed;    /* [V, D] */
    const uint16_t *lm_head;  /* [V, D]; equals embed when tied */
    rn_layer_wbf16 *layer;    /* [L] */
    int64_t max_matrix;       /* elements of the largest matrix (a prefill widens one at a time) */
    void *block;
} rn_wbf16;

/* Round m's matrices into *out (allocated; checked against the memory limit). */
int rn_wbf16_create(const rn_model *m, rn_wbf16 **out, rn_error *err);
void rn_wbf16_free(rn_wbf16 *w);

#endif
