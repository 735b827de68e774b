/* rn_params.c — tensor layout of the parameter block and seeded init. */
#include "rn_params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rn_rng.h"

int rn_params_count_tensors(const rn_config *c)
{
    return 1 + 11 * c->n_layers + 1 + (c->tie_embeddings ? 0 : 1);
}

static int64_t align_up(int64_t n) { return (n + RN_ALIGN_FLOATS - 1) / RN_ALIGN_FLOATS * RN_ALIGN_FLOATS; }

/* Append one tensor to the layout; returns the new running offset. */
static int64_t add(rn_tensor_desc *d, int *i, int64_t off, const char *name,
                   int64_t d0, int64_t d1, int kind)
{
    if (d) {
        rn_tensor_desc *t = &d[*i];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = d1 ? 2 : 1;
        t->shape[0] = d0;
        t->shape[1] = d1;
        t->offset = off;
        t->numel = d1 ? d0 * d1 : d0;
        t->kind = kind;
    }
    (*i)++;
    return align_up(off + (d1 ? d0 * d1 : d0));
}

int64_t rn_params_layout(const rn_config *c, rn_tensor_desc *d)
{
    int64_t V = c->vocab_size, D = c->d_model, H = c->n_heads, F = c->d_ff;
    int64_t hdk = H * rn_config_dk(c), hdv = H * c->d_v;
    int i = 0;
    int64_t off = 0;
    char name[64];
    off = add(d, &i, off, "embed.weight", V, D, RN_T_EMBED);
    for (int l = 0; l < c->n_layers; l++) {
#define T(suffix, d0, d1, kind) \
        snprintf(name, sizeof name, "layers.%d.%s", l, suffix); \
        off = add(d, &i, off, name, d0, d1, kind);
        T("attn_norm.weight", D, 0, RN_T_NORM);
        T("attn.q_proj.weight", hdk, D, RN_T_MATRIX);
        T("attn.k_proj.weight", hdk, D, RN_T_MATRIX);
        T("attn.v_proj.weight", hdv, D, RN_T_MATRIX);
        T("attn.q_alpha", H, 0, RN_T_ALPHA);
        T("attn.k_alpha", H, 0, RN_T_ALPHA);
        T("attn.o_proj.weight", D, hdv, RN_T_MATRIX);
        T("mlp_norm.weight", D, 0, RN_T_NORM);
        T("mlp.gate_proj.weight", F, D, RN_T_MATRIX);
        T("mlp.up_proj.weight", F, D, RN_T_MATRIX);
        T("mlp.down_proj.weight", D, F, RN_T_MATRIX);
#undef T
    }
    off = add(d, &i, off, "norm.weight", D, 0, RN_T_NORM);
    if (!c->tie_embeddings) off = add(d, &i, off, "lm_head.weight", V, D, RN_T_EMBED);
    return off;
}

void rn_weights_carve(const rn_config *c, rn_real *block, rn_weights *w)
{
    int n = rn_params_count_tensors(c);
    rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
    rn_params_layout(c, d);
    memset(w, 0, sizeof *w);
    int i = 0;
    w->embed = block + d[i++].offset;
    for (int l = 0; l < c->n_layers; l++) {
        rn_layer_weights *lw = &w->layer[l];
        lw->attn_norm = block + d[i++].offset;
        lw->wq = block + d[i++].offset;
        lw->wk = block + d[i++].offset;
        lw->wv = block + d[i++].offset;
        lw->q_alpha = block + d[i++].offset;
        lw->k_alpha = block + d[i++].offset;
        lw->wo = block + d[i++].offset;
        lw->mlp_norm = block + d[i++].offset;
        lw->w_gate = block + d[i++].offset;
        lw->w_up = block + d[i++].offset;
        lw->w_down = block + d[i++].offset;
    }
    w->norm = block + d[i++].offset;
    w->lm_head = c->tie_embeddings ? w->embed : block + d[i++].offset;
    (void)n;
}

void rn_params_init(const rn_config *c, rn_real *block, uint64_t seed)
{
    static rn_tensor_desc d[1 + 11 * RN_MAX_LAYERS + 2];
    int n = rn_params_count_tensors(c);
    int64_t total = rn_params_layout(c, d);
    memset(block, 0, (size_t)total * sizeof *block);
    rn_rng rng;
    rn_rng_seed(&rng, seed);
    double resid = 0.02 / sqrt(2.0 * c->n_layers);
    for (int i = 0; i < n; i++) {
        rn_real *p = block + d[i].offset;
        if (d[i].kind == RN_T_NORM) {
            for (int64_t j = 0; j < d[i].numel; j++) p[j] = 1;
        } else if (d[i].kind == RN_T_ALPHA) {
            /* α = 0: e^α = 1 */
        } else {
            double sd = (strstr(d[i].name, "o_proj") || strstr(d[i].name, "down_proj")) ? resid : 0.02;
            for (int64_t j = 0; j < d[i].numel; j++) p[j] = (rn_real)(sd * rn_rng_normal(&rng));
        }
    }
}
