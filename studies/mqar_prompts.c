/* mqar_prompts.c — fixed MQAR examples as prompt files of token ids, for
 * tracing a model (`ramtrace trace MODEL DIR/exNNN.txt`), and the file of
 * (write, read) position pairs that `ramtrace overlap --pairs` reads.
 *
 * usage: mqar_prompts V L N EXAMPLES SEED DIR
 * Writes DIR/ex000.txt … (L whitespace-separated ids each, no BOS: the ids
 * tokenizer maps them 1:1 to positions) and DIR/pairs.txt: one line
 * "exNNN.txt WPOS RPOS" per query, WPOS = 2i+1 (the value of pair i, the
 * position where key and value meet after layer 0 carries the key
 * forward), RPOS = the query's position (the key repeated; its target is
 * the value), DIR/keys.txt: "exNNN.txt KPOS RPOS" with KPOS = 2i (the
 * key's own position), and DIR/prev.txt: "exNNN.txt P P+1" for every
 * position P < L-1 (does a head read at P+1 what was written at P: the
 * previous-token carry of layer 0's CAPE heads).  The examples are rn_mqar_example's, from SEED. */
#include <stdio.h>
#include <stdlib.h>

#include "rn_rng.h"
#include "rn_tasks.h"

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: mqar_prompts V L N EXAMPLES SEED DIR\n");
        return 2;
    }
    int V = atoi(argv[1]), L = atoi(argv[2]), N = atoi(argv[3]), E = atoi(argv[4]);
    uint64_t seed = strtoull(argv[5], NULL, 10);
    const char *dir = argv[6];
    rn_error err = { 0 };
    if (E < 1 || rn_mqar_check(V, L, N, &err)) {
        fprintf(stderr, "mqar_prompts: %s\n", E < 1 ? "EXAMPLES must be >= 1" : err.msg);
        return 2;
    }
    int *tok = malloc(sizeof *tok * (size_t)L), *tgt = malloc(sizeof *tgt * (size_t)L);
    double *pbuf = malloc(sizeof *pbuf * (size_t)L);
    char path[4096];
    snprintf(path, sizeof path, "%s/pairs.txt", dir);
    FILE *pf = fopen(path, "w");
    snprintf(path, sizeof path, "%s/keys.txt", dir);
    FILE *kf = fopen(path, "w");
    snprintf(path, sizeof path, "%s/prev.txt", dir);
    FILE *vf = fopen(path, "w");
    if (!tok || !tgt || !pbuf || !pf || !kf || !vf) { fprintf(stderr, "mqar_prompts: cannot write %s\n", dir); return 1; }
    rn_rng rng;
    rn_rng_seed(&rng, seed);
    for (int e = 0; e < E; e++) {
        rn_mqar_example(&rng, V, L, N, RN_MQAR_POWER_A, tok, tgt, pbuf, NULL);
        char name[32];
        snprintf(name, sizeof name, "ex%03d.txt", e);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        if (!f) { fprintf(stderr, "mqar_prompts: cannot write %s\n", path); return 1; }
        for (int p = 0; p < L; p++) fprintf(f, "%d%c", tok[p], p + 1 < L ? ' ' : '\n');
        fclose(f);
        for (int p = 0; p + 1 < L; p++) fprintf(vf, "%s %d %d\n", name, p, p + 1);
        for (int p = 2 * N; p < L; p++) {
            if (tgt[p] < 0) continue;
            for (int i = 0; i < N; i++)
                if (tok[2 * i] == tok[p] && tok[2 * i + 1] == tgt[p]) {
                    fprintf(pf, "%s %d %d\n", name, 2 * i + 1, p);
                    fprintf(kf, "%s %d %d\n", name, 2 * i, p);
                }
        }
    }
    fclose(pf);
    fclose(kf);
    fclose(vf);
    free(tok); free(tgt); free(pbuf);
    return 0;
}
