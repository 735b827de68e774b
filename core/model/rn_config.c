/* rn_config.c — parsing, validation and formatting of rn_config. */
#include "rn_config.h"
#include "rn_file.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


void rn_config_default(rn_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = 257;
    c->d_model = 128;
    c->n_layers = 2;
    c->n_heads = 4;
    c->d_p = 8;
    c->order = 3;
    c->d_v = 32;
    c->top_k = 8;
    c->d_ff = 384;
    c->gamma = 1.0f;
    c->tau = 1.0f;
    c->eps = 1e-6f;
    c->norm_eps = 1e-5f;
    c->tie_embeddings = 1;
    c->tokenizer = RN_TOK_BYTES;
    c->cape_mask[0] = (1ull << c->n_heads) - 1; /* shallow layer: all CAPE */
}

int64_t rn_config_slots(const rn_config *c)
{
    if (c->d_p <= 0 || c->order <= 0) return -1;
    int64_t m = 1;
    for (int u = 0; u < c->order; u++) {
        if (m > INT64_MAX / c->d_p) return -1;
        m *= c->d_p;
        if (m > ((int64_t)1 << 40)) return -1; /* far past any valid M */
    }
    return m;
}

int rn_config_validate(const rn_config *c, rn_error *err)
{
#define POS(f) if (c->f <= 0) return rn_seterr(err, RN_EINPUT, "config: " #f " must be > 0 (got %d)", c->f)
    POS(vocab_size); POS(d_model); POS(n_layers); POS(n_heads);
    POS(d_p); POS(order); POS(d_v); POS(top_k); POS(d_ff);
#undef POS
    if (c->n_layers > RN_MAX_LAYERS)
        return rn_seterr(err, RN_EINPUT, "config: n_layers must be <= %d (got %d)", RN_MAX_LAYERS, c->n_layers);
    if (c->n_heads > RN_MAX_HEADS)
        return rn_seterr(err, RN_EINPUT, "config: n_heads must be <= %d (got %d)", RN_MAX_HEADS, c->n_heads);
    if (c->d_p < 2)
        return rn_seterr(err, RN_EINPUT, "config: d_p must be >= 2 (got %d)", c->d_p);
    int64_t m = rn_config_slots(c);
    if (m < 0 || m > RN_MAX_SLOTS)
        return rn_seterr(err, RN_EINPUT, "config: M = d_p^order = %d^%d exceeds 2^31 slots", c->d_p, c->order);
    if (c->top_k > m)
        return rn_seterr(err, RN_EINPUT, "config: top_k = %d exceeds M = %" PRId64 " slots", c->top_k, m);
    if (c->top_k > RN_MAX_TOPK)
        return rn_seterr(err, RN_EINPUT, "config: top_k must be <= %d (got %d)", RN_MAX_TOPK, c->top_k);
    /* Products that size tensors must fit comfortably in int64 and in the
     * 32-bit ints used for row strides. */
    int64_t hdk = (int64_t)c->n_heads * c->order * c->d_p;
    int64_t hdv = (int64_t)c->n_heads * c->d_v;
    if (hdk > INT_MAX / 4 || hdv > INT_MAX / 4)
        return rn_seterr(err, RN_EINPUT, "config: n_heads x key/value width overflows");
    int64_t big[] = { (int64_t)c->vocab_size * c->d_model, hdk * c->d_model,
                      hdv * c->d_model, (int64_t)c->d_ff * c->d_model };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (big[i] > ((int64_t)1 << 34) / c->n_layers)
            return rn_seterr(err, RN_EINPUT, "config: tensor sizes overflow (a product of dimensions is too large)");
    if (!(c->gamma >= 0.0f) || !isfinite(c->gamma))
        return rn_seterr(err, RN_EINPUT, "config: gamma must be a finite number >= 0");
    if (!(c->tau > 0.0f) || !isfinite(c->tau))
        return rn_seterr(err, RN_EINPUT, "config: tau must be a finite number > 0");
    if (!(c->eps >= 0.0f) || !isfinite(c->eps))
        return rn_seterr(err, RN_EINPUT, "config: eps must be a finite number >= 0");
    if (!(c->norm_eps > 0.0f) || !isfinite(c->norm_eps))
        return rn_seterr(err, RN_EINPUT, "config: norm_eps must be a finite number > 0");
    if (c->tie_embeddings != 0 && c->tie_embeddings != 1)
        return rn_seterr(err, RN_EINPUT, "config: tie_embeddings must be 0 or 1");
    if (c->tokenizer != RN_TOK_BYTES && c->tokenizer != RN_TOK_IDS && c->tokenizer != RN_TOK_SPM)
        return rn_seterr(err, RN_EINPUT, "config: unknown tokenizer");
    if ((c->tokenizer == RN_TOK_SPM) != (c->tok_file[0] != 0) || !memchr(c->tok_file, 0, sizeof c->tok_file))
        return rn_seterr(err, RN_EINPUT, "config: tokenizer spm needs a .model file (spm:FILE) and only it has one");
    if (c->tokenizer == RN_TOK_BYTES && c->vocab_size < 257)
        return rn_seterr(err, RN_EINPUT, "config: the bytes tokenizer needs vocab_size >= 257 (got %d)", c->vocab_size);
    uint64_t allowed = c->n_heads == 64 ? ~0ull : ((1ull << c->n_heads) - 1);
    for (int l = 0; l < RN_MAX_LAYERS; l++) {
        if (l >= c->n_layers && c->cape_mask[l])
            return rn_seterr(err, RN_EINPUT, "config: cape_masks has a mask for layer %d but n_layers = %d", l, c->n_layers);
        if (c->cape_mask[l] & ~allowed)
            return rn_seterr(err, RN_EINPUT, "config: cape mask of layer %d names a head >= n_heads = %d", l, c->n_heads);
    }
    return RN_OK;
}

