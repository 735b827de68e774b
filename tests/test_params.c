/* test_params.c — the parameter table (core/model/rn_params.c) against facts
 * written down independently of it: the parameter count by formula, the
 * DESIGN.md §2 exchange names and shapes in block order, each exactly once,
 * offsets that are aligned, contiguous and non-overlapping, carving that
 * points every rn_weights field at its tensor, and the table's own shape
 * (one contiguous per-layer run, unique names and fields). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_model.h"
#include "rn_params.h"
#include "th.h"

/* A few shapes: tied and untied, one layer and many, H·d_k != H·d_v != D. */
static void cfg_n(rn_config *c, int which)
{
    rn_config_default(c);
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    switch (which) {
    case 0: /* tiny, tied */
        c->vocab_size = 257; c->d_model = 16; c->n_layers = 2; c->n_heads = 2;
        c->d_p = 4; c->order = 2; c->d_v = 4; c->top_k = 3; c->d_ff = 24;
        c->tie_embeddings = 1;
        break;
    case 1: /* one layer, untied, odd sizes */
        c->vocab_size = 1000; c->d_model = 10; c->n_layers = 1; c->n_heads = 3;
        c->d_p = 3; c->order = 3; c->d_v = 5; c->top_k = 2; c->d_ff = 7;
        c->tie_embeddings = 0;
        break;
    case 2: /* many layers, untied */
        c->vocab_size = 512; c->d_model = 24; c->n_layers = 9; c->n_heads = 4;
        c->d_p = 8; c->order = 2; c->d_v = 6; c->top_k = 4; c->d_ff = 40;
        c->tie_embeddings = 0;
        break;
    default: /* the most layers a config may have, tied */
        c->vocab_size = 257; c->d_model = 8; c->n_layers = RN_MAX_LAYERS; c->n_heads = 1;
        c->d_p = 2; c->order = 2; c->d_v = 3; c->top_k = 1; c->d_ff = 5;
        c->tie_embeddings = 1;
        break;
    }
}
#define N_CFGS 4

/* DESIGN.md §2, written out by hand: the tensors in block order. */
typedef struct { char name[64]; int64_t d0, d1; } want_t;

static int expected(const rn_config *c, want_t *w)
{
    int64_t V = c->vocab_size, D = c->d_model, H = c->n_heads, F = c->d_ff;
    int64_t dk = (int64_t)c->order * c->d_p, dv = c->d_v;
    int n = 0;
#define W(d0_, d1_, ...) do { snprintf(w[n].name, sizeof w[n].name, __VA_ARGS__); w[n].d0 = d0_; w[n].d1 = d1_; n++; } while (0)
    W(V, D, "embed.weight");
    for (int l = 0; l < c->n_layers; l++) {
        W(D, 0, "layers.%d.attn_norm.weight", l);
        W(H * dk, D, "layers.%d.attn.q_proj.weight", l);
        W(H * dk, D, "layers.%d.attn.k_proj.weight", l);
        W(H * dv, D, "layers.%d.attn.v_proj.weight", l);
        W(H, 0, "layers.%d.attn.q_alpha", l);
        W(H, 0, "layers.%d.attn.k_alpha", l);
        W(D, H * dv, "layers.%d.attn.o_proj.weight", l);
        W(D, 0, "layers.%d.mlp_norm.weight", l);
        W(F, D, "layers.%d.mlp.gate_proj.weight", l);
        W(F, D, "layers.%d.mlp.up_proj.weight", l);
        W(D, F, "layers.%d.mlp.down_proj.weight", l);
    }
    W(D, 0, "norm.weight");
    if (!c->tie_embeddings) W(V, D, "lm_head.weight");
#undef W
    return n;
}

/* The parameter count by formula. */
static int64_t formula(const rn_config *c)
{
    int64_t V = c->vocab_size, D = c->d_model, L = c->n_layers, H = c->n_heads, F = c->d_ff;
    int64_t dk = (int64_t)c->order * c->d_p, dv = c->d_v;
    int64_t layer = 2 * D + 2 * H * dk * D + 2 * H * dv * D + 2 * H + 3 * F * D;
    return V * D + L * layer + D + (c->tie_embeddings ? 0 : V * D);
}

