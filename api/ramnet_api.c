/* ramnet_api.c — the C API of libramnet.so (ramnet_api.h) over the library:
 * handles, thread-local messages, and calls into core/. */
#include "ramnet_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "an_patch.h"
#include "fig_patching.h"
#include "rn_modelfile.h"
#include "rn_params.h"
#include "rn_patch_source.h"
#include "rn_runtime.h"
#include "rn_threads.h"
#include "rn_tokenizer.h"
#include "rn_version.h"

_Static_assert((int)RAMNET_HOOK_RESID_PRE == (int)RN_HOOK_RESID_PRE &&
                   (int)RAMNET_HOOK_ADDR_WRITE == (int)RN_HOOK_ADDR_WRITE &&
                   (int)RAMNET_HOOK_MLP_OUT == (int)RN_HOOK_MLP_OUT &&
                   (int)RAMNET_HOOK_LN_FINAL == (int)RN_HOOK_LN_FINAL &&
                   (int)RAMNET_HOOK_SLOT_STATE == (int)RN_HOOK_SLOT_STATE && RN_HOOK_N == 12,
               "the API's hook numbers are the runtime's");

struct ramnet_model {
    rn_model m;
    int n_tensors;
    rn_tensor_desc *t;     /* [n_tensors] */
};

static _Thread_local char last_error[512];

static int fail(const rn_error *err)
{
    snprintf(last_error, sizeof last_error, "%s", err->msg);
    return err->code ? err->code : RN_EINTERNAL;
}

static int fail_msg(int code, const char *msg)
{
    snprintf(last_error, sizeof last_error, "%s", msg);
    return code;
}

int ramnet_api_version(void) { return RAMNET_API_VERSION; }
const char *ramnet_version(void) { return RAMTRACE_VERSION; }
const char *ramnet_last_error(void) { return last_error; }

/* The thread count follows the machine's load as the command's does
 * (rn_threads.h: under load a fixed team of threads falls 10-40x), unless
 * the environment fixes OpenMP's threads; set up with the first model. */
static void threads_once(void)
{
    static int done;
    if (done) return;
    done = 1;
    if (!rn_threads_user_env()) rn_threads_auto(omp_get_max_threads(), 0.05, NULL, NULL);
}

int ramnet_load(const char *path, ramnet_model **out)
{
    rn_error err = { 0 };
    threads_once();
    if (!out) return fail_msg(RN_EINPUT, "ramnet_load: no handle to fill");
    *out = NULL;
    if (!path) return fail_msg(RN_EINPUT, "ramnet_load: no path");
    ramnet_model *h = calloc(1, sizeof *h);
    if (!h) return fail_msg(RN_ENOMEM, "out of memory");
    if (rn_model_load(&h->m, path, &err)) {
        free(h);
        return fail(&err);
    }
    h->n_tensors = (int)rn_params_count_tensors(&h->m.cfg);
    h->t = malloc(sizeof *h->t * (size_t)(h->n_tensors ? h->n_tensors : 1));
    if (!h->t) {
        rn_model_free(&h->m);
        free(h);
        return fail_msg(RN_ENOMEM, "out of memory");
    }
    rn_params_layout(&h->m.cfg, h->t);
    *out = h;
    return RAMNET_OK;
}

void ramnet_free(ramnet_model *m)
{
    if (!m) return;
    rn_model_free(&m->m);
    free(m->t);
    free(m);
}

int ramnet_config_text(const ramnet_model *m, char *buf, size_t cap, size_t *len)
{
    if (!m) return fail_msg(RN_EINPUT, "no model");
    size_t n = rn_config_format(&m->m.cfg, buf, cap);
    if (len) *len = n;
    return RAMNET_OK;
}

int ramnet_tensor_count(const ramnet_model *m) { return m ? m->n_tensors : 0; }

int ramnet_tensor(const ramnet_model *m, int i, const char **name, int *ndim, int64_t shape[2],
                  const float **data)
{
    if (!m || i < 0 || i >= m->n_tensors) return fail_msg(RN_EINPUT, "tensor index out of range");
    const rn_tensor_desc *t = &m->t[i];
    *name = t->name;
    *ndim = t->ndim;
    shape[0] = t->shape[0];
    shape[1] = t->ndim > 1 ? t->shape[1] : 1;
    *data = m->m.params + t->offset;
    return RAMNET_OK;
}

