/* case_kernel.c — the functional-roles part of docs/case-study-kernel-lm.md:
 * do the slots a kernel-C language model reads when it is about to close a
 * brace (or a parenthesis) hold what the matching opener wrote, and does
 * the closer's probability depend on them?
 *
 * The held-out text is cut into windows of whole lines of at most 256
 * tokens (the training length; each window a fresh sequence, BOS first, as
 * `ramtrace trace` reads a file).  A small C lexer (comments, string and
 * character literals skipped) matches every '}' to its '{' and every ')'
 * to its '(' inside the window.  A query is a position p whose next token
 * (the target, t[p+1]) holds a closer whose opener's token o <= p.  Per
 * head, from the accesses (the probe: the events a trace records):
 *   - the opener slots: the slots the head wrote at o; whether it reads any
 *     of them at p, the top-ranked one, and their share of the read weight;
 *   - the opener's share of the read at p, as `ramtrace attribute` splits a
 *     read into the writes it returns (read_shares), against the mean share
 *     of the other openers of that kind before p and of every token <= p;
 *   - the direct logit lens (rn_lens_head) of each read slot's state at p:
 *     the target's rank, opener slots against the other read slots.
 * Tracking heads, by a rule fixed before the study was run on a trained
 * model: the opener's share at least twice the other openers' and at
 * least 1 point above it.
 * Causally, per query: ablate-slots of the opener slots read at p, in every
 * head and in the tracking heads, for the whole window or only at the
 * opener (reset there, its writes dropped), against the MQAR study's two
 * controls of as many slots per head: other slots read at p, at random
 * (only where there are as many); slots the head reads elsewhere in the
 * window that the opener did not write, at random.  The measure is
 * log P(target at p), ablated minus clean.
 *
 * usage: case_kernel MODEL INPUT.txt OUT_DIR [WINDOWS [MAXQ [SEED]]]
 *   defaults: 64 windows, at most 300 queries a kind, seed 1.
 * Prints the tables (Markdown); writes OUT_DIR/kernel-roles.csv (one row a
 * query and arm), OUT_DIR/kernel-roles.png (the sorted changes per arm),
 * OUT_DIR/win/wNNN.txt (the windows), OUT_DIR/kernel-pairs.txt (brace
 * opener/query pairs for `ramtrace overlap`) and
 * OUT_DIR/kernel-example.sh (one brace query, for `slots` and `attribute`).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rn_intervene.h"
#include "rn_layers.h"
#include "rn_lens.h"
#include "rn_modelfile.h"
#include "rn_probe.h"
#include "rn_rng.h"
#include "rn_runtime.h"
#include "rn_spm.h"
#include "rn_tokenizer.h"
#include "study_probe.h"
#include "viz_lineplot.h"
#include "viz_style.h"
#include "viz_surface.h"

#define WIN 256
#define MAXHEADS 256
enum { KIND_BRACE, KIND_PAREN, NKIND };
static const char *kind_name[NKIND] = { "brace", "paren" };
static const char kind_open[NKIND] = { '{', '(' }, kind_close[NKIND] = { '}', ')' };
/* An arm: which heads (every head, the tracking heads), when (the whole
 * window, or only at the opener: reset there and its writes dropped), and
 * which slots (the opener's read slots, or a control). */
enum { NSET = 2, NWHEN = 2, NCTRL = 3, NARM = NSET * NWHEN * NCTRL };
static const char *set_name[NSET] = { "every head", "tracking heads" };
static const char *when_name[NWHEN] = { "whole window", "at the opener" };
static const char *ctrl_name[NCTRL] = { "opener slots read at p", "as many other slots read at p",
                                        "as many slots read elsewhere in the window" };

typedef struct { int o, p; } query;

/* The per-head sums of pass 1 (means over the queries). */
enum { S_INCL, S_TOP, S_WEIGHT, S_ATTR, S_ATTR_OTHER, S_ATTR_TOKEN, S_LENS_OPEN, S_LENS_OTHER, NS_STATS };

static void die(const rn_error *e)
{
    fprintf(stderr, "case_kernel: %s\n", e->msg);
    exit(e->code == RN_EINPUT ? 2 : 1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "case_kernel: out of memory\n"); exit(1); }
    return p;
}

/* The bytes token id stands for (spm), or the byte itself (bytes). */
static const char *token_bytes(const rn_config *c, int id, size_t *len)
{
    static char one[1];
    if (c->tokenizer == RN_TOK_SPM) {
        const rn_spm *s;
        rn_error err;
        if (rn_spm_get(c->tok_file, &s, &err)) die(&err);
        return rn_spm_token_bytes(s, id, len);
    }
    one[0] = (char)id;
    *len = id < 256 ? 1 : 0;
    return one;
}

