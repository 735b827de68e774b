/* rn_intervene.c — the kinds of intervention, one table entry each (its
 * name, the parser of its argument and the hooks it applies), parsing specs
 * into a set, and applying the set inside the runtime's forward (see
 * rn_intervene.h; patch sources run in rn_patch_source.c). */
#include "rn_intervene.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_file.h"
#include "rn_layers.h"

/* Does spec v act on head (l, h)? */
static int on_head(const rn_iv *v, int l, int h) { return v->layer == l && (v->head < 0 || v->head == h); }

static int active(const rn_iv *v, int64_t p) { return p >= v->t0 && p <= v->t1; }

static int has_slot(const rn_iv *v, uint32_t slot)
{
    int a = 0, b = v->n_slots;
    while (a < b) {
        int m = (a + b) / 2;
        if (v->slots[m] < slot) a = m + 1;
        else b = m;
    }
    return a < v->n_slots && v->slots[a] == slot;
}

/* ---- parsing ---- */

/* A non-negative decimal integer at *p (advanced); -1 when there is none,
 * -2 when it exceeds max (checked before each step, so no digit string
 * overflows or wraps, however long). */
static int64_t parse_uint(const char **p, int64_t max)
{
    if (!isdigit((unsigned char)**p)) return -1;
    int64_t v = 0;
    while (isdigit((unsigned char)**p)) {
        int d = **p - '0';
        if (v > (max - d) / 10) return -2;
        v = v * 10 + d;
        (*p)++;
    }
    return v;
}

/* "T", "T0-T1" or "T0-" (the text after '@', all of it). */
static int parse_range(const char *p, rn_iv *v, const char **why)
{
    int64_t a = parse_uint(&p, INT32_MAX), b = a;
    if (a == -2) { *why = "a position is past 2147483647"; return -1; }
    if (a < 0) { *why = "a range is @T0-T1, @T0- or @T"; return -1; }
    if (*p == '-') {
        p++;
        b = *p ? parse_uint(&p, INT32_MAX) : INT64_MAX;
        if (b == -2) { *why = "a position is past 2147483647"; return -1; }
        if (b < 0) { *why = "a range is @T0-T1, @T0- or @T"; return -1; }
    }
    if (*p) { *why = "a range is @T0-T1, @T0- or @T"; return -1; }
    if (b < a) { *why = "the range ends before it starts"; return -1; }
    v->t0 = a, v->t1 = b, v->ranged = 1;
    return 0;
}

/* Target parser: "L.H" at *p (advanced). */
static int parse_head(const char **p, rn_iv_set *s, rn_iv *v, const char **why)
{
    int64_t l = parse_uint(p, INT32_MAX);
    if (l == -2) { *why = "no such layer"; return -1; }
    if (l < 0 || **p != '.') { *why = "expected a head as LAYER.HEAD, e.g. 1.2"; return -1; }
    (*p)++;
    int64_t h = parse_uint(p, INT32_MAX);
    if (h == -2) { *why = "no such head"; return -1; }
    if (h < 0) { *why = "expected a head as LAYER.HEAD, e.g. 1.2"; return -1; }
    if (l >= s->L) { *why = "no such layer"; return -1; }
    if (h >= s->H) { *why = "no such head"; return -1; }
    v->layer = (int)l, v->head = (int)h;
    return 0;
}