int ramnet_tokenize(const ramnet_model *m, const char *text, size_t len, int **ids, int *n)
{
    rn_error err = { 0 };
    if (!m || !text || !ids || !n) return fail_msg(RN_EINPUT, "ramnet_tokenize: a NULL argument");
    if (rn_tokenize(&m->m.cfg, text, len, "text", ids, n, &err)) return fail(&err);
    return RAMNET_OK;
}

int ramnet_detokenize(const ramnet_model *m, const int *ids, int n, char **text, size_t *len)
{
    if (!m || (!ids && n) || n < 0 || !text || !len) return fail_msg(RN_EINPUT, "ramnet_detokenize: a bad argument");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->m.cfg.vocab_size) {
            char msg[128];
            snprintf(msg, sizeof msg, "token %d at position %d is outside the vocabulary [0, %d)", ids[i], i,
                     m->m.cfg.vocab_size);
            return fail_msg(RN_EINPUT, msg);
        }
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f) return fail_msg(RN_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) rn_token_print(&m->m.cfg, ids[i], i == 0, f);
    if (fclose(f)) return fail_msg(RN_ENOMEM, "out of memory");
    return RAMNET_OK;
}

void ramnet_free_buffer(void *p) { free(p); }

int ramnet_forward(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk)
{
    return ramnet_run(m, tokens, T, logits, chunk, NULL, 0, 0, NULL, NULL);
}

/* One run of ramnet_run's arguments; then, when S is not NULL, the state
 * of head (layer, head) copied out. */
static int run(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk, const char *const *specs,
               int n_specs, uint32_t points, const unsigned char *slot_layers, ramnet_hook_fn fn, void *user, int layer,
               int head, float *S, float *z)
{
    rn_error err = { 0 };
    if (!m || !tokens || T < 1) return fail_msg(RN_EINPUT, "ramnet_run: a bad argument");
    if (chunk < 0) return fail_msg(RN_EINPUT, "ramnet_run: chunk must be >= 0");
    if (n_specs < 0 || (n_specs && !specs)) return fail_msg(RN_EINPUT, "ramnet_run: bad intervention list");
    const int rows = !!(points & RAMNET_HOOK_SLOT_STATE_ROWS);
    points &= ~RAMNET_HOOK_SLOT_STATE_ROWS;
    if (points >> RN_HOOK_N) return fail_msg(RN_EINPUT, "ramnet_run: unknown hook point");
    rn_runtime *rt = NULL;
    rn_iv_set iv;
    rn_iv_init(&iv, &m->m.cfg);
    int rc = rn_runtime_create(&m->m, chunk ? chunk : 256, &rt, &err);
    for (int i = 0; i < n_specs && !rc; i++) rc = rn_iv_add_arg(&iv, specs[i], &err);
    if (!rc && n_specs) {
        iv.source_chunk = chunk ? chunk : 256; /* sources in the run's chunking (rn_intervene.h) */
        rc = rn_iv_prepare(&iv, &m->m, &err);
        if (!rc) rc = rn_runtime_set_interventions(rt, &iv, &err);
    }
    rn_hooks h = { fn, user, points, rows, { 0 } };
    if (slot_layers && points >> RAMNET_HOOK_SLOT_STATE & 1) {
        for (int l = 0; l < m->m.cfg.n_layers; l++)
            if (slot_layers[l]) h.slot_layers[l / 64] |= 1ull << (l % 64);
        int any = 0;
        for (size_t i = 0; i < sizeof h.slot_layers / sizeof *h.slot_layers; i++) any |= h.slot_layers[i] != 0;
        if (!any) h.points &= ~(1u << RAMNET_HOOK_SLOT_STATE); /* no layer: no slot-state point */
    }
    points = h.points;
    if (!rc && points) rc = rn_runtime_set_hooks(rt, &h, &err);
    if (!rc) rc = rn_prefill(rt, tokens, T, logits, 1, &err);
    if (!rc && S) {
        const rn_real *hs, *hz;
        if (!(rc = rn_runtime_head_state(rt, layer, head, &hs, &hz, &err))) {
            int64_t M = rn_config_slots(&m->m.cfg);
            memcpy(S, hs, sizeof *S * (size_t)M * m->m.cfg.d_v);
            memcpy(z, hz, sizeof *z * (size_t)M);
        }
    }
    rn_runtime_free(rt);
    rn_iv_free(&iv);
    return rc ? fail(&err) : RAMNET_OK;
}

