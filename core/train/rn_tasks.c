/* rn_tasks.c — MQAR generator and byte-level text batching (rn_tasks.h). */
#include "rn_tasks.h"
#include "rn_shard.h"
#include "rn_tokenizer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const rn_mqar_seg rn_mqar_train_segs[] = { {64, 4}, {128, 8}, {256, 16}, {256, 32}, {256, 64} };
const int rn_mqar_n_train_segs = 5;
const rn_mqar_seg rn_mqar_test_segs[] = { {64, 4}, {64, 8}, {64, 16}, {128, 32}, {256, 64},
                                          {512, 128}, {1024, 256} };
const int rn_mqar_n_test_segs = 7;

int rn_mqar_check(int V, int L, int N, rn_error *err)
{
    if (L < 4 || L % 2)
        return rn_seterr(err, RN_EINPUT, "mqar: sequence length %d must be even and >= 4", L);
    if (N < 1 || 4 * N > L)
        return rn_seterr(err, RN_EINPUT, "mqar: %d key-value pairs need 4*N <= L = %d", N, L);
    if (N >= V / 2 - 1)
        return rn_seterr(err, RN_EINPUT, "mqar: %d keys do not fit in a vocabulary of %d", N, V);
    return RN_OK;
}

/* n distinct values from [lo, hi) (n small against hi − lo: rejection). */
static void distinct(rn_rng *rng, int lo, int hi, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        int x, dup;
        do {
            x = lo + (int)rn_rng_below(rng, (uint64_t)(hi - lo));
            dup = 0;
            for (int j = 0; j < i; j++) dup |= out[j] == x;
        } while (dup);
        out[i] = x;
    }
}

void rn_mqar_example(rn_rng *rng, int V, int L, int N, double a, int *tokens, int *targets,
                     double *pbuf, int *pair_of)
{
    int ctx = 2 * N, space = (L - ctx) / 2, half = V / 2;
    for (int i = 0; i < L; i++) { tokens[i] = -1; targets[i] = -100; }
    if (pair_of)
        for (int i = 0; i < L; i++) pair_of[i] = -1;
    /* keys at even context slots, values at odd ones (tokens used as scratch
     * would alias, so draw into targets' tail first) */
    int *keys = targets + L - 2 * N, *vals = targets + L - N;
    distinct(rng, 1, half, N, keys);
    distinct(rng, half, V, N, vals);
    for (int i = 0; i < N; i++) { tokens[2 * i] = keys[i]; tokens[2 * i + 1] = vals[i]; }
    /* gaps without replacement, p ∝ a·(g+1)^(a−1), renormalised each draw */
    double total = 0;
    for (int g = 0; g < space; g++) total += pbuf[g] = a * pow(g + 1.0, a - 1.0);
    for (int i = 0; i < N; i++) {
        double u = rn_rng_uniform(rng) * total, acc = 0;
        int g = 0, last = -1;
        for (; g < space; g++) {
            if (pbuf[g] <= 0) continue;
            last = g;
            acc += pbuf[g];
            if (u < acc) break;
        }
        if (g == space) g = last; /* rounding at the top end */
        total -= pbuf[g];
        pbuf[g] = 0;
        tokens[ctx + 2 * g] = keys[i];
        tokens[ctx + 2 * g + 1] = -2 - vals[i]; /* mark: value is the label of ctx+2g */
        if (pair_of) pair_of[ctx + 2 * g] = i;
    }
    for (int i = L - 1; i >= 0; i--) targets[i] = -100;
    for (int p = ctx; p + 1 < L; p += 2)
        if (tokens[p + 1] <= -2) {
            targets[p] = -2 - tokens[p + 1];
            tokens[p + 1] = -1;
        }
    for (int i = 0; i < L; i++)
        if (tokens[i] < 0) tokens[i] = (int)rn_rng_below(rng, (uint64_t)V);
}

void rn_mqar_pair_bin(int N, int B, int b, int *from, int *to)
{
    *from = (int)((int64_t)b * N / B);
    *to = (int)((int64_t)(b + 1) * N / B) - 1;
}

