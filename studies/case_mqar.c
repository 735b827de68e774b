/* case_mqar.c — the MQAR case study of docs/case-study-mqar.md: on a
 * trained MQAR model, find the head that retrieves values, then for every
 * query it answers correctly check
 *   1. which of the slots that head reads at the query were written by the
 *      query key's pair (the context key and value tokens) — from the
 *      recorded accesses;
 *   2. that ablating exactly those slots (ablate-slots) flips the answer,
 *      while ablating as many other read slots, chosen at random, does not;
 *   3. that patching the head's output at the query from the clean run
 *      (patch-head at that position) restores the answer.
 * Everything runs through the library's runtime, probe and interventions
 * (core/infer/rn_intervene.h), exactly as `ramtrace run --intervene` would.
 *
 * usage: case_mqar MODEL [EXAMPLES [L [N [SEED [OUT_DIR]]]]]
 *   defaults: 40 examples of the test rung (128, 32), seed 1, OUT_DIR out.
 * Prints a summary; writes OUT_DIR/case-mqar-queries.csv (one row per
 * query) and OUT_DIR/case-mqar-example.txt (example 0, for a trace plot).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_intervene.h"
#include "rn_modelfile.h"
#include "rn_probe.h"
#include "rn_rng.h"
#include "rn_runtime.h"
#include "rn_tasks.h"
#include "study_probe.h"

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

static void die(const rn_error *e)
{
    fprintf(stderr, "case_mqar: %s\n", e->msg);
    exit(e->code == RN_EINPUT ? 2 : 1);
}

/* Add "ablate-slots L.H:s1,..." for n slots to iv. */
static void add_ablation(rn_iv_set *iv, int l, int h, const uint32_t *slots, int n)
{
    rn_error err;
    if (study_ablate(iv, l, h, slots, n, "", &err)) die(&err);
}

/* The retrieval heads together: every head whose reads put at least half
 * their weight on the pair's slots.  Per correctly answered query, ablate
 * the pair's read slots in all of them at once (and, as the control, as
 * many other read slots of each), and patch all of them at the query from
 * the clean run. */
