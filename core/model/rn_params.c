/* rn_params.c — the table of parameter tensors, the block layout it implies,
 * carving and seeded init.
 *
 * The table below is the only list of tensors in the program; everything
 * else (AdamW, model.bin, safetensors, the parameter count) walks it through
 * rn_params_tensor.  It is const and nothing in this file keeps state, so
 * every function is safe to call from several threads.
 */
#include "rn_params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rn_rng.h"

#define MODEL(name, field, d0, d1, kind, init) \
    { name, RN_SCOPE_MODEL, offsetof(rn_weights, field), { d0, d1 }, kind, init }
#define LAYER(name, field, d0, d1, kind, init) \
    { name, RN_SCOPE_LAYER, offsetof(rn_layer_weights, field), { d0, d1 }, kind, init }
#define UNTIED(name, field, d0, d1, kind, init) \
    { name, RN_SCOPE_UNTIED, offsetof(rn_weights, field), { d0, d1 }, kind, init }

/* Block order, DESIGN.md §2.  The init rules draw one random stream in this
 * order, so reordering rows changes every seeded model. */
static const rn_param_spec param_table[] = {
    MODEL("embed.weight",              embed,     RN_DIM_V,   RN_DIM_D,    RN_T_EMBED,  RN_INIT_NORMAL),
    LAYER("attn_norm.weight",          attn_norm, RN_DIM_D,   RN_DIM_NONE, RN_T_NORM,   RN_INIT_ONES),
    LAYER("attn.q_proj.weight",        wq,        RN_DIM_HDK, RN_DIM_D,    RN_T_MATRIX, RN_INIT_NORMAL),
    LAYER("attn.k_proj.weight",        wk,        RN_DIM_HDK, RN_DIM_D,    RN_T_MATRIX, RN_INIT_NORMAL),
    LAYER("attn.v_proj.weight",        wv,        RN_DIM_HDV, RN_DIM_D,    RN_T_MATRIX, RN_INIT_NORMAL),
    LAYER("attn.q_alpha",              q_alpha,   RN_DIM_H,   RN_DIM_NONE, RN_T_ALPHA,  RN_INIT_ZEROS),
    LAYER("attn.k_alpha",              k_alpha,   RN_DIM_H,   RN_DIM_NONE, RN_T_ALPHA,  RN_INIT_ZEROS),
    LAYER("attn.o_proj.weight",        wo,        RN_DIM_D,   RN_DIM_HDV,  RN_T_MATRIX, RN_INIT_RESID),
    LAYER("mlp_norm.weight",           mlp_norm,  RN_DIM_D,   RN_DIM_NONE, RN_T_NORM,   RN_INIT_ONES),
    LAYER("mlp.gate_proj.weight",      w_gate,    RN_DIM_F,   RN_DIM_D,    RN_T_MATRIX, RN_INIT_NORMAL),
    LAYER("mlp.up_proj.weight",        w_up,      RN_DIM_F,   RN_DIM_D,    RN_T_MATRIX, RN_INIT_NORMAL),
    LAYER("mlp.down_proj.weight",      w_down,    RN_DIM_D,   RN_DIM_F,    RN_T_MATRIX, RN_INIT_RESID),
    MODEL("norm.weight",               norm,      RN_DIM_D,   RN_DIM_NONE, RN_T_NORM,   RN_INIT_ONES),
    UNTIED("lm_head.weight",           lm_head,   RN_DIM_V,   RN_DIM_D,    RN_T_EMBED,  RN_INIT_NORMAL),
};
#define N_ROWS (int)(sizeof param_table / sizeof param_table[0])

#undef MODEL
#undef LAYER
#undef UNTIED

const rn_param_spec *rn_param_table(int *n_rows)
{
    *n_rows = N_ROWS;
    return param_table;
}

static int64_t align_up(int64_t n) { return (n + RN_ALIGN_FLOATS - 1) / RN_ALIGN_FLOATS * RN_ALIGN_FLOATS; }

/* The size of dimension d for config c (0 for RN_DIM_NONE). */
static int64_t dim_size(const rn_config *c, int d)
{
    switch (d) {
    case RN_DIM_V: return c->vocab_size;
    case RN_DIM_D: return c->d_model;
    case RN_DIM_H: return c->n_heads;
    case RN_DIM_HDK: return (int64_t)c->n_heads * rn_config_dk(c);
    case RN_DIM_HDV: return (int64_t)c->n_heads * c->d_v;
    case RN_DIM_F: return c->d_ff;
    default: return 0;
    }
}

static int64_t row_numel(const rn_config *c, const rn_param_spec *s)
{
    int64_t n = dim_size(c, s->dim[0]);
    return s->dim[1] != RN_DIM_NONE ? n * dim_size(c, s->dim[1]) : n;
}

/* How many times row s occurs in the block of config c. */
static int64_t row_count(const rn_config *c, const rn_param_spec *s)
{
    if (s->scope == RN_SCOPE_LAYER) return c->n_layers;
    if (s->scope == RN_SCOPE_UNTIED) return c->tie_embeddings ? 0 : 1;
    return 1;
}