/* Strict integer parse: whole string, in [lo, hi]. */
static int parse_int(const char *key, const char *s, long lo, long hi, int *out, rn_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not an integer", key, s);
    if (v < lo || v > hi)
        return rn_seterr(err, RN_EINPUT, "%s: %ld is out of range [%ld, %ld]", key, v, lo, hi);
    *out = (int)v;
    return RN_OK;
}

/* Strict float parse of a whole string.  Subnormal values are accepted and
 * kept exactly: rn_config_format prints every float so that it reads back
 * to the same bits, and a model.bin header carries them as raw floats, so a
 * value must survive text (config files, safetensors metadata, trace
 * databases) whatever its size.  strtof reports ERANGE for a subnormal
 * result as well as for overflow and for underflow to zero; only the last
 * two lose the value, and they are refused. */
static int parse_float(const char *key, const char *s, float *out, rn_error *err)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a finite number", key, s);
    if (errno == ERANGE && v == 0.0f)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is too small for a float (it would read as 0)", key, s);
    if ((errno && errno != ERANGE) || !isfinite(v) || (errno == ERANGE && fpclassify(v) != FP_SUBNORMAL))
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a finite number", key, s);
    *out = v;
    return RN_OK;
}

/* cape_masks = "15,15,3,0": one decimal mask per layer (missing layers 0). */
static int parse_masks(rn_config *c, const char *s, rn_error *err)
{
    uint64_t masks[RN_MAX_LAYERS] = {0};
    int n = 0;
    const char *p = s;
    while (*p) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        if (n >= RN_MAX_LAYERS)
            return rn_seterr(err, RN_EINPUT, "cape_masks: more than %d layers", RN_MAX_LAYERS);
        char *end;
        errno = 0;
        if (!isdigit((unsigned char)*p))
            return rn_seterr(err, RN_EINPUT, "cape_masks: '%s' is not a comma-separated list of decimal masks", s);
        unsigned long long v = strtoull(p, &end, 10);
        if (errno)
            return rn_seterr(err, RN_EINPUT, "cape_masks: mask %d is out of range", n);
        masks[n++] = v;
        p = end;
        while (isspace((unsigned char)*p)) p++;
        if (*p == ',') p++;
        else if (*p)
            return rn_seterr(err, RN_EINPUT, "cape_masks: '%s' is not a comma-separated list of decimal masks", s);
    }
    memcpy(c->cape_mask, masks, sizeof masks);
    return RN_OK;
}

