/* test_case_kernel.c — scripts/case-study-kernel-lm end to end on a tiny
 * random model with a SentencePiece tokenizer trained on the C fixture, so
 * that the study's script and its programs (studies/kernel_input.c,
 * studies/case_kernel.c) keep working: the document and every figure are
 * written, the budgets it reports are the smallest at which exact LRU hits
 * 90% and 99% (checked here with `simulate` one slot below), the
 * --state-budget runs hit what it says, and bad arguments exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

#define CKL_TEXT "tests/data/kernel-style.c"

static char g_model[512], g_out[512];

static int setup(void)
{
    char tok[512];
    snprintf(tok, sizeof tok, "%s", th_path("ckl_tok.model"));
    snprintf(g_model, sizeof g_model, "%s", th_path("ckl_model.bin"));
    snprintf(g_out, sizeof g_out, "%s", th_path("ckl_out"));
    if (th_run("%s -q tokenizer train --vocab 400 %s -o %s", th_bin(), CKL_TEXT, tok)) return -1;
    if (th_run("%s -q init --config samples/configs/tiny.cfg --tokenizer spm:%s --vocab-size 400 --seed 7 -o %s",
               th_bin(), tok, g_model)) return -1;
    return 0;
}
TH_SUITE(case_kernel, setup, NULL);

/* The hit ratio of exact LRU at capacity c on trace db (one model cache). */
static double lru_hit(const char *db, int c)
{
    if (th_run("%s simulate %s --policy lru --capacity %d -f csv -q", th_bin(), db, c)) return -1;
    const char *row = strchr(th_out(), '\n');
    double h = -1;
    if (!row || sscanf(row + 1, "%*[^,],%*d,%*d,%*d,%*d,%lf", &h) != 1) return -1;
    return h;
}

TH_TEST(test_ckl_script, "case-study-kernel-lm: document, figures, budgets and tiered runs")
{
    CU_ASSERT_EQUAL_FATAL(th_run("scripts/case-study-kernel-lm %s --tokens 1000 --windows 4 --queries 20 --test %s -o %s",
                                 g_model, CKL_TEXT, g_out), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/case-study-kernel-lm.md", g_out);
    char *doc = th_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    const char *want[] = { "## Per-head memory use", "## The caching claim", "### The tiered state at those budgets",
                           "## The functional-roles claim", "### brace: ablations", "### paren: ablations",
                           "(img/kernel-trace.png)", "(img/kernel-mrc.png)", "(img/kernel-roles.png)" };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CU_ASSERT_PTR_NOT_NULL(strstr(doc, want[i]));
    free(doc);
    const char *figs[] = { "kernel-trace", "kernel-trace-init", "kernel-heatmap", "kernel-mrc", "kernel-mrc-init", "kernel-roles" };
    for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
        snprintf(path, sizeof path, "%s/img/%s.png", g_out, figs[i]);
        CU_ASSERT(th_file_exists(path));
    }
    /* the budgets: the smallest capacities at which LRU hits 90% and 99% */
    char db[1024];
    snprintf(db, sizeof db, "%s/kernel.db", g_out);
    snprintf(path, sizeof path, "%s/tiered.txt", g_out);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const double goal[2] = { 0.9, 0.99 };
    int rows = 0;
    long c, acc, hits, miss, ev;
    double tps;
    while (rows < 2 && fscanf(f, "%ld %ld %ld %ld %ld %lf", &c, &acc, &hits, &miss, &ev, &tps) == 6) {
        CU_ASSERT(hits >= goal[rows] * acc);
        CU_ASSERT_EQUAL(hits + miss, acc);
        CU_ASSERT(tps > 0);
        double at = lru_hit(db, (int)c), below = lru_hit(db, (int)c - 1);
        CU_ASSERT(at >= goal[rows]);
        CU_ASSERT(below >= 0 && below < goal[rows]);
        rows++;
    }
    fclose(f);
    /* a goal without a run: LRU misses it even with every row cached (the
     * first accesses to the 2 x 4 x 512 rows miss in any cache) */
    CU_ASSERT(rows >= 1);
    if (rows < 2) CU_ASSERT(lru_hit(db, 2 * 4 * 512) < goal[rows]);
    /* one row a query and arm */
    snprintf(path, sizeof path, "%s/kernel-roles.csv", g_out);
    char *csv = th_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT(!strncmp(csv, "kind,window,opener,pos,target,heads,when,slots_ablated,n_slots,logp_clean,logp_ablated\n", 87));
    CU_ASSERT(th_count_lines(csv) > 1);
    free(csv);
}

TH_TEST(test_ckl_bad_args, "case-study-kernel-lm: a missing model or text, an unknown option: exit 2")
{
    CU_ASSERT_EQUAL(th_run("scripts/case-study-kernel-lm %s -o %s", th_path("ckl_none.bin"), th_path("ckl_bad")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no such model file"));
    CU_ASSERT_EQUAL(th_run("scripts/case-study-kernel-lm %s --test %s -o %s", g_model, th_path("ckl_none.txt"),
                           th_path("ckl_bad")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no such file"));
    CU_ASSERT_EQUAL(th_run("scripts/case-study-kernel-lm %s --frobnicate", g_model), 2);
    CU_ASSERT(!th_file_exists(th_path("ckl_bad")));
}
