/* rn_params.h — the parameter tensors of a model and their layout.
 *
 * All parameters live in one contiguous block of rn_real.  Each tensor starts
 * at a multiple of RN_ALIGN_FLOATS elements (64 bytes for float32), so the
 * block can be mmapped straight from model.bin and carved into named
 * pointers.  The same layout carves gradient and optimizer-moment buffers.
 * Padding between tensors is zero and stays zero (its gradient is zero).
 *
 * Every tensor is one row of a single constant table in rn_params.c
 * (rn_param_spec: exchange name, rn_weights field, shape, kind, init rule).
 * That table alone drives the block layout, the carving into rn_weights, the
 * seeded init, AdamW's weight decay, model.bin and safetensors; adding a
 * tensor is adding a row (and its pointer field below).  Nothing here keeps
 * state: every function works from the table and the config, so the layout
 * can be queried from several threads at once.
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

#include <stddef.h>
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

/* How rn_params_init fills a tensor. */
enum rn_init_rule {
    RN_INIT_NORMAL = 0, /* N(0, 0.02²) */
    RN_INIT_RESID,      /* N(0, (0.02/sqrt(2L))²): GPT-2's scaled residual init */
    RN_INIT_ONES,       /* RMSNorm gains */
    RN_INIT_ZEROS       /* α = 0, i.e. e^α = 1 */
};

/* A shape dimension in terms of the config. */
enum rn_dim {
    RN_DIM_NONE = 0,  /* no second dimension: a vector */
    RN_DIM_V,         /* vocab_size */
    RN_DIM_D,         /* d_model */
    RN_DIM_H,         /* n_heads */
    RN_DIM_HDK,       /* n_heads · d_k */
    RN_DIM_HDV,       /* n_heads · d_v */
    RN_DIM_F          /* d_ff */
};

/* How often a row occurs in the block. */
enum rn_param_scope {
    RN_SCOPE_MODEL = 0, /* once; a field of rn_weights */
    RN_SCOPE_LAYER,     /* once per layer; a field of rn_layer_weights */
    RN_SCOPE_UNTIED     /* once when embeddings are untied; a field of
                           rn_weights (when tied, carving aliases it to embed) */
};

/* One row of the parameter table.  The block holds the rows in table order,
 * except that the (contiguous) run of per-layer rows is repeated for layers
 * 0..L-1. */
typedef struct {
    const char *name;   /* exchange name; per-layer rows follow "layers.<l>." */
    int scope;          /* enum rn_param_scope */
    size_t field;       /* offsetof the rn_real * in rn_weights or rn_layer_weights */
    int dim[2];         /* enum rn_dim, PyTorch order [out, in]; dim[1] = RN_DIM_NONE for a vector */
    int kind;           /* enum rn_tensor_kind */
    int init;           /* enum rn_init_rule */
} rn_param_spec;

/* One tensor of a given config, as placed in the block. */
typedef struct {
    char name[64];
    int ndim;           /* 1 or 2 */
    int64_t shape[2];   /* PyTorch order [out, in] */
    int64_t offset;     /* element offset in the parameter block */
    int64_t numel;
    int kind;           /* enum rn_tensor_kind */
    int layer;          /* its layer, or -1 for a model-level tensor */
    const rn_param_spec *spec; /* its table row */
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

/* The parameter table: *n_rows gets its length. */
const rn_param_spec *rn_param_table(int *n_rows);

/* Number of tensors for this config. */
int rn_params_count_tensors(const rn_config *c);

/* Largest tensor count of any valid config (RN_MAX_LAYERS layers, untied). */
int rn_params_max_tensors(void);

/* Describe tensor i (0 <= i < rn_params_count_tensors, block order) of
 * config c into *t.  Costs a walk over the table's rows, not over the
 * tensors, so loops over all tensors need no descriptor array.  Returns 0,
 * or -1 when i is out of range. */
int rn_params_tensor(const rn_config *c, int i, rn_tensor_desc *t);

/* Fill descs[0..n) (n = rn_params_count_tensors) and return the total block
 * size in elements (including alignment padding).  descs may be NULL. */
int64_t rn_params_layout(const rn_config *c, rn_tensor_desc *descs);

/* Parameters of config c, padding excluded. */
int64_t rn_params_numel(const rn_config *c);
/* The model's parameter count (every tensor; lm_head only when untied):
 * rn_params_numel, under the name the commands print it by. */
int64_t rn_config_param_count(const rn_config *c);

/* Point w's fields into block (a buffer of rn_params_layout() elements). */
void rn_weights_carve(const rn_config *c, rn_real *block, rn_weights *w);

/* Seeded random init, by each row's init rule: matrices ~ N(0, 0.02²) except
 * o_proj and down_proj ~ N(0, (0.02/sqrt(2L))²) (GPT-2's scaled residual
 * init), norms = 1, α = 0, padding = 0.  One random stream drawn in block
 * order; deterministic for a given seed. */
void rn_params_init(const rn_config *c, rn_real *block, uint64_t seed);

#endif