/* cape = all | none | first:N  (all heads of the first N layers) */
static int parse_cape_shorthand(rn_config *c, const char *s, rn_error *err)
{
    /* n_heads may not be validated yet (it can be negative): no shift by it then */
    uint64_t all = c->n_heads <= 0 ? 0 : c->n_heads >= 64 ? ~0ull : ((1ull << c->n_heads) - 1);
    int first = 0;
    if (!strcmp(s, "all")) first = c->n_layers;
    else if (!strcmp(s, "none")) first = 0;
    else if (!strncmp(s, "first:", 6)) {
        if (parse_int("cape", s + 6, 0, RN_MAX_LAYERS, &first, err)) return err->code;
    } else
        return rn_seterr(err, RN_EINPUT, "cape: '%s' is not all, none or first:N", s);
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    for (int l = 0; l < first && l < RN_MAX_LAYERS; l++) c->cape_mask[l] = all;
    return RN_OK;
}

int rn_config_set(rn_config *c, const char *key, const char *v, rn_error *err)
{
    static const struct { const char *name; size_t off; } ints[] = {
        { "vocab_size", offsetof(rn_config, vocab_size) }, { "d_model", offsetof(rn_config, d_model) },
        { "n_layers", offsetof(rn_config, n_layers) },     { "n_heads", offsetof(rn_config, n_heads) },
        { "d_p", offsetof(rn_config, d_p) },               { "order", offsetof(rn_config, order) },
        { "d_v", offsetof(rn_config, d_v) },               { "top_k", offsetof(rn_config, top_k) },
        { "d_ff", offsetof(rn_config, d_ff) },             { "tie_embeddings", offsetof(rn_config, tie_embeddings) },
    };
    static const struct { const char *name; size_t off; } flts[] = {
        { "gamma", offsetof(rn_config, gamma) }, { "tau", offsetof(rn_config, tau) },
        { "eps", offsetof(rn_config, eps) },     { "norm_eps", offsetof(rn_config, norm_eps) },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(key, ints[i].name))
            return parse_int(key, v, INT_MIN, INT_MAX, (int *)((char *)c + ints[i].off), err);
    for (size_t i = 0; i < sizeof flts / sizeof flts[0]; i++)
        if (!strcmp(key, flts[i].name))
            return parse_float(key, v, (float *)((char *)c + flts[i].off), err);
    if (!strcmp(key, "cape_masks")) return parse_masks(c, v, err);
    if (!strcmp(key, "cape")) return parse_cape_shorthand(c, v, err);
    if (!strcmp(key, "tokenizer")) {
        if (!strcmp(v, "bytes")) c->tokenizer = RN_TOK_BYTES;
        else if (!strcmp(v, "ids")) c->tokenizer = RN_TOK_IDS;
        else if (!strncmp(v, "spm:", 4) && v[4]) {
            if (strlen(v + 4) >= sizeof c->tok_file)
                return rn_seterr(err, RN_EINPUT, "tokenizer: the file name of '%s' is longer than %d bytes", v,
                                 RN_TOK_FILE_MAX - 1);
            c->tokenizer = RN_TOK_SPM;
            snprintf(c->tok_file, sizeof c->tok_file, "%s", v + 4);
            return RN_OK;
        } else return rn_seterr(err, RN_EINPUT, "tokenizer: '%s' is not bytes, ids or spm:FILE", v);
        memset(c->tok_file, 0, sizeof c->tok_file);
        return RN_OK;
    }
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

int rn_config_parse_text(rn_config *c, const char *text, const char *origin,
                         rn_config_extra_fn extra, void *user, rn_error *err)
{
    /* `cape` (all / none / first:N) depends on n_layers and n_heads, so it
     * is applied after every other line of the text, wherever it appears. */
    char cape_val[1024] = "";
    int cape_line = 0;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char line[1024];
        if (len >= sizeof line)
            return rn_seterr(err, RN_EINPUT, "%s:%d: line too long", origin, lineno);
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (nl ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq)
            return rn_seterr(err, RN_EINPUT, "%s:%d: expected 'key = value'", origin, lineno);
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (!strcmp(key, "cape")) {
            snprintf(cape_val, sizeof cape_val, "%s", val);
            cape_line = lineno;
            continue;
        }
        int rc = rn_config_set(c, key, val, err);
        if (rc == -1) {
            if (!extra)
                return rn_seterr(err, RN_EINPUT, "%s:%d: unknown key '%s'", origin, lineno, key);
            rc = extra(user, key, val, err);
        }
        if (rc) return rn_preferr(err, "%s:%d", origin, lineno);
    }
    if (cape_line && rn_config_set(c, "cape", cape_val, err))
        return rn_preferr(err, "%s:%d", origin, cape_line);
    return RN_OK;
}

