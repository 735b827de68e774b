/* rn_safetensors.c — safetensors writer and strict reader (rn_safetensors.h).
 *
 * The reader parses the JSON header in one pass into a flat list of tensor
 * entries and metadata pairs (a tiny JSON subset: the top-level object, the
 * `__metadata__` object of string values, and per-tensor objects with
 * `dtype`, `shape` and `data_offsets`), then checks the list against the
 * layout the metadata's config implies before reading any data.
 */
#include "rn_safetensors.h"
#include "rn_storage.h"
#include "rn_tokfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_atomic.h"

#define ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */
#define ST_MAX_STR 256
#define ST_MAX_DIMS 8

/* The config keys every file carries in __metadata__ as `ramnet.KEY`. */
static const char *const meta_keys[] = {
    "vocab_size", "d_model", "n_layers", "n_heads", "d_p", "order", "d_v", "top_k",
    "d_ff", "gamma", "tau", "eps", "norm_eps", "tie_embeddings", "cape_masks", "tokenizer",
};
#define N_META (int)(sizeof meta_keys / sizeof meta_keys[0])

/* ---------- writing ---------- */

typedef struct { char *s; size_t len, cap; int oom; } sbuf;

/* The safetensors dtype of each storage (rn_storage.h). */
static const char *const st_dtypes[3] = { "F32", "BF16", "F16" };

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if (b->s && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->len + (size_t)n) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) { b->oom = 1; return; }
        b->s = ns;
        b->cap = cap;
    }
}

/* The metadata value of key for config c (as written). */
static void meta_value(const rn_config *c, const char *key, char *out, size_t cap)
{
    if (!strcmp(key, "cape_masks")) { rn_config_format_masks(c, out, cap); return; }
    if (!strcmp(key, "tokenizer")) { /* a SentencePiece model's file name only: it is beside the file */
        if (c->tokenizer == RN_TOK_SPM) snprintf(out, cap, "spm:%s", rn_tokfile_base(c->tok_file));
        else snprintf(out, cap, "%s", c->tokenizer == RN_TOK_IDS ? "ids" : "bytes");
        return;
    }
    /* every other key: take it from the `key = value` formatting */
    char text[RN_MAX_LAYERS * 22 + 1024];
    rn_config_format(c, text, sizeof text);
    size_t kl = strlen(key);
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (!strncmp(line, key, kl) && !strncmp(line + kl, " = ", 3)) {
            snprintf(out, cap, "%s", line + kl + 3);
            return;
        }
        line = nl ? nl + 1 : NULL;
    }
    out[0] = 0;
}

int rn_safetensors_save(const rn_model *m, const char *path, rn_error *err)
{
    const rn_config *c = &m->cfg;
    int n = rn_params_count_tensors(c);
    rn_tensor_desc t;
    sbuf b = {0};
    sb_printf(&b, "{\"__metadata__\":{");
    char val[RN_MAX_LAYERS * 22];
    for (int i = 0; i < N_META; i++) {
        meta_value(c, meta_keys[i], val, sizeof val);
        sb_printf(&b, "%s\"ramnet.%s\":\"%s\"", i ? "," : "", meta_keys[i], val);
    }
    sb_printf(&b, "}");
    uint64_t at = 0;
    const char *dt = st_dtypes[m->storage];
    const size_t es = rn_storage_bytes(m->storage);
    for (int i = 0; i < n; i++) {
        rn_params_tensor(c, i, &t);
        uint64_t bytes = (uint64_t)t.numel * es;
        if (t.ndim == 2)
            sb_printf(&b, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRId64 ",%" PRId64 "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                      t.name, dt, t.shape[0], t.shape[1], at, at + bytes);
        else
            sb_printf(&b, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%" PRId64 "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
                      t.name, dt, t.shape[0], at, at + bytes);
        at += bytes;
    }
    sb_printf(&b, "}");
    while (!b.oom && b.len % 8) sb_printf(&b, " ");
    if (b.oom) {
        free(b.s);
        return rn_seterr(err, RN_ENOMEM, "%s: out of memory building the header", path);
    }
    rn_atomic_file af;
    int rc = rn_atomic_open(&af, path, err);
    if (rc) { free(b.s); return rc; }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)b.len >> (8 * i));
    int ok = fwrite(len8, 1, 8, af.f) == 8 && fwrite(b.s, 1, b.len, af.f) == b.len;
    uint16_t *narrow = NULL;
    for (int i = 0; ok && i < n; i++) {
        rn_params_tensor(c, i, &t);
        if (es == 4) {
            ok = fwrite(m->params + t.offset, 4, (size_t)t.numel, af.f) == (size_t)t.numel;
            continue;
        }
        uint16_t *nb = realloc(narrow, (size_t)t.numel * 2);
        if (!nb) { ok = 0; errno = ENOMEM; break; }
        narrow = nb;
        rc = rn_storage_narrow_params(m->storage, c, m->params, t.offset, t.numel, narrow, path, err);
        if (rc) {
            free(narrow);
            free(b.s);
            rn_atomic_abort(&af);
            return rc;
        }
        ok = fwrite(narrow, 2, (size_t)t.numel, af.f) == (size_t)t.numel;
    }
    free(narrow);
    free(b.s);
    if (!ok) {
        int e = errno;
        rn_atomic_abort(&af);
        return rn_seterr(err, RN_EIO, "%s: write failed: %s (nothing written)", path, strerror(e));
    }
    return rn_atomic_commit(&af, err);
}

