/* rn_patch_source.c — running the patch sources of an intervention set
 * (rn_patch_source.h). */
#include "rn_patch_source.h"

#include <stdlib.h>
#include <string.h>

#include "rn_runtime.h"
#include "rn_tokenizer.h"

int rn_iv_prepare(rn_iv_set *s, const rn_model *m, rn_error *err)
{
    const int dv = s->d_v;
    int rc = RN_OK;
    for (int i = 0; i < s->n && !rc; i++) {
        rn_iv *v = &s->iv[i];
        if (v->kind != RN_IV_PATCH_HEAD || v->buf) continue;
        /* One clean run per source file records every head patched from it. */
        int *toks = NULL, n = 0;
        rn_runtime *rt = NULL;
        rn_iv_set rec;
        rn_iv_init(&rec, &m->cfg);
        int handled = 0;
        if (s->source_fn) rc = s->source_fn(s->source_user, v->source, m, &toks, &n, &handled, err);
        if (!rc && !handled) rc = rn_tokenize_file(&m->cfg, v->source, &toks, &n, err);
        if (rc) {
            rn_preferr(err, "--intervene '%s'", v->spec);
            break;
        }
        for (int j = i; j < s->n && !rc; j++) {
            rn_iv *u = &s->iv[j];
            if (u->kind != RN_IV_PATCH_HEAD || u->buf || strcmp(u->source, v->source)) continue;
            if (!(u->buf = malloc(sizeof(rn_real) * (size_t)n * dv))) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            u->owns_buf = 1;
            u->buf_n = n;
            rc = rn_iv_add_buffer(&rec, 0, u->layer, u->head, u->buf, n, err);
        }
        if (!rc) rc = rn_runtime_create(m, s->source_chunk > 0 ? s->source_chunk : 256, &rt, err);
        if (!rc) rc = rn_runtime_set_precision(rt, (rn_precision)s->source_precision, err);
        if (!rc) rc = rn_runtime_set_interventions(rt, &rec, err);
        if (!rc) rc = rn_prefill(rt, toks, n, NULL, 0, err);
        rn_runtime_free(rt);
        rn_iv_free(&rec);
        free(toks);
    }
    if (!rc) s->prepared = 1;
    return rc;
}

/* ---- the forward ---- */
