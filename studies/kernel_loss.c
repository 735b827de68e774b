/* kernel_loss.c — is a long held-out sequence still in the model's range?
 * The kernel LM is trained on windows of 256 tokens, and
 * docs/case-study-kernel-lm.md traces tens of thousands of tokens as one
 * sequence.  This runs the input's tokens (read as a prompt, BOS first)
 * once as one sequence and once in fresh windows of 256 tokens (the state
 * reset at each), and prints the loss by position band, bits per token and
 * per byte of the tokens each band predicts, so the study can say whether
 * the model degrades past its training length.
 *
 * usage: kernel_loss MODEL INPUT.txt
 * Prints a Markdown table: band, tokens, bits/token and bits/byte as one
 * sequence and in windows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rn_modelfile.h"
#include "rn_runtime.h"
#include "rn_tokenizer.h"

#define WIN 256
#define NBAND 6
static const long band_lo[NBAND + 1] = { 1, 256, 1024, 4096, 16384, 65536, 1L << 40 };

static void die(const rn_error *e)
{
    fprintf(stderr, "kernel_loss: %s\n", e->msg);
    exit(e->code == RN_EINPUT ? 2 : 1);
}

/* -log2 P(toks[p + 1]) for each row p of lg [n, V] into nll[p0 + p]. */
static void score(const float *lg, int n, int V, const int *toks, long p0, long T, double *nll)
{
    for (int r = 0; r < n; r++) {
        long p = p0 + r;
        if (p + 1 >= T) break;
        const float *x = lg + (size_t)r * V;
        double mx = x[0], s = 0;
        for (int i = 1; i < V; i++) if (x[i] > mx) mx = x[i];
        for (int i = 0; i < V; i++) s += exp(x[i] - mx);
        nll[p] = -(x[toks[p + 1]] - mx - log(s)) / log(2.0);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: kernel_loss MODEL INPUT.txt\n"); return 2; }
    rn_error err = { 0 };
    rn_model m;
    if (rn_model_load(&m, argv[1], &err)) die(&err);
    int *toks, T;
    if (rn_tokenize_file(&m.cfg, argv[2], &toks, &T, &err)) die(&err);
    const int V = m.cfg.vocab_size;
    float *lg = malloc(sizeof(float) * WIN * V);
    double *one = malloc(sizeof(double) * T), *win = malloc(sizeof(double) * T);
    rn_runtime *rt;
    if (!lg || !one || !win) { fprintf(stderr, "kernel_loss: out of memory\n"); return 1; }
    if (rn_runtime_create(&m, WIN, &rt, &err)) die(&err);
    /* one sequence, fed a chunk at a time; then fresh windows */
    for (int pass = 0; pass < 2; pass++) {
        rn_runtime_reset(rt);
        for (long p0 = 0; p0 < T; p0 += WIN) {
            int n = T - p0 < WIN ? (int)(T - p0) : WIN;
            if (pass == 1) rn_runtime_reset(rt);
            /* a window starts with its first token as position 0, like a
             * training window (the first window's first token is BOS) */
            if (rn_prefill(rt, toks + p0, n, lg, 1, &err)) die(&err);
            score(lg, n, V, toks, p0, T, pass ? win : one);
        }
    }
    printf("| positions | tokens predicted | bits/token, one sequence | bits/token, windows of %d | bits/byte, one sequence | bits/byte, windows |\n"
           "|---|---|---|---|---|---|\n", WIN);
    double ta = 0, tb = 0, tbytes = 0;
    long tn = 0;
    for (int b = 0; b < NBAND; b++) {
        double a = 0, w = 0, bytes = 0;
        long n = 0;
        for (long p = band_lo[b] - 1; p < band_lo[b + 1] - 1 && p + 1 < T; p++) {
            if (p < 0) continue;
            a += one[p];
            w += win[p];
            bytes += (double)rn_token_nbytes(&m.cfg, toks[p + 1]);
            n++;
        }
        if (!n) continue;
        ta += a; tb += w; tbytes += bytes; tn += n;
        printf("| %ld–%ld | %ld | %.3f | %.3f | %.3f | %.3f |\n", band_lo[b], band_lo[b] - 1 + n, n, a / n, w / n,
               bytes ? a / bytes : 0, bytes ? w / bytes : 0);
    }
    printf("| all | %ld | %.3f | %.3f | %.3f | %.3f |\n", tn, ta / tn, tb / tn, ta / tbytes, tb / tbytes);
    free(lg); free(one); free(win); free(toks);
    rn_runtime_free(rt);
    rn_model_free(&m);
    return 0;
}
