/* an_slots.c — what each slot of a head holds: the writes that made it,
 * its state and the logit lens of its content (see an_slots.h). */
#include "an_slots.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_layers.h"
#include "rn_lens.h"
#include "rn_probe.h"
#include "rn_rows.h"
#include "rn_runtime.h"
#include "rn_tokenizer.h"

/* The probe's collector: the writes of one head, preallocated for every
 * position (nothing allocates while the model runs). */
typedef struct {
    int layer, head;
    an_slot_write *w;
    uint32_t *slot;
    size_t n, cap;
} collector;

static void collect(void *user, int layer, int head, int pos, int op, int k, const uint32_t *slot,
                    const uint32_t *addr, const float *weight)
{
    (void)addr;
    collector *c = user;
    if (layer != c->layer || head != c->head || op != RN_OP_WRITE) return;
    for (int j = 0; j < k && c->n < c->cap; j++, c->n++) {
        c->w[c->n] = (an_slot_write){ .pos = pos, .rank = j, .w = weight[j] };
        c->slot[c->n] = slot[j];
    }
}

/* Sort order of the collected writes: by slot, then position. */
typedef struct { uint32_t slot; an_slot_write w; } keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return (x->w.pos > y->w.pos) - (x->w.pos < y->w.pos);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int an_slots_compute(const rn_model *m, const int *toks, int n, int layer, int head, int at,
                     int n_top, an_slots *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    const rn_config *c = &m->cfg;
    if (layer < 0 || layer >= c->n_layers)
        return rn_seterr(err, RN_EINPUT, "--layer: %d is not a layer of the model (0..%d)", layer, c->n_layers - 1);
    if (head < 0 || head >= c->n_heads)
        return rn_seterr(err, RN_EINPUT, "--head: %d is not a head of the model (0..%d)", head, c->n_heads - 1);
    if (at < 0) at = n - 1;
    if (at >= n)
        return rn_seterr(err, RN_EINPUT, "--at: position %d is past the input's last position %d", at, n - 1);
    if (n_top < 1 || n_top > c->vocab_size)
        return rn_seterr(err, RN_EINPUT, "--top: %d is outside [1, %d]", n_top, c->vocab_size);
    double t0 = mono();
    const int K = c->top_k, dv = c->d_v, D = c->d_model, V = c->vocab_size;
    const int64_t M = rn_config_slots(c);
    out->layer = layer, out->head = head, out->at = at, out->n_top = n_top, out->M = M;
    collector col = { .layer = layer, .head = head, .cap = (size_t)(at + 1) * K };
    keyed *kw = NULL;
    rn_real *scratch = NULL;
    rn_runtime *rt = NULL;
    col.w = malloc(sizeof *col.w * col.cap);
    col.slot = malloc(sizeof *col.slot * col.cap);
    out->tokens = malloc(sizeof(int) * (at + 1));
    scratch = malloc(sizeof(rn_real) * ((size_t)2 * D + V + dv));
    int rc = RN_OK;
    if (!col.w || !col.slot || !out->tokens || !scratch) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    memcpy(out->tokens, toks, sizeof(int) * (at + 1));
    if ((rc = rn_runtime_create(m, 256, &rt, err))) goto done;
    rn_probe probe = { .user = &col, .access = collect };
    rn_runtime_set_probe(rt, &probe);
    if ((rc = rn_prefill(rt, toks, at + 1, NULL, 0, err))) goto done;
    const rn_real *S, *z;
    if ((rc = rn_runtime_head_state(rt, layer, head, &S, &z, err))) goto done;

    /* Group the writes by slot. */
    if (!(kw = malloc(sizeof *kw * (col.n ? col.n : 1)))) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    for (size_t i = 0; i < col.n; i++) {
        kw[i].slot = col.slot[i];
        kw[i].w = col.w[i];
        kw[i].w.token = toks[col.w[i].pos];
    }
    qsort(kw, col.n, sizeof *kw, cmp_keyed);
    size_t ns = 0;
    for (size_t i = 0; i < col.n; i++) ns += !i || kw[i].slot != kw[i - 1].slot;
    out->slots = calloc(ns ? ns : 1, sizeof *out->slots);
    out->writes = malloc(sizeof *out->writes * (col.n ? col.n : 1));
    out->top_ids = malloc(sizeof(int) * (ns ? ns : 1) * n_top);
    out->top_logits = malloc(sizeof(float) * (ns ? ns : 1) * n_top);
    if (!out->slots || !out->writes || !out->top_ids || !out->top_logits) {
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
        goto done;
    }
    out->n_writes = col.n;
    rn_real *lens_x = scratch, *logits = scratch + 2 * D, *vec = logits + V;
    int *top = out->top_ids;
    size_t si = 0;
    for (size_t i = 0; i < col.n; si++) {
        size_t j = i;
        while (j < col.n && kw[j].slot == kw[i].slot) j++;
        an_slot *sl = &out->slots[si];
        uint32_t s = kw[i].slot;
        sl->slot = s, sl->first = i, sl->n_writes = j - i, sl->z = z[s], sl->top = si * n_top;
        const rn_real *row = S + (size_t)s * dv;
        double nn = 0;
        for (int d = 0; d < dv; d++) nn += (double)row[d] * row[d];
        sl->norm = sqrt(nn);
        /* Walk the slot's writes backwards, carrying the product of the
         * later writes' decays. */
        double Dk = 1;
        for (size_t k = j; k-- > i;) {
            out->writes[k] = kw[k].w;
            out->writes[k].share = kw[k].w.w * Dk / z[s];
            Dk *= rn_pdma_decay((rn_real)kw[k].w.w, c->gamma);
        }
        sl->prior_share = Dk / (double)M / z[s];
        rn_real inv = 1 / (z[s] + c->eps);
        for (int d = 0; d < dv; d++) vec[d] = row[d] * inv;
        rn_lens_head(m, layer, head, vec, lens_x, logits);
        rn_top_indices(logits, V, n_top, top + sl->top);
        for (int k = 0; k < n_top; k++) out->top_logits[sl->top + k] = logits[top[sl->top + k]];
        i = j;
    }
    out->n_slots = ns;
    out->seconds = mono() - t0;
done:
    rn_runtime_free(rt);
    free(col.w);
    free(col.slot);
    free(kw);
    free(scratch);
    if (rc) an_slots_free(out);
    return rc;
}