TH_TEST(test_count_formula, "tensor count and parameter count by formula")
{
    for (int k = 0; k < N_CFGS; k++) {
        rn_config c;
        cfg_n(&c, k);
        rn_error err = {0};
        CU_ASSERT_EQUAL_FATAL(rn_config_validate(&c, &err), RN_OK);
        int n = rn_params_count_tensors(&c);
        CU_ASSERT_EQUAL(n, 1 + 11 * c.n_layers + 1 + (c.tie_embeddings ? 0 : 1));
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            rn_tensor_desc t;
            CU_ASSERT_EQUAL_FATAL(rn_params_tensor(&c, i, &t), 0);
            sum += t.numel;
        }
        CU_ASSERT_EQUAL(sum, formula(&c));
        CU_ASSERT_EQUAL(rn_params_numel(&c), formula(&c));
        CU_ASSERT_EQUAL(rn_config_param_count(&c), formula(&c));
    }
    CU_ASSERT_EQUAL(rn_params_max_tensors(), 1 + 11 * RN_MAX_LAYERS + 2);
}

TH_TEST(test_names_shapes, "DESIGN.md names and shapes, in order, each once")
{
    want_t *w = malloc(sizeof *w * (size_t)(1 + 11 * RN_MAX_LAYERS + 2));
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    for (int k = 0; k < N_CFGS; k++) {
        rn_config c;
        cfg_n(&c, k);
        int n = rn_params_count_tensors(&c);
        int nw = expected(&c, w);
        CU_ASSERT_EQUAL_FATAL(n, nw);
        int *seen = calloc((size_t)nw, sizeof *seen);
        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        for (int i = 0; i < n; i++) {
            rn_tensor_desc t;
            rn_params_tensor(&c, i, &t);
            for (int j = 0; j < nw; j++)
                if (!strcmp(t.name, w[j].name)) seen[j]++;
            /* in DESIGN.md's order, with its shape */
            CU_ASSERT_STRING_EQUAL(t.name, w[i].name);
            CU_ASSERT_EQUAL(t.ndim, w[i].d1 ? 2 : 1);
            CU_ASSERT_EQUAL(t.shape[0], w[i].d0);
            if (w[i].d1) CU_ASSERT_EQUAL(t.shape[1], w[i].d1);
            CU_ASSERT_EQUAL(t.numel, w[i].d1 ? w[i].d0 * w[i].d1 : w[i].d0);
        }
        for (int j = 0; j < nw; j++) CU_ASSERT_EQUAL(seen[j], 1);
        free(seen);
    }
    free(w);
}

