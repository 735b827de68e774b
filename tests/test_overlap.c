/* test_overlap.c — `ramtrace overlap` (analysis/an_overlap.h) on a
 * hand-made trace of two runs, every column against a brute-force count
 * written here from the generated accesses: slots touched and weight per
 * slot summed over all runs, per-position entropies and sums, the
 * pairs' writes' distinct slots, and |W ∩ R| by comparing every written
 * slot with every read slot.  Then the command's bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_overlap.h"
#include "rn_config.h"
#include "rn_rng.h"
#include "th.h"
#include "tr_writer.h"

enum { NL = 2, NH = 2, KK = 4, MS = 16, NPOS = 12, NRUN = 2 };

/* the accesses: [run][layer][head][pos][op][rank] */
static uint32_t S[NRUN][NL][NH][NPOS][2][KK];
static float W[NRUN][NL][NH][NPOS][2][KK];
static const an_pair P0[] = { { 1, 7 }, { 3, 9 }, { 5, 11 } }, P1[] = { { 0, 6 }, { 2, 10 } };
static const an_pair *PAIRS[NRUN] = { P0, P1 };
static const int NPAIR[NRUN] = { 3, 2 };
static const char *NAMES[NRUN] = { "a", "b" };
static char DB[4096], PF[4096];

static int make_db(void)
{
    rn_config c;
    rn_config_default(&c);
    c.n_layers = NL; c.n_heads = NH; c.d_p = 4; c.order = 2; c.top_k = KK; c.d_v = 8;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    rn_rng r;
    rn_rng_seed(&r, 3);
    snprintf(DB, sizeof DB, "%s", th_path("ov.db"));
    for (int run = 0; run < NRUN; run++) {
        for (int l = 0; l < NL; l++)
            for (int h = 0; h < NH; h++)
                for (int p = 0; p < NPOS; p++)
                    for (int op = 0; op < 2; op++) {
                        /* K distinct slots, weights descending; run 1 layer 1
                         * head 0 writes and reads only slots 0..K-1 (full overlap) */
                        uint32_t perm[MS];
                        for (int i = 0; i < MS; i++) perm[i] = (uint32_t)i;
                        for (int i = 0; i < KK; i++) {
                            int j = i + (int)rn_rng_below(&r, (uint64_t)(MS - i));
                            uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
                        }
                        float w = (float)(0.2 + 0.5 * rn_rng_uniform(&r));
                        for (int k = 0; k < KK; k++) {
                            S[run][l][h][p][op][k] = run == 1 && l == 1 && h == 0 ? (uint32_t)k : perm[k];
                            W[run][l][h][p][op][k] = w;
                            w *= (float)(0.3 + 0.6 * rn_rng_uniform(&r));
                        }
                    }
        tr_select sel;
        tr_select_all(&sel);
        tr_run_meta meta;
        memset(&meta, 0, sizeof meta);
        meta.name = NAMES[run];
        meta.command = "trace";
        meta.cfg = &c;
        tr_writer *w;
        rn_error err;
        if (tr_writer_open(DB, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        const rn_probe *pr = tr_writer_probe(w);
        for (int p = 0; p < NPOS; p++) {
            tr_writer_add_token(w, p, p, NULL, 0);
            for (int l = 0; l < NL; l++)
                for (int h = 0; h < NH; h++)
                    for (int op = 0; op < 2; op++)
                        pr->access(pr->user, l, h, p, op, KK, S[run][l][h][p][op], S[run][l][h][p][op],
                                   W[run][l][h][p][op]);
        }
        if (tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    }
    snprintf(PF, sizeof PF, "%s", th_path("pairs.txt"));
    FILE *f = fopen(PF, "w");
    if (!f) return 1;
    fprintf(f, "# run wpos rpos\n");
    for (int run = 0; run < NRUN; run++)
        for (int i = 0; i < NPAIR[run]; i++)
            fprintf(f, "%s %d %d\n", run == 0 ? "a" : "#2", PAIRS[run][i].wpos, PAIRS[run][i].rpos);
    fclose(f);
    return 0;
}

static int suite_init(void) { return make_db(); }
TH_SUITE(overlap, suite_init, NULL);

/* |W ∩ R| by comparing every pair of slots, and R's weight on them. */
static int brute_meet(const uint32_t *ws, const uint32_t *rs, const float *rw, double *share)
{
    int ov = 0;
    double on = 0, all = 0;
    for (int i = 0; i < KK; i++) {
        all += rw[i];
        for (int j = 0; j < KK; j++)
            if (rs[i] == ws[j]) { ov++; on += rw[i]; }
    }
    *share = on / all;
    return ov;
}

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (1 + fabs(b)))

TH_TEST(test_overlap_brute, "overlap: usage, entropies, spread and pair overlaps vs brute force")
{
    an_overlap_row *rows = NULL;
    int n = 0;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(an_overlap_file(DB, PF, &rows, &n, &err), 0);
    CU_ASSERT_EQUAL_FATAL(n, NL * NH);
    int bad = 0;
    for (int l = 0; l < NL; l++)
        for (int h = 0; h < NH; h++) {
            const an_overlap_row *r = &rows[l * NH + h];
            if (r->layer != l || r->head != h) bad++;
            for (int op = 0; op < 2; op++) {
                double mass[MS] = { 0 }, tot = 0, aent = 0, top1 = 0, ksum = 0;
                int64_t distinct = 0;
                for (int run = 0; run < NRUN; run++)
                    for (int p = 0; p < NPOS; p++) {
                        double s = 0, e = 0;
                        for (int k = 0; k < KK; k++) { mass[S[run][l][h][p][op][k]] += W[run][l][h][p][op][k]; s += W[run][l][h][p][op][k]; }
                        for (int k = 0; k < KK; k++) { double q = W[run][l][h][p][op][k] / s; e -= q * log(q) / log(2.0); }
                        aent += e;
                        top1 += W[run][l][h][p][op][0];
                        ksum += s;
                    }
                double ent = 0;
                for (int s = 0; s < MS; s++) tot += mass[s];
                for (int s = 0; s < MS; s++)
                    if (mass[s] > 0) { distinct++; ent -= mass[s] / tot * log(mass[s] / tot) / log(2.0); }
                const double np = NRUN * NPOS;
                if (r->distinct[op] != distinct || r->positions[op] != NRUN * NPOS) bad++;
                if (!NEAR(r->usage_entropy[op], ent) || !NEAR(r->addr_entropy[op], aent / np) ||
                    !NEAR(r->top1[op], top1 / np) || !NEAR(r->mass[op], ksum / np)) {
                    bad++;
                    fprintf(stderr, "l%d h%d op%d: %lld/%lld %g/%g %g/%g %g/%g %g/%g\n", l, h, op, (long long)r->distinct[op], (long long)distinct, r->usage_entropy[op], ent, r->addr_entropy[op], aent / np, r->top1[op], top1 / np, r->mass[op], ksum / np);
                }
            }
            double spread = 0, ov1 = 0, hit1 = 0, sh1 = 0, ov2 = 0, hit2 = 0, sh2 = 0;
            int n1 = 0, n2 = 0;
            for (int run = 0; run < NRUN; run++) {
                const an_pair *pp = PAIRS[run];
                int seen[MS] = { 0 }, uni = 0;
                for (int i = 0; i < NPAIR[run]; i++)
                    for (int k = 0; k < KK; k++)
                        if (!seen[S[run][l][h][pp[i].wpos][0][k]]++) uni++;
                spread += (double)uni / (NPAIR[run] * KK);
                for (int i = 0; i < NPAIR[run]; i++)
                    for (int j = 0; j < NPAIR[run]; j++) {
                        double sh;
                        int ov = brute_meet(S[run][l][h][pp[j].wpos][0], S[run][l][h][pp[i].rpos][1],
                                            W[run][l][h][pp[i].rpos][1], &sh);
                        if (i == j) { ov1 += ov; hit1 += ov > 0; sh1 += sh; n1++; }
                        else { ov2 += ov; hit2 += ov > 0; sh2 += sh; n2++; }
                    }
            }
            if (!NEAR(r->spread, spread / NRUN) || r->n_pairs != n1 || r->n_other != n2) bad++;
            if (!NEAR(r->overlap, ov1 / n1) || !NEAR(r->hit, hit1 / n1) || !NEAR(r->share, sh1 / n1)) {
                bad++;
                fprintf(stderr, "l%d h%d: %g/%g %g/%g %g/%g spread %g/%g\n", l, h, r->overlap, ov1 / n1, r->hit, hit1 / n1, r->share, sh1 / n1, r->spread, spread / NRUN);
            }
            if (!NEAR(r->other_overlap, ov2 / n2) || !NEAR(r->other_hit, hit2 / n2) ||
                !NEAR(r->other_share, sh2 / n2))
                bad++;
        }
    CU_ASSERT_EQUAL(bad, 0);
    /* the head whose run-1 accesses all use slots 0..K-1: run 1's pairs meet fully */
    const an_overlap_row *full = &rows[1 * NH + 0];
    CU_ASSERT(full->overlap >= (KK * 2.0) / 5.0);
    free(rows);
}

TH_TEST(test_overlap_cli, "overlap: CSV rows per head; a missing run, bad line or option exits 2")
{
    CU_ASSERT_EQUAL(th_run("%s overlap %s --pairs %s -f csv", th_bin(), DB, PF), 0);
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 1 + NL * NH);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "other_share"));
    const char *bad = th_path("bad.txt");
    th_write_file(bad, "nosuch 1 2\n", 11);
    CU_ASSERT_EQUAL(th_run("%s overlap %s --pairs %s", th_bin(), DB, bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "nosuch"));
    th_write_file(bad, "a 1\n", 4);
    CU_ASSERT_EQUAL(th_run("%s overlap %s --pairs %s", th_bin(), DB, bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "line 1"));
    CU_ASSERT_EQUAL(th_run("%s overlap %s", th_bin(), DB), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--pairs"));
    CU_ASSERT_EQUAL(th_run("%s overlap %s --pairs %s --bogus", th_bin(), DB, PF), 2);
    CU_ASSERT_EQUAL(th_run("%s overlap %s --pairs %s", th_bin(), th_path("none.db"), PF), 2);
}