/* ---------- reading: the JSON header ---------- */

typedef struct {
    char name[ST_MAX_STR];
    char dtype[ST_MAX_STR];
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t begin, end;
    int have_dtype, have_shape, have_offsets;
    int storage;          /* its dtype as rn_storage.h's storage */
    int desc;          /* index into the layout, -1 until matched */
} st_entry;

typedef struct {
    const char *p, *start, *end;
    const char *path;
    rn_error *err;
    st_entry *ent;
    int n_ent, max_ent;     /* entries used and allocated */
    rn_config cfg;
    int have_meta[N_META];
    int seen_metadata;
} st_parser;

static int jerr(st_parser *ps, const char *what)
{
    return rn_seterr(ps->err, RN_EINPUT, "%s: malformed safetensors header: %s at byte %ld",
                     ps->path, what, (long)(ps->p - ps->start));
}

static void ws(st_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int expect(st_parser *ps, char ch)
{
    ws(ps);
    if (ps->p >= ps->end || *ps->p != ch) {
        char what[32];
        snprintf(what, sizeof what, "expected '%c'", ch);
        return jerr(ps, what);
    }
    ps->p++;
    return RN_OK;
}

/* Peek the next non-space character (0 at the end). */
static char peek(st_parser *ps)
{
    ws(ps);
    return ps->p < ps->end ? *ps->p : 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A JSON string into out (UTF-8, at most ST_MAX_STR-1 bytes). */
static int parse_string(st_parser *ps, char *out)
{
    if (expect(ps, '"')) return ps->err->code;
    size_t n = 0;
    for (;;) {
        if (ps->p >= ps->end) return jerr(ps, "unterminated string");
        unsigned char ch = (unsigned char)*ps->p++;
        if (ch == '"') break;
        if (ch < 0x20) return jerr(ps, "control character in string");
        char buf[4];
        size_t k = 1;
        buf[0] = (char)ch;
        if (ch == '\\') {
            if (ps->p >= ps->end) return jerr(ps, "unterminated string");
            char e = *ps->p++;
            switch (e) {
            case '"': case '\\': case '/': buf[0] = e; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                if (ps->end - ps->p < 4) return jerr(ps, "bad \\u escape");
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    int h = hexval(ps->p[i]);
                    if (h < 0) return jerr(ps, "bad \\u escape");
                    v = v * 16 + (unsigned)h;
                }
                ps->p += 4;
                if (v == 0 || (v >= 0xd800 && v <= 0xdfff)) return jerr(ps, "unsupported \\u escape");
                if (v < 0x80) buf[0] = (char)v;
                else if (v < 0x800) { buf[0] = (char)(0xc0 | (v >> 6)); buf[1] = (char)(0x80 | (v & 63)); k = 2; }
                else { buf[0] = (char)(0xe0 | (v >> 12)); buf[1] = (char)(0x80 | ((v >> 6) & 63)); buf[2] = (char)(0x80 | (v & 63)); k = 3; }
                break;
            }
            default: return jerr(ps, "bad escape in string");
            }
        }
        if (n + k >= ST_MAX_STR) return jerr(ps, "string too long");
        memcpy(out + n, buf, k);
        n += k;
    }
    out[n] = 0;
    return RN_OK;
}

/* A non-negative JSON integer (no sign, fraction or exponent). */
static int parse_uint(st_parser *ps, int64_t *out)
{
    ws(ps);
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return jerr(ps, "expected a non-negative integer");
    if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' && ps->p[1] <= '9')
        return jerr(ps, "leading zero in number");
    int64_t v = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return jerr(ps, "number too large");
        v = v * 10 + (*ps->p++ - '0');
    }
    if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
        return jerr(ps, "expected an integer");
    *out = v;
    return RN_OK;
}

