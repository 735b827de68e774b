/* case_kjv.c — the short KJV counterpart of the MQAR case study
 * (docs/case-study-mqar.md, "One KJV prompt"): for one clean/corrupted
 * prompt pair and an answer token,
 *   1. the patching sweep (analysis/an_patch.h) names the head and the read
 *      slot that recover most of the clean-vs-corrupted logit difference;
 *   2. `slots` (analysis/an_slots.h) says what that slot holds in the clean
 *      run at the answer position: who wrote it, what its lens promotes;
 *   3. ablating that slot in the clean run moves the metric toward the
 *      corrupted value, ablating each other slot the head reads there (one
 *      at a time) moves it less, and patching the head's output at the
 *      answer position from the unablated run restores the clean value.
 *
 * usage: case_kjv MODEL CLEAN CORRUPT ANSWER_BYTE
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_patch.h"
#include "an_slots.h"
#include "rn_intervene.h"
#include "rn_modelfile.h"
#include "rn_runtime.h"
#include "rn_tokenizer.h"

static void die(const rn_error *e)
{
    fprintf(stderr, "case_kjv: %s\n", e->msg);
    exit(e->code == RN_EINPUT ? 2 : 1);
}

/* logit(answer) − logit(wrong) at the last position of toks under iv. */
static double logit_diff(rn_runtime *rt, const rn_iv_set *iv, const int *toks, int n, int answer, int wrong,
                         float *lg)
{
    rn_error err;
    rn_runtime_reset(rt);
    if (rn_runtime_set_interventions(rt, iv, &err) || rn_prefill(rt, toks, n, lg, 0, &err)) die(&err);
    return (double)lg[answer] - lg[wrong];
}

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: case_kjv MODEL CLEAN CORRUPT ANSWER_BYTE\n"); return 2; }
    rn_error err = { 0 };
    rn_model m;
    if (rn_model_load(&m, argv[1], &err)) die(&err);
    const rn_config *c = &m.cfg;
    int *clean = NULL, *corrupt = NULL, n = 0, nx = 0, answer = 0;
    if (rn_tokenize_file(c, argv[2], &clean, &n, &err) || rn_tokenize_file(c, argv[3], &corrupt, &nx, &err) ||
        an_token_parse(c, "ANSWER", argv[4], &answer, &err))
        die(&err);
    an_patch_result pr;
    if (an_patch_heads(&m, clean, n, corrupt, nx, answer, -1, AN_METRIC_LOGIT_DIFF, 3, &pr, &err)) die(&err);
    /* the best head and, in it, the best slot */
    const an_patch_row *bh = NULL, *bs = NULL;
    for (int i = 0; i < pr.n_rows; i++) {
        const an_patch_row *p = &pr.rows[i];
        if (p->slot < 0 && (!bh || p->recovered > bh->recovered)) bh = p;
    }
    for (int i = 0; i < pr.n_rows; i++) {
        const an_patch_row *p = &pr.rows[i];
        if (p->slot >= 0 && p->layer == bh->layer && p->head == bh->head && (!bs || p->recovered > bs->recovered)) bs = p;
    }
    char pa[64], pw[64], piece[64];
    rn_token_piece(c, answer, pa, sizeof pa);
    rn_token_piece(c, pr.wrong, pw, sizeof pw);
    printf("logit('%s') - logit('%s') at the last of %d positions: clean %.3f, corrupted %.3f\n\n", pa, pw, n,
           pr.clean, pr.corrupt);
    printf("| step | value |\n|---|---|\n");
    printf("| head that recovers most (patch sweep) | %d.%d: %.1f%% |\n", bh->layer, bh->head, 100 * bh->recovered);
    printf("| its read slot that recovers most | slot %d (read rank %d, weight %.3f): %.1f%% |\n", bs->slot, bs->rank,
           bs->r, 100 * bs->recovered);

    /* what the slot holds in the clean run at the answer position */
    an_slots sl;
    if (an_slots_compute(&m, clean, n, bh->layer, bh->head, n - 1, 3, &sl, &err)) die(&err);
    for (size_t i = 0; i < sl.n_slots; i++) {
        const an_slot *s = &sl.slots[i];
        if ((int)s->slot != bs->slot) continue;
        printf("| slot %d in the clean run: writes, top writers (pos 'token' share) | %zu:", bs->slot, s->n_writes);
        /* the three largest shares */
        int used[3] = { -1, -1, -1 };
        for (int k = 0; k < 3 && k < (int)s->n_writes; k++) {
            int best = -1;
            for (size_t j = 0; j < s->n_writes; j++) {
                if ((int)j == used[0] || (int)j == used[1]) continue;
                if (best < 0 || sl.writes[s->first + j].share > sl.writes[s->first + best].share) best = (int)j;
            }
            used[k] = best;
            const an_slot_write *w = &sl.writes[s->first + best];
            rn_token_piece(c, w->token, piece, sizeof piece);
            printf("%s %d '%s' %.2f", k ? "," : "", w->pos, piece, w->share);
        }
        printf(" |\n| its logit lens promotes | ");
        for (int k = 0; k < sl.n_top; k++) {
            rn_token_piece(c, sl.top_ids[s->top + k], piece, sizeof piece);
            printf("%s'%s' %.2f", k ? ", " : "", piece, sl.top_logits[s->top + k]);
        }
        printf(" |\n");
    }
    an_slots_free(&sl);

    /* ablations in the clean run */
    rn_runtime *rt;
    if (rn_runtime_create(&m, 256, &rt, &err)) die(&err);
    float *lg = malloc(sizeof(float) * c->vocab_size);
    rn_real *o = malloc(sizeof(rn_real) * (size_t)n * c->d_v);
    rn_iv_set iv;
    rn_iv_init(&iv, c);
    if (rn_iv_add_buffer(&iv, 0, bh->layer, bh->head, o, n, &err)) die(&err);
    double base = logit_diff(rt, &iv, clean, n, answer, pr.wrong, lg);
    rn_iv_free(&iv);
    char spec[64];
    snprintf(spec, sizeof spec, "ablate-slots %d.%d:%d", bh->layer, bh->head, bs->slot);
    rn_iv_init(&iv, c);
    if (rn_iv_add(&iv, spec, &err)) die(&err);
    double abl = logit_diff(rt, &iv, clean, n, answer, pr.wrong, lg);
    if (rn_iv_add_buffer(&iv, 1, bh->layer, bh->head, o, n, &err)) die(&err);
    iv.iv[iv.n - 1].t0 = iv.iv[iv.n - 1].t1 = n - 1;
    double rest = logit_diff(rt, &iv, clean, n, answer, pr.wrong, lg);
    rn_iv_free(&iv);
    printf("| clean, `%s` | %.3f (%.1f%% of the way to corrupted) |\n", spec, abl, 100 * (base - abl) / (base - pr.corrupt));
    double other_max = 0, other_sum = 0;
    int n_other = 0;
    for (int i = 0; i < pr.n_rows; i++) {
        const an_patch_row *p = &pr.rows[i];
        if (p->slot < 0 || p->layer != bh->layer || p->head != bh->head || p->slot == bs->slot) continue;
        char sp2[64];
        snprintf(sp2, sizeof sp2, "ablate-slots %d.%d:%d", bh->layer, bh->head, p->slot);
        rn_iv_init(&iv, c);
        if (rn_iv_add(&iv, sp2, &err)) die(&err);
        double d = (base - logit_diff(rt, &iv, clean, n, answer, pr.wrong, lg)) / (base - pr.corrupt);
        rn_iv_free(&iv);
        other_sum += d;
        other_max = fmax(other_max, fabs(d));
        n_other++;
    }
    printf("| clean, each other read slot of the head ablated alone (%d) | mean %.1f%%, largest |%.1f%%| of the way |\n",
           n_other, 100 * other_sum / (n_other ? n_other : 1), 100 * other_max);
    printf("| clean with the slot ablated, head patched at the answer position from the clean run | %.3f (clean %.3f) |\n",
           rest, base);
    free(lg); free(o);
    rn_runtime_free(rt);
    an_patch_free(&pr);
    free(clean); free(corrupt);
    rn_model_free(&m);
    return 0;
}