int rn_params_count_tensors(const rn_config *c)
{
    int64_t n = 0;
    for (int r = 0; r < N_ROWS; r++) n += row_count(c, &param_table[r]);
    return (int)n;
}

int rn_params_max_tensors(void)
{
    int n = 0;
    for (int r = 0; r < N_ROWS; r++) n += param_table[r].scope == RN_SCOPE_LAYER ? RN_MAX_LAYERS : 1;
    return n;
}

int64_t rn_params_numel(const rn_config *c)
{
    int64_t n = 0;
    for (int r = 0; r < N_ROWS; r++) n += row_count(c, &param_table[r]) * row_numel(c, &param_table[r]);
    return n;
}

int64_t rn_config_param_count(const rn_config *c) { return rn_params_numel(c); }

static void describe(const rn_config *c, const rn_param_spec *s, int layer, int64_t off, rn_tensor_desc *t)
{
    if (layer >= 0) snprintf(t->name, sizeof t->name, "layers.%d.%s", layer, s->name);
    else snprintf(t->name, sizeof t->name, "%s", s->name);
    t->ndim = s->dim[1] != RN_DIM_NONE ? 2 : 1;
    t->shape[0] = dim_size(c, s->dim[0]);
    t->shape[1] = dim_size(c, s->dim[1]);
    t->offset = off;
    t->numel = row_numel(c, s);
    t->kind = s->kind;
    t->layer = layer;
    t->spec = s;
}

/* Walk the rows, skipping whole rows (or whole layers of the per-layer run)
 * that lie before tensor i: each tensor starts at the aligned end of the one
 * before it, and every layer takes the same aligned stride. */
int rn_params_tensor(const rn_config *c, int i, rn_tensor_desc *t)
{
    if (i < 0) return -1;
    int64_t off = 0;
    for (int r = 0; r < N_ROWS; r++) {
        const rn_param_spec *s = &param_table[r];
        if (s->scope != RN_SCOPE_LAYER) {
            if (!row_count(c, s)) continue;
            if (i == 0) { describe(c, s, -1, off, t); return 0; }
            i--;
            off += align_up(row_numel(c, s));
            continue;
        }
        int e = r;              /* the per-layer run is rows [r, e) */
        int64_t stride = 0;
        while (e < N_ROWS && param_table[e].scope == RN_SCOPE_LAYER) stride += align_up(row_numel(c, &param_table[e++]));
        int run = e - r;
        if (i < run * c->n_layers) {
            int layer = i / run, k = i % run;
            off += layer * stride;
            for (int j = 0; j < k; j++) off += align_up(row_numel(c, &param_table[r + j]));
            describe(c, &param_table[r + k], layer, off, t);
            return 0;
        }
        i -= run * c->n_layers;
        off += c->n_layers * stride;
        r = e - 1;
    }
    return -1;
}

int64_t rn_params_layout(const rn_config *c, rn_tensor_desc *descs)
{
    int n = rn_params_count_tensors(c);
    rn_tensor_desc t;
    if (n == 0 || rn_params_tensor(c, n - 1, &t)) return 0;
    for (int i = 0; descs && i < n; i++) rn_params_tensor(c, i, &descs[i]);
    return align_up(t.offset + t.numel);
}

/* The rn_weights pointer that tensor t is carved into. */
static rn_real **weight_slot(rn_weights *w, const rn_tensor_desc *t)
{
    char *base = t->layer >= 0 ? (char *)&w->layer[t->layer] : (char *)w;
    return (rn_real **)(base + t->spec->field);
}

void rn_weights_carve(const rn_config *c, rn_real *block, rn_weights *w)
{
    memset(w, 0, sizeof *w);
    int n = rn_params_count_tensors(c);
    for (int i = 0; i < n; i++) {
        rn_tensor_desc t;
        rn_params_tensor(c, i, &t);
        *weight_slot(w, &t) = block + t.offset;
    }
    if (c->tie_embeddings) w->lm_head = w->embed;
}

void rn_params_init(const rn_config *c, rn_real *block, uint64_t seed)
{
    int n = rn_params_count_tensors(c);
    int64_t total = rn_params_layout(c, NULL);
    memset(block, 0, (size_t)total * sizeof *block);
    rn_rng rng;
    rn_rng_seed(&rng, seed);
    double resid = 0.02 / sqrt(2.0 * c->n_layers);
    for (int i = 0; i < n; i++) {
        rn_tensor_desc t;
        rn_params_tensor(c, i, &t);
        rn_real *p = block + t.offset;
        switch (t.spec->init) {
        case RN_INIT_ONES:
            for (int64_t j = 0; j < t.numel; j++) p[j] = 1;
            break;
        case RN_INIT_ZEROS:
            break; /* the block is already zero */
        case RN_INIT_NORMAL:
        case RN_INIT_RESID: {
            double sd = t.spec->init == RN_INIT_RESID ? resid : 0.02;
            for (int64_t j = 0; j < t.numel; j++) p[j] = (rn_real)(sd * rn_rng_normal(&rng));
            break;
        }
        }
    }
}