static void combined(rn_runtime *rt, const rn_config *c, rn_rng *rng, rn_rng *pick, uint64_t seed, int n_ex,
                     int T, int N, const double *head_share, study_accesses *acc, int *toks, int *tgt, double *pbuf,
                     float *lg, float *lg2)
{
    const int V = c->vocab_size, L = c->n_layers, H = c->n_heads, K = c->top_k, dv = c->d_v;
    int hl[64], hh[64], nh = 0;
    for (int i = 0; i < L * H && nh < 64; i++)
        if (head_share[i] >= 0.5) hl[nh] = i / H, hh[nh] = i % H, nh++;
    if (!nh) { printf("\nno head puts half its read weight on the pair's slots\n"); return; }
    rn_real *o_clean = malloc(sizeof(rn_real) * nh * T * dv);
    rn_probe probe = { .user = acc, .access = study_record };
    rn_error err;
    rn_iv_set iv;
    long n_q = 0, n_abl = 0, n_flip = 0, n_ctrl = 0, n_ctrl_flip = 0, n_rest = 0, n_rest_ok = 0;
    long n_ctrl2 = 0, n_ctrl2_flip = 0;
    const int64_t M = rn_config_slots(c);
    uint8_t *mark = malloc((size_t)M);
    uint32_t *pool = malloc(sizeof(uint32_t) * (size_t)M);
    rn_rng_seed(rng, seed);
    rn_rng_seed(pick, seed ^ 0x51ed27a3c2b1f00dULL);
    for (int e = 0; e < n_ex; e++) {
        rn_mqar_example(rng, V, T, N, RN_MQAR_POWER_A, toks, tgt, pbuf, NULL);
        rn_iv_init(&iv, c);
        for (int k = 0; k < nh; k++)
            if (rn_iv_add_buffer(&iv, 0, hl[k], hh[k], o_clean + (size_t)k * T * dv, T, &err)) die(&err);
        rn_runtime_set_probe(rt, &probe);
        if (study_run(rt, &iv, toks, T, lg, &err)) die(&err);
        rn_runtime_set_probe(rt, NULL);
        rn_iv_free(&iv);
        for (int p = 0; p < T; p++) {
            if (tgt[p] < 0 || argmax(lg + (size_t)p * V, V) != tgt[p]) continue;
            int i = 0;
            while (i < N && toks[2 * i] != toks[p]) i++;
            if (i == N) continue;
            n_q++;
            rn_iv_set abl, ctrl, ctrl2;
            rn_iv_init(&abl, c);
            rn_iv_init(&ctrl, c);
            rn_iv_init(&ctrl2, c);
            int any = 0, ctrl_ok = 1, ctrl2_ok = 1;
            for (int k = 0; k < nh; k++) {
                uint32_t pair[2 * STUDY_MAXK], shared[STUDY_MAXK], other[STUDY_MAXK];
                int np = 0, ns = 0, no = 0;
                for (int q = 2 * i; q <= 2 * i + 1; q++)
                    for (int j = 0; j < K; j++) pair[np++] = acc->wslot[(((size_t)q * L + hl[k]) * H + hh[k]) * K + j];
                const uint32_t *rs = acc->rslot + (((size_t)p * L + hl[k]) * H + hh[k]) * K;
                for (int j = 0; j < K; j++) {
                    int in = 0;
                    for (int a = 0; a < np; a++) in |= pair[a] == rs[j];
                    if (in) shared[ns++] = rs[j];
                    else other[no++] = rs[j];
                }
                if (!ns) continue;
                any = 1;
                add_ablation(&abl, hl[k], hh[k], shared, ns);
                /* the second control: as many slots drawn from those the
                 * head reads anywhere in the example, minus the pair's */
                memset(mark, 0, (size_t)M);
                for (int a = 0; a < np; a++) mark[pair[a]] = 2;
                int npool = 0;
                for (int q = 0; q < T; q++)
                    for (int j = 0; j < K; j++) {
                        uint32_t r = acc->rslot[(((size_t)q * L + hl[k]) * H + hh[k]) * K + j];
                        if (!mark[r]) { mark[r] = 1; pool[npool++] = r; }
                    }
                if (npool < ns) ctrl2_ok = 0;
                else {
                    study_pick(pick, pool, npool, ns);
                    add_ablation(&ctrl2, hl[k], hh[k], pool, ns);
                }
                if (no < ns) { ctrl_ok = 0; continue; }
                study_pick(pick, other, no, ns);
                add_ablation(&ctrl, hl[k], hh[k], other, ns);
            }
            if (any) {
                n_abl++;
                if (study_run(rt, &abl, toks, T, lg2, &err)) die(&err);
                int flip = argmax(lg2 + (size_t)p * V, V) != tgt[p];
                n_flip += flip;
                if (flip) {
                    for (int k = 0; k < nh; k++) {
                        if (rn_iv_add_buffer(&abl, 1, hl[k], hh[k], o_clean + (size_t)k * T * dv, T, &err)) die(&err);
                        abl.iv[abl.n - 1].t0 = abl.iv[abl.n - 1].t1 = p;
                    }
                    if (study_run(rt, &abl, toks, T, lg2, &err)) die(&err);
                    n_rest++;
                    n_rest_ok += argmax(lg2 + (size_t)p * V, V) == tgt[p];
                }
                if (ctrl_ok) {
                    if (study_run(rt, &ctrl, toks, T, lg2, &err)) die(&err);
                    n_ctrl++;
                    n_ctrl_flip += argmax(lg2 + (size_t)p * V, V) != tgt[p];
                }
                if (ctrl2_ok) {
                    if (study_run(rt, &ctrl2, toks, T, lg2, &err)) die(&err);
                    n_ctrl2++;
                    n_ctrl2_flip += argmax(lg2 + (size_t)p * V, V) != tgt[p];
                }
            }
            rn_iv_free(&abl);
            rn_iv_free(&ctrl);
            rn_iv_free(&ctrl2);
        }
    }
    printf("\nThe retrieval heads together (");
    for (int k = 0; k < nh; k++) printf("%s%d.%d", k ? ", " : "", hl[k], hh[k]);
    printf(": half or more of their read weight on the pair's slots), %ld queries answered correctly:\n\n", n_q);
    printf("| measure | rate |\n|---|---|\n");
    printf("| answer flips when the pair's read slots are ablated in every retrieval head | %.2f%% (%ld of %ld) |\n",
           100.0 * n_flip / (n_abl ? n_abl : 1), n_flip, n_abl);
    printf("| answer flips when as many other read slots are ablated, at random | %.2f%% (%ld of %ld) |\n",
           100.0 * n_ctrl_flip / (n_ctrl ? n_ctrl : 1), n_ctrl_flip, n_ctrl);
    printf("| answer flips when as many slots the heads read elsewhere in the example (not the pair's) are ablated, at random | %.2f%% (%ld of %ld) |\n",
           100.0 * n_ctrl2_flip / (n_ctrl2 ? n_ctrl2 : 1), n_ctrl2_flip, n_ctrl2);
    printf("| flipped answers restored by patching those heads at the query from the clean run | %.2f%% (%ld of %ld) |\n",
           100.0 * n_rest_ok / (n_rest ? n_rest : 1), n_rest_ok, n_rest);
    free(o_clean);
    free(mark);
    free(pool);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: case_mqar MODEL [EXAMPLES [L [N [SEED [OUT_DIR]]]]]\n"); return 2; }
    int n_ex = argc > 2 ? atoi(argv[2]) : 40, T = argc > 3 ? atoi(argv[3]) : 128, N = argc > 4 ? atoi(argv[4]) : 32;
    uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
    const char *out = argc > 6 ? argv[6] : "out";
    rn_error err = { 0 };
    rn_model m;
    if (rn_model_load(&m, argv[1], &err)) die(&err);
    const rn_config *c = &m.cfg;
    const int V = c->vocab_size, L = c->n_layers, H = c->n_heads, K = c->top_k;
    if (K > STUDY_MAXK) { fprintf(stderr, "case_mqar: top_k above %d\n", STUDY_MAXK); return 2; }
    if (rn_mqar_check(V, T, N, &err)) die(&err);
    int *toks = malloc(sizeof(int) * T), *tgt = malloc(sizeof(int) * T);
    double *pbuf = malloc(sizeof(double) * T);
    float *lg = malloc(sizeof(float) * T * V), *lg2 = malloc(sizeof(float) * T * V);
    study_accesses acc = { L, H, K, malloc(sizeof(uint32_t) * T * L * H * K), malloc(sizeof(uint32_t) * T * L * H * K),
                           malloc(sizeof(float) * T * L * H * K), malloc(sizeof(float) * T * L * H * K) };
    rn_runtime *rt;
    if (rn_runtime_create(&m, 256, &rt, &err)) die(&err);
    rn_iv_set iv;
    rn_rng rng, pick_all;

    /* Pass 1: accuracy clean and with each head ablated. */
    long q_total = 0, q_ok = 0, *q_ok_abl = calloc((size_t)L * H, sizeof(long));
    rn_rng_seed(&rng, seed);
    for (int e = 0; e < n_ex; e++) {
        rn_mqar_example(&rng, V, T, N, RN_MQAR_POWER_A, toks, tgt, pbuf, NULL);
        rn_iv_init(&iv, c);
        if (study_run(rt, &iv, toks, T, lg, &err)) die(&err);
        for (int p = 0; p < T; p++)
            if (tgt[p] >= 0) { q_total++; q_ok += argmax(lg + (size_t)p * V, V) == tgt[p]; }
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                char spec[64];
                rn_iv_free(&iv);
                rn_iv_init(&iv, c);
                snprintf(spec, sizeof spec, "ablate-head %d.%d", l, h);
                if (rn_iv_add(&iv, spec, &err) || study_run(rt, &iv, toks, T, lg, &err)) die(&err);
                for (int p = 0; p < T; p++)
                    if (tgt[p] >= 0) q_ok_abl[l * H + h] += argmax(lg + (size_t)p * V, V) == tgt[p];
            }
        rn_iv_free(&iv);
    }
    int worst = 0;
    printf("MQAR (L=%d, N=%d): %d examples, %ld queries (seed %llu)\n\n", T, N, n_ex, q_total,
           (unsigned long long)seed);
    printf("| run | accuracy |\n|---|---|\n| clean | %.2f%% |\n", 100.0 * q_ok / q_total);
    for (int i = 0; i < L * H; i++) {
        printf("| ablate-head %d.%d | %.2f%% |\n", i / H, i % H, 100.0 * q_ok_abl[i] / q_total);
        if (q_ok_abl[i] < q_ok_abl[worst]) worst = i;
    }
    printf("\nablating head %d.%d costs the most accuracy\n\n", worst / H, worst % H);

    /* Pass 2: per query, on the retrieval head. */
    char path[1024];
    snprintf(path, sizeof path, "%s/case-mqar-queries.csv", out);
    FILE *csv = fopen(path, "w");
    if (!csv) { fprintf(stderr, "case_mqar: cannot write %s\n", path); return 1; }
    fprintf(csv, "layer,head,example,pos,key,value,pair_slots,read_share_of_pair,top1_from_pair,flip_pair,flip_random,restored\n");
    rn_probe probe = { .user = &acc, .access = study_record };
    rn_real *o_clean = malloc(sizeof(rn_real) * T * c->d_v);
    double *head_share = calloc((size_t)L * H, sizeof(double));
    printf("Per head, on the queries the model answers correctly (reads at the query position;\n"
           "\"pair\": the slots the head wrote at the key's context key and value):\n\n"
           "| head | queries | reads include a pair slot | top read slot is a pair slot | read weight on pair slots "
           "| flips, pair slots ablated | flips, as many other read slots ablated | flipped answers restored by patching the head at the query |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (int rl = 0; rl < L; rl++)
    for (int rh = 0; rh < H; rh++) {
    long n_q = 0, n_pair = 0, n_top1 = 0, n_flip = 0, n_ctrl = 0, n_ctrl_flip = 0, n_rest = 0, n_rest_ok = 0;
    double share_sum = 0;
    rn_rng_seed(&rng, seed);
    rn_rng pick;
    rn_rng_seed(&pick, seed ^ 0x9e3779b97f4a7c15ULL);
    for (int e = 0; e < n_ex; e++) {
        rn_mqar_example(&rng, V, T, N, RN_MQAR_POWER_A, toks, tgt, pbuf, NULL);
        if (e == 0 && rl == 0 && rh == 0) {
            snprintf(path, sizeof path, "%s/case-mqar-example.txt", out);
            FILE *f = fopen(path, "w");
            if (f) { for (int p = 0; p < T; p++) fprintf(f, "%d%c", toks[p], p + 1 < T ? ' ' : '\n'); fclose(f); }
        }
        /* clean: accesses and the retrieval head's output */
        rn_iv_init(&iv, c);
        if (rn_iv_add_buffer(&iv, 0, rl, rh, o_clean, T, &err)) die(&err);
        rn_runtime_set_probe(rt, &probe);
        if (study_run(rt, &iv, toks, T, lg, &err)) die(&err);
        rn_runtime_set_probe(rt, NULL);
        rn_iv_free(&iv);
        for (int p = 0; p < T; p++) {
            if (tgt[p] < 0 || argmax(lg + (size_t)p * V, V) != tgt[p]) continue;
            int i = 0;
            while (i < N && toks[2 * i] != toks[p]) i++;
            if (i == N) continue;
            n_q++;
            /* the slots the pair (positions 2i, 2i+1) wrote in the head */
            uint32_t pair[2 * STUDY_MAXK];
            int np = 0;
            for (int q = 2 * i; q <= 2 * i + 1; q++)
                for (int j = 0; j < K; j++) {
                    uint32_t s = acc.wslot[(((size_t)q * L + rl) * H + rh) * K + j];
                    int dup = 0;
                    for (int a = 0; a < np; a++) dup |= pair[a] == s;
                    if (!dup) pair[np++] = s;
                }
            const uint32_t *rs = acc.rslot + (((size_t)p * L + rl) * H + rh) * K;
            const float *rw = acc.rw + (((size_t)p * L + rl) * H + rh) * K;
            uint32_t shared[STUDY_MAXK], other[STUDY_MAXK];
            int ns = 0, no = 0;
            double rsum = 0, rshared = 0;
            for (int j = 0; j < K; j++) {
                int in = 0;
                for (int a = 0; a < np; a++) in |= pair[a] == rs[j];
                rsum += rw[j];
                if (in) { shared[ns++] = rs[j]; rshared += rw[j]; }
                else other[no++] = rs[j];
            }
            int top1 = 0;
            for (int a = 0; a < np; a++) top1 |= pair[a] == rs[0];
            double share = rsum > 0 ? rshared / rsum : 0;
            share_sum += share;
            n_pair += ns > 0;
            n_top1 += top1;
            int flip = -1, flip_r = -1, restored = -1;
            if (ns > 0) {
                /* ablate exactly the read slots the pair wrote */
                char spec[64 + 12 * STUDY_MAXK];
                int len = snprintf(spec, sizeof spec, "ablate-slots %d.%d:", rl, rh);
                for (int a = 0; a < ns; a++) len += snprintf(spec + len, sizeof spec - len, "%s%u", a ? "," : "", shared[a]);
                rn_iv_init(&iv, c);
                if (rn_iv_add(&iv, spec, &err) || study_run(rt, &iv, toks, T, lg2, &err)) die(&err);
                flip = argmax(lg2 + (size_t)p * V, V) != tgt[p];
                n_flip += flip;
                /* ... and patch the head's output at the query from the clean run */
                if (rn_iv_add_buffer(&iv, 1, rl, rh, o_clean, T, &err)) die(&err);
                iv.iv[iv.n - 1].t0 = iv.iv[iv.n - 1].t1 = p;
                if (study_run(rt, &iv, toks, T, lg2, &err)) die(&err);
                restored = argmax(lg2 + (size_t)p * V, V) == tgt[p];
                if (flip) { n_rest++; n_rest_ok += restored; }
                rn_iv_free(&iv);
                /* control: as many of the other read slots, at random */
                if (no >= ns) {
                    study_pick(&pick, other, no, ns);
                    len = snprintf(spec, sizeof spec, "ablate-slots %d.%d:", rl, rh);
                    for (int a = 0; a < ns; a++) len += snprintf(spec + len, sizeof spec - len, "%s%u", a ? "," : "", other[a]);
                    rn_iv_init(&iv, c);
                    if (rn_iv_add(&iv, spec, &err) || study_run(rt, &iv, toks, T, lg2, &err)) die(&err);
                    flip_r = argmax(lg2 + (size_t)p * V, V) != tgt[p];
                    n_ctrl++;
                    n_ctrl_flip += flip_r;
                    rn_iv_free(&iv);
                }
            }
            fprintf(csv, "%d,%d,%d,%d,%d,%d,%d,%.6f,%d,%d,%d,%d\n", rl, rh, e, p, toks[p], tgt[p], ns, share, top1, flip, flip_r, restored);
        }
    }
    printf("| %d.%d | %ld | %.2f%% | %.2f%% | %.2f%% | %.2f%% (%ld/%ld) | %.2f%% (%ld/%ld) | %.2f%% (%ld/%ld) |\n",
           rl, rh, n_q, 100.0 * n_pair / n_q, 100.0 * n_top1 / n_q, 100.0 * share_sum / n_q,
           100.0 * n_flip / (n_pair ? n_pair : 1), n_flip, n_pair,
           100.0 * n_ctrl_flip / (n_ctrl ? n_ctrl : 1), n_ctrl_flip, n_ctrl,
           100.0 * n_rest_ok / (n_rest ? n_rest : 1), n_rest_ok, n_rest);
    fflush(stdout);
    head_share[rl * H + rh] = share_sum / n_q;
    }
    fclose(csv);
    combined(rt, c, &rng, &pick_all, seed, n_ex, T, N, head_share, &acc, toks, tgt, pbuf, lg, lg2);
    free(head_share);
    free(o_clean);
    free(q_ok_abl);
    free(acc.wslot); free(acc.rslot); free(acc.ww); free(acc.rw);
    free(toks); free(tgt); free(pbuf); free(lg); free(lg2);
    rn_runtime_free(rt);
    rn_model_free(&m);
    return 0;
}