void an_slots_free(an_slots *s)
{
    free(s->slots);
    free(s->writes);
    free(s->top_ids);
    free(s->top_logits);
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

static int cmp_share_desc(const void *a, const void *b)
{
    double x = ((const an_slot_write *)a)->share, y = ((const an_slot_write *)b)->share;
    return (x < y) - (x > y);
}

/* Append printf output to a growing text buffer (false: out of memory). */
static int cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return 0;
        if (*buf && *len + (size_t)k < *cap) { *len += (size_t)k; return 1; }
        size_t nc = (*cap ? *cap * 2 : 256) + (size_t)k;
        char *nb = realloc(*buf, nc);
        if (!nb) return 0;
        *buf = nb, *cap = nc;
    }
}

int an_slots_print(FILE *f, int fmt, const an_slots *s, const rn_config *cfg, int max_writers,
                   rn_error *err)
{
    char piece[64];
    an_slot_write *by_share = malloc(sizeof *by_share * (s->n_writes ? s->n_writes : 1));
    if (!by_share) return rn_seterr(err, RN_ENOMEM, "out of memory");
    if (fmt == RN_FMT_JSON) {
        fprintf(f, "{\"layer\": %d, \"head\": %d, \"at\": %d, \"slots_written\": %zu, \"slots\": [", s->layer,
                s->head, s->at, s->n_slots);
        for (size_t i = 0; i < s->n_slots; i++) {
            const an_slot *sl = &s->slots[i];
            fprintf(f, "%s\n  {\"slot\": %u, \"norm\": %.6g, \"z\": %.6g, \"prior_share\": %.6g, \"writes\": [",
                    i ? "," : "", sl->slot, sl->norm, sl->z, sl->prior_share);
            for (size_t k = 0; k < sl->n_writes; k++) {
                const an_slot_write *w = &s->writes[sl->first + k];
                rn_token_piece(cfg, w->token, piece, sizeof piece);
                fprintf(f, "%s{\"pos\": %d, \"token\": %d, \"piece\": ", k ? ", " : "", w->pos, w->token);
                rn_json_string(f, piece);
                fprintf(f, ", \"rank\": %d, \"w\": %.6g, \"share\": %.6g}", w->rank, w->w, w->share);
            }
            fputs("], \"promotes\": [", f);
            for (int k = 0; k < s->n_top; k++) {
                int id = s->top_ids[sl->top + k];
                rn_token_piece(cfg, id, piece, sizeof piece);
                fprintf(f, "%s{\"token\": %d, \"piece\": ", k ? ", " : "", id);
                rn_json_string(f, piece);
                fprintf(f, ", \"logit\": %.6g}", s->top_logits[sl->top + k]);
            }
            fputs("]}", f);
        }
        fputs(s->n_slots ? "\n]}\n" : "]}\n", f);
        free(by_share);
        if (fflush(f) || ferror(f)) return rn_seterr(err, RN_EIO, "writing the output failed");
        return RN_OK;
    }
    static const char *const cols[7] = { "slot", "writes", "norm", "z", "prior", "written by (pos token share)", "promotes (token logit)" };
    static const char *const csv_cols[7] = { "slot", "writes", "norm", "z", "prior_share", "writers", "promotes" };
    if (fmt == RN_FMT_TABLE)
        fprintf(f, "layer %d head %d after position %d: %zu of %lld slots written\n", s->layer, s->head,
                s->at, s->n_slots, (long long)s->M);
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, 7, fmt == RN_FMT_TABLE ? cols : csv_cols, NULL, err);
    if (rc) { free(by_share); return rc; }
    char *wb = NULL, *pb = NULL;
    size_t wcap = 0, pcap = 0;
    for (size_t i = 0; i < s->n_slots && !rc; i++) {
        const an_slot *sl = &s->slots[i];
        size_t wl = 0, pl = 0, nw = sl->n_writes;
        memcpy(by_share, s->writes + sl->first, sizeof *by_share * nw);
        qsort(by_share, nw, sizeof *by_share, cmp_share_desc);
        size_t shown = fmt == RN_FMT_TABLE && max_writers > 0 && (size_t)max_writers < nw ? (size_t)max_writers : nw;
        int ok = cat(&wb, &wl, &wcap, "%s", "");
        for (size_t k = 0; k < shown && ok; k++) {
            rn_token_piece(cfg, by_share[k].token, piece, sizeof piece);
            ok = cat(&wb, &wl, &wcap, "%s%d '%s' %.3f", k ? ", " : "", by_share[k].pos, piece, by_share[k].share);
        }
        if (ok && shown < nw) ok = cat(&wb, &wl, &wcap, ", +%zu", nw - shown);
        ok = ok && cat(&pb, &pl, &pcap, "%s", "");
        for (int k = 0; k < s->n_top && ok; k++) {
            rn_token_piece(cfg, s->top_ids[sl->top + k], piece, sizeof piece);
            ok = cat(&pb, &pl, &pcap, "%s'%s' %.2f", k ? ", " : "", piece, s->top_logits[sl->top + k]);
        }
        if (!ok) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
        rn_cell cl[7] = { rn_cell_uint(sl->slot), rn_cell_uint(nw), rn_cell_real(sl->norm, "%.4g"),
                          rn_cell_real(sl->z, "%.4g"), rn_cell_real(sl->prior_share, "%.3g"),
                          rn_cell_qtext(wb), rn_cell_qtext(pb) };
        if (fmt == RN_FMT_TABLE) cl[5] = rn_cell_text(wb), cl[6] = rn_cell_text(pb);
        if (rn_rows_add(&w, cl)) break;
    }
    free(wb);
    free(pb);
    free(by_share);
    int erc = rn_rows_end(&w, rc ? NULL : err);
    return rc ? rc : erc;
}
