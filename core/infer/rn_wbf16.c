/* rn_wbf16.c — a model's matrices rounded to bf16 (rn_wbf16.h).  Which
 * tensors are rounded is rn_precision_bf16_tensor's choice, so the runtime
 * and the FP32 paths over rn_model_copy_bf16 use the same weights. */
#include "rn_wbf16.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rn_bf16.h"
#include "rn_memlimit.h"
#include "rn_precision.h"

/* Where tensor t's bf16 copy goes: the field of the same name. */
static const uint16_t **slot_of(rn_wbf16 *w, const rn_tensor_desc *t)
{
    static const struct { const char *name; size_t off; } fields[] = {
        { "attn.q_proj.weight", offsetof(rn_layer_wbf16, wq) },
        { "attn.k_proj.weight", offsetof(rn_layer_wbf16, wk) },
        { "attn.v_proj.weight", offsetof(rn_layer_wbf16, wv) },
        { "attn.o_proj.weight", offsetof(rn_layer_wbf16, wo) },
        { "mlp.gate_proj.weight", offsetof(rn_layer_wbf16, w_gate) },
        { "mlp.up_proj.weight", offsetof(rn_layer_wbf16, w_up) },
        { "mlp.down_proj.weight", offsetof(rn_layer_wbf16, w_down) },
    };
    if (t->layer < 0) return t->spec->name[0] == 'e' ? &w->embed : &w->lm_head;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strcmp(t->spec->name, fields[i].name))
            return (const uint16_t **)((char *)&w->layer[t->layer] + fields[i].off);
    return NULL;
}

int rn_wbf16_create(const rn_model *m, rn_wbf16 **out, rn_error *err)
{
    *out = NULL;
    const rn_config *c = &m->cfg;
    rn_tensor_desc t;
    double n = 0;
    for (int i = 0; rn_params_tensor(c, i, &t) == 0; i++)
        if (rn_precision_bf16_tensor(&t)) n += (double)t.numel;
    int rc = rn_memlimit_check("the bf16 weight matrices (--precision bf16)", 2 * n, err);
    if (rc) return rc;
    rn_wbf16 *w = calloc(1, sizeof *w);
    if (w) w->layer = calloc((size_t)c->n_layers, sizeof *w->layer);
    if (w && w->layer) w->block = malloc(2 * (size_t)n);
    if (!w || !w->layer || !w->block) {
        rn_wbf16_free(w);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating the bf16 weight matrices");
    }
    uint16_t *p = w->block;
    for (int i = 0; rn_params_tensor(c, i, &t) == 0; i++) {
        if (!rn_precision_bf16_tensor(&t)) continue;
        const uint16_t **dst = slot_of(w, &t);
        if (!dst) continue; /* a matrix the runtime does not read */
        rn_bf16_round(p, m->params + t.offset, (size_t)t.numel);
        *dst = p;
        p += t.numel;
        if (t.numel > w->max_matrix) w->max_matrix = t.numel;
    }
    if (c->tie_embeddings) w->lm_head = w->embed;
    *out = w;
    return RN_OK;
}

void rn_wbf16_free(rn_wbf16 *w)
{
    if (!w) return;
    free(w->block);
    free(w->layer);
    free(w);
}