/* Match closers to openers in the window's text (the tokens' bytes), C
 * comments and literals skipped; per kind, the queries (opener token o,
 * position p = closer token - 1) with o <= p, the first closer of a token
 * only.  Also every opener token of each kind, in order. */
static int find_queries(const rn_config *c, const int *toks, int n, int kind, query *q, int *opener, int *n_open)
{
    char *text = NULL;
    int *tok_of = NULL;
    size_t len = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        size_t got = 0;
        const char *bytes = token_bytes(c, toks[i], &got);
        if (!got) continue;
        if (len + got > cap) {
            cap = (len + got) * 2 + 64;
            text = realloc(text, cap);
            tok_of = realloc(tok_of, cap * sizeof *tok_of);
            if (!text || !tok_of) { fprintf(stderr, "case_kernel: out of memory\n"); exit(1); }
        }
        memcpy(text + len, bytes, got);
        for (size_t j = 0; j < got; j++) tok_of[len + j] = i;
        len += got;
    }
    int stack[WIN * 8], sp = 0, nq = 0, last_closer_tok = -1;
    *n_open = 0;
    enum { NORMAL, LINE_COMMENT, BLOCK_COMMENT, STR, CHR } st = NORMAL;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i], nx = i + 1 < len ? text[i + 1] : 0;
        switch (st) {
        case LINE_COMMENT: if (ch == '\n') st = NORMAL; continue;
        case BLOCK_COMMENT: if (ch == '*' && nx == '/') { st = NORMAL; i++; } continue;
        case STR: if (ch == '\\') i++; else if (ch == '"' || ch == '\n') st = NORMAL; continue;
        case CHR: if (ch == '\\') i++; else if (ch == '\'' || ch == '\n') st = NORMAL; continue;
        case NORMAL: break;
        }
        if (ch == '/' && nx == '/') { st = LINE_COMMENT; i++; continue; }
        if (ch == '/' && nx == '*') { st = BLOCK_COMMENT; i++; continue; }
        if (ch == '"') { st = STR; continue; }
        if (ch == '\'') { st = CHR; continue; }
        if (ch == kind_open[kind]) {
            if (sp < (int)(sizeof stack / sizeof *stack)) stack[sp++] = tok_of[i];
            if (!*n_open || opener[*n_open - 1] != tok_of[i]) opener[(*n_open)++] = tok_of[i];
        } else if (ch == kind_close[kind] && sp > 0) {
            int o = stack[--sp], ct = tok_of[i];
            if (ct != last_closer_tok && ct >= 1 && o <= ct - 1) q[nq++] = (query){ o, ct - 1 };
            last_closer_tok = ct;
        }
    }
    free(text);
    free(tok_of);
    return nq;
}

/* The share of head hd's read at p that each earlier token's write
 * contributes, as `ramtrace attribute` splits it: for each slot s the head
 * reads (weight r), a write w at t' <= p contributes w·D/(z + eps), D the
 * decays (1 - w')^gamma of the later writes to s up to p and z the slot's
 * normaliser after p (1/M decayed, plus every write's w·D); summed over the
 * read slots with weight r and divided by the sum of r.  share[t'] for
 * t' = 0..p (one backward pass per read slot). */
static void read_shares(const study_accesses *a, const rn_config *c, int hd, int p, double *share)
{
    const int NH = a->L * a->H, K = a->K;
    const uint32_t *rs = a->rslot + ((size_t)p * NH + hd) * K;
    const float *rw = a->rw + ((size_t)p * NH + hd) * K;
    double rsum = 0;
    for (int t = 0; t <= p; t++) share[t] = 0;
    for (int j = 0; j < K; j++) rsum += rw[j];
    if (rsum <= 0) return;
    static double contrib[WIN];
    for (int j = 0; j < K; j++) {
        double P = 1, z;
        for (int t = p; t >= 0; t--) {
            contrib[t] = 0;
            const uint32_t *ws = a->wslot + ((size_t)t * NH + hd) * K;
            const float *ww = a->ww + ((size_t)t * NH + hd) * K;
            for (int i = 0; i < K; i++)
                if (ws[i] == rs[j]) {
                    contrib[t] = ww[i] * P;
                    P *= rn_pdma_decay(ww[i], c->gamma);
                }
        }
        z = P / (double)rn_config_slots(c);
        for (int t = 0; t <= p; t++) z += contrib[t];
        for (int t = 0; t <= p; t++) share[t] += rw[j] * contrib[t] / (z + c->eps) / rsum;
    }
}

