/* test_patch.c — the head-patching sweep (analysis/an_patch.c): each row
 * against a corrupted run patched by hand with patch-head; identical
 * inputs recover nothing (NaN); the metrics against their definitions;
 * token and metric parsing; the command's output and errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_patch.h"
#include "rn_patch_source.h"
#include "rn_intervene.h"
#include "rn_model.h"
#include "rn_runtime.h"
#include "th.h"

enum { N = 30 };

static void make(rn_model *m)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 40, c.d_model = 24, c.n_layers = 2, c.n_heads = 3, c.d_p = 4, c.order = 2;
    c.d_v = 6, c.top_k = 3, c.d_ff = 32, c.gamma = 1, c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, &c, 3, &err), RN_OK);
    for (int64_t j = 0; j < m->n_block; j++) m->params[j] *= 20.0f;
}

/* The last row's logits of m over toks with one spec (NULL: none). */
static void logits_with(const rn_model *m, const int *toks, const char *spec, float *lg)
{
    rn_error err;
    rn_iv_set iv;
    rn_iv_init(&iv, &m->cfg);
    if (spec) CU_ASSERT_EQUAL_FATAL(rn_iv_add(&iv, spec, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_iv_prepare(&iv, m, &err), RN_OK);
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(m, 256, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_set_interventions(rt, &iv, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, toks, N, lg, 0, &err), RN_OK);
    rn_runtime_free(rt);
    rn_iv_free(&iv);
}

TH_TEST(test_patch_rows, "patch sweep: each row equals a hand-patched run; metrics by definition")
{
    rn_model m;
    make(&m);
    int clean[N], corrupt[N];
    char text[N * 4], path[512];
    size_t len = 0;
    for (int t = 0; t < N; t++) {
        clean[t] = (t * 11 + 2) % 40;
        corrupt[t] = t >= 10 && t < 14 ? (clean[t] + 17) % 40 : clean[t];
        len += (size_t)snprintf(text + len, sizeof text - len, "%d ", clean[t]);
    }
    snprintf(path, sizeof path, "%s", th_path("patch-clean.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(path, text, len), 0);
    float lc[40], lx[40], lp[40];
    logits_with(&m, clean, NULL, lc);
    logits_with(&m, corrupt, NULL, lx);
    for (int metric = 0; metric < 3; metric++) {
        an_patch_result r;
        rn_error err;
        CU_ASSERT_EQUAL_FATAL(an_patch_heads(&m, clean, N, corrupt, N, 5, metric ? 7 : -1, metric, 0, &r, &err), RN_OK);
        CU_ASSERT_EQUAL(r.n_rows, 6);
        CU_ASSERT_EQUAL(r.forward_passes, 8);
        if (metric == AN_METRIC_LOGIT_DIFF) {
            int best = -1;
            for (int i = 0; i < 40; i++) if (i != 5 && (best < 0 || lx[i] > lx[best])) best = i;
            CU_ASSERT_EQUAL(r.wrong, best);
            CU_ASSERT_DOUBLE_EQUAL(r.clean, (double)lc[5] - lc[best], 1e-4);
        } else {
            double s = 0;
            for (int i = 0; i < 40; i++) s += exp((double)lx[i]);
            double p = exp((double)lx[5]) / s;
            CU_ASSERT_DOUBLE_EQUAL(r.corrupt, metric == AN_METRIC_PROB ? p : -log(p), 1e-6 * (1 + fabs(log(p))));
        }
        double moved = 0;
        for (int i = 0; i < r.n_rows; i++) {
            char spec[600];
            snprintf(spec, sizeof spec, "patch-head %d.%d from %s", r.rows[i].layer, r.rows[i].head, path);
            logits_with(&m, corrupt, spec, lp);
            double want;
            if (metric == AN_METRIC_LOGIT_DIFF) want = (double)lp[5] - lp[r.wrong];
            else {
                double s = 0;
                for (int k = 0; k < 40; k++) s += exp((double)lp[k]);
                want = metric == AN_METRIC_PROB ? exp((double)lp[5]) / s : -log(exp((double)lp[5]) / s);
            }
            CU_ASSERT(fabs(r.rows[i].metric - want) < 1e-4 * (1 + fabs(want)));
            CU_ASSERT(fabs(r.rows[i].recovered - (want - r.corrupt) / (r.clean - r.corrupt)) < 1e-3);
            moved = fmax(moved, fabs(r.rows[i].recovered));
        }
        CU_ASSERT(moved > 1e-3);
        an_patch_free(&r);
    }
    an_patch_result r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_patch_heads(&m, clean, N, clean, N, 5, -1, 0, 2, &r, &err), RN_OK);
    CU_ASSERT(r.clean == r.corrupt);
    CU_ASSERT_EQUAL(r.n_rows, 6 + 2 * 3);
    for (int i = 0; i < r.n_rows; i++) CU_ASSERT(isnan(r.rows[i].recovered) && fabs(r.rows[i].metric - r.clean) < 1e-5);
    an_patch_free(&r);
    CU_ASSERT_EQUAL(an_patch_heads(&m, clean, N, corrupt, N - 1, 5, -1, 0, 0, &r, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "same length"));
    rn_model_free(&m);
}

/* Probe: the writes and reads of every head at one position. */
typedef struct { int pos; uint32_t w[2][3][3], r[2][3][3]; float rw[2][3][3]; } last_access;

static void grab(void *user, int layer, int head, int pos, int op, int k, const uint32_t *slot,
                 const uint32_t *addr, const float *weight)
{
    (void)addr;
    last_access *a = user;
    if (pos != a->pos) return;
    for (int j = 0; j < k; j++) {
        if (op == 0) a->w[layer][head][j] = slot[j];
        else a->r[layer][head][j] = slot[j], a->rw[layer][head][j] = weight[j];
    }
}

TH_TEST(test_patch_slots, "patch sweep per slot: the read slots of the best heads; state surgery agrees")
{
    rn_model m;
    make(&m);
    int clean[N], corrupt[N];
    for (int t = 0; t < N; t++) {
        clean[t] = (t * 11 + 2) % 40;
        corrupt[t] = t >= 8 && t < 16 ? (clean[t] + 13) % 40 : clean[t];
    }
    an_patch_result r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_patch_heads(&m, clean, N, corrupt, N, 5, -1, AN_METRIC_LOGIT_DIFF, 2, &r, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(r.n_rows, 6 + 2 * 3);
    CU_ASSERT_EQUAL(r.forward_passes, 8 + 2 + 6);
    /* the two best heads, by recovered */
    double lo = INFINITY;
    for (int k = 0; k < 6; k++)
        if ((r.rows[k].layer == r.rows[6].layer && r.rows[k].head == r.rows[6].head) ||
            (r.rows[k].layer == r.rows[9].layer && r.rows[k].head == r.rows[9].head))
            lo = fmin(lo, r.rows[k].recovered);
    for (int k = 0; k < 6; k++)
        if (!((r.rows[k].layer == r.rows[6].layer && r.rows[k].head == r.rows[6].head) ||
              (r.rows[k].layer == r.rows[9].layer && r.rows[k].head == r.rows[9].head)))
            CU_ASSERT(r.rows[k].recovered <= lo);
    /* the corrupted run's accesses at the last position, and the clean state */
    last_access acc = { .pos = N - 1 };
    rn_probe probe = { .user = &acc, .access = grab };
    rn_runtime *rc_, *rx;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 64, &rc_, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 64, &rx, &err), RN_OK);
    rn_runtime_set_probe(rx, &probe);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rx, corrupt, N, NULL, 0, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rc_, clean, N, NULL, 0, &err), RN_OK);
    int surgeries = 0;
    for (int i = 6; i < r.n_rows; i++) {
        const an_patch_row *p = &r.rows[i];
        CU_ASSERT_EQUAL(p->slot, (int)acc.r[p->layer][p->head][p->rank]);
        CU_ASSERT_DOUBLE_EQUAL(p->r, acc.rw[p->layer][p->head][p->rank], 1e-7);
        /* a slot the corrupted token does not write at the last position:
         * its state at the read is the state before that step, so setting
         * it to the clean state there and stepping gives the row's run */
        int written = 0;
        for (int j = 0; j < 3; j++) written |= acc.w[p->layer][p->head][j] == (uint32_t)p->slot;
        if (written) continue;
        rn_runtime *ry;
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 64, &ry, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_prefill(ry, corrupt, N - 1, NULL, 0, &err), RN_OK);
        const float *Sc, *zc, *Sy, *zy;
        rn_runtime_head_state(rc_, p->layer, p->head, &Sc, &zc, &err);
        rn_runtime_head_state(ry, p->layer, p->head, &Sy, &zy, &err);
        memcpy((float *)Sy + p->slot * m.cfg.d_v, Sc + p->slot * m.cfg.d_v, sizeof(float) * m.cfg.d_v);
        ((float *)zy)[p->slot] = zc[p->slot];
        float lg[40];
        CU_ASSERT_EQUAL_FATAL(rn_step(ry, corrupt[N - 1], lg, &err), RN_OK);
        double want = (double)lg[5] - lg[r.wrong];
        CU_ASSERT(fabs(p->metric - want) < 1e-3 * (1 + fabs(want)));
        surgeries++;
        rn_runtime_free(ry);
    }
    CU_ASSERT(surgeries >= 2);
    rn_runtime_free(rc_);
    rn_runtime_free(rx);
    an_patch_free(&r);
    rn_model_free(&m);
}