/* Appends the events of (head, pos, op): slots s[0..k), weights 0.5, 0.25. */
static size_t put(tr_event *ev, size_t n, int head, int pos, int op, const uint32_t *s, int k)
{
    for (int r = 0; r < k; r++) {
        tr_event *e = &ev[n++];
        memset(e, 0, sizeof *e);
        e->layer = 0;
        e->head = (uint16_t)head;
        e->pos = pos;
        e->op = (uint8_t)op;
        e->rank = (uint16_t)r;
        e->slot = e->addr = s[r];
        e->weight = r ? 0.25f : 0.5f;
    }
    return n;
}

TH_TEST(test_overlap_spread_present, "overlap: spread averages only runs where >= 2 pairs have writes in the head")
{
    /* one layer, two heads, M = 8, K = 2, positions 0..3 written and read
     * (head 1 of run 1 writes nothing at 1).  Spread by hand:
     *   run 1, pairs (0,2) (1,3): head 0 writes {0,1} and {1,2}: 3 distinct
     *     of 4 = 0.75; head 1 has one present pair: not counted;
     *   run 2, pairs (0,2) (5,6): position 5 is not in the run, one present
     *     pair in each head: not counted;
     *   run 3, one pair (1,3): not counted.
     * So head 0: 0.75 (counting the one-pair runs, 1 each, would give 0.917),
     * head 1: none, NaN. */
    static const uint32_t w0[2] = { 0, 1 }, w1[2] = { 1, 2 }, rd[2] = { 1, 5 };
    size_t n[2] = { 0, 0 };
    tr_event evs[2][64];
    for (int v = 0; v < 2; v++) /* v 0: head 1 writes at 1 too (runs 2, 3); v 1: it does not (run 1) */
        for (int h = 0; h < 2; h++)
            for (int p = 0; p < 4; p++) {
                if (!(v == 1 && h == 1 && p == 1)) n[v] = put(evs[v], n[v], h, p, 0, p == 1 ? w1 : w0, 2);
                n[v] = put(evs[v], n[v], h, p, 1, rd, 2);
            }
    an_overlap a;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(an_overlap_init(&a, 1, 2, 8, &err), RN_OK);
    const an_pair p1[2] = { { 0, 2 }, { 1, 3 } }, p2[2] = { { 0, 2 }, { 5, 6 } }, p3[1] = { { 1, 3 } };
    CU_ASSERT_EQUAL(an_overlap_add(&a, evs[1], n[1], p1, 2, &err), RN_OK);
    CU_ASSERT_EQUAL(an_overlap_add(&a, evs[0], n[0], p2, 2, &err), RN_OK);
    CU_ASSERT_EQUAL(an_overlap_add(&a, evs[0], n[0], p3, 1, &err), RN_OK);
    an_overlap_row rows[2];
    an_overlap_rows(&a, rows);
    CU_ASSERT_DOUBLE_EQUAL(rows[0].spread, 0.75, 1e-12);
    CU_ASSERT(isnan(rows[1].spread));
    /* the pairs counted, by hand: head 0 run 1 two right and two other, run
     * 2 one right (pair 2 has no write nor read), run 3 one right; head 1
     * run 1 loses the write of pair 2: pair 1 right, pair 2 reads pair 1's
     * write (other) */
    CU_ASSERT_EQUAL(rows[0].n_pairs, 4);
    CU_ASSERT_EQUAL(rows[0].n_other, 2);
    CU_ASSERT_EQUAL(rows[1].n_pairs, 3);
    CU_ASSERT_EQUAL(rows[1].n_other, 1);
    an_overlap_free(&a);
}
