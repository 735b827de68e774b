/* rn_adamw.h — the optimiser: AdamW with decoupled weight decay (applied to
 * weight matrices and embeddings only, never to RMSNorm gains or the α
 * scalars), global-norm gradient clipping, and the learning-rate schedule
 * (linear warm-up, then cosine decay to a minimum), the paper's Table 5
 * recipe.  Works on the parameter block layout of rn_params.h; the moment
 * buffers use the same layout.  Deterministic: serial reductions. */
#ifndef RN_ADAMW_H
#define RN_ADAMW_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_real.h"

typedef struct {
    double lr, min_lr;          /* peak and final learning rate */
    int64_t warmup, steps;      /* warm-up steps, total steps */
    double beta1, beta2, eps;
    double weight_decay;
    double clip;                /* max global gradient norm; 0 = off */
} rn_adamw_opts;

void rn_adamw_defaults(rn_adamw_opts *o);

/* Learning rate at 0-based step: lr·(step+1)/warmup during warm-up, then
 * min_lr + ½(lr − min_lr)(1 + cos(π·progress)), progress ∈ [0, 1]. */
double rn_lr_at(const rn_adamw_opts *o, int64_t step);

/* L2 norm of g[0..n) (double accumulation, serial). */
double rn_grad_norm(const rn_real *g, int64_t n);

/* One AdamW update of every tensor of config c at 0-based step (bias
 * correction uses step+1) with learning rate lr; the gradient is first
 * multiplied by gscale (the clipping factor). */
void rn_adamw_update(const rn_config *c, rn_real *params, const rn_real *grad, rn_real *m1,
                     rn_real *m2, const rn_adamw_opts *o, int64_t step, double lr, double gscale);

/* The same update for the elements [lo, hi) of the block only (a rank's
 * shard in data-parallel training, ZeRO-1): params and grad are the whole
 * block; m1 and m2 hold the shard's moments, m1[0] being element lo's.
 * The arithmetic of each element is rn_adamw_update's. */
void rn_adamw_update_range(const rn_config *c, rn_real *params, const rn_real *grad, rn_real *m1,
                           rn_real *m2, const rn_adamw_opts *o, int64_t step, double lr, double gscale,
                           int64_t lo, int64_t hi);

#endif
