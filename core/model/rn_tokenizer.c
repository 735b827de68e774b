/* rn_tokenizer.c — bytes and ids tokenizers (see rn_tokenizer.h). */
#include "rn_tokenizer.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static int tokenize_ids(const rn_config *cfg, const char *text, size_t len, const char *origin,
                        int **ids, int *n, rn_error *err)
{
    size_t cap = 64;
    int cnt = 0, line = 1;
    int *out = malloc(cap * sizeof *out);
    if (!out) return rn_seterr(err, RN_ENOMEM, "out of memory");
    size_t i = 0;
    while (i < len) {
        if (text[i] == '\n') { line++; i++; continue; }
        if (isspace((unsigned char)text[i])) { i++; continue; }
        size_t j = i;
        while (j < len && !isspace((unsigned char)text[j])) j++;
        char tok[32];
        size_t tl = j - i < sizeof tok - 1 ? j - i : sizeof tok - 1;
        memcpy(tok, text + i, tl);
        tok[tl] = 0;
        char *end;
        errno = 0;
        long v = strtol(tok, &end, 10);
        /* end must reach the word's end: a NUL byte inside the word is not part of an id */
        if (j - i >= sizeof tok || end != tok + tl || end == tok || errno || v > INT_MAX || v < INT_MIN) {
            free(out);
            return rn_seterr(err, RN_EINPUT, "%s:%d: token %d ('%s') is not an integer id", origin, line, cnt + 1, tok);
        }
        if (v < 0 || v >= cfg->vocab_size) {
            free(out);
            return rn_seterr(err, RN_EINPUT, "%s:%d: token id %ld is outside the vocabulary [0, %d)", origin, line, v, cfg->vocab_size);
        }
        if ((size_t)cnt == cap) {
            cap *= 2;
            int *no = realloc(out, cap * sizeof *out);
            if (!no) { free(out); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
            out = no;
        }
        out[cnt++] = (int)v;
        i = j;
    }
    if (!cnt) {
        free(out);
        return rn_seterr(err, RN_EINPUT, "%s: prompt is empty (no token ids)", origin);
    }
    *ids = out;
    *n = cnt;
    return RN_OK;
}

int rn_tokenize(const rn_config *cfg, const char *text, size_t len, const char *origin,
                int **ids, int *n, rn_error *err)
{
    *ids = NULL;
    *n = 0;
    if (cfg->tokenizer == RN_TOK_IDS) return tokenize_ids(cfg, text, len, origin, ids, n, err);
    if (len == 0) return rn_seterr(err, RN_EINPUT, "%s: prompt is empty", origin);
    if (len > INT_MAX - 1) return rn_seterr(err, RN_EINPUT, "%s: input too long", origin);
    int *out = malloc((len + 1) * sizeof *out);
    if (!out) return rn_seterr(err, RN_ENOMEM, "out of memory");
    out[0] = RN_BOS;
    for (size_t i = 0; i < len; i++) out[i + 1] = (unsigned char)text[i];
    *ids = out;
    *n = (int)len + 1;
    return RN_OK;
}

int rn_tokenize_file(const rn_config *cfg, const char *path, int **ids, int *n, rn_error *err)
{
    char *data;
    size_t len;
    int rc = rn_read_file(path, &data, &len, err);
    if (rc) return rc;
    rc = rn_tokenize(cfg, data, len, path, ids, n, err);
    free(data);
    return rc;
}

void rn_token_print(const rn_config *cfg, int id, int first, FILE *f)
{
    if (cfg->tokenizer == RN_TOK_IDS) fprintf(f, first ? "%d" : " %d", id);
    else if (id >= 0 && id < 256) fputc(id, f);
}

void rn_token_piece(const rn_config *cfg, int id, char *buf, size_t cap)
{
    if (cfg->tokenizer == RN_TOK_IDS) { snprintf(buf, cap, "%d", id); return; }
    if (id == RN_BOS) snprintf(buf, cap, "<bos>");
    else if (id == '\n') snprintf(buf, cap, "\\n");
    else if (id == '\t') snprintf(buf, cap, "\\t");
    else if (id == '\\') snprintf(buf, cap, "\\\\");
    else if (id >= 32 && id < 127) snprintf(buf, cap, "%c", id);
    else snprintf(buf, cap, "\\x%02x", id & 0xff);
}