int rn_config_load_file(rn_config *c, const char *path, rn_config_extra_fn extra,
                        void *user, rn_error *err)
{
    char *buf;
    size_t len;
    int rc = rn_read_file_max(path, (size_t)1 << 24, &buf, &len, err);
    if (rc) return rc;
    if (strlen(buf) != len) { free(buf); return rn_seterr(err, RN_EINPUT, "%s: not a text file (NUL byte)", path); }
    rc = rn_config_parse_text(c, buf, path, extra, user, err);
    free(buf);
    return rc;
}

void rn_config_clip_masks(rn_config *c)
{
    uint64_t allowed = c->n_heads >= 64 ? ~0ull : c->n_heads > 0 ? ((1ull << c->n_heads) - 1) : 0;
    for (int l = 0; l < RN_MAX_LAYERS; l++)
        c->cape_mask[l] = (c->n_layers > 0 && l < c->n_layers) ? (c->cape_mask[l] & allowed) : 0;
}

size_t rn_config_format_masks(const rn_config *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (int l = 0; l < c->n_layers && l < RN_MAX_LAYERS; l++) {
        int w = snprintf(buf ? buf + (n < cap ? n : cap) : NULL, n < cap ? cap - n : 0,
                         "%s%" PRIu64, l ? "," : "", c->cape_mask[l]);
        n += (size_t)w;
    }
    if (cap && n >= cap) buf[cap - 1] = 0;
    if (cap && c->n_layers <= 0) buf[0] = 0;
    return n;
}

/* The shortest %g text that reads back as exactly f (so 1e-5 prints as
 * "1e-05", not "9.99999975e-06"). */
static const char *fmt_float(float f, char *out, size_t cap)
{
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(out, cap, "%.*g", prec, (double)f);
        if (strtof(out, NULL) == f) break;
    }
    return out;
}

const char *rn_config_tokenizer_name(const rn_config *c, char *buf, size_t cap)
{
    if (c->tokenizer == RN_TOK_SPM) snprintf(buf, cap, "spm:%s", c->tok_file);
    else snprintf(buf, cap, "%s", c->tokenizer == RN_TOK_IDS ? "ids" : "bytes");
    return buf;
}

size_t rn_config_format(const rn_config *c, char *buf, size_t cap)
{
    char g[4][32], tok[RN_TOK_FILE_MAX + 8];
    char masks[RN_MAX_LAYERS * 22];
    rn_config_format_masks(c, masks, sizeof masks);
    int n = snprintf(buf, cap,
        "vocab_size = %d\nd_model = %d\nn_layers = %d\nn_heads = %d\nd_p = %d\n"
        "order = %d\nd_v = %d\ntop_k = %d\nd_ff = %d\ngamma = %s\ntau = %s\n"
        "eps = %s\nnorm_eps = %s\ntie_embeddings = %d\ntokenizer = %s\ncape_masks = %s\n",
        c->vocab_size, c->d_model, c->n_layers, c->n_heads, c->d_p, c->order, c->d_v,
        c->top_k, c->d_ff, fmt_float(c->gamma, g[0], sizeof g[0]), fmt_float(c->tau, g[1], sizeof g[1]),
        fmt_float(c->eps, g[2], sizeof g[2]), fmt_float(c->norm_eps, g[3], sizeof g[3]), c->tie_embeddings,
        rn_config_tokenizer_name(c, tok, sizeof tok), masks);
    return n < 0 ? 0 : (size_t)n;
}

int64_t rn_config_total_state(const rn_config *c)
{
    return (int64_t)c->n_layers * c->n_heads * rn_config_slots(c) * (c->d_v + 1);
}

int64_t rn_config_active_state(const rn_config *c)
{
    return (int64_t)c->n_layers * c->n_heads * 2 * c->top_k * (c->d_v + 1);
}
