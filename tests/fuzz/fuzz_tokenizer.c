/* fuzz_tokenizer.c — fuzz target: prompts through both tokenizers
 * (rn_tokenize), then rn_token_piece / rn_token_print on every id.
 *
 * Input: byte 0 picks the tokenizer (low bit: ids), bytes 1-2 the vocabulary
 * size, the rest is the prompt, passed in a buffer of exactly its length (no
 * NUL after it, so a read past the end is caught).  Checks against an
 * independent tokenization: bytes gives BOS then every byte; ids gives one
 * id per whitespace-separated word, each an optionally signed decimal
 * integer in [0, V), and refuses anything else with RN_EINPUT. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rn_tokenizer.h"

static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_null = fopen("/dev/null", "w");
    return 0;
}

/* The ids of text[0..len) by this file's own reading of the format: 1 and
 * the count (ids may be NULL to count only) when every word is an id in
 * [0, V), else 0. */
static int expect_ids(const char *text, size_t len, int V, int *ids, int *n)
{
    *n = 0;
    size_t i = 0;
    while (i < len) {
        if (isspace((unsigned char)text[i])) { i++; continue; }
        size_t j = i, k = i;
        if (text[k] == '+' || text[k] == '-') k++;
        int neg = text[i] == '-';
        long long v = 0;
        size_t digits = 0;
        for (j = k; j < len && !isspace((unsigned char)text[j]); j++) {
            if (!isdigit((unsigned char)text[j])) return 0;
            if (v < 100000000000LL) v = v * 10 + (text[j] - '0');
            digits++;
        }
        if (!digits || j - i >= 32) return 0; /* the reader's word limit */
        if (neg) v = -v;
        if (v < 0 || v >= V) return 0;
        if (ids) ids[*n] = (int)v;
        (*n)++;
        i = j;
    }
    return *n > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size > 65536) return 0;
    rn_config c;
    rn_config_default(&c);
    c.tokenizer = data[0] & 1 ? RN_TOK_IDS : RN_TOK_BYTES;
    int v16 = data[1] | data[2] << 8;
    c.vocab_size = c.tokenizer == RN_TOK_IDS ? 1 + v16 : 257 + v16;
    size_t len = size - 3;
    char *text = malloc(len ? len : 1);
    fuzz_check(text != NULL, "%s", "out of memory");
    memcpy(text, data + 3, len);
    int *ids = NULL, n = 0;
    rn_error err = { 0 };
    int rc = rn_tokenize(&c, text, len, "prompt.txt", &ids, &n, &err);
    if (c.tokenizer == RN_TOK_BYTES) {
        if (len == 0) fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_tokenize (bytes, empty)");
        else {
            fuzz_check(rc == RN_OK, "bytes tokenizer refused %zu bytes: %s", len, err.msg);
            fuzz_check(n == (int)len + 1 && ids[0] == RN_BOS, "bytes: %d tokens for %zu bytes", n, len);
            for (size_t i = 0; i < len; i++)
                fuzz_check(ids[i + 1] == (unsigned char)text[i], "bytes: token %zu", i + 1);
        }
    } else {
        int want_n = 0;
        int ok = expect_ids(text, len, c.vocab_size, NULL, &want_n);
        if (!ok) fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_tokenize (ids, bad)");
        else {
            fuzz_check(rc == RN_OK, "ids tokenizer refused a valid prompt: %s", err.msg);
            int *want = malloc((size_t)want_n * sizeof *want);
            fuzz_check(want != NULL, "%s", "out of memory");
            expect_ids(text, len, c.vocab_size, want, &want_n);
            fuzz_check(n == want_n, "ids: %d tokens, expected %d", n, want_n);
            for (int i = 0; i < n; i++) fuzz_check(ids[i] == want[i], "ids: token %d is %d, expected %d", i, ids[i], want[i]);
            free(want);
        }
    }
    for (int i = 0; i < n; i++) {
        char piece[32];
        rn_token_piece(&c, ids[i], piece, sizeof piece);
        fuzz_check(piece[0] != 0 && strlen(piece) < sizeof piece, "empty piece for id %d", ids[i]);
        rn_token_print(&c, ids[i], i == 0, g_null);
    }
    free(ids);
    free(text);
    return 0;
}