/* [n, n, ...] into v (at most maxn); *count gets the length. */
static int parse_uint_array(st_parser *ps, int64_t *v, int maxn, int *count)
{
    if (expect(ps, '[')) return ps->err->code;
    int n = 0;
    if (peek(ps) == ']') { ps->p++; *count = 0; return RN_OK; }
    for (;;) {
        int64_t x = 0;
        if (parse_uint(ps, &x)) return ps->err->code;
        if (n >= maxn) return jerr(ps, "array too long");
        v[n++] = x;
        char ch = peek(ps);
        if (ch == ',') { ps->p++; continue; }
        if (ch == ']') { ps->p++; break; }
        return jerr(ps, "expected ',' or ']'");
    }
    *count = n;
    return RN_OK;
}

static int parse_metadata(st_parser *ps)
{
    if (ps->seen_metadata) return jerr(ps, "duplicate __metadata__");
    ps->seen_metadata = 1;
    if (expect(ps, '{')) return ps->err->code;
    if (peek(ps) == '}') { ps->p++; return RN_OK; }
    for (;;) {
        char key[ST_MAX_STR], val[ST_MAX_STR];
        if (parse_string(ps, key) || expect(ps, ':')) return ps->err->code;
        if (peek(ps) != '"') return jerr(ps, "metadata values must be strings");
        if (parse_string(ps, val)) return ps->err->code;
        if (!strncmp(key, "ramnet.", 7)) {
            int k = 0;
            while (k < N_META && strcmp(key + 7, meta_keys[k])) k++;
            if (k == N_META)
                return rn_seterr(ps->err, RN_EINPUT, "%s: unknown metadata key '%s'", ps->path, key);
            if (ps->have_meta[k])
                return rn_seterr(ps->err, RN_EINPUT, "%s: duplicate metadata key '%s'", ps->path, key);
            ps->have_meta[k] = 1;
            int rc = rn_config_set(&ps->cfg, meta_keys[k], val, ps->err);
            if (rc) return rn_preferr(ps->err, "%s: metadata %s", ps->path, key);
        } /* other tools' metadata keys are ignored */
        char ch = peek(ps);
        if (ch == ',') { ps->p++; continue; }
        if (ch == '}') { ps->p++; break; }
        return jerr(ps, "expected ',' or '}'");
    }
    return RN_OK;
}

static int parse_tensor(st_parser *ps, const char *name)
{
    for (int i = 0; i < ps->n_ent; i++)
        if (!strcmp(ps->ent[i].name, name))
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s' is listed twice", ps->path, name);
    if (ps->n_ent >= ps->max_ent)
        return rn_seterr(ps->err, RN_EINPUT, "%s: more than %d tensors", ps->path, ps->max_ent);
    st_entry *e = &ps->ent[ps->n_ent++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->desc = -1;
    if (expect(ps, '{')) return ps->err->code;
    if (peek(ps) == '}') { ps->p++; goto done; }
    for (;;) {
        char key[ST_MAX_STR];
        if (parse_string(ps, key) || expect(ps, ':')) return ps->err->code;
        if (!strcmp(key, "dtype")) {
            if (e->have_dtype) return jerr(ps, "duplicate dtype");
            e->have_dtype = 1;
            if (parse_string(ps, e->dtype)) return ps->err->code;
        } else if (!strcmp(key, "shape")) {
            if (e->have_shape) return jerr(ps, "duplicate shape");
            e->have_shape = 1;
            if (parse_uint_array(ps, e->shape, ST_MAX_DIMS, &e->ndim)) return ps->err->code;
        } else if (!strcmp(key, "data_offsets")) {
            if (e->have_offsets) return jerr(ps, "duplicate data_offsets");
            e->have_offsets = 1;
            int64_t v[2] = {0, 0};
            int cnt = 0;
            if (parse_uint_array(ps, v, 2, &cnt)) return ps->err->code;
            if (cnt != 2)
                return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': data_offsets must hold 2 numbers", ps->path, name);
            e->begin = v[0];
            e->end = v[1];
        } else
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': unknown field '%s'", ps->path, name, key);
        char ch = peek(ps);
        if (ch == ',') { ps->p++; continue; }
        if (ch == '}') { ps->p++; break; }
        return jerr(ps, "expected ',' or '}'");
    }
done:
    if (!e->have_dtype || !e->have_shape || !e->have_offsets)
        return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s' lacks %s", ps->path, name,
                         !e->have_dtype ? "dtype" : !e->have_shape ? "shape" : "data_offsets");
    return RN_OK;
}

