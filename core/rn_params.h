/* rn_params.h — the parameter tensors of a model and their layout.
 *
 * All parameters live in one contiguous block of rn_real.  Each tensor starts
 * at a multiple of RN_ALIGN_FLOATS elements (64 bytes for float32), so the
 * block can be mmapped straight from model.bin and carved into named
 * pointers.  The same layout carves gradient and optimizer-moment buffers.
 * Padding between tensors is zero and stays zero (its gradient is zero).
 *
 * Tensor order and names are DESIGN.md §2's exchange names:
 *   embed.weight [V,D]; per layer l: layers.l.attn_norm.weight [D],
 *   .attn.q_proj.weight [H·dk,D], .attn.k_proj.weight [H·dk,D],
 *   .attn.v_proj.weight [H·dv,D], .attn.q_alpha [H], .attn.k_alpha [H],
 *   .attn.o_proj.weight [D,H·dv], .mlp_norm.weight [D],
 *   .mlp.gate_proj.weight [F,D], .mlp.up_proj.weight [F,D],
 *   .mlp.down_proj.weight [D,F]; norm.weight [D]; lm_head.weight [V,D]
 *   (absent when tied).
 */
#ifndef RN_PARAMS_H
#define RN_PARAMS_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_real.h"

#define RN_ALIGN_FLOATS 16

enum rn_tensor_kind {
    RN_T_MATRIX = 0,  /* a weight matrix: weight decay applies */
    RN_T_EMBED,       /* embedding / lm_head: weight decay applies */
    RN_T_NORM,        /* RMSNorm gain: no weight decay */
    RN_T_ALPHA        /* per-head α scalar: no weight decay */
};

typedef struct {
    char name[64];
    int ndim;           /* 1 or 2 */
    int64_t shape[2];   /* PyTorch order [out, in] */
    int64_t offset;     /* element offset in the parameter block */
    int64_t numel;
    int kind;           /* enum rn_tensor_kind */
} rn_tensor_desc;

typedef struct {
    rn_real *attn_norm;   /* [D] */
    rn_real *wq, *wk;     /* [H·dk, D] */
    rn_real *wv;          /* [H·dv, D] */
    rn_real *q_alpha, *k_alpha; /* [H] */
    rn_real *wo;          /* [D, H·dv] */
    rn_real *mlp_norm;    /* [D] */
    rn_real *w_gate, *w_up; /* [F, D] */
    rn_real *w_down;      /* [D, F] */
} rn_layer_weights;

typedef struct {
    rn_real *embed;       /* [V, D] */
    rn_real *norm;        /* [D] final norm */
    rn_real *lm_head;     /* [V, D]; equals embed when tied */
    rn_layer_weights layer[RN_MAX_LAYERS];
} rn_weights;

/* Number of tensors for this config. */
int rn_params_count_tensors(const rn_config *c);

/* Fill descs[0..n) (n = rn_params_count_tensors) and return the total block
 * size in elements (including alignment padding).  descs may be NULL. */
int64_t rn_params_layout(const rn_config *c, rn_tensor_desc *descs);

/* Point w's fields into block (a buffer of rn_params_layout() elements). */
void rn_weights_carve(const rn_config *c, rn_real *block, rn_weights *w);

/* Seeded random init: matrices ~ N(0, 0.02²) except o_proj and down_proj
 * ~ N(0, (0.02/sqrt(2L))²) (GPT-2's scaled residual init), norms = 1,
 * α = 0, padding = 0.  Deterministic for a given seed. */
void rn_params_init(const rn_config *c, rn_real *block, uint64_t seed);

#endif