TH_TEST(test_patch_parse, "patch: tokens and metrics from the command line")
{
    rn_config c;
    rn_config_default(&c);
    int id, metric;
    rn_error err;
    CU_ASSERT(c.tokenizer == RN_TOK_BYTES);
    CU_ASSERT(!an_token_parse(&c, "--answer", "e", &id, &err) && id == 'e');
    CU_ASSERT(!an_token_parse(&c, "--answer", " ", &id, &err) && id == ' ');
    CU_ASSERT(!an_token_parse(&c, "--answer", "\\n", &id, &err) && id == '\n');
    CU_ASSERT(!an_token_parse(&c, "--answer", "#200", &id, &err) && id == 200);
    CU_ASSERT(!an_token_parse(&c, "--answer", "<bos>", &id, &err) && id == 256);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--answer", "ab", &id, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--answer: 'ab' is not one token"));
    CU_ASSERT_EQUAL(an_token_parse(&c, "--wrong", "#100000", &id, &err), RN_EINPUT);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--wrong", "", &id, &err), RN_EINPUT);
    c.tokenizer = RN_TOK_IDS;
    CU_ASSERT(!an_token_parse(&c, "--answer", "17", &id, &err) && id == 17);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--answer", "x", &id, &err), RN_EINPUT);
    CU_ASSERT(!an_metric_parse("loss", &metric, &err) && metric == AN_METRIC_LOSS);
    CU_ASSERT_EQUAL(an_metric_parse("kl", &metric, &err), RN_EINPUT);
}