static int parse_header(st_parser *ps)
{
    if (expect(ps, '{')) return ps->err->code;
    if (peek(ps) == '}') ps->p++;
    else
        for (;;) {
            char key[ST_MAX_STR];
            if (parse_string(ps, key) || expect(ps, ':')) return ps->err->code;
            int rc = !strcmp(key, "__metadata__") ? parse_metadata(ps) : parse_tensor(ps, key);
            if (rc) return rc;
            char ch = peek(ps);
            if (ch == ',') { ps->p++; continue; }
            if (ch == '}') { ps->p++; break; }
            return jerr(ps, "expected ',' or '}'");
        }
    ws(ps);
    if (ps->p != ps->end) return jerr(ps, "trailing characters after the header object");
    return RN_OK;
}

/* ---------- reading: checks and data ---------- */

static void fmt_shape(const int64_t *s, int nd, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < nd && n < cap; i++) n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64, i ? "," : "", s[i]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

/* qsort_r order of entry indices by data_offsets (ent is the entry array). */
static int cmp_begin(const void *a, const void *b, void *ent)
{
    const st_entry *x = (const st_entry *)ent + *(const int *)a, *y = (const st_entry *)ent + *(const int *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Match entries to the layout and check dtype, shape and offsets. */
static int check_entries(st_parser *ps, const rn_tensor_desc *d, int nd, uint64_t data_bytes)
{
    const char *path = ps->path;
    for (int i = 0; i < ps->n_ent; i++) {
        st_entry *e = &ps->ent[i];
        for (int j = 0; j < nd; j++)
            if (!strcmp(e->name, d[j].name)) { e->desc = j; break; }
        if (e->desc < 0) {
            if (!strcmp(e->name, "lm_head.weight"))
                return rn_seterr(ps->err, RN_EINPUT, "%s: lm_head.weight is present but ramnet.tie_embeddings = 1", path);
            return rn_seterr(ps->err, RN_EINPUT, "%s: unknown tensor '%s' (not part of this config)", path, e->name);
        }
        const rn_tensor_desc *t = &d[e->desc];
        e->storage = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(e->dtype, st_dtypes[k])) e->storage = k;
        if (e->storage < 0)
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s' has dtype %s, expected F32, BF16 or F16", path, e->name, e->dtype);
        const int64_t es = (int64_t)rn_storage_bytes(e->storage);
        int ok = e->ndim == t->ndim && e->shape[0] == t->shape[0] && (t->ndim == 1 || e->shape[1] == t->shape[1]);
        if (!ok) {
            char got[128], want[64];
            fmt_shape(e->shape, e->ndim, got, sizeof got);
            fmt_shape(t->shape, t->ndim, want, sizeof want);
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s' has shape %s, expected %s", path, e->name, got, want);
        }
        if (e->end < e->begin)
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': data_offsets end %" PRId64 " < begin %" PRId64,
                             path, e->name, e->end, e->begin);
        if ((uint64_t)e->end > data_bytes)
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': data_offsets [%" PRId64 ",%" PRId64 "] lie beyond the %" PRIu64 "-byte data section",
                             path, e->name, e->begin, e->end, data_bytes);
        if (e->end - e->begin != t->numel * es)
            return rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': data_offsets span %" PRId64 " bytes but its shape needs %" PRId64,
                             path, e->name, e->end - e->begin, t->numel * es);
    }
    if (ps->n_ent < nd) {
        for (int j = 0; j < nd; j++) {
            int found = 0;
            for (int i = 0; i < ps->n_ent && !found; i++) found = ps->ent[i].desc == j;
            if (!found) {
                if (!strcmp(d[j].name, "lm_head.weight"))
                    return rn_seterr(ps->err, RN_EINPUT, "%s: lm_head.weight is missing but ramnet.tie_embeddings = 0", path);
                return rn_seterr(ps->err, RN_EINPUT, "%s: missing tensor '%s'", path, d[j].name);
            }
        }
    }
    /* The byte ranges must tile the data section exactly. */
    int *ord = malloc(sizeof *ord * (size_t)ps->n_ent);
    if (!ord) return rn_seterr(ps->err, RN_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < ps->n_ent; i++) ord[i] = i;
    qsort_r(ord, (size_t)ps->n_ent, sizeof *ord, cmp_begin, ps->ent);
    int64_t at = 0;
    int rc = RN_OK;
    for (int i = 0; i < ps->n_ent && !rc; i++) {
        const st_entry *e = &ps->ent[ord[i]];
        if (e->begin < at)
            rc = rn_seterr(ps->err, RN_EINPUT, "%s: tensor '%s': data_offsets overlap another tensor", path, e->name);
        else if (e->begin > at)
            rc = rn_seterr(ps->err, RN_EINPUT, "%s: data_offsets leave a gap at bytes [%" PRId64 ",%" PRId64 ") of the data section",
                           path, at, e->begin);
        at = e->end;
    }
    free(ord);
    if (!rc && (uint64_t)at != data_bytes)
        rc = rn_seterr(ps->err, RN_EINPUT, "%s: data_offsets cover %" PRId64 " bytes but the data section holds %" PRIu64,
                       path, at, data_bytes);
    return rc;
}