/* Split t (n set) at the last val_frac; both parts must hold a window
 * (val_frac = 1: all of it is held out, for evaluation). */
static int text_split(rn_text *t, const char *path, double val_frac, int T, const char *unit, rn_error *err)
{
    t->n_train = val_frac >= 1 ? 0 : t->n - (int64_t)((double)t->n * val_frac);
    if ((val_frac < 1 && t->n_train < T + 1) || t->n - t->n_train < T + 1) {
        int64_t n = t->n;
        rn_text_free(t);
        if (val_frac >= 1) /* evaluation: one split, the whole corpus */
            return rn_seterr(err, RN_EINPUT, "%s: text of %lld %s is shorter than one sequence of %d %s",
                             path, (long long)n, unit, T + 1, unit);
        int64_t need = (int64_t)((T + 1) / (val_frac < 0.5 ? val_frac : 1 - val_frac)) + 1;
        return rn_seterr(err, RN_EINPUT, "%s: corpus of %lld %s is shorter than one sequence of %d %s in each split (need about %lld %s)",
                         path, (long long)n, unit, T + 1, unit, (long long)need, unit);
    }
    return RN_OK;
}

int rn_text_load_for(rn_text *t, const rn_config *c, const char *path, double val_frac, int T, rn_error *err)
{
    memset(t, 0, sizeof *t);
    /* a shard file, or a directory for a SentencePiece model (for any other
     * a directory is a corpus that is not a regular file, as before) */
    int shard = rn_shard_is(path);
    if (shard == 2 || (shard == 1 && c->tokenizer == RN_TOK_SPM)) {
        int rc = rn_shards_load(path, c, &t->ids, &t->n, err);
        return rc ? rc : text_split(t, path, val_frac, T, "tokens", err);
    }
    if (c->tokenizer != RN_TOK_SPM) return rn_text_load(t, path, val_frac, T, err);
    int n;
    int rc = rn_tokenize_file(c, path, &t->ids, &n, err);
    if (rc) return rc;
    t->n = n;
    return text_split(t, path, val_frac, T, "tokens", err);
}

int rn_text_load(rn_text *t, const char *path, double val_frac, int T, rn_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open corpus: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || fseek(f, 0, SEEK_END) || ftell(f) < 0) {
        fclose(f);
        return rn_seterr(err, RN_EINPUT, "%s: corpus is not a regular file", path);
    }
    long n = ftell(f);
    rewind(f);
    if (n == 0) { fclose(f); return rn_seterr(err, RN_EINPUT, "%s: corpus is empty", path); }
    t->data = malloc((size_t)n);
    if (!t->data) { fclose(f); return rn_seterr(err, RN_ENOMEM, "%s: out of memory for %ld bytes", path, n); }
    size_t got = fread(t->data, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        rn_text_free(t);
        return rn_seterr(err, RN_EIO, "%s: read %zu of %ld bytes", path, got, n);
    }
    t->n = n;
    return text_split(t, path, val_frac, T, "bytes", err);
}

void rn_text_free(rn_text *t)
{
    free(t->data);
    free(t->ids);
    memset(t, 0, sizeof *t);
}

void rn_text_batch(const rn_text *t, rn_rng *rng, int B, int T, int *tokens, int *targets)
{
    for (int b = 0; b < B; b++) {
        int64_t o = (int64_t)rn_rng_below(rng, (uint64_t)(t->n_train - T));
        for (int i = 0; i < T; i++) {
            tokens[(size_t)b * T + i] = rn_text_at(t, o + i);
            targets[(size_t)b * T + i] = rn_text_at(t, o + i + 1);
        }
    }
}

int64_t rn_text_n_val(const rn_text *t, int T) { return (t->n - t->n_train - 1) / T; }

void rn_text_val_window(const rn_text *t, int64_t i, int T, int *tokens, int *targets)
{
    int64_t o = t->n_train + i * T;
    for (int j = 0; j < T; j++) {
        tokens[j] = rn_text_at(t, o + j);
        targets[j] = rn_text_at(t, o + j + 1);
    }
}