TH_TEST(test_patch_cli, "patch command: table, CSV, JSON; errors exit 2")
{
    char a[512], b[512], d[512];
    snprintf(a, sizeof a, "%s", th_path("pc-clean.txt"));
    snprintf(b, sizeof b, "%s", th_path("pc-corrupt.txt"));
    snprintf(d, sizeof d, "%s", th_path("pc-short.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(a, "And God saw the light. And G", 28), 0);
    CU_ASSERT_EQUAL_FATAL(th_write_file(b, "And Lot saw the light. And G", 28), 0);
    CU_ASSERT_EQUAL_FATAL(th_write_file(d, "And Lot", 7), 0);
    CU_ASSERT_EQUAL(th_run("%s patch --help", th_bin()), 0);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o", th_bin(), a, b), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "44 forward passes"));
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 3 + 16 + 3 * 8);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --slot-heads 0", th_bin(), a, b), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "18 forward passes"));
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 3 + 16);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --metric prob -f csv", th_bin(), a, b), 0);
    CU_ASSERT(!strncmp(th_out(), "layer,head,slot,rank,r,metric,recovered\n0,0,,,,", 47));
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --wrong ' ' -f json", th_bin(), a, b), 0);
    CU_ASSERT(!strncmp(th_out(), "{\"metric\": \"logit-diff\", \"answer\": 111, \"answer_piece\": \"o\", \"wrong\": 32,", 72));
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o", th_bin(), a, d), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s", th_bin(), a, b), 2);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer oo", th_bin(), a, b), 2);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --metric kl", th_bin(), a, b), 2);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --wrong o", th_bin(), a, b), 2);
    char png[512];
    snprintf(png, sizeof png, "%s", th_path("patch.png"));
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --slot-heads 1 --plot %s", th_bin(), a, b, png), 0);
    size_t len = 0;
    char *img = th_read_file(png, &len);
    CU_ASSERT(img && len > 1000 && !memcmp(img, "\x89PNG", 4));
    free(img);
    CU_ASSERT_EQUAL(th_run("%s patch samples/kjv.bin %s %s --answer o --plot %s.gif", th_bin(), a, b, png), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    /* plot patching: the same figure, no table; -o names the figure */
    char png2[512];
    snprintf(png2, sizeof png2, "%s", th_path("plot-patching.png"));
    CU_ASSERT_EQUAL(th_run("%s plot patching samples/kjv.bin %s %s --answer o --slot-heads 1 -o %s", th_bin(), a, b, png2), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "");
    CU_ASSERT(th_files_equal(png, png2));
    CU_ASSERT_EQUAL(th_run("%s plot patching samples/kjv.bin %s %s --answer o", th_bin(), a, b), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "plot patching: -o FILE"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s plot patching --help", th_bin()), 0);
}

/* Probe: the read slot (K = 1) of head 0.0 at one position, and the write
 * slot of every position. */
typedef struct { int pos; uint32_t read; uint32_t wrote[64]; } one_slot;

static void grab_one(void *user, int layer, int head, int pos, int op, int k, const uint32_t *slot,
                     const uint32_t *addr, const float *weight)
{
    (void)addr, (void)weight, (void)k;
    one_slot *a = user;
    if (layer || head) return;
    if (op == 0 && pos < 64) a->wrote[pos] = slot[0];
    if (op == 1 && pos == a->pos) a->read = slot[0];
}

/* The per-slot rows' value and sign by hand.  One layer, one head, K = 1,
 * no CAPE: the last position's logits depend on the earlier tokens only
 * through the one slot s its query reads (the query itself depends on the
 * last token only, the same in both runs, so the slot and its weight r are
 * the same).  The inputs differ at one earlier position, where the clean
 * token writes s and the corrupted one does not: the states differ at s.
 * Restoring s's state at the read makes o = r·S_clean[s]/(z_clean[s] + ε),
 * the clean run's o, so the logits are the clean ones: the slot row
 * recovers +1 (100%), its metric is the clean metric, and so is the
 * whole-head row's.  A patch the wrong way round, or a recovered measured
 * from the clean end, gives -1 or another value. */
TH_TEST(test_patch_slot_recovered, "patch per slot: the one slot a single-head model reads recovers +1 (by hand)")
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 40, c.d_model = 24, c.n_layers = 1, c.n_heads = 1, c.d_p = 4, c.order = 2;
    c.d_v = 6, c.top_k = 1, c.d_ff = 32, c.gamma = 1, c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    rn_model m;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 7, &err), RN_OK);
    for (int64_t j = 0; j < m.n_block; j++) m.params[j] *= 20.0f;
    enum { T = 12 };
    int clean[T], corrupt[T];
    for (int t = 0; t < T; t++) clean[t] = (t * 7 + 3) % 40;
    /* the slot the last token reads, and each token's write slot (the
     * write address of a 1-layer model depends on the token alone) */
    one_slot a = { .pos = T - 1 };
    rn_probe probe = { .user = &a, .access = grab_one };
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 64, &rt, &err), RN_OK);
    rn_runtime_set_probe(rt, &probe);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, clean, T, NULL, 0, &err), RN_OK);
    uint32_t s = a.read, wslot[40];
    for (int tok = 0; tok < 40; tok++) {
        rn_runtime_reset(rt);
        CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, &tok, 1, NULL, 0, &err), RN_OK);
        wslot[tok] = a.wrote[0];
    }
    rn_runtime_free(rt);
    /* position 4: a token that writes s (clean), one that does not (corrupt) */
    int yes = -1, no = -1;
    for (int tok = 0; tok < 40; tok++) {
        if (wslot[tok] == s && yes < 0) yes = tok;
        if (wslot[tok] != s && no < 0) no = tok;
    }
    CU_ASSERT_FATAL(yes >= 0 && no >= 0);
    memcpy(corrupt, clean, sizeof clean);
    clean[4] = yes;
    corrupt[4] = no;
    an_patch_result r;
    CU_ASSERT_EQUAL_FATAL(an_patch_heads(&m, clean, T, corrupt, T, 5, 7, AN_METRIC_LOGIT_DIFF, 1, &r, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(r.n_rows, 2);
    /* the inputs do differ at the last position's logits */
    CU_ASSERT_FATAL(fabs(r.clean - r.corrupt) > 0.1);
    const an_patch_row *head = &r.rows[0], *slot = &r.rows[1];
    CU_ASSERT(head->slot == -1 && slot->slot == (int)s && slot->rank == 0);
    /* tolerances: float logits of size |clean|, well inside the distance to -1 or 0 */
    double tol = 1e-3 * (1 + fabs(r.clean)) / fabs(r.clean - r.corrupt);
    if (fabs(slot->recovered - 1) > tol)
        fprintf(stderr, "\nclean %g corrupt %g slot metric %g recovered %g", r.clean, r.corrupt, slot->metric,
                slot->recovered);
    CU_ASSERT(fabs(head->recovered - 1) <= tol);
    CU_ASSERT(fabs(slot->recovered - 1) <= tol);
    CU_ASSERT(fabs(slot->metric - r.clean) <= 1e-3 * (1 + fabs(r.clean)));
    an_patch_free(&r);
    rn_model_free(&m);
}