TH_TEST(test_offsets, "offsets aligned, contiguous, non-overlapping")
{
    for (int k = 0; k < N_CFGS; k++) {
        rn_config c;
        cfg_n(&c, k);
        int n = rn_params_count_tensors(&c);
        int64_t total = rn_params_layout(&c, NULL);
        rn_tensor_desc *d = malloc(sizeof *d * (size_t)n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_EQUAL(rn_params_layout(&c, d), total);
        int64_t end = 0;
        for (int i = 0; i < n; i++) {
            rn_tensor_desc t;
            rn_params_tensor(&c, i, &t);
            /* both ways of asking agree */
            CU_ASSERT_STRING_EQUAL(t.name, d[i].name);
            CU_ASSERT(t.offset == d[i].offset && t.numel == d[i].numel && t.spec == d[i].spec && t.layer == d[i].layer);
            CU_ASSERT_EQUAL(t.offset % RN_ALIGN_FLOATS, 0);
            CU_ASSERT(t.offset >= end);                      /* no overlap */
            CU_ASSERT(t.offset - end < RN_ALIGN_FLOATS);     /* no gap beyond padding */
            end = t.offset + t.numel;
        }
        CU_ASSERT(total >= end && total - end < RN_ALIGN_FLOATS);
        CU_ASSERT_EQUAL(total % RN_ALIGN_FLOATS, 0);
        rn_tensor_desc t;
        CU_ASSERT_EQUAL(rn_params_tensor(&c, n, &t), -1);
        CU_ASSERT_EQUAL(rn_params_tensor(&c, -1, &t), -1);
        free(d);
    }
}

/* Every field of rn_weights points at the tensor of its name. */
TH_TEST(test_carve, "carving points every field at its tensor")
{
    for (int k = 0; k < N_CFGS; k++) {
        rn_config c;
        cfg_n(&c, k);
        int n = rn_params_count_tensors(&c);
        rn_tensor_desc *d = malloc(sizeof *d * (size_t)n);
        rn_weights *w = malloc(sizeof *w);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        int64_t total = rn_params_layout(&c, d);
        rn_real *block = calloc((size_t)total, sizeof *block);
        CU_ASSERT_PTR_NOT_NULL_FATAL(block);
        rn_weights_carve(&c, block, w);
        int i = 0;
#define AT(ptr, nm) do { CU_ASSERT_STRING_EQUAL(d[i].name, nm); CU_ASSERT_PTR_EQUAL(ptr, block + d[i].offset); i++; } while (0)
        AT(w->embed, "embed.weight");
        for (int l = 0; l < c.n_layers; l++) {
            const rn_layer_weights *lw = &w->layer[l];
            char nm[64];
#define ATL(ptr, sfx) do { snprintf(nm, sizeof nm, "layers.%d.%s", l, sfx); AT(ptr, nm); } while (0)
            ATL(lw->attn_norm, "attn_norm.weight");
            ATL(lw->wq, "attn.q_proj.weight");
            ATL(lw->wk, "attn.k_proj.weight");
            ATL(lw->wv, "attn.v_proj.weight");
            ATL(lw->q_alpha, "attn.q_alpha");
            ATL(lw->k_alpha, "attn.k_alpha");
            ATL(lw->wo, "attn.o_proj.weight");
            ATL(lw->mlp_norm, "mlp_norm.weight");
            ATL(lw->w_gate, "mlp.gate_proj.weight");
            ATL(lw->w_up, "mlp.up_proj.weight");
            ATL(lw->w_down, "mlp.down_proj.weight");
#undef ATL
        }
        AT(w->norm, "norm.weight");
        if (c.tie_embeddings) {
            CU_ASSERT_PTR_EQUAL(w->lm_head, w->embed);
        } else {
            AT(w->lm_head, "lm_head.weight");
        }
#undef AT
        CU_ASSERT_EQUAL(i, n);
        if (c.n_layers < RN_MAX_LAYERS) CU_ASSERT_PTR_NULL(w->layer[c.n_layers].wq);
        free(block);
        free(w);
        free(d);
    }
}

/* The table itself: one contiguous run of per-layer rows, unique names,
 * each field carved by exactly one row, known kinds and init rules. */
TH_TEST(test_table, "the table: one per-layer run, unique names and fields")
{
    int nr = 0;
    const rn_param_spec *t = rn_param_table(&nr);
    CU_ASSERT_FATAL(nr > 0);
    int runs = 0;
    for (int r = 0; r < nr; r++) {
        if (t[r].scope == RN_SCOPE_LAYER && (r == 0 || t[r - 1].scope != RN_SCOPE_LAYER)) runs++;
        CU_ASSERT(t[r].dim[0] != RN_DIM_NONE);
        CU_ASSERT(t[r].kind >= RN_T_MATRIX && t[r].kind <= RN_T_ALPHA);
        CU_ASSERT(t[r].init >= RN_INIT_NORMAL && t[r].init <= RN_INIT_ZEROS);
        size_t limit = t[r].scope == RN_SCOPE_LAYER ? sizeof(rn_layer_weights) : offsetof(rn_weights, layer);
        CU_ASSERT(t[r].field % sizeof(rn_real *) == 0 && t[r].field < limit);
        for (int q = 0; q < r; q++) {
            CU_ASSERT(strcmp(t[q].name, t[r].name) != 0);
            CU_ASSERT(!((t[q].scope == RN_SCOPE_LAYER) == (t[r].scope == RN_SCOPE_LAYER) && t[q].field == t[r].field));
        }
    }
    CU_ASSERT_EQUAL(runs, 1);
    /* every pointer of rn_layer_weights is carved by a row */
    CU_ASSERT_EQUAL(sizeof(rn_layer_weights) / sizeof(rn_real *), 11);
}

/* Two threads creating the same seeded model get identical blocks (no
 * shared scratch in the layout or the init). */
typedef struct { rn_config c; uint64_t seed; rn_model m; int rc; } job_t;
static void *make_model(void *arg)
{
    job_t *j = arg;
    rn_error err = {0};
    for (int rep = 0; rep < 20 && !j->rc; rep++) {
        if (rep) rn_model_free(&j->m);
        j->rc = rn_model_create_random(&j->m, &j->c, j->seed, &err);
    }
    return NULL;
}

TH_TEST(test_threads, "seeded init from two threads")
{
    job_t j[2];
    memset(j, 0, sizeof j);
    cfg_n(&j[0].c, 2);
    cfg_n(&j[1].c, 0);
    j[0].seed = 7;
    j[1].seed = 7;
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, make_model, &j[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL_FATAL(j[0].rc, RN_OK);
    CU_ASSERT_EQUAL_FATAL(j[1].rc, RN_OK);
    for (int i = 0; i < 2; i++) {
        rn_model ref;
        rn_error err = {0};
        CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&ref, &j[i].c, 7, &err), RN_OK);
        CU_ASSERT_EQUAL(ref.n_block, j[i].m.n_block);
        CU_ASSERT_EQUAL(memcmp(ref.params, j[i].m.params, (size_t)ref.n_block * sizeof(rn_real)), 0);
        rn_model_free(&ref);
        rn_model_free(&j[i].m);
    }
}
