/* kernel_input.c — the held-out input of docs/case-study-kernel-lm.md: the
 * shortest prefix of whole lines of a text file (the kernel corpus's test
 * split) that the model's tokenizer turns into at least N tokens when it is
 * read as a prompt (BOS included), so that `ramtrace trace`, `run` and the
 * study programs all see the same tokens.
 *
 * usage: kernel_input MODEL TEXT N OUT.txt
 * Prints "TOKENS BYTES" of the prefix written (atomically) to OUT.txt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_atomic.h"
#include "rn_file.h"
#include "rn_modelfile.h"
#include "rn_tokenizer.h"

static void die(const rn_error *e)
{
    fprintf(stderr, "kernel_input: %s\n", e->msg);
    exit(e->code == RN_EINPUT ? 2 : 1);
}

/* The end of the line that byte b is in (one past its '\n'), or len. */
static size_t line_end(const char *t, size_t len, size_t b)
{
    while (b < len && t[b] != '\n') b++;
    return b < len ? b + 1 : len;
}

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: kernel_input MODEL TEXT N OUT.txt\n"); return 2; }
    long want = atol(argv[3]);
    if (want < 1) { fprintf(stderr, "kernel_input: N must be a positive number of tokens\n"); return 2; }
    rn_error err = { 0 };
    rn_model m;
    if (rn_model_load(&m, argv[1], &err)) die(&err);
    char *text;
    size_t len;
    if (rn_read_file(argv[2], &text, &len, &err)) die(&err);
    /* tokenize growing prefixes until one holds N tokens */
    size_t b = line_end(text, len, (size_t)want * 4 < len ? (size_t)want * 4 : len);
    int *ids = NULL, n = 0;
    for (;;) {
        free(ids);
        if (rn_tokenize(&m.cfg, text, b, argv[2], &ids, &n, &err)) die(&err);
        if (n >= want || b == len) break;
        b = line_end(text, len, b * 2 < len ? b * 2 : len);
    }
    if (n < want) { fprintf(stderr, "kernel_input: %s has only %d tokens, fewer than %ld\n", argv[2], n, want); return 2; }
    /* the bytes of the first N tokens, then the rest of that line */
    size_t cut = 0;
    for (long i = 0; i < want; i++) cut += rn_token_nbytes(&m.cfg, ids[i]);
    cut = line_end(text, len, cut ? cut - 1 : 0);
    free(ids);
    if (rn_tokenize(&m.cfg, text, cut, argv[2], &ids, &n, &err)) die(&err);
    if (n < want) { fprintf(stderr, "kernel_input: the cut prefix has %d tokens, fewer than %ld\n", n, want); return 1; }
    if (rn_atomic_write(argv[4], text, cut, &err)) die(&err);
    printf("%d %zu\n", n, cut);
    free(ids);
    free(text);
    rn_model_free(&m);
    return 0;
}
