/* rn_tokenizer.c — bytes, ids and SentencePiece tokenizers (see rn_tokenizer.h). */
#include "rn_tokenizer.h"
#include "rn_spm.h"

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

int rn_tokenizer_check(const rn_config *cfg, rn_error *err)
{
    if (cfg->tokenizer != RN_TOK_SPM) return RN_OK;
    const rn_spm *s;
    int rc = rn_spm_get(cfg->tok_file, &s, err);
    if (rc) return rc;
    if (cfg->vocab_size < rn_spm_vocab(s))
        return rn_seterr(err, RN_EINPUT, "config: vocab_size = %d is smaller than the %d pieces of the tokenizer %s",
                         cfg->vocab_size, rn_spm_vocab(s), cfg->tok_file);
    return RN_OK;
}

/* The loaded model of a spm config (checked by rn_tokenizer_check when the
 * config was made, so a failure here means the caller skipped that). */
static const rn_spm *spm_of(const rn_config *cfg)
{
    const rn_spm *s = NULL;
    rn_error e;
    return rn_spm_get(cfg->tok_file, &s, &e) == RN_OK ? s : NULL;
}

static int tokenize_spm(const rn_config *cfg, const char *text, size_t len, const char *origin,
                        int **ids, int *n, rn_error *err)
{
    const rn_spm *s;
    int rc = rn_tokenizer_check(cfg, err);
    if (rc || (rc = rn_spm_get(cfg->tok_file, &s, err))) return rc;
    if (len > INT_MAX - 1) return rn_seterr(err, RN_EINPUT, "%s: input too long", origin);
    int *raw, cnt;
    if ((rc = rn_spm_encode(s, text, len, &raw, &cnt, err))) return rn_preferr(err, "%s", origin);
    int bos = rn_spm_bos(s) >= 0;
    int *out = bos ? malloc((size_t)(cnt + 1) * sizeof *out) : raw;
    if (!out) { free(raw); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    if (bos) {
        out[0] = rn_spm_bos(s);
        memcpy(out + 1, raw, (size_t)cnt * sizeof *out);
        free(raw);
    }
    *ids = out;
    *n = cnt + bos;
    return RN_OK;
}

int rn_tokenize(const rn_config *cfg, const char *text, size_t len, const char *origin,
                int **ids, int *n, rn_error *err)
{
    *ids = NULL;
    *n = 0;
    if (cfg->tokenizer == RN_TOK_IDS) return tokenize_ids(cfg, text, len, origin, ids, n, err);
    if (cfg->tokenizer == RN_TOK_SPM) {
        if (len == 0) return rn_seterr(err, RN_EINPUT, "%s: prompt is empty", origin);
        return tokenize_spm(cfg, text, len, origin, ids, n, err);
    }
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

size_t rn_token_nbytes(const rn_config *cfg, int id)
{
    if (cfg->tokenizer == RN_TOK_IDS) return 0;
    if (cfg->tokenizer == RN_TOK_SPM) {
        const rn_spm *s = spm_of(cfg);
        size_t len = 0;
        if (s) rn_spm_token_bytes(s, id, &len);
        return len;
    }
    return id >= 0 && id < 256 ? 1 : 0;
}

void rn_token_print(const rn_config *cfg, int id, int first, FILE *f)
{
    if (cfg->tokenizer == RN_TOK_IDS) fprintf(f, first ? "%d" : " %d", id);
    else if (cfg->tokenizer == RN_TOK_SPM) {
        const rn_spm *s = spm_of(cfg);
        size_t len = 0;
        const char *b = s ? rn_spm_token_bytes(s, id, &len) : "";
        fwrite(b, 1, len, f);
    } else if (id >= 0 && id < 256) fputc(id, f);
}

/* One byte as rn_token_piece shows it, appended at buf[*at] and cut at
 * cap like snprintf (cap > *at). */
static void piece_byte(int c, char *buf, size_t cap, size_t *at)
{
    char *o = buf + *at;
    size_t room = cap - *at;
    int w;
    if (c == '\n') w = snprintf(o, room, "\\n");
    else if (c == '\t') w = snprintf(o, room, "\\t");
    else if (c == '\\') w = snprintf(o, room, "\\\\");
    else if (c >= 32 && c < 127) w = snprintf(o, room, "%c", c);
    else w = snprintf(o, room, "\\x%02x", c & 0xff);
    *at += (size_t)w < room ? (size_t)w : room - 1;
}

void rn_token_piece(const rn_config *cfg, int id, char *buf, size_t cap)
{
    if (!cap) return;
    buf[0] = 0;
    if (cfg->tokenizer == RN_TOK_IDS) { snprintf(buf, cap, "%d", id); return; }
    size_t at = 0;
    if (cfg->tokenizer == RN_TOK_SPM) {
        const rn_spm *s = spm_of(cfg);
        size_t len = 0;
        const char *b = s ? rn_spm_token_bytes(s, id, &len) : "";
        if (!len && s) { snprintf(buf, cap, "%s", rn_spm_piece(s, id)); return; } /* <s>, </s> */
        for (size_t i = 0; i < len && at + 1 < cap; i++) piece_byte((unsigned char)b[i], buf, cap, &at);
        return;
    }
    if (id == RN_BOS) snprintf(buf, cap, "<bos>");
    else piece_byte(id, buf, cap, &at);
}