int ramnet_run(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk,
               const char *const *specs, int n_specs, uint32_t points, ramnet_hook_fn fn, void *user)
{
    if (!logits) return fail_msg(RN_EINPUT, "ramnet_run: a bad argument");
    return run(m, tokens, T, logits, chunk, specs, n_specs, points, NULL, fn, user, 0, 0, NULL, NULL);
}

int ramnet_run_layers(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk,
                      const char *const *specs, int n_specs, uint32_t points, const unsigned char *slot_layers,
                      ramnet_hook_fn fn, void *user)
{
    if (!logits) return fail_msg(RN_EINPUT, "ramnet_run: a bad argument");
    return run(m, tokens, T, logits, chunk, specs, n_specs, points, slot_layers, fn, user, 0, 0, NULL, NULL);
}

int ramnet_head_state(const ramnet_model *m, const int *tokens, int T, int chunk, const char *const *specs,
                      int n_specs, int layer, int head, float *S, float *z)
{
    if (!S || !z) return fail_msg(RN_EINPUT, "ramnet_head_state: no buffer for the state");
    if (m) { /* a head the model lacks: refused before the forward, in rn_runtime_head_state's words */
        const rn_config *c = &m->m.cfg;
        if (layer < 0 || layer >= c->n_layers || head < 0 || head >= c->n_heads) {
            char msg[96];
            snprintf(msg, sizeof msg, "head %d.%d: the model has %d layers of %d heads", layer, head, c->n_layers,
                     c->n_heads);
            return fail_msg(RN_EINPUT, msg);
        }
    }
    return run(m, tokens, T, NULL, chunk, specs, n_specs, 0, NULL, NULL, NULL, layer, head, S, z);
}

int ramnet_plot_patching(const ramnet_model *m, int n_rows, const int *layer, const int *head, const int *slot,
                         const double *recovered, int metric, int answer, const char *path)
{
    if (!m || n_rows < 0 || (n_rows && (!layer || !head || !slot || !recovered)) || !path)
        return fail_msg(RN_EINPUT, "ramnet_plot_patching: a bad argument");
    const rn_config *c = &m->m.cfg;
    if (metric < AN_METRIC_LOGIT_DIFF || metric > AN_METRIC_LOSS)
        return fail_msg(RN_EINPUT, "ramnet_plot_patching: metric is 0 (logit-diff), 1 (prob) or 2 (loss)");
    if (answer < 0 || answer >= c->vocab_size)
        return fail_msg(RN_EINPUT, "ramnet_plot_patching: the answer is outside the vocabulary");
    int64_t M = rn_config_slots(c);
    for (int i = 0; i < n_rows; i++)
        if (layer[i] < 0 || layer[i] >= c->n_layers || head[i] < 0 || head[i] >= c->n_heads || slot[i] < -1 ||
            slot[i] >= M) {
            char msg[160];
            snprintf(msg, sizeof msg, "ramnet_plot_patching: row %d names head %d.%d slot %d, not in the model", i,
                     layer[i], head[i], slot[i]);
            return fail_msg(RN_EINPUT, msg);
        }
    an_patch_result r = { .metric = metric, .answer = answer, .n_rows = n_rows };
    r.rows = calloc((size_t)n_rows + 1, sizeof *r.rows);
    if (!r.rows) return fail_msg(RN_ENOMEM, "out of memory");
    for (int i = 0; i < n_rows; i++)
        r.rows[i] = (an_patch_row){ .layer = layer[i], .head = head[i], .slot = slot[i], .rank = -1,
                                    .recovered = recovered[i] };
    rn_error err = { 0 };
    int rc = fig_patching(&r, c, path, &err);
    free(r.rows);
    return rc ? fail(&err) : RAMNET_OK;
}