/* log-softmax of row x[V] at index t. */
static double log_prob(const float *x, int V, int t)
{
    double mx = x[0];
    for (int i = 1; i < V; i++) if (x[i] > mx) mx = x[i];
    double s = 0;
    for (int i = 0; i < V; i++) s += exp(x[i] - mx);
    return x[t] - mx - log(s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The paired mean of arm a over the queries where arm b ran too (and the
 * count); b = a: every query of a. */
static double paired_mean(double *const *by_q, int nq, int a, int b, int *n)
{
    double s = 0;
    *n = 0;
    for (int i = 0; i < nq; i++)
        if (!isnan(by_q[a][i]) && !isnan(by_q[b][i])) { s += by_q[a][i]; (*n)++; }
    return *n ? s / *n : NAN;
}

/* A few sentences of what the tables of kind k show, from their numbers:
 * which heads track the opener, and the whole-window ablation of the
 * tracking heads (every head when none) against its two controls, each
 * compared on the queries where both ran. */
static void summary(int k, const rn_config *c, int nq, const int *trk, int n_trk, double *const *by_q,
                    double (*sum)[NS_STATS], long (*cnt)[NS_STATS])
{
    const int H = c->n_heads;
    printf("**In short (%s).** ", kind_name[k]);
    if (!nq) { printf("No query.\n\n"); return; }
    if (!n_trk) printf("No head passes the tracking rule: no head's read before the closer returns the matching "
                       "opener's write at least twice as much as another opener's.  ");
    else {
        double lo = 1, hi = 0, olo = 1, ohi = 0;
        for (int x = 0; x < n_trk; x++) {
            int hd = trk[x];
            double a = cnt[hd][S_ATTR] ? sum[hd][S_ATTR] / cnt[hd][S_ATTR] : 0;
            double o = cnt[hd][S_ATTR_OTHER] ? sum[hd][S_ATTR_OTHER] / cnt[hd][S_ATTR_OTHER] : 0;
            if (a < lo) lo = a;
            if (a > hi) hi = a;
            if (o < olo) olo = o;
            if (o > ohi) ohi = o;
        }
        printf("Tracking heads: ");
        for (int x = 0; x < n_trk; x++) printf("%s%d.%d", x ? ", " : "", trk[x] / H, trk[x] % H);
        printf("; the opener's write is %.1f–%.1f%% of what they read before the closer, another '%c''s %.1f–%.1f%%.  ",
               100 * lo, 100 * hi, kind_open[k], 100 * olo, 100 * ohi);
    }
    int set = n_trk ? 1 : 0, a0 = set * NWHEN * NCTRL, n0, n1, n2;
    double m0 = paired_mean(by_q, nq, a0, a0, &n0);
    printf("Ablating the opener slots %s read before the closer, for the whole window, changes log P(closer) by %+.3f "
           "on average (%d queries)", n_trk ? "the tracking heads" : "every head", m0, n0);
    double m01 = paired_mean(by_q, nq, a0, a0 + 1, &n1), m1 = paired_mean(by_q, nq, a0 + 1, a0, &n1);
    if (n1) printf("; on the %d queries where the control exists, by %+.3f against %+.3f for as many other slots read "
                   "there", n1, m01, m1);
    else printf("; the control of as many other read slots never applies (the heads read too few other slots)");
    double m2 = paired_mean(by_q, nq, a0 + 2, a0, &n2);
    printf("; as many slots read elsewhere in the window change it by %+.3f (%d queries).", m2, n2);
    int na, nb;
    double ma = paired_mean(by_q, nq, a0 + NCTRL, a0 + NCTRL, &na), mb = paired_mean(by_q, nq, a0 + NCTRL + 2, a0 + NCTRL, &nb);
    printf("  Ablated only at the opener (its writes dropped, the slots reset there), by %+.3f (%d queries), "
           "against %+.3f for as many slots read elsewhere (%d).", ma, na, mb, nb);
    if (n0 && na && m0 <= -0.3 && ma > m0 / 3)
        printf("  Most of the whole-window drop therefore comes from what the slots hold by the closer (later "
               "tokens' writes), not from the opener's own write.");
    else if (n0 && na && m0 <= -0.3)
        printf("  Most of the whole-window drop remains when only the opener's write (and what the slots held "
               "before it) is removed.");
    if (n0 && m0 >= 0) printf("  Removing the opener slots does not lower the closer's probability on average.");
    printf("\n\n");
}

/* Windows: consecutive blocks of whole lines, each at most WIN tokens. */
typedef struct { size_t b0, b1; } window;

static int make_windows(const rn_config *c, const char *text, size_t len, window *w, int max)
{
    int n = 0;
    size_t b0 = 0;
    while (b0 < len && n < max) {
        size_t b1 = b0, good = b0;
        for (;;) {
            size_t e = b1;
            while (e < len && text[e] != '\n') e++;
            if (e < len) e++;
            if (e == b1) break;
            int *ids, nt;
            rn_error err;
            if (rn_tokenize(c, text + b0, e - b0, "window", &ids, &nt, &err)) { b1 = e; break; }
            free(ids);
            if (nt > WIN) break;
            good = b1 = e;
        }
        if (good == b0) { /* one line longer than a window: skip it */
            while (b0 < len && text[b0] != '\n') b0++;
            b0 += b0 < len;
            continue;
        }
        w[n++] = (window){ b0, good };
        b0 = good;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: case_kernel MODEL INPUT.txt OUT_DIR [WINDOWS [MAXQ [SEED]]]\n"); return 2; }
    const char *out = argv[3];
    int n_win_max = argc > 4 ? atoi(argv[4]) : 64, maxq = argc > 5 ? atoi(argv[5]) : 300;
    uint64_t seed = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
    rn_error err = { 0 };
    rn_model m;
    if (rn_model_load(&m, argv[1], &err)) die(&err);
    const rn_config *c = &m.cfg;
    const int V = c->vocab_size, L = c->n_layers, H = c->n_heads, K = c->top_k, NH = L * H;
    const int64_t M = rn_config_slots(c);
    if (K > STUDY_MAXK || NH > MAXHEADS) { fprintf(stderr, "case_kernel: top_k above %d or more than %d heads\n", STUDY_MAXK, MAXHEADS); return 2; }
    char *text;
    size_t tlen;
    if (rn_read_file(argv[2], &text, &tlen, &err)) die(&err);
    window *win = xmalloc(sizeof *win * (size_t)(n_win_max > 0 ? n_win_max : 1));
    int n_win = make_windows(c, text, tlen, win, n_win_max);
    char path[1024];
    snprintf(path, sizeof path, "%s/win", out);
    mkdir(path, 0755);

    /* tokens of every window, and its queries per kind (capped) */
    int **wt = xmalloc(sizeof *wt * n_win), *wn = xmalloc(sizeof *wn * n_win);
    query *wq[NKIND];
    int *wq0[NKIND], *wqn[NKIND], nq_kind[NKIND] = { 0 };
    int *wop[NKIND], *wop0[NKIND], *wopn[NKIND];
    for (int k = 0; k < NKIND; k++) {
        wq[k] = xmalloc(sizeof(query) * WIN * 8 * n_win);
        wq0[k] = xmalloc(sizeof(int) * n_win);
        wqn[k] = xmalloc(sizeof(int) * n_win);
        wop[k] = xmalloc(sizeof(int) * WIN * 8 * n_win);
        wop0[k] = xmalloc(sizeof(int) * n_win);
        wopn[k] = xmalloc(sizeof(int) * n_win);
    }
    long total_tokens = 0;
    int n_open_total[NKIND] = { 0 };
    for (int w = 0; w < n_win; w++) {
        if (rn_tokenize(c, text + win[w].b0, win[w].b1 - win[w].b0, argv[2], &wt[w], &wn[w], &err)) die(&err);
        total_tokens += wn[w];
        for (int k = 0; k < NKIND; k++) {
            query tmp[WIN * 8];
            int nq = find_queries(c, wt[w], wn[w], k, tmp, wop[k] + n_open_total[k], &wopn[k][w]);
            wop0[k][w] = n_open_total[k];
            n_open_total[k] += wopn[k][w];
            if (nq > maxq - nq_kind[k]) nq = maxq - nq_kind[k];
            wq0[k][w] = nq_kind[k];
            wqn[k][w] = nq;
            memcpy(wq[k] + nq_kind[k], tmp, sizeof(query) * nq);
            nq_kind[k] += nq;
        }
        snprintf(path, sizeof path, "%s/win/w%03d.txt", out, w);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(text + win[w].b0, 1, win[w].b1 - win[w].b0, f) != win[w].b1 - win[w].b0 || fclose(f)) {
            fprintf(stderr, "case_kernel: cannot write %s\n", path);
            return 1;
        }
    }
    printf("Held-out text: %d windows of whole lines (at most %d tokens each), %ld tokens; "
           "queries: %d closing braces, %d closing parentheses (at most %d a kind).\n\n",
           n_win, WIN, total_tokens, nq_kind[KIND_BRACE], nq_kind[KIND_PAREN], maxq);

    study_accesses acc = { L, H, K, xmalloc(sizeof(uint32_t) * WIN * NH * K), xmalloc(sizeof(uint32_t) * WIN * NH * K),
                     xmalloc(sizeof(float) * WIN * NH * K), xmalloc(sizeof(float) * WIN * NH * K) };
    rn_probe probe = { .user = &acc, .access = study_record };
    float *lg = xmalloc(sizeof(float) * WIN * V), *lg2 = xmalloc(sizeof(float) * WIN * V);
    rn_runtime *rt;
    if (rn_runtime_create(&m, WIN, &rt, &err)) die(&err);
    rn_iv_set iv;

    /* Pass 1: per kind and head, what the reads at p take from the opener:
     * sums over the queries, then means. */
    static double sum[NKIND][MAXHEADS][NS_STATS];
    static long cnt[NKIND][MAXHEADS][NS_STATS];
    double *clean_lp[NKIND];
    double *attr = xmalloc(sizeof(double) * WIN);
    rn_real *scratch = xmalloc(sizeof(rn_real) * (2 * c->d_model + c->d_v)), *lens = xmalloc(sizeof(rn_real) * V);
    rn_real *v = xmalloc(sizeof(rn_real) * c->d_v);
    for (int k = 0; k < NKIND; k++) clean_lp[k] = xmalloc(sizeof(double) * (nq_kind[k] ? nq_kind[k] : 1));
#define ADD(k, hd, s, x) (sum[k][hd][s] += (x), cnt[k][hd][s]++)
    for (int w = 0; w < n_win; w++)
        for (int k = 0; k < NKIND; k++)
            for (int qi = 0; qi < wqn[k][w]; qi++) {
                query q = wq[k][wq0[k][w] + qi];
                int target = wt[w][q.p + 1];
                /* the window up to p: accesses, the state after p, the logits at p */
                rn_iv_init(&iv, c);
                rn_runtime_set_probe(rt, &probe);
                if (study_run(rt, &iv, wt[w], q.p + 1, lg, &err)) die(&err);
                rn_runtime_set_probe(rt, NULL);
                rn_iv_free(&iv);
                clean_lp[k][wq0[k][w] + qi] = log_prob(lg + (size_t)q.p * V, V, target);
                for (int hd = 0; hd < NH; hd++) {
                    const uint32_t *ws = acc.wslot + ((size_t)q.o * NH + hd) * K;
                    const uint32_t *rs = acc.rslot + ((size_t)q.p * NH + hd) * K;
                    const float *rw = acc.rw + ((size_t)q.p * NH + hd) * K;
                    double rsum = 0, ron = 0;
                    int incl = 0, top = 0;
                    for (int j = 0; j < K; j++) {
                        int in = 0;
                        for (int a = 0; a < K; a++) in |= ws[a] == rs[j];
                        rsum += rw[j];
                        if (in) { ron += rw[j]; incl = 1; top |= j == 0; }
                    }
                    ADD(k, hd, S_INCL, incl);
                    ADD(k, hd, S_TOP, top);
                    ADD(k, hd, S_WEIGHT, rsum > 0 ? ron / rsum : 0);
                    read_shares(&acc, c, hd, q.p, attr);
                    ADD(k, hd, S_ATTR, attr[q.o]);
                    double tot = 0, os = 0;
                    int no = 0;
                    for (int t = 0; t <= q.p; t++) tot += attr[t];
                    ADD(k, hd, S_ATTR_TOKEN, tot / (q.p + 1));
                    for (int oi = 0; oi < wopn[k][w]; oi++) {
                        int o2 = wop[k][wop0[k][w] + oi];
                        if (o2 <= q.p && o2 != q.o) { os += attr[o2]; no++; }
                    }
                    if (no) ADD(k, hd, S_ATTR_OTHER, os / no);
                    /* the logit lens of each read slot's state after p */
                    const rn_real *S, *z;
                    if (rn_runtime_head_state(rt, hd / H, hd % H, &S, &z, &err)) die(&err);
                    for (int j = 0; j < K; j++) {
                        int in = 0;
                        for (int a = 0; a < K; a++) in |= ws[a] == rs[j];
                        for (int d = 0; d < c->d_v; d++) v[d] = S[(size_t)rs[j] * c->d_v + d] / (z[rs[j]] + c->eps);
                        rn_lens_head(&m, hd / H, hd % H, v, scratch, lens);
                        int rank = 0;
                        for (int t = 0; t < V; t++) rank += lens[t] > lens[target];
                        ADD(k, hd, in ? S_LENS_OPEN : S_LENS_OTHER, rank);
                    }
                }
            }
#define MEAN(k, hd, s) (cnt[k][hd][s] ? sum[k][hd][s] / cnt[k][hd][s] : 0)
    int trk[NKIND][MAXHEADS], n_trk[NKIND] = { 0 }, best[NKIND] = { 0 };
    for (int k = 0; k < NKIND; k++) {
        for (int hd = 1; hd < NH; hd++)
            if (MEAN(k, hd, S_ATTR) > MEAN(k, best[k], S_ATTR)) best[k] = hd;
        printf("### %s: the reads just before the closer (%d queries)\n\n", kind_name[k], nq_kind[k]);
        printf("| head | CAPE | reads include an opener slot | top read slot is one | read weight on opener slots "
               "| opener's share of the read | another '%c''s share | an earlier token's share | lens rank of the target: opener slots | other read slots |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n", kind_open[k]);
        for (int hd = 0; hd < NH; hd++) {
            double a = MEAN(k, hd, S_ATTR), o = MEAN(k, hd, S_ATTR_OTHER);
            char lo[32] = "—", lt[32] = "—";
            if (cnt[k][hd][S_LENS_OPEN]) snprintf(lo, sizeof lo, "%.0f", MEAN(k, hd, S_LENS_OPEN));
            if (cnt[k][hd][S_LENS_OTHER]) snprintf(lt, sizeof lt, "%.0f", MEAN(k, hd, S_LENS_OTHER));
            int is_trk = nq_kind[k] && a >= 2 * o && a - o >= 0.01;
            if (is_trk) trk[k][n_trk[k]++] = hd;
            printf("| %d.%d%s | %s | %.1f%% | %.1f%% | %.1f%% | %.2f%% | %.2f%% | %.2f%% | %s | %s |\n", hd / H, hd % H,
                   is_trk ? " **tracking**" : "", rn_config_cape(c, hd / H, hd % H) ? "yes" : "no",
                   100 * MEAN(k, hd, S_INCL), 100 * MEAN(k, hd, S_TOP), 100 * MEAN(k, hd, S_WEIGHT), 100 * a, 100 * o,
                   100 * MEAN(k, hd, S_ATTR_TOKEN), lo, lt);
        }
        printf("\n(Means over the queries.  Share of the read: the part of what the head reads at that position "
               "that the token's write put there, as `ramtrace attribute` splits a read; another '%c': the mean "
               "over the other '%c' before the position, for the %ld queries that have one; an earlier token: "
               "the mean over every token up to the position.  Lens rank: the target's rank among all %d tokens "
               "in the direct logit lens of the slot's state, 0 = promoted most.  Tracking: the opener's share "
               "at least twice another's and at least 1 point above it.)\n\n",
               kind_open[k], kind_open[k], cnt[k][0][S_ATTR_OTHER], V);
    }

    /* Pass 2: ablations. */
    snprintf(path, sizeof path, "%s/kernel-roles.csv", out);
    FILE *csv = fopen(path, "w");
    if (!csv) { fprintf(stderr, "case_kernel: cannot write %s\n", path); return 1; }
    fprintf(csv, "kind,window,opener,pos,target,heads,when,slots_ablated,n_slots,logp_clean,logp_ablated\n");
    double *delta[NKIND][NARM], *by_q[NKIND][NARM]; /* sorted values; per query (NAN: not run) */
    int n_delta[NKIND][NARM] = { { 0 } };
    long n_drop[NKIND][NARM] = { { 0 } }, n_slots_sum[NKIND][NARM] = { { 0 } };
    double sum_delta[NKIND][NARM] = { { 0 } };
    uint8_t *mark = xmalloc((size_t)M);
    uint32_t *pool = xmalloc(sizeof(uint32_t) * (size_t)M);
    rn_rng rng;
    rn_rng_seed(&rng, seed);
    for (int k = 0; k < NKIND; k++)
        for (int a = 0; a < NARM; a++) {
            delta[k][a] = xmalloc(sizeof(double) * (nq_kind[k] ? nq_kind[k] : 1));
            by_q[k][a] = xmalloc(sizeof(double) * (nq_kind[k] ? nq_kind[k] : 1));
            for (int i = 0; i < nq_kind[k]; i++) by_q[k][a][i] = NAN;
        }
    int ex_done = 0;
    for (int w = 0; w < n_win; w++) {
        if (!wqn[0][w] && !wqn[1][w]) continue;
        rn_iv_init(&iv, c);
        rn_runtime_set_probe(rt, &probe);
        if (study_run(rt, &iv, wt[w], wn[w], lg, &err)) die(&err);
        rn_runtime_set_probe(rt, NULL);
        rn_iv_free(&iv);
        for (int k = 0; k < NKIND; k++)
            for (int qi = 0; qi < wqn[k][w]; qi++) {
                query q = wq[k][wq0[k][w] + qi];
                int target = wt[w][q.p + 1];
                double lp0 = clean_lp[k][wq0[k][w] + qi];
                for (int set = 0; set < NSET; set++)
                    for (int when = 0; when < NWHEN; when++) {
                        const int *hs = NULL;
                        int nhs = 0, all[MAXHEADS];
                        if (set == 0) { for (int hd = 0; hd < NH; hd++) all[hd] = hd; hs = all; nhs = NH; }
                        else { hs = trk[k]; nhs = n_trk[k]; }
                        if (!nhs) continue;
                        rn_iv_set sets[NCTRL];
                        for (int s = 0; s < NCTRL; s++) rn_iv_init(&sets[s], c);
                        int ok[NCTRL] = { 0, 1, 1 }, n_slots = 0;
                        char range[32] = "";
                        if (when == 1) snprintf(range, sizeof range, "@%d", q.o);
                        for (int x = 0; x < nhs; x++) {
                            int hd = hs[x], l = hd / H, h = hd % H;
                            const uint32_t *ws = acc.wslot + ((size_t)q.o * NH + hd) * K;
                            const uint32_t *rs = acc.rslot + ((size_t)q.p * NH + hd) * K;
                            uint32_t on[STUDY_MAXK], off[STUDY_MAXK];
                            int non = 0, noff = 0;
                            for (int j = 0; j < K; j++) {
                                int in = 0;
                                for (int a = 0; a < K; a++) in |= ws[a] == rs[j];
                                if (in) on[non++] = rs[j]; else off[noff++] = rs[j];
                            }
                            if (!non) continue;
                            ok[0] = 1;
                            n_slots += non;
                            if (study_ablate(&sets[0], l, h, on, non, range, &err)) die(&err);
                            if (noff < non) ok[1] = 0;
                            else {
                                study_pick(&rng, off, noff, non);
                                if (study_ablate(&sets[1], l, h, off, non, range, &err)) die(&err);
                            }
                            memset(mark, 0, (size_t)M);
                            for (int a = 0; a < K; a++) mark[ws[a]] = 2;
                            int np = 0;
                            for (int t = 0; t < wn[w]; t++)
                                for (int j = 0; j < K; j++) {
                                    uint32_t r = acc.rslot[((size_t)t * NH + hd) * K + j];
                                    if (!mark[r]) { mark[r] = 1; pool[np++] = r; }
                                }
                            if (np < non) ok[2] = 0;
                            else {
                                study_pick(&rng, pool, np, non);
                                if (study_ablate(&sets[2], l, h, pool, non, range, &err)) die(&err);
                            }
                        }
                        for (int s = 0; s < NCTRL; s++) {
                            if (ok[0] && ok[s]) {
                                if (study_run(rt, &sets[s], wt[w], q.p + 1, lg2, &err)) die(&err);
                                double lp = log_prob(lg2 + (size_t)q.p * V, V, target);
                                int arm = (set * NWHEN + when) * NCTRL + s;
                                delta[k][arm][n_delta[k][arm]++] = lp - lp0;
                                by_q[k][arm][wq0[k][w] + qi] = lp - lp0;
                                sum_delta[k][arm] += lp - lp0;
                                n_drop[k][arm] += lp - lp0 < -log(2.0);
                                n_slots_sum[k][arm] += n_slots;
                                fprintf(csv, "%s,%d,%d,%d,%d,%s,%s,%s,%d,%.6f,%.6f\n", kind_name[k], w, q.o, q.p, target,
                                        set ? "tracking" : "all", when ? "opener" : "window",
                                        s == 0 ? "opener" : s == 1 ? "other-read" : "window-read", n_slots, lp0, lp);
                            }
                            rn_iv_free(&sets[s]);
                        }
                    }
                /* the example for the CLI: the first brace query with an
                 * opener at least 8 tokens back whose slots are read by the
                 * head with the largest mean opener share (tracking or not) */
                if (!ex_done && k == KIND_BRACE && q.p - q.o >= 8) {
                    int hd = best[k], tracking = 0;
                    for (int x = 0; x < n_trk[k]; x++) tracking |= trk[k][x] == hd;
                    const uint32_t *ws = acc.wslot + ((size_t)q.o * NH + hd) * K;
                    const uint32_t *rs = acc.rslot + ((size_t)q.p * NH + hd) * K;
                    char slots[64 * STUDY_MAXK] = "";
                    int len = 0;
                    for (int j = 0; j < K; j++) {
                        int in = 0;
                        for (int a = 0; a < K; a++) in |= ws[a] == rs[j];
                        if (in) len += snprintf(slots + len, sizeof slots - len, "%s%u", len ? "," : "", rs[j]);
                    }
                    if (len) {
                        snprintf(path, sizeof path, "%s/kernel-example.sh", out);
                        FILE *f = fopen(path, "w");
                        if (!f) { fprintf(stderr, "case_kernel: cannot write %s\n", path); return 1; }
                        char piece[64];
                        rn_token_piece(c, target, piece, sizeof piece);
                        fprintf(f, "EX_WIN=%d\nEX_OPEN=%d\nEX_POS=%d\nEX_LAYER=%d\nEX_HEAD=%d\nEX_SLOTS=%s\nEX_TARGET='%s'\nEX_TRACKING=%d\n",
                                w, q.o, q.p, hd / H, hd % H, slots, piece, tracking);
                        fclose(f);
                        ex_done = 1;
                    }
                }
            }
    }
    fclose(csv);
    /* pairs for `ramtrace overlap`: every brace query, run named after its window */
    snprintf(path, sizeof path, "%s/kernel-pairs.txt", out);
    FILE *pf = fopen(path, "w");
    if (!pf) { fprintf(stderr, "case_kernel: cannot write %s\n", path); return 1; }
    for (int w = 0; w < n_win; w++)
        for (int qi = 0; qi < wqn[KIND_BRACE][w]; qi++) {
            query q = wq[KIND_BRACE][wq0[KIND_BRACE][w] + qi];
            fprintf(pf, "w%03d %d %d\n", w, q.o, q.p);
        }
    fclose(pf);

    for (int k = 0; k < NKIND; k++) {
        printf("### %s: ablations (log P of the closing token at the position before it)\n\n", kind_name[k]);
        printf("Tracking heads: ");
        for (int x = 0; x < n_trk[k]; x++) printf("%s%d.%d", x ? ", " : "", trk[k][x] / H, trk[k][x] % H);
        printf("%s.\n\n| heads | when | ablated | queries | slots a query | mean change of log P | median | P at least halved |\n"
               "|---|---|---|---|---|---|---|---|\n", n_trk[k] ? "" : "none");
        for (int a = 0; a < NARM; a++) {
            int n = n_delta[k][a], set = a / (NWHEN * NCTRL), when = a / NCTRL % NWHEN, s = a % NCTRL;
            if (set == 1 && !n_trk[k]) continue;
            printf("| %s | %s | %s | %d |", set_name[set], when_name[when], ctrl_name[s], n);
            if (!n) { printf(" — | — | — | — |\n"); continue; }
            double *d = delta[k][a];
            qsort(d, (size_t)n, sizeof *d, cmp_double);
            double med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
            printf(" %.1f | %+.3f | %+.3f | %.1f%% (%ld) |\n", (double)n_slots_sum[k][a] / n, sum_delta[k][a] / n, med,
                   100.0 * n_drop[k][a] / n, n_drop[k][a]);
        }
        printf("\n");
        summary(k, c, nq_kind[k], trk[k], n_trk[k], by_q[k], sum[k], cnt[k]);
    }

    /* The figure: per kind, the sorted changes (an empirical CDF) of the
     * whole-window arms of the tracking heads (every head when none). */
    snprintf(path, sizeof path, "%s/kernel-roles.png", out);
    viz_surface s;
    const double W = 1100, Hh = 420;
    if (viz_surface_open(&s, path, W, Hh, 96, &err)) die(&err);
    viz_lineplot_style st;
    viz_lineplot_style_default(&st);
    st.looks = 1;
    st.steps = 1;
    st.markers = 0;
    st.legend = 1;
    st.corner = VIZ_BOTTOM_RIGHT;
    st.x.label = "change of log P(closing token) when ablated";
    st.y.label = "share of queries at or below";
    st.y.lo = 0;
    st.y.hi = 1;
    viz_rect page = viz_rect_make(0, 0, W, Hh);
    double *ys = xmalloc(sizeof(double) * NKIND * NARM * (size_t)(maxq > 0 ? maxq : 1));
    char names[NKIND][NWHEN * NCTRL][96], title[NKIND][160];
    for (int k = 0; k < NKIND; k++) {
        viz_series ser[NWHEN * NCTRL];
        int ns = 0, set = n_trk[k] ? 1 : 0;
        for (int x = 0; x < NWHEN * NCTRL; x++) {
            int a = set * NWHEN * NCTRL + x, n = n_delta[k][a];
            if (!n) continue;
            double *y = ys + ((size_t)k * NARM + a) * (size_t)maxq;
            for (int i = 0; i < n; i++) y[i] = (i + 1.0) / n;
            snprintf(names[k][ns], sizeof names[k][ns], "%s, %s", ctrl_name[x % NCTRL], when_name[x / NCTRL]);
            ser[ns] = (viz_series){ names[k][ns], (size_t)n, delta[k][a], y, 0, NULL, NULL };
            ns++;
        }
        snprintf(title[k], sizeof title[k], "closing %s ('%c'), %s: %d queries", kind_name[k], kind_close[k],
                 set_name[set], nq_kind[k]);
        st.title = title[k];
        if (ns && viz_lineplot_draw(s.cr, viz_rect_grid(page, 1, 2, k, 8), ser, ns, &st, &err)) {
            viz_surface_abort(&s);
            die(&err);
        }
    }
    if (viz_surface_commit(&s, &err)) die(&err);

    for (int w = 0; w < n_win; w++) free(wt[w]);
    free(wt); free(wn);
    for (int k = 0; k < NKIND; k++) {
        free(wq[k]); free(wq0[k]); free(wqn[k]); free(wop[k]); free(wop0[k]); free(wopn[k]); free(clean_lp[k]);
        for (int a = 0; a < NARM; a++) { free(delta[k][a]); free(by_q[k][a]); }
    }
    free(acc.wslot); free(acc.rslot); free(acc.ww); free(acc.rw);
    free(lg); free(lg2); free(mark); free(pool); free(scratch); free(lens); free(v); free(attr); free(ys);
    free(win); free(text);
    rn_runtime_free(rt);
    rn_model_free(&m);
    return 0;
}
