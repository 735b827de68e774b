/* an_patch.c — the head-patching sweep (see an_patch.h): one clean run
 * recording every head's output, one corrupted run, then one corrupted run
 * per head with that head patched from the clean recording. */
#include "an_patch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_intervene.h"
#include "rn_probe.h"
#include "rn_rows.h"
#include "rn_runtime.h"
#include "rn_tokenizer.h"

int an_metric_parse(const char *s, int *metric, rn_error *err)
{
    static const char *const names[] = { "logit-diff", "prob", "loss" };
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) { *metric = i; return RN_OK; }
    return rn_seterr(err, RN_EINPUT, "--metric: '%s' is not logit-diff, prob or loss", s);
}

const char *an_metric_name(int metric)
{
    return metric == AN_METRIC_PROB ? "prob" : metric == AN_METRIC_LOSS ? "loss" : "logit-diff";
}

int an_token_parse(const rn_config *c, const char *opt, const char *s, int *id, rn_error *err)
{
    long v = -1;
    char *end;
    if (s[0] == '#' || c->tokenizer == RN_TOK_IDS) {
        const char *p = s[0] == '#' ? s + 1 : s;
        v = strtol(p, &end, 10);
        if (end == p || *end) v = -2;
    } else if (c->tokenizer == RN_TOK_SPM) { /* the piece as traces show it; a piece before a byte token */
        char piece[256];
        v = -2;
        for (int i = c->vocab_size - 1; i >= 0 && v == -2; i--) {
            rn_token_piece(c, i, piece, sizeof piece);
            if (!strcmp(piece, s)) v = i;
        }
    } else if (!strcmp(s, "<bos>")) v = RN_BOS;
    else if (s[0] && !s[1]) v = (unsigned char)s[0];
    else if (!strcmp(s, "\\n")) v = '\n';
    else if (!strcmp(s, "\\t")) v = '\t';
    else if (!strcmp(s, "\\\\")) v = '\\';
    else v = -2;
    if (v == -2)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not one token (%s, or #ID)", opt, s,
                         c->tokenizer == RN_TOK_IDS ? "a decimal id" : c->tokenizer == RN_TOK_SPM
                         ? "a SentencePiece piece as traces show it" : "one byte, \\n, \\t, \\\\ or <bos>");
    if (v < 0 || v >= c->vocab_size)
        return rn_seterr(err, RN_EINPUT, "%s: id %ld is outside the vocabulary [0, %d)", opt, v, c->vocab_size);
    *id = (int)v;
    return RN_OK;
}