/* Target parser: "L" at *p (advanced): every head of the layer. */
static int parse_layer(const char **p, rn_iv_set *s, rn_iv *v, const char **why)
{
    int64_t l = parse_uint(p, INT32_MAX);
    if (l == -2) { *why = "no such layer"; return -1; }
    if (l < 0) { *why = "expected a layer number"; return -1; }
    if (l >= s->L) { *why = "no such layer"; return -1; }
    v->layer = (int)l, v->head = -1;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Argument parser: ":S1,S2,A-B,..." at *p (advanced), up to '=', '@' or
 * the end; the slots sorted and distinct. */
static int parse_slots(const char **p, rn_iv_set *s, rn_iv *v, const char **why)
{
    if (**p != ':') { *why = "expected ':' and slot numbers after the head"; return -1; }
    (*p)++;
    int cap = 16;
    v->slots = malloc(sizeof *v->slots * cap);
    if (!v->slots) { *why = "out of memory"; return -1; }
    for (;;) {
        int64_t a = parse_uint(p, INT64_MAX / 2), b = a;
        if (a == -2) { *why = "a slot is not below the model's M"; return -1; }
        if (a < 0) { *why = "expected slot numbers, e.g. 3,17,40-47"; return -1; }
        if (**p == '-') {
            (*p)++;
            b = parse_uint(p, INT64_MAX / 2);
            if (b == -2) { *why = "a slot is not below the model's M"; return -1; }
            if (b < a) { *why = "expected slot numbers, e.g. 3,17,40-47"; return -1; }
        }
        if (b >= s->M) { *why = "a slot is not below the model's M"; return -1; }
        for (int64_t x = a; x <= b; x++) {
            if (v->n_slots == cap) {
                uint32_t *ns = realloc(v->slots, sizeof *ns * (cap *= 2));
                if (!ns) { *why = "out of memory"; return -1; }
                v->slots = ns;
            }
            v->slots[v->n_slots++] = (uint32_t)x;
        }
        if (**p != ',') break;
        (*p)++;
    }
    qsort(v->slots, v->n_slots, sizeof *v->slots, cmp_u32);
    for (int i = 1; i < v->n_slots; i++)
        if (v->slots[i] == v->slots[i - 1]) { *why = "a slot is named twice"; return -1; }
    return 0;
}

/* "=F" at *p (advanced): a finite factor into v->scale; missing: the
 * problem when there is no '='. */
static int parse_factor(const char **p, rn_iv *v, const char *missing, const char **why)
{
    if (**p != '=') { *why = missing; return -1; }
    (*p)++;
    char *end;
    errno = 0;
    double f = strtod(*p, &end);
    if (end == *p || errno || !isfinite(f) || fabs(f) > 1e30) { *why = "the factor is not a finite number"; return -1; }
    v->scale = (float)f;
    *p = end;
    return 0;
}

/* Argument parser: the slots, then "=F". */
static int parse_scaled_slots(const char **p, rn_iv_set *s, rn_iv *v, const char **why)
{
    return parse_slots(p, s, v, why) || parse_factor(p, v, "expected '=F' (the factor) after the slots", why) ? -1 : 0;
}

/* Argument parser: " from SOURCE[@T0-T1]", all the rest (a file name may
 * hold '@': only a trailing valid range counts).  The set then needs
 * rn_iv_prepare (rn_patch_source.h). */
static int parse_source(const char **pp, rn_iv_set *s, rn_iv *v, const char **why)
{
    const char *p = *pp;
    if (strncmp(p, " from ", 6)) { *why = "expected 'from FILE' after the head"; return -1; }
    p += 6;
    while (*p == ' ') p++;
    const char *at = strrchr(p, '@');
    size_t len = strlen(p);
    if (at && isdigit((unsigned char)at[1])) {
        const char *w2;
        rn_iv tmp = *v;
        if (!parse_range(at + 1, &tmp, &w2)) { *v = tmp; len = (size_t)(at - p); }
    }
    if (!len) { *why = "expected 'from FILE' after the head"; return -1; }
    if (!(v->source = malloc(len + 1))) { *why = "out of memory"; return -1; }
    memcpy(v->source, p, len);
    v->source[len] = 0;
    s->prepared = 0;
    *pp = p + strlen(p);
    return 0;
}

/* ---- hooks ---- */

/* Scan hook, ablate-slots: at T0 the slots go back to their initial state. */
static void reset_slots(const rn_iv *u, rn_real *S, rn_real *z, int d_v, rn_real z0, int64_t p)
{
    if (u->t0 != p) return;
    for (int j = 0; j < u->n_slots; j++) {
        for (int d = 0; d < d_v; d++) S[(size_t)u->slots[j] * d_v + d] = 0;
        z[u->slots[j]] = z0;
    }
}

/* Scan hook, ablate-slots: writes to the slots are dropped. */
static int drops_write(const rn_iv *u, uint32_t slot, int64_t p) { return active(u, p) && has_slot(u, slot); }

/* Scan hook, scale-slots: F multiplies the read weight r of the slots, so
 * their term r·S/(z + eps) is scaled by F (exactly the plain term at F = 1). */
static rn_real scale_read(const rn_iv *u, uint32_t slot, int64_t p, rn_real r)
{
    return active(u, p) && has_slot(u, slot) ? r * u->scale : r;
}

/* o hook, ablate-head and ablate-layer: the head's output is zero. */
static void zero_o(const rn_iv *u, rn_real *row, int64_t p, int d_v)
{
    (void)u, (void)p;
    memset(row, 0, sizeof(rn_real) * d_v);
}

/* o hook, patch-head: the source's output where the source has the position. */
static void patch_o(const rn_iv *u, rn_real *row, int64_t p, int d_v)
{
    if (p < u->buf_n) memcpy(row, u->buf + (size_t)p * d_v, sizeof(rn_real) * d_v);
}

/* o hook, record-head: the head's output copied into the buffer. */
static void record_o(const rn_iv *u, rn_real *row, int64_t p, int d_v)
{
    if (p < u->buf_n) memcpy(u->buf + (size_t)p * d_v, row, sizeof(rn_real) * d_v);
}

/* ---- the kinds ---- */

enum {
    IV_OUTPUT = 1, /* replaces the head's output: conflicts with another such spec on the head */
    IV_SLOTS       /* acts on named slots: conflicts with another such spec naming one of them */
};

typedef int (*iv_parse_fn)(const char **p, rn_iv_set *s, rn_iv *v, const char **why);

/* One kind of intervention: a spec is "NAME TARGET[ARG][@T0-T1]".  The
 * scan hooks run inside the memory scan of each head the spec acts on
 * (rn_iv_scan), at every position of the forward: `start` before the
 * writes, `drop` per write (non-zero: the write is dropped), `read` per
 * read, returning its weight; the o hook runs on the head's read output
 * of each position in the spec's range (rn_iv_apply_o).  Hooks are NULL
 * when unused; a kind with scan hooks runs the head's scan through
 * rn_iv_scan, which is the plain scan's arithmetic when they change
 * nothing. */
typedef struct {
    const char *name;  /* as written in specs */
    const char *usage; /* the syntax, for --help (rn_iv_kind_usage) */
    iv_parse_fn target; /* the layer or head after the name (NULL: internal kind) */
    iv_parse_fn arg;    /* what follows the target (NULL: nothing) */
    int conflict;       /* IV_OUTPUT, IV_SLOTS or 0 */
    void (*start)(const rn_iv *u, rn_real *S, rn_real *z, int d_v, rn_real z0, int64_t p);
    int (*drop)(const rn_iv *u, uint32_t slot, int64_t p);
    rn_real (*read)(const rn_iv *u, uint32_t slot, int64_t p, rn_real r);
    void (*o)(const rn_iv *u, rn_real *row, int64_t p, int d_v);
} iv_kind;

/* Indexed by RN_IV_* (rn_intervene.h); docs/interventions.md has each
 * kind's exact meaning. */
static const iv_kind kinds[] = {
    [RN_IV_ABLATE_SLOTS] = { "ablate-slots", "ablate-slots L.H:S1,S2,...[@T0-T1]", parse_head,
                             parse_slots, IV_SLOTS, .start = reset_slots, .drop = drops_write },
    [RN_IV_ABLATE_HEAD] = { "ablate-head", "ablate-head L.H[@T0-T1]", parse_head, NULL, IV_OUTPUT,
                            .o = zero_o },
    [RN_IV_ABLATE_LAYER] = { "ablate-layer", "ablate-layer L[@T0-T1]", parse_layer, NULL, IV_OUTPUT,
                             .o = zero_o },
    [RN_IV_SCALE_SLOTS] = { "scale-slots", "scale-slots L.H:S1,...=F[@T0-T1]", parse_head,
                            parse_scaled_slots, IV_SLOTS, .read = scale_read },
    [RN_IV_PATCH_HEAD] = { "patch-head", "patch-head L.H from FILE|TRACE.db[#RUN][@T0-T1]",
                           parse_head, parse_source, IV_OUTPUT, .o = patch_o },
    [RN_IV_RECORD_HEAD] = { "record-head", NULL, NULL, NULL, 0, .o = record_o },
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

static int scans(int k) { return kinds[k].start || kinds[k].drop || kinds[k].read; }

const char *rn_iv_kind_usage(int i)
{
    for (int k = 0; k < N_KINDS; k++)
        if (kinds[k].target && i-- == 0) return kinds[k].usage;
    return NULL;
}

void rn_iv_init(rn_iv_set *s, const rn_config *c)
{
    memset(s, 0, sizeof *s);
    s->L = c->n_layers, s->H = c->n_heads, s->d_v = c->d_v, s->M = rn_config_slots(c);
    s->prepared = 1;
    s->source_chunk = 256;
}

static void iv_free(rn_iv *v)
{
    free(v->slots);
    free(v->source);
    if (v->owns_buf) free(v->buf);
    free(v->spec);
}

void rn_iv_free(rn_iv_set *s)
{
    for (int i = 0; i < s->n; i++) iv_free(&s->iv[i]);
    free(s->iv);
    memset(s, 0, sizeof *s);
}

/* The first spec of s that conflicts with v, or NULL. */
static const rn_iv *conflict(const rn_iv_set *s, const rn_iv *v)
{
    const int cv = kinds[v->kind].conflict;
    for (int i = 0; i < s->n && cv; i++) {
        const rn_iv *u = &s->iv[i];
        if (u->layer != v->layer || u->t1 < v->t0 || v->t1 < u->t0) continue;
        if (u->head >= 0 && v->head >= 0 && u->head != v->head) continue;
        if (kinds[u->kind].conflict != cv) continue;
        if (cv == IV_OUTPUT) return u;
        for (int j = 0; j < v->n_slots; j++)
            if (has_slot(u, v->slots[j])) return u;
    }
    return NULL;
}

/* Parse text into v.  *why: the problem, or NULL when the kind is unknown
 * (the caller lists the kinds). */
static int parse_spec(rn_iv_set *s, const char *text, rn_iv *v, const char **why)
{
    memset(v, 0, sizeof *v);
    v->t0 = 0, v->t1 = INT64_MAX, v->scale = 1;
    const char *p = NULL;
    for (int k = 0; k < N_KINDS && !p; k++) {
        size_t n = strlen(kinds[k].name);
        if (kinds[k].target && !strncmp(text, kinds[k].name, n) && text[n] == ' ') {
            v->kind = k;
            p = text + n + 1;
        }
    }
    *why = NULL;
    if (!p) return -1;
    while (*p == ' ') p++;
    const iv_kind *kd = &kinds[v->kind];
    if (kd->target(&p, s, v, why) || (kd->arg && kd->arg(&p, s, v, why))) return -1;
    if (*p == '@') return parse_range(p + 1, v, why);
    if (*p) { *why = "unexpected text after the spec"; return -1; }
    return 0;
}

/* Make room for one more spec in s. */
static int grow(rn_iv_set *s, rn_error *err)
{
    if (s->n < s->cap) return RN_OK;
    int nc = s->cap ? s->cap * 2 : 8;
    rn_iv *ni = realloc(s->iv, sizeof *ni * nc);
    if (!ni) return rn_seterr(err, RN_ENOMEM, "out of memory");
    s->iv = ni, s->cap = nc;
    return RN_OK;
}

int rn_iv_add(rn_iv_set *s, const char *spec, rn_error *err)
{
    /* trim */
    while (isspace((unsigned char)*spec)) spec++;
    size_t len = strlen(spec);
    while (len && isspace((unsigned char)spec[len - 1])) len--;
    if (grow(s, err)) return RN_ENOMEM;
    rn_iv *v = &s->iv[s->n];
    char *text = malloc(len + 1);
    if (!text) return rn_seterr(err, RN_ENOMEM, "out of memory");
    memcpy(text, spec, len);
    text[len] = 0;
    const char *why;
    if (parse_spec(s, text, v, &why)) {
        if (why) rn_seterr(err, RN_EINPUT, "--intervene '%s': %s", text, why);
        else {
            char list[256] = "";
            for (int k = 0; k < N_KINDS; k++)
                if (kinds[k].target)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "", kinds[k].name);
            rn_seterr(err, RN_EINPUT, "--intervene '%s': unknown kind (%s)", text, list);
        }
        iv_free(v);
        free(text);
        return RN_EINPUT;
    }
    v->spec = text;
    const rn_iv *u = conflict(s, v);
    if (u) {
        rn_seterr(err, RN_EINPUT, "--intervene '%s': overlaps '%s' (same head, overlapping positions)",
                  text, u->spec);
        iv_free(v);
        return RN_EINPUT;
    }
    s->n++;
    return RN_OK;
}

int rn_iv_add_arg(rn_iv_set *s, const char *arg, rn_error *err)
{
    if (arg[0] != '@') return rn_iv_add(s, arg, err);
    char *text;
    size_t len;
    int rc = rn_read_file(arg + 1, &text, &len, err);
    if (rc) return rn_preferr(err, "--intervene %s", arg);
    int lineno = 0;
    for (char *line = text; line && *line && !rc; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        const char *q = line;
        while (isspace((unsigned char)*q)) q++;
        if (*q && *q != '#' && (rc = rn_iv_add(s, q, err))) rn_preferr(err, "%s:%d", arg + 1, lineno + 1);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return rc;
}

int rn_iv_add_buffer(rn_iv_set *s, int patch, int l, int h, rn_real *buf, int64_t n, rn_error *err)
{
    if (l < 0 || l >= s->L || h < 0 || h >= s->H)
        return rn_seterr(err, RN_EINPUT, "head %d.%d is not in the model", l, h);
    if (grow(s, err)) return RN_ENOMEM;
    rn_iv *v = &s->iv[s->n];
    memset(v, 0, sizeof *v);
    v->kind = patch ? RN_IV_PATCH_HEAD : RN_IV_RECORD_HEAD;
    v->layer = l, v->head = h, v->t0 = 0, v->t1 = INT64_MAX, v->scale = 1;
    v->buf = buf, v->buf_n = n;
    char text[64];
    snprintf(text, sizeof text, "%s %d.%d", kinds[v->kind].name, l, h);
    if (!(v->spec = strdup(text))) return rn_seterr(err, RN_ENOMEM, "out of memory");
    const rn_iv *u = conflict(s, v);
    if (u) {
        rn_seterr(err, RN_EINPUT, "'%s' overlaps '%s'", text, u->spec);
        iv_free(v);
        return RN_EINPUT;
    }
    s->n++;
    return RN_OK;
}

/* ---- the forward ---- */

int rn_iv_has_slots(const rn_iv_set *s, int l, int h)
{
    for (int i = 0; i < s->n; i++)
        if (scans(s->iv[i].kind) && on_head(&s->iv[i], l, h)) return 1;
    return 0;
}

void rn_iv_write(const rn_iv_set *s, int l, int h, rn_real *S, rn_real *z, const rn_real *v,
                 const uint32_t *wslot, const rn_real *ww, int K, int d_v, rn_real gamma, int64_t p)
{
    const rn_real z0 = (rn_real)(1.0 / (double)s->M);
    for (int i = 0; i < s->n; i++) {
        const rn_iv *u = &s->iv[i];
        if (kinds[u->kind].start && on_head(u, l, h)) kinds[u->kind].start(u, S, z, d_v, z0, p);
    }
    /* the writes, one by one with the plain scan's function */
    for (int j = 0; j < K; j++) {
        uint32_t sl = wslot[j];
        int drop = 0;
        for (int i = 0; i < s->n && !drop; i++) {
            const rn_iv *u = &s->iv[i];
            drop = kinds[u->kind].drop && on_head(u, l, h) && kinds[u->kind].drop(u, sl, p);
        }
        if (!drop) rn_pdma_write(S, z, d_v, wslot + j, ww + j, 1, v, gamma);
    }
}

void rn_iv_read(const rn_iv_set *s, int l, int h, rn_real *o, const rn_real *S, const rn_real *z,
                const uint32_t *rslot, const rn_real *rw, int K, int d_v, rn_real eps, int64_t p)
{
    /* the read, slot by slot with the plain read's function */
    for (int d = 0; d < d_v; d++) o[d] = 0;
    for (int j = 0; j < K; j++) {
        uint32_t sl = rslot[j];
        rn_real r = rw[j];
        for (int i = 0; i < s->n; i++) {
            const rn_iv *u = &s->iv[i];
            if (kinds[u->kind].read && on_head(u, l, h)) r = kinds[u->kind].read(u, sl, p, r);
        }
        rn_pdma_read_acc(o, S, z, d_v, &sl, &r, 1, eps);
    }
}

void rn_iv_scan(const rn_iv_set *s, int l, int h, rn_real *o, rn_real *S, rn_real *z,
                const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                const uint32_t *rslot, const rn_real *rw, int n, int H, int K, int d_v,
                rn_real gamma, rn_real eps, int64_t pos0)
{
    for (int t = 0; t < n; t++) {
        size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * d_v + (size_t)h * d_v;
        rn_iv_write(s, l, h, S, z, v + vv, wslot + a, ww + a, K, d_v, gamma, pos0 + t);
        rn_iv_read(s, l, h, o + vv, S, z, rslot + a, rw + a, K, d_v, eps, pos0 + t);
    }
}

void rn_iv_apply_o(const rn_iv_set *s, int l, rn_real *o, int n, int64_t pos0)
{
    const int H = s->H, dv = s->d_v;
    for (int i = 0; i < s->n; i++) {
        const rn_iv *u = &s->iv[i];
        if (u->layer != l || !kinds[u->kind].o) continue;
        for (int h = 0; h < H; h++) {
            if (!on_head(u, l, h)) continue;
            for (int t = 0; t < n; t++)
                if (active(u, pos0 + t)) kinds[u->kind].o(u, o + ((size_t)t * H + h) * dv, pos0 + t, dv);
        }
    }
}

int rn_iv_check_span(const rn_iv_set *s, int64_t pos0, int n, rn_error *err)
{
    for (int i = 0; i < s->n; i++) {
        const rn_iv *u = &s->iv[i];
        if (u->kind != RN_IV_PATCH_HEAD || !u->ranged) continue;
        int64_t last = pos0 + n - 1 < u->t1 ? pos0 + n - 1 : u->t1;
        if (last >= u->t0 && last >= u->buf_n)
            return rn_seterr(err, RN_EINPUT, "--intervene '%s': position %lld is past the source's %lld tokens",
                             u->spec, (long long)last, (long long)u->buf_n);
    }
    return RN_OK;
}