int rn_safetensors_load(rn_model *m, const char *path, rn_error *err)
{
    memset(m, 0, sizeof *m);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = RN_OK;
    char *hdr = NULL;
    st_parser ps;
    memset(&ps, 0, sizeof ps);
    rn_tensor_desc *d = NULL; /* the config's layout, once the metadata is read */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = rn_seterr(err, RN_EINPUT, "%s: not a regular file", path);
        goto out;
    }
    uint64_t fsize = (uint64_t)st.st_size;
    unsigned char len8[8];
    if (fsize == 0) { rc = rn_seterr(err, RN_EINPUT, "%s: empty file", path); goto out; }
    if (fsize < 8 || pread(fd, len8, 8, 0) != 8) {
        rc = rn_seterr(err, RN_EINPUT, "%s: truncated: too short for a safetensors header length", path);
        goto out;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)len8[i] << (8 * i);
    if (hlen > fsize - 8) {
        rc = rn_seterr(err, RN_EINPUT, "%s: header length %" PRIu64 " exceeds the file (%" PRIu64 " bytes)", path, hlen, fsize);
        goto out;
    }
    if (hlen < 2 || hlen > ST_MAX_HEADER) {
        rc = rn_seterr(err, RN_EINPUT, "%s: implausible safetensors header length %" PRIu64, path, hlen);
        goto out;
    }
    hdr = malloc((size_t)hlen + 1);
    ps.max_ent = rn_params_max_tensors();
    ps.ent = malloc(sizeof *ps.ent * (size_t)ps.max_ent);
    if (!hdr || !ps.ent) { rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); goto out; }
    if (pread(fd, hdr, (size_t)hlen, 8) != (ssize_t)hlen) { rc = rn_seterr(err, RN_EIO, "%s: read error", path); goto out; }
    hdr[hlen] = 0;
    ps.p = ps.start = hdr;
    ps.end = hdr + hlen;
    ps.path = path;
    ps.err = err;
    if ((rc = parse_header(&ps))) goto out;
    for (int k = 0; k < N_META; k++)
        if (!ps.have_meta[k]) {
            rc = rn_seterr(err, RN_EINPUT, "%s: missing metadata key 'ramnet.%s'", path, meta_keys[k]);
            goto out;
        }
    if ((rc = rn_config_validate(&ps.cfg, err))) { rn_preferr(err, "%s", path); goto out; }
    int nd = rn_params_count_tensors(&ps.cfg);
    d = malloc(sizeof *d * (size_t)nd);
    if (!d) { rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); goto out; }
    rn_params_layout(&ps.cfg, d);
    uint64_t data_at = 8 + hlen, data_bytes = fsize - data_at;
    if ((rc = check_entries(&ps, d, nd, data_bytes))) goto out;
    if ((rc = rn_model_create_zero(m, &ps.cfg, err))) { rn_preferr(err, "%s", path); goto out; }
    m->storage = ps.n_ent ? ps.ent[0].storage : RN_STORE_F32;
    for (int i = 0; i < ps.n_ent; i++) {
        const st_entry *e = &ps.ent[i];
        size_t bytes = (size_t)(e->end - e->begin);
        float *dst = m->params + d[e->desc].offset;
        uint16_t *half = NULL; /* a 16-bit tensor is read here, then widened */
        if (e->storage != RN_STORE_F32 && !(half = malloc(bytes ? bytes : 1))) {
            rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory for tensor '%s'", path, e->name);
            rn_model_free(m);
            goto out;
        }
        if (pread(fd, half ? (void *)half : (void *)dst, bytes, (off_t)(data_at + (uint64_t)e->begin)) != (ssize_t)bytes) {
            free(half);
            rc = rn_seterr(err, RN_EIO, "%s: read error in tensor '%s'", path, e->name);
            rn_model_free(m);
            goto out;
        }
        if (half) rn_storage_widen(e->storage, half, dst, d[e->desc].numel);
        free(half);
        if (e->storage != m->storage) m->storage = RN_STORE_F32; /* mixed: saved back as float32 */
    }
out:
    free(d);
    free(hdr);
    free(ps.ent);
    close(fd);
    return rc;
}