static double metric_of(const float *lg, int V, int metric, int answer, int wrong)
{
    if (metric == AN_METRIC_LOGIT_DIFF) return (double)lg[answer] - lg[wrong];
    double mx = lg[0], s = 0;
    for (int i = 1; i < V; i++) mx = fmax(mx, lg[i]);
    for (int i = 0; i < V; i++) s += exp((double)lg[i] - mx);
    double lp = (double)lg[answer] - mx - log(s);
    return metric == AN_METRIC_PROB ? exp(lp) : -lp;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Probe: the reads of the chosen heads at one position. */
typedef struct {
    int pos, n_heads;
    const int *layer, *head;
    uint32_t *slot;            /* [n_heads·K] */
    float *w;
} read_grab;

static void grab_reads(void *user, int layer, int head, int pos, int op, int k, const uint32_t *slot,
                       const uint32_t *addr, const float *weight)
{
    (void)addr;
    read_grab *g = user;
    if (op != RN_OP_READ || pos != g->pos) return;
    for (int i = 0; i < g->n_heads; i++)
        if (g->layer[i] == layer && g->head[i] == head) {
            memcpy(g->slot + (size_t)i * k, slot, sizeof *slot * k);
            memcpy(g->w + (size_t)i * k, weight, sizeof *weight * k);
        }
}

static int cmp_recovered_desc(const void *a, const void *b)
{
    double x = ((const an_patch_row *)a)->recovered, y = ((const an_patch_row *)b)->recovered;
    if (isnan(x)) x = -INFINITY;
    if (isnan(y)) y = -INFINITY;
    return (x < y) - (x > y);
}

/* The per-slot part of the sweep (see an_patch.h) for the nh heads that
 * recover most; rows are appended to out (room for nh·K more). */
static int patch_slots(const rn_model *m, rn_runtime *rt, const int *clean, const int *corrupt, int n,
                       int nh, float *lg, an_patch_result *out, rn_error *err)
{
    const rn_config *c = &m->cfg;
    const int K = c->top_k, dv = c->d_v, V = c->vocab_size;
    const int64_t M = rn_config_slots(c);
    an_patch_row *best = malloc(sizeof *best * out->n_rows);
    int *hl = malloc(sizeof(int) * nh * 2), *hh = hl ? hl + nh : NULL;
    uint32_t *slot = malloc(sizeof *slot * nh * K);
    float *rw = malloc(sizeof(float) * nh * K);
    /* per chosen head: the clean and corrupted states and the corrupted o */
    rn_real *Sc = malloc(sizeof(rn_real) * nh * M * (dv + 1)), *Sx = malloc(sizeof(rn_real) * nh * M * (dv + 1));
    rn_real *ox = malloc(sizeof(rn_real) * nh * (size_t)n * dv), *buf = malloc(sizeof(rn_real) * (size_t)n * dv);
    rn_iv_set iv;
    rn_iv_init(&iv, c);
    int rc = RN_OK;
    if (!best || !hl || !slot || !rw || !Sc || !Sx || !ox || !buf) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    memcpy(best, out->rows, sizeof *best * out->n_rows);
    qsort(best, out->n_rows, sizeof *best, cmp_recovered_desc);
    for (int i = 0; i < nh; i++) hl[i] = best[i].layer, hh[i] = best[i].head;
    /* clean: the chosen heads' states after the last position */
    rn_runtime_reset(rt);
    rn_runtime_set_interventions(rt, NULL, NULL);
    if ((rc = rn_prefill(rt, clean, n, NULL, 0, err))) goto done;
    for (int i = 0; i < nh; i++) {
        const rn_real *S, *z;
        if ((rc = rn_runtime_head_state(rt, hl[i], hh[i], &S, &z, err))) goto done;
        memcpy(Sc + (size_t)i * M * (dv + 1), S, sizeof(rn_real) * M * dv);
        memcpy(Sc + (size_t)i * M * (dv + 1) + M * dv, z, sizeof(rn_real) * M);
    }
    /* corrupted: states, reads at the last position and each head's o */
    rn_runtime_reset(rt);
    for (int i = 0; i < nh && !rc; i++) rc = rn_iv_add_buffer(&iv, 0, hl[i], hh[i], ox + (size_t)i * n * dv, n, err);
    read_grab g = { .pos = n - 1, .n_heads = nh, .layer = hl, .head = hh, .slot = slot, .w = rw };
    rn_probe probe = { .user = &g, .access = grab_reads };
    rn_runtime_set_probe(rt, &probe);
    if (!rc) rc = rn_runtime_set_interventions(rt, &iv, err);
    if (!rc) rc = rn_prefill(rt, corrupt, n, NULL, 0, err);
    rn_runtime_set_probe(rt, NULL);
    if (rc) goto done;
    out->forward_passes += 2;
    for (int i = 0; i < nh; i++) {
        const rn_real *S, *z;
        if ((rc = rn_runtime_head_state(rt, hl[i], hh[i], &S, &z, err))) goto done;
        memcpy(Sx + (size_t)i * M * (dv + 1), S, sizeof(rn_real) * M * dv);
        memcpy(Sx + (size_t)i * M * (dv + 1) + M * dv, z, sizeof(rn_real) * M);
    }
    double span = out->clean - out->corrupt;
    for (int i = 0; i < nh && !rc; i++) {
        const rn_real *sc = Sc + (size_t)i * M * (dv + 1), *zc = sc + M * dv;
        const rn_real *sx = Sx + (size_t)i * M * (dv + 1), *zx = sx + M * dv;
        for (int j = 0; j < K && !rc; j++) {
            uint32_t s = slot[(size_t)i * K + j];
            double r = rw[(size_t)i * K + j];
            memcpy(buf, ox + (size_t)i * n * dv, sizeof(rn_real) * (size_t)n * dv);
            rn_real *last = buf + (size_t)(n - 1) * dv;
            for (int d = 0; d < dv; d++)
                last[d] = (rn_real)(last[d] + r * ((double)sc[(size_t)s * dv + d] / ((double)zc[s] + c->eps) -
                                                   (double)sx[(size_t)s * dv + d] / ((double)zx[s] + c->eps)));
            rn_iv_free(&iv);
            rn_iv_init(&iv, c);
            rn_runtime_reset(rt);
            if ((rc = rn_iv_add_buffer(&iv, 1, hl[i], hh[i], buf, n, err)) ||
                (rc = rn_runtime_set_interventions(rt, &iv, err)) ||
                (rc = rn_prefill(rt, corrupt, n, lg, 0, err)))
                break;
            an_patch_row *row = &out->rows[out->n_rows++];
            row->layer = hl[i], row->head = hh[i], row->slot = (int)s, row->rank = j, row->r = r;
            row->metric = metric_of(lg, V, out->metric, out->answer, out->wrong);
            row->recovered = span != 0 ? (row->metric - out->corrupt) / span : NAN;
            out->forward_passes++;
        }
    }
done:
    rn_runtime_set_interventions(rt, NULL, NULL);
    rn_iv_free(&iv);
    free(best); free(hl); free(slot); free(rw); free(Sc); free(Sx); free(ox); free(buf);
    return rc;
}

int an_patch_heads(const rn_model *m, const int *clean, int n_clean, const int *corrupt,
                   int n_corrupt, int answer, int wrong, int metric, int slot_heads,
                   an_patch_result *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    const rn_config *c = &m->cfg;
    if (n_clean != n_corrupt)
        return rn_seterr(err, RN_EINPUT, "CLEAN has %d tokens and CORRUPT %d: patching needs inputs of the same length",
                         n_clean, n_corrupt);
    const int n = n_clean, L = c->n_layers, H = c->n_heads, V = c->vocab_size, dv = c->d_v;
    double t0 = mono();
    rn_real *rec = malloc(sizeof(rn_real) * (size_t)n * L * H * dv);
    float *lg = malloc(sizeof(float) * V);
    if (slot_heads < 0) slot_heads = 0;
    if (slot_heads > L * H) slot_heads = L * H;
    out->rows = malloc(sizeof *out->rows * (L * H + (size_t)slot_heads * c->top_k));
    rn_runtime *rt = NULL;
    rn_iv_set iv;
    rn_iv_init(&iv, c);
    int rc = RN_OK;
    if (!rec || !lg || !out->rows) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    if ((rc = rn_runtime_create(m, 256, &rt, err))) goto done;
    /* clean, recording every head */
    for (int l = 0; l < L && !rc; l++)
        for (int h = 0; h < H && !rc; h++)
            rc = rn_iv_add_buffer(&iv, 0, l, h, rec + ((size_t)l * H + h) * n * dv, n, err);
    if (rc || (rc = rn_runtime_set_interventions(rt, &iv, err)) ||
        (rc = rn_prefill(rt, clean, n, lg, 0, err)))
        goto done;
    rn_iv_free(&iv);
    rn_iv_init(&iv, c);
    float *lg_clean = malloc(sizeof(float) * V);
    if (!lg_clean) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    memcpy(lg_clean, lg, sizeof(float) * V);
    /* corrupted */
    rn_runtime_reset(rt);
    rn_runtime_set_interventions(rt, NULL, NULL);
    if ((rc = rn_prefill(rt, corrupt, n, lg, 0, err))) { free(lg_clean); goto done; }
    if (wrong < 0) {
        for (int i = 0; i < V; i++)
            if (i != answer && (wrong < 0 || lg[i] > lg[wrong])) wrong = i;
    }
    out->metric = metric, out->answer = answer, out->wrong = wrong, out->n_tokens = n;
    out->clean = metric_of(lg_clean, V, metric, answer, wrong);
    out->corrupt = metric_of(lg, V, metric, answer, wrong);
    free(lg_clean);
    out->forward_passes = 2;
    double span = out->clean - out->corrupt;
    for (int l = 0; l < L && !rc; l++)
        for (int h = 0; h < H && !rc; h++) {
            rn_iv_free(&iv);
            rn_iv_init(&iv, c);
            rn_runtime_reset(rt);
            if ((rc = rn_iv_add_buffer(&iv, 1, l, h, rec + ((size_t)l * H + h) * n * dv, n, err)) ||
                (rc = rn_runtime_set_interventions(rt, &iv, err)) ||
                (rc = rn_prefill(rt, corrupt, n, lg, 0, err)))
                break;
            an_patch_row *r = &out->rows[out->n_rows++];
            r->layer = l, r->head = h, r->slot = -1, r->rank = -1, r->r = NAN;
            r->metric = metric_of(lg, V, metric, answer, wrong);
            r->recovered = span != 0 ? (r->metric - out->corrupt) / span : NAN;
            out->forward_passes++;
        }
    if (!rc && slot_heads) rc = patch_slots(m, rt, clean, corrupt, n, slot_heads, lg, out, err);
    out->seconds = mono() - t0;
done:
    rn_runtime_free(rt);
    rn_iv_free(&iv);
    free(rec);
    free(lg);
    if (rc) an_patch_free(out);
    return rc;
}

void an_patch_free(an_patch_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

int an_patch_print(FILE *f, int fmt, const an_patch_result *r, const rn_config *c, rn_error *err)
{
    char pa[64], pw[64];
    rn_token_piece(c, r->answer, pa, sizeof pa);
    rn_token_piece(c, r->wrong, pw, sizeof pw);
    const rn_rows_opts embed = { .json_embed = 1 };
    if (fmt == RN_FMT_JSON) {
        fprintf(f, "{\"metric\": \"%s\", \"answer\": %d, \"answer_piece\": ", an_metric_name(r->metric), r->answer);
        rn_json_string(f, pa);
        fprintf(f, ", \"wrong\": %d, \"wrong_piece\": ", r->wrong);
        rn_json_string(f, pw);
        fprintf(f, ", \"tokens\": %d, \"clean\": ", r->n_tokens);
        json_num(f, r->clean);
        fputs(", \"corrupt\": ", f);
        json_num(f, r->corrupt);
        fprintf(f, ", \"forward_passes\": %d, \"rows\": ", r->forward_passes);
    } else if (fmt == RN_FMT_TABLE) {
        fprintf(f, "%s of '%s'", an_metric_name(r->metric), pa);
        if (r->metric == AN_METRIC_LOGIT_DIFF) fprintf(f, " vs '%s'", pw);
        fprintf(f, " at the last of %d positions: clean %.4g, corrupted %.4g; %d forward passes in %.3f s\n",
                r->n_tokens, r->clean, r->corrupt, r->forward_passes, r->seconds);
    }
    static const char *const cols[7] = { "layer", "head", "slot", "rank", "r", "metric", "recovered" };
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, 7, cols, fmt == RN_FMT_JSON ? &embed : NULL, err);
    if (rc) return rc;
    for (int i = 0; i < r->n_rows; i++) {
        const an_patch_row *p = &r->rows[i];
        int whole = p->slot < 0;
        rn_cell cl[7] = { rn_cell_int(p->layer), rn_cell_int(p->head),
                          whole ? rn_cell_null("") : rn_cell_int(p->slot),
                          whole ? rn_cell_null("") : rn_cell_int(p->rank),
                          whole ? rn_cell_null("") : rn_cell_real(p->r, "%.4g"),
                          rn_cell_real(p->metric, "%.6g"),
                          isfinite(p->recovered) ? rn_cell_real(p->recovered, "%.6g") : rn_cell_null("") };
        if (fmt == RN_FMT_TABLE) {
            if (whole) cl[2] = rn_cell_null("all"), cl[3] = rn_cell_null("-"), cl[4] = rn_cell_null("-");
            cl[5] = rn_cell_real(p->metric, "%.4f");
            if (isfinite(p->recovered)) cl[6] = rn_cell_real(100 * p->recovered, "%.1f%%");
        }
        if (rn_rows_add(&w, cl)) break;
    }
    rc = rn_rows_end(&w, err);
    if (!rc && fmt == RN_FMT_JSON) {
        fputs("}\n", f);
        if (fflush(f) || ferror(f)) rc = rn_seterr(err, RN_EIO, "writing the output failed");
    }
    return rc;
}
