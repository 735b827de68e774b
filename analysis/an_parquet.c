/* an_parquet.c — the Parquet writer (an_parquet.h): row-group buffers,
 * dictionary building, page encoding and zstd compression, and the
 * Thrift footer.  Field ids and enum values are parquet.thrift's. */
#include "an_parquet.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <zstd.h>

#include "an_pq_buf.h"
#include "an_pq_delta.h"
#include "an_pq_rle.h"
#include "an_pq_thrift.h"

/* parquet.thrift enums */
enum { PT_INT32 = 1, PT_INT64 = 2, PT_FLOAT = 4, PT_DOUBLE = 5, PT_BYTE_ARRAY = 6 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_DELTA_BINARY_PACKED = 5, ENC_RLE_DICTIONARY = 8, ENC_BYTE_STREAM_SPLIT = 9 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CODEC_ZSTD = 6 };
enum { REP_REQUIRED = 0 };
enum { CONV_UTF8 = 0, CONV_UINT_32 = 13 };

#define STAT_MAX_BYTES 1024
#define DIRECT 65536        /* 4-byte values below this skip the hash table */ /* longer string minima / maxima are left out */

/* The statistics and offsets of one written column chunk. */
typedef struct {
    int64_t start, dict_off, data_off;  /* dict_off -1: PLAIN chunk */
    int64_t uncompressed, compressed, num_values;
    int has_range;
    int enc;                            /* the data pages' encoding (ENC_*) */
    uint8_t *min, *max;                 /* malloc'd */
    uint32_t min_len, max_len;
} chunk_meta;

/* A row group's values of one column. */
typedef struct {
    uint8_t *vals;       /* group_rows * width */
    size_t *offs;        /* strings: each row's offset into arena ... */
    uint32_t *lens;      /* ... and length (a row equal to the one before shares its bytes) */
    an_pq_buf arena;     /* strings: the bytes */
} colbuf;

/* One column: two row-group buffers (one filled by an_pq_append while the
 * other is encoded and written in the background) and the encoding scratch. */
typedef struct {
    an_pq_column c;
    char *name;
    size_t width;        /* bytes per fixed-width value; 0 for strings */
    colbuf set[2];
    colbuf *f, *e;       /* the buffer being filled, the one being encoded */
    uint32_t *idx;       /* dictionary index per row */
    uint32_t *table;     /* hash table: dictionary entry + 1, 0 empty */
    size_t table_cap;
    uint32_t *tslot;     /* the table's filled slots (to clear them) ... */
    uint32_t tused;      /* ... and their count */
    uint32_t *dict_row;  /* row of each dictionary entry's first occurrence */
    uint64_t *dict_key;  /* fixed-width types: each entry's value bits */
    uint32_t *direct;    /* 4-byte types: entry + 1 of each value below DIRECT, 0 none */
    an_pq_buf page, comp, chunk, hdr;
    ZSTD_CCtx *zc;
    chunk_meta meta;     /* of the chunk being encoded */
    int failed;          /* encoding ran out of memory */
} column;

struct an_pq_writer {
    FILE *f;
    an_pq_opts o;
    int ncols;
    column *col;
    size_t rows;             /* rows in the current group */
    uint64_t total_rows, offset;
    /* written row groups: ngroups x ncols chunk_meta, and row counts */
    chunk_meta *meta;
    int64_t *group_rows;
    size_t ngroups, groups_cap;
    int dead;                /* a write failed: nothing more is written */
    /* the row group encoded and written in the background */
    pthread_t bg;
    int bg_running, bg_rc;
    size_t bg_rows;
    rn_error bg_err;
};

static size_t type_width(int t)
{
    switch (t) {
    case AN_PQ_INT32: case AN_PQ_UINT32: case AN_PQ_FLOAT: return 4;
    case AN_PQ_INT64: case AN_PQ_DOUBLE: return 8;
    default: return 0;
    }
}

static int physical(int t)
{
    static const int map[] = { PT_INT32, PT_INT32, PT_INT64, PT_FLOAT, PT_DOUBLE, PT_BYTE_ARRAY };
    return map[t];
}

/* Whether a column of encoding enc builds dictionaries. */
static int uses_dict(int enc) { return enc == AN_PQ_DICT || enc == AN_PQ_BEST; }

static void column_free(column *c)
{
    for (int k = 0; k < 2; k++) {
        free(c->set[k].vals); free(c->set[k].offs); free(c->set[k].lens);
        an_pq_buf_free(&c->set[k].arena);
    }
    free(c->name); free(c->direct); free(c->idx); free(c->table); free(c->tslot); free(c->dict_row); free(c->dict_key);
    an_pq_buf_free(&c->page); an_pq_buf_free(&c->comp);
    an_pq_buf_free(&c->chunk); an_pq_buf_free(&c->hdr);
    free(c->meta.min); free(c->meta.max);
    ZSTD_freeCCtx(c->zc);
}

static int wait_group(an_pq_writer *w, rn_error *err);

void an_pq_free(an_pq_writer *w)
{
    if (!w) return;
    wait_group(w, NULL);
    for (int i = 0; i < w->ncols; i++) column_free(&w->col[i]);
    for (size_t i = 0; w->meta && i < w->ngroups * (size_t)w->ncols; i++) {
        free(w->meta[i].min);
        free(w->meta[i].max);
    }
    free(w->meta); free(w->group_rows); free(w->col);
    free(w);
}

/* The options with every default filled in. */
static an_pq_opts opts_of(const an_pq_opts *o)
{
    an_pq_opts n = { 0 };
    if (o) n = *o;
    if (!n.group_rows) n.group_rows = (size_t)1 << 20;
    if (!n.page_rows) n.page_rows = (size_t)1 << 17;
    if (!n.dict_max) n.dict_max = 65536;
    if (!n.dict_bytes) n.dict_bytes = (size_t)1 << 20;
    if (!n.zstd_level) n.zstd_level = 1;
    if (n.threads < 1) n.threads = 1;
    if (!n.created_by) n.created_by = "ramtrace";
    return n;
}

/* The dictionary scratch of a column (once: a later file keeps it); 0 or -1. */
static int dict_alloc(column *c, uint32_t dict_max)
{
    if (c->table) return 0;
    size_t tcap = 1;
    while (tcap < 2 * (size_t)dict_max) tcap <<= 1;
    c->table_cap = tcap;
    c->table = calloc(tcap, sizeof *c->table);
    c->tslot = malloc((size_t)dict_max * sizeof *c->tslot);
    c->tused = 0;
    c->dict_row = malloc((size_t)dict_max * sizeof *c->dict_row);
    c->dict_key = malloc((size_t)dict_max * sizeof *c->dict_key);
    if (c->width == 4) c->direct = calloc(DIRECT, sizeof *c->direct);
    if (c->table && c->tslot && c->dict_row && c->dict_key && (c->width != 4 || c->direct)) return 0;
    free(c->table); free(c->tslot); free(c->dict_row); free(c->dict_key); free(c->direct);
    c->table = c->tslot = c->dict_row = c->direct = NULL;
    c->dict_key = NULL;
    return -1;
}

/* Forget the row groups of the file written before (if any) and start a
 * new one on f with its magic. */
static int begin_file(an_pq_writer *w, FILE *f, rn_error *err)
{
    for (size_t i = 0; w->meta && i < w->ngroups * (size_t)w->ncols; i++) {
        free(w->meta[i].min);
        free(w->meta[i].max);
    }
    w->ngroups = 0;
    w->rows = 0;
    w->total_rows = 0;
    w->dead = 0;
    w->bg_rc = 0;
    w->f = f;
    for (int i = 0; i < w->ncols; i++) w->col[i].f->arena.n = 0;
    if (fwrite("PAR1", 1, 4, f) != 4) {
        int e = errno;
        w->dead = 1;
        return rn_seterr(err, RN_EIO, "write failed: %s", strerror(e ? e : EIO));
    }
    w->offset = 4;
    return RN_OK;
}

int an_pq_open(an_pq_writer **out, FILE *f, const an_pq_column *cols, int ncols, const an_pq_opts *o,
               rn_error *err)
{
    *out = NULL;
    if (ncols < 1) return rn_seterr(err, RN_EINPUT, "parquet: a file needs at least one column");
    an_pq_writer *w = calloc(1, sizeof *w);
    if (!w) return rn_seterr(err, RN_ENOMEM, "out of memory");
    w->o = opts_of(o);
    w->ncols = ncols;
    w->col = calloc((size_t)ncols, sizeof *w->col);
    if (!w->col) { free(w); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    size_t G = w->o.group_rows;
    int ok = 1;
    for (int i = 0; i < ncols && ok; i++) {
        column *c = &w->col[i];
        c->c = cols[i];
        if (cols[i].type < AN_PQ_INT32 || cols[i].type > AN_PQ_STRING) {
            an_pq_free(w);
            return rn_seterr(err, RN_EINPUT, "parquet: column '%s' has no known type", cols[i].name);
        }
        c->width = type_width(cols[i].type);
        c->name = strdup(cols[i].name);
        c->c.name = c->name;
        int bufs = 1;
        for (int k = 0; k < 2; k++) {
            colbuf *b = &c->set[k];
            b->vals = c->width ? malloc(G * c->width) : NULL;
            b->offs = c->width ? NULL : malloc(G * sizeof *b->offs);
            b->lens = c->width ? NULL : malloc(G * sizeof *b->lens);
            bufs &= b->vals || (b->offs && b->lens);
        }
        c->f = &c->set[0];
        c->e = &c->set[1];
        c->idx = malloc(G * sizeof *c->idx);
        c->zc = ZSTD_createCCtx();
        ok = c->name && bufs && c->idx && c->zc && (!uses_dict(cols[i].enc) || !dict_alloc(c, w->o.dict_max));
    }
    if (!ok) { an_pq_free(w); return rn_seterr(err, RN_ENOMEM, "out of memory for a parquet writer"); }
    int rc = begin_file(w, f, err);
    if (rc) { an_pq_free(w); return rc; }
    *out = w;
    return RN_OK;
}

/* Whether writer w was opened with these columns (names and types) and
 * the row-group and dictionary sizes of options n. */
static int same_shape(const an_pq_writer *w, const an_pq_column *cols, int ncols, const an_pq_opts *n)
{
    if (w->ncols != ncols || w->o.group_rows != n->group_rows || w->o.dict_max != n->dict_max) return 0;
    for (int i = 0; i < ncols; i++)
        if (w->col[i].c.type != cols[i].type || strcmp(w->col[i].name, cols[i].name)) return 0;
    return 1;
}

int an_pq_reopen(an_pq_writer **w, FILE *f, const an_pq_column *cols, int ncols, const an_pq_opts *o,
                 rn_error *err)
{
    an_pq_writer *p = *w;
    an_pq_opts n = opts_of(o);
    if (!p || !same_shape(p, cols, ncols, &n)) {
        an_pq_free(p);
        *w = NULL;
        return an_pq_open(w, f, cols, ncols, o, err);
    }
    wait_group(p, NULL);
    p->o = n;
    for (int i = 0; i < ncols; i++) {
        column *c = &p->col[i];
        c->c.enc = cols[i].enc;
        c->c.zstd_level = cols[i].zstd_level;
        if (uses_dict(c->c.enc) && dict_alloc(c, n.dict_max)) {
            p->dead = 1;
            return rn_seterr(err, RN_ENOMEM, "out of memory for a parquet writer");
        }
    }
    return begin_file(p, f, err);
}

/* ---- values ---- */

static inline an_pq_str str_at(const column *c, size_t i)
{
    an_pq_str s = { (const char *)c->e->arena.p + c->e->offs[i], c->e->lens[i] };
    return s;
}

static inline int str_eq(an_pq_str a, an_pq_str b) { return a.len == b.len && !memcmp(a.p, b.p, a.len); }

/* Bytewise unsigned order, a prefix first. */
static int str_cmp(an_pq_str a, an_pq_str b)
{
    int r = memcmp(a.p, b.p, a.len < b.len ? a.len : b.len);
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

static inline uint64_t hash64(uint64_t x)
{
    x ^= x >> 31;
    x *= UINT64_C(0x9E3779B97F4A7C15);
    return x ^ (x >> 29);
}

static uint64_t str_hash(an_pq_str s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (uint32_t i = 0; i < s.len; i++) h = (h ^ (uint8_t)s.p[i]) * UINT64_C(1099511628211);
    return hash64(h);
}

/* Dictionary indices of fixed-width values (T: uint32_t or uint64_t, the
 * values' bits, so floats are told apart bit for bit) into c->idx; the
 * dictionary's size, or 0 when it outgrew the limits. */
#define DICT_FIXED(T)                                                               \
    do {                                                                            \
        const T *v = (const T *)(const void *)c->e->vals;                              \
        T *key = (T *)(void *)c->dict_key;                                          \
        for (size_t i = 0; i < n; i++) {                                            \
            T x = v[i];                                                             \
            if (i > 0 && x == v[i - 1]) { c->idx[i] = c->idx[i - 1]; continue; }     \
            size_t h = (size_t)hash64((uint64_t)x) & mask;                          \
            uint32_t e;                                                             \
            while ((e = c->table[h]) && key[e - 1] != x) h = (h + 1) & mask;        \
            if (!e) {                                                               \
                if (nd == dict_max || (bytes += sizeof(T)) > dict_bytes) return 0;  \
                key[nd] = x;                                                        \
                c->dict_row[nd] = (uint32_t)i;                                      \
                c->tslot[c->tused++] = (uint32_t)h;                                 \
                c->table[h] = e = ++nd;                                             \
            }                                                                       \
            c->idx[i] = e - 1;                                                      \
        }                                                                           \
    } while (0)

/* The same for 4-byte values, those below DIRECT looked up in c->direct
 * (cleared again before returning). */
static uint32_t build_dict4(column *c, size_t n, uint32_t dict_max, size_t dict_bytes)
{
    size_t mask = c->table_cap - 1, bytes = 0;
    uint32_t nd = 0, over = 0;
    const uint32_t *v = (const uint32_t *)(const void *)c->e->vals;
    uint32_t *key = (uint32_t *)(void *)c->dict_key;
    for (size_t i = 0; i < n && !over; i++) {
        uint32_t x = v[i], e, *slot;
        /* small values straight from the table (a test for a repeat of the
         * row before costs more, as they change from row to row: ranks) */
        if (x < DIRECT) slot = &c->direct[x];
        else if (i > 0 && x == v[i - 1]) { c->idx[i] = c->idx[i - 1]; continue; }
        else {
            size_t h = (size_t)hash64(x) & mask;
            while ((e = c->table[h]) && key[e - 1] != x) h = (h + 1) & mask;
            slot = &c->table[h];
        }
        if (!(e = *slot)) {
            if (nd == dict_max || (bytes += 4) > dict_bytes) { over = 1; break; }
            key[nd] = x;
            c->dict_row[nd] = (uint32_t)i;
            if (x >= DIRECT) c->tslot[c->tused++] = (uint32_t)(slot - c->table);
            *slot = e = ++nd;
        }
        c->idx[i] = e - 1;
    }
    for (uint32_t k = 0; k < nd; k++)
        if (key[k] < DIRECT) c->direct[key[k]] = 0;
    return over ? 0 : nd;
}

/* Dictionary indices of the chunk's n rows into c->idx; returns the
 * dictionary's size, or 0 when it outgrew the limits (write PLAIN). */
static uint32_t build_dict(column *c, size_t n, uint32_t dict_max, size_t dict_bytes)
{
    /* the table empty again: the slots the chunk before filled cleared
     * (a whole table per chunk cost more than small chunks' encoding) */
    for (uint32_t k = 0; k < c->tused; k++) c->table[c->tslot[k]] = 0;
    c->tused = 0;
    size_t mask = c->table_cap - 1, bytes = 0;
    uint32_t nd = 0;
    if (c->width == 4) return build_dict4(c, n, dict_max, dict_bytes);
    if (c->width == 8) { DICT_FIXED(uint64_t); return nd; }
    for (size_t i = 0; i < n; i++) {
        an_pq_str s = str_at(c, i);
        if (i > 0 && ((c->e->offs[i] == c->e->offs[i - 1] && s.len == c->e->lens[i - 1]) || str_eq(s, str_at(c, i - 1)))) {
            c->idx[i] = c->idx[i - 1];
            continue;
        }
        size_t h = (size_t)str_hash(s) & mask;
        uint32_t e;
        while ((e = c->table[h]) && !str_eq(str_at(c, c->dict_row[e - 1]), s)) h = (h + 1) & mask;
        if (!e) {
            if (nd == dict_max || (bytes += 4 + (size_t)s.len) > dict_bytes) return 0;
            c->dict_row[nd] = (uint32_t)i;
            c->tslot[c->tused++] = (uint32_t)h;
            c->table[h] = e = ++nd;
        }
        c->idx[i] = e - 1;
    }
    return nd;
}

/* PLAIN encoding of row r into b. */
static void plain_value(an_pq_buf *b, const column *c, size_t r)
{
    if (c->width) { an_pq_buf_put(b, c->e->vals + r * c->width, c->width); return; }
    an_pq_str s = str_at(c, r);
    uint8_t len[4] = { (uint8_t)s.len, (uint8_t)(s.len >> 8), (uint8_t)(s.len >> 16), (uint8_t)(s.len >> 24) };
    an_pq_buf_put(b, len, 4);
    an_pq_buf_put(b, s.p, s.len);
}

/* The rows of the smallest and largest value in the column's type order
 * over rows[0..m) (or 0..m when rows is NULL), NaN left out; *lo stays
 * SIZE_MAX when every value is NaN.  One typed loop per type. */
#define RANGE_LOOP(T, ISNAN)                                                        \
    do {                                                                            \
        const T *v = (const T *)(const void *)c->e->vals;                              \
        T mn = 0, mx = 0;                                                           \
        for (size_t k = 0; k < m; k++) {                                            \
            size_t r = rows ? rows[k] : k;                                          \
            T x = v[r];                                                             \
            if (ISNAN) continue;                                                    \
            if (*lo == SIZE_MAX) { *lo = *hi = r; mn = mx = x; continue; }          \
            if (x < mn) { mn = x; *lo = r; }                                        \
            if (x > mx) { mx = x; *hi = r; }                                        \
        }                                                                           \
    } while (0)

/* The same over all rows 0..m: the extremes first, in a loop without
 * branches that the compiler vectorises (NaN fails both comparisons, so
 * it is passed over from the infinities on), then their first rows. */
/* gcc vectorises the loop under `omp simd`; clang cannot for the float
 * types (its min/max would have to honour NaN) and warns that it could
 * not, so under clang the loop runs as written (the same values). */
#ifdef __clang__
#define RANGE_SIMD
#else
#define RANGE_SIMD _Pragma("omp simd reduction(min : mn) reduction(max : mx)")
#endif
#define RANGE_ALL(T, TOP, BOTTOM)                                                   \
    do {                                                                            \
        const T *v = (const T *)(const void *)c->e->vals;                              \
        T mn = TOP, mx = BOTTOM;                                                    \
        RANGE_SIMD                                                                  \
        for (size_t k = 0; k < m; k++) {                                            \
            mn = v[k] < mn ? v[k] : mn;                                             \
            mx = v[k] > mx ? v[k] : mx;                                             \
        }                                                                           \
        for (size_t k = 0; k < m && *lo == SIZE_MAX; k++)                           \
            if (v[k] == mn) *lo = k;                                                \
        for (size_t k = 0; k < m && *hi == SIZE_MAX; k++)                           \
            if (v[k] == mx) *hi = k;                                                \
    } while (0)

static void value_range(const column *c, const uint32_t *rows, size_t m, size_t *lo, size_t *hi)
{
    *lo = *hi = SIZE_MAX;
    if (!rows) {
        switch (c->c.type) {
        case AN_PQ_INT32: RANGE_ALL(int32_t, INT32_MAX, INT32_MIN); return;
        case AN_PQ_UINT32: RANGE_ALL(uint32_t, UINT32_MAX, 0); return;
        case AN_PQ_INT64: RANGE_ALL(int64_t, INT64_MAX, INT64_MIN); return;
        case AN_PQ_FLOAT: RANGE_ALL(float, INFINITY, -INFINITY); return;
        case AN_PQ_DOUBLE: RANGE_ALL(double, (double)INFINITY, -(double)INFINITY); return;
        default: break;
        }
    }
    switch (c->c.type) {
    case AN_PQ_INT32: RANGE_LOOP(int32_t, 0); return;
    case AN_PQ_UINT32: RANGE_LOOP(uint32_t, 0); return;
    case AN_PQ_INT64: RANGE_LOOP(int64_t, 0); return;
    case AN_PQ_FLOAT: RANGE_LOOP(float, isnan(x)); return;
    case AN_PQ_DOUBLE: RANGE_LOOP(double, isnan(x)); return;
    default:
        for (size_t k = 0; k < m; k++) {
            size_t r = rows ? rows[k] : k;
            if (*lo == SIZE_MAX) { *lo = *hi = r; continue; }
            an_pq_str x = str_at(c, r);
            if (str_cmp(x, str_at(c, *lo)) < 0) *lo = r;
            if (str_cmp(x, str_at(c, *hi)) > 0) *hi = r;
        }
    }
}

/* The bytes of row r as a statistic (PLAIN without a length prefix), with
 * a float zero given the sign the format asks of a minimum (neg) or maximum. */
static uint8_t *stat_bytes(const column *c, size_t r, int neg, uint32_t *len)
{
    size_t n = c->width ? c->width : str_at(c, r).len;
    uint8_t *p = malloc(n ? n : 1);
    if (!p) return NULL;
    if (c->width) memcpy(p, c->e->vals + r * c->width, n);
    else memcpy(p, str_at(c, r).p, n);
    if (c->c.type == AN_PQ_FLOAT) {
        float x; memcpy(&x, p, 4);
        if (x == 0) { x = neg ? -0.0f : 0.0f; memcpy(p, &x, 4); }
    } else if (c->c.type == AN_PQ_DOUBLE) {
        double x; memcpy(&x, p, 8);
        if (x == 0) { x = neg ? -0.0 : 0.0; memcpy(p, &x, 8); }
    }
    *len = (uint32_t)n;
    return p;
}

/* Minimum and maximum over rows (or over the dictionary's first rows when
 * nd > 0: every distinct value is there). */
static void chunk_stats(column *c, size_t n, uint32_t nd)
{
    size_t lo, hi;
    value_range(c, nd ? c->dict_row : NULL, nd ? nd : n, &lo, &hi);
    c->meta.has_range = 0;
    if (lo == SIZE_MAX) return;
    if (!c->width && (str_at(c, lo).len > STAT_MAX_BYTES || str_at(c, hi).len > STAT_MAX_BYTES)) return;
    c->meta.min = stat_bytes(c, lo, 1, &c->meta.min_len);
    c->meta.max = stat_bytes(c, hi, 0, &c->meta.max_len);
    if (!c->meta.min || !c->meta.max) { c->failed = 1; return; }
    c->meta.has_range = 1;
}

/* BYTE_STREAM_SPLIT of m values of w bytes: byte k of value i goes to
 * k*m + i, so the slowly varying sign and exponent bytes of floats sit
 * together where zstd finds them. */
static void byte_split(an_pq_buf *b, const uint8_t *v, size_t m, size_t w)
{
    if (an_pq_buf_reserve(b, m * w)) return;
    uint8_t *o = b->p + b->n;
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < w; k++) o[k * m + i] = v[i * w + k];
    b->n += m * w;
}

/* The bytes zstd makes of c->page (into c->comp; SIZE_MAX on failure). */
static size_t page_zsize(column *c, int level)
{
    size_t bound = ZSTD_compressBound(c->page.n);
    c->comp.n = 0;
    if (c->page.oom || an_pq_buf_reserve(&c->comp, bound)) return SIZE_MAX;
    size_t z = ZSTD_compressCCtx(c->zc, c->comp.p, bound, c->page.p, c->page.n, level);
    return ZSTD_isError(z) ? SIZE_MAX : z;
}

/* Compress c->page into the chunk behind its page header. */
static void emit_page(column *c, int type, int nvalues, int encoding, int level)
{
    size_t z = page_zsize(c, level);
    if (z == SIZE_MAX) { c->failed = 1; return; }
    c->hdr.n = 0;
    an_tc t;
    an_tc_init(&t, &c->hdr);
    an_tc_begin(&t);
    an_tc_i32(&t, 1, type);
    an_tc_i32(&t, 2, (int32_t)c->page.n);
    an_tc_i32(&t, 3, (int32_t)z);
    if (type == PAGE_DATA) {
        an_tc_struct(&t, 5);
        an_tc_i32(&t, 1, nvalues);
        an_tc_i32(&t, 2, encoding);
        an_tc_i32(&t, 3, ENC_RLE);  /* levels: none in a REQUIRED column */
        an_tc_i32(&t, 4, ENC_RLE);
        an_tc_end(&t);
    } else {
        an_tc_struct(&t, 7);
        an_tc_i32(&t, 1, nvalues);
        an_tc_i32(&t, 2, ENC_PLAIN);
        an_tc_end(&t);
    }
    an_tc_end(&t);
    an_pq_buf_put(&c->chunk, c->hdr.p, c->hdr.n);
    an_pq_buf_put(&c->chunk, c->comp.p, z);
    c->meta.uncompressed += (int64_t)(c->hdr.n + c->page.n);
    c->meta.compressed += (int64_t)(c->hdr.n + z);
    if (c->hdr.oom || c->chunk.oom || c->page.oom || c->page.n > INT32_MAX || z > INT32_MAX) c->failed = 1;
}

/* The body of the data page of rows [p, p + m) in encoding enc (for a
 * dictionary, indices of `width` bits) into c->page. */
static void page_body(column *c, int enc, size_t p, size_t m, int width)
{
    c->page.n = 0;
    switch (enc) {
    case ENC_RLE_DICTIONARY:
        an_pq_buf_byte(&c->page, (uint8_t)width);
        an_pq_rle_encode(&c->page, c->idx + p, m, width);
        break;
    case ENC_BYTE_STREAM_SPLIT: byte_split(&c->page, c->e->vals + p * c->width, m, c->width); break;
    case ENC_DELTA_BINARY_PACKED:
        an_pq_delta_encode(&c->page, (const uint32_t *)(const void *)c->e->vals + p, m);
        break;
    default:
        if (c->width) an_pq_buf_put(&c->page, c->e->vals + p * c->width, m * c->width);
        else for (size_t r = p; r < p + m; r++) plain_value(&c->page, c, r);
    }
}

/* The zstd level of a column's pages: its own, or the writer's. */
static int col_level(const column *c, const an_pq_opts *o) { return c->c.zstd_level ? c->c.zstd_level : o->zstd_level; }

/* Rows a trial encoding of a chunk compresses (choose_encoding): few
 * enough that the trials cost a few percent of the chunk's encoding. */
#define TRIAL_ROWS 16384

/* The data pages' encoding of a chunk of n rows with nd dictionary
 * entries (0: none).  Where the column leaves a choice, the candidates
 * encode and compress the chunk's first TRIAL_ROWS rows and the smaller
 * wins, the dictionary's own page counted against it as if the trial's
 * ratio held for the whole chunk: AN_PQ_BEST picks the dictionary or
 * DELTA_BINARY_PACKED (a CAPE head's slots step in a pattern that repeats
 * from one position to the next, which deltas expose and indices hide), a
 * PLAIN float column PLAIN or BYTE_STREAM_SPLIT (exact repeats of whole
 * values, as in a head whose addresses repeat, compress better unsplit;
 * slowly varying values better split). */
static int choose_encoding(column *c, size_t n, uint32_t nd, const an_pq_opts *o)
{
    int t = c->c.type, int4 = t == AN_PQ_INT32 || t == AN_PQ_UINT32, fl = t == AN_PQ_FLOAT || t == AN_PQ_DOUBLE;
    size_t m = n < o->page_rows ? n : o->page_rows;
    if (m > TRIAL_ROWS) m = TRIAL_ROWS;
    double pages = (double)n / (double)(m ? m : 1);
    if (nd && c->c.enc == AN_PQ_BEST && int4 && an_pq_delta_fits((const uint32_t *)(const void *)c->e->vals, n)) {
        c->page.n = 0;
        for (uint32_t k = 0; k < nd; k++) plain_value(&c->page, c, c->dict_row[k]);
        size_t zdict = page_zsize(c, col_level(c, o));
        page_body(c, ENC_RLE_DICTIONARY, 0, m, an_pq_bit_width(nd - 1));
        size_t zidx = page_zsize(c, col_level(c, o));
        page_body(c, ENC_DELTA_BINARY_PACKED, 0, m, 0);
        size_t zdelta = page_zsize(c, col_level(c, o));
        if (zdict != SIZE_MAX && zidx != SIZE_MAX && zdelta != SIZE_MAX &&
            (double)zdelta * pages < (double)zdict + (double)zidx * pages)
            return ENC_DELTA_BINARY_PACKED;
        return ENC_RLE_DICTIONARY;
    }
    if (nd) return ENC_RLE_DICTIONARY;
    if (fl) {
        page_body(c, ENC_BYTE_STREAM_SPLIT, 0, m, 0);
        size_t zs = page_zsize(c, col_level(c, o));
        page_body(c, ENC_PLAIN, 0, m, 0);
        size_t zp = page_zsize(c, col_level(c, o));
        return zp < zs ? ENC_PLAIN : ENC_BYTE_STREAM_SPLIT;
    }
    if ((c->c.enc == AN_PQ_DELTA || c->c.enc == AN_PQ_BEST) && int4 &&
        an_pq_delta_fits((const uint32_t *)(const void *)c->e->vals, n))
        return ENC_DELTA_BINARY_PACKED;
    return ENC_PLAIN;
}

/* Encode the chunk of the group's n rows into c->chunk (offsets relative
 * to the chunk's start). */
static void encode_chunk(column *c, size_t n, const an_pq_opts *o)
{
    c->chunk.n = 0;
    free(c->meta.min); free(c->meta.max);
    memset(&c->meta, 0, sizeof c->meta);
    c->meta.num_values = (int64_t)n;
    uint32_t nd = uses_dict(c->c.enc) ? build_dict(c, n, o->dict_max, o->dict_bytes) : 0;
    chunk_stats(c, n, nd);
    int enc = n ? choose_encoding(c, n, nd, o) : nd ? ENC_RLE_DICTIONARY : ENC_PLAIN;
    if (enc != ENC_RLE_DICTIONARY) nd = 0;
    c->meta.enc = enc;
    c->meta.dict_off = -1;
    if (nd) {
        c->meta.dict_off = 0;
        c->page.n = 0;
        for (uint32_t k = 0; k < nd; k++) plain_value(&c->page, c, c->dict_row[k]);
        emit_page(c, PAGE_DICTIONARY, (int)nd, ENC_PLAIN, col_level(c, o));
    }
    c->meta.data_off = (int64_t)c->chunk.n;
    int width = nd ? an_pq_bit_width(nd - 1) : 0;
    for (size_t p = 0; p < n && !c->failed; p += o->page_rows) {
        size_t m = n - p < o->page_rows ? n - p : o->page_rows;
        page_body(c, enc, p, m, width);
        emit_page(c, PAGE_DATA, (int)m, enc, col_level(c, o));
    }
}

/* Encode the n rows of the columns' encode buffers as a row group and
 * write it (in the background thread, or in the caller's). */
static int write_group(an_pq_writer *w, size_t n, rn_error *err)
{
    if (w->ngroups == w->groups_cap) {
        size_t cap = w->groups_cap ? 2 * w->groups_cap : 8;
        chunk_meta *m = realloc(w->meta, cap * (size_t)w->ncols * sizeof *m);
        if (m) w->meta = m;
        int64_t *g = m ? realloc(w->group_rows, cap * sizeof *g) : NULL;
        if (g) w->group_rows = g;
        if (!m || !g) return rn_seterr(err, RN_ENOMEM, "out of memory for the parquet footer");
        w->groups_cap = cap;
    }
    int failed = 0;
#pragma omp parallel for num_threads(w->o.threads) schedule(dynamic) reduction(| : failed)
    for (int i = 0; i < w->ncols; i++) {
        column *c = &w->col[i];
        c->failed = 0;
        encode_chunk(c, n, &w->o);
        failed |= c->failed | c->chunk.oom;
    }
    if (failed) return rn_seterr(err, RN_ENOMEM, "out of memory encoding a parquet row group");
    for (int i = 0; i < w->ncols; i++) {
        column *c = &w->col[i];
        if (fwrite(c->chunk.p, 1, c->chunk.n, w->f) != c->chunk.n) {
            int e = errno;
            return rn_seterr(err, RN_EIO, "write failed: %s", strerror(e ? e : EIO));
        }
    }
    /* all written: the footer takes the chunks' metadata (and their statistics) */
    chunk_meta *gm = w->meta + w->ngroups * (size_t)w->ncols;
    for (int i = 0; i < w->ncols; i++) {
        column *c = &w->col[i];
        chunk_meta m = c->meta;
        m.start = (int64_t)w->offset;
        if (m.dict_off >= 0) m.dict_off += m.start;
        m.data_off += m.start;
        gm[i] = m;
        c->meta.min = c->meta.max = NULL;
        w->offset += c->chunk.n;
    }
    w->group_rows[w->ngroups++] = (int64_t)n;
    return RN_OK;
}

static void *group_thread(void *arg)
{
    an_pq_writer *w = arg;
    w->bg_rc = write_group(w, w->bg_rows, &w->bg_err);
    return NULL;
}

/* Wait for the row group in the background; its error becomes the caller's. */
static int wait_group(an_pq_writer *w, rn_error *err)
{
    if (!w->bg_running) return RN_OK;
    pthread_join(w->bg, NULL);
    w->bg_running = 0;
    if (!w->bg_rc) return RN_OK;
    w->dead = 1;
    if (err) *err = w->bg_err;
    return w->bg_rc;
}

/* Hand the buffered rows over as a row group: once the previous group is
 * written, the buffers swap, and the group is encoded and written by a
 * thread of its own (background) while the caller fills the other buffer,
 * or here (the last group, or where no thread can be started). */
static int flush_group(an_pq_writer *w, int background, rn_error *err)
{
    int rc = wait_group(w, err);
    if (rc || w->rows == 0) return rc;
    for (int i = 0; i < w->ncols; i++) {
        column *c = &w->col[i];
        colbuf *t = c->f;
        c->f = c->e;
        c->e = t;
        c->f->arena.n = 0;
    }
    w->bg_rows = w->rows;
    w->rows = 0;
    if (background && pthread_create(&w->bg, NULL, group_thread, w) == 0) {
        w->bg_running = 1;
        return RN_OK;
    }
    return write_group(w, w->bg_rows, err);
}

void an_pq_abandon(an_pq_writer *w) { wait_group(w, NULL); }

int an_pq_append(an_pq_writer *w, size_t n, const void *const *cols, rn_error *err)
{
    if (w->dead) return rn_seterr(err, RN_EIO, "write failed: an earlier write failed");
    size_t done = 0;
    while (done < n) {
        size_t m = w->o.group_rows - w->rows;
        if (m > n - done) m = n - done;
        for (int i = 0; i < w->ncols; i++) {
            column *c = &w->col[i];
            if (c->width) {
                memcpy(c->f->vals + w->rows * c->width, (const uint8_t *)cols[i] + done * c->width, m * c->width);
                continue;
            }
            const an_pq_str *s = (const an_pq_str *)cols[i] + done;
            for (size_t k = 0, r = w->rows; k < m; k++, r++) {
                c->f->lens[r] = s[k].len;
                if (r > 0 && s[k].len == c->f->lens[r - 1] &&
                    (k > 0 ? s[k].p == s[k - 1].p : !memcmp(s[k].p, c->f->arena.p + c->f->offs[r - 1], s[k].len))) {
                    c->f->offs[r] = c->f->offs[r - 1];  /* the same bytes again: share them */
                    continue;
                }
                c->f->offs[r] = c->f->arena.n;
                an_pq_buf_put(&c->f->arena, s[k].p, s[k].len);
            }
            if (c->f->arena.oom) return rn_seterr(err, RN_ENOMEM, "out of memory buffering column '%s'", c->name);
        }
        w->rows += m;
        w->total_rows += m;
        done += m;
        if (w->rows == w->o.group_rows) {
            int rc = flush_group(w, 1, err);
            if (rc) { w->dead = 1; return rc; }
        }
    }
    return RN_OK;
}

/* The footer's SchemaElement of column c. */
static void schema_leaf(an_tc *t, const column *c)
{
    an_tc_begin(t);
    an_tc_i32(t, 1, physical(c->c.type));
    an_tc_i32(t, 3, REP_REQUIRED);
    an_tc_string(t, 4, c->name);
    if (c->c.type == AN_PQ_STRING) {
        an_tc_i32(t, 6, CONV_UTF8);
        an_tc_struct(t, 10);  /* LogicalType */
        an_tc_struct(t, 1);   /* STRING */
        an_tc_end(t);
        an_tc_end(t);
    } else if (c->c.type == AN_PQ_UINT32) {
        an_tc_i32(t, 6, CONV_UINT_32);
        an_tc_struct(t, 10);
        an_tc_struct(t, 10);  /* INTEGER */
        an_tc_byte(t, 1, 32);
        an_tc_bool(t, 2, 0);
        an_tc_end(t);
        an_tc_end(t);
    }
    an_tc_end(t);
}

/* The footer's ColumnChunk of a written chunk. */
static void column_chunk(an_tc *t, const column *c, const chunk_meta *m)
{
    an_tc_begin(t);
    an_tc_i64(t, 2, m->start);
    an_tc_struct(t, 3);  /* ColumnMetaData */
    an_tc_i32(t, 1, physical(c->c.type));
    an_tc_list(t, 2, AN_TC_I32, m->enc != ENC_PLAIN ? 3 : 2);
    an_tc_elem_i32(t, ENC_PLAIN);
    an_tc_elem_i32(t, ENC_RLE);
    if (m->enc != ENC_PLAIN) an_tc_elem_i32(t, m->enc);
    an_tc_list(t, 3, AN_TC_BINARY, 1);
    an_tc_elem_string(t, c->name);
    an_tc_i32(t, 4, CODEC_ZSTD);
    an_tc_i64(t, 5, m->num_values);
    an_tc_i64(t, 6, m->uncompressed);
    an_tc_i64(t, 7, m->compressed);
    an_tc_i64(t, 9, m->data_off);
    if (m->dict_off >= 0) an_tc_i64(t, 11, m->dict_off);
    an_tc_struct(t, 12);  /* Statistics */
    an_tc_i64(t, 3, 0);
    if (m->has_range) {
        an_tc_binary(t, 5, m->max, m->max_len);
        an_tc_binary(t, 6, m->min, m->min_len);
    }
    an_tc_end(t);
    an_tc_end(t);
    an_tc_end(t);
}

int an_pq_finish(an_pq_writer *w, rn_error *err)
{
    if (w->dead) return rn_seterr(err, RN_EIO, "write failed: an earlier write failed");
    int rc = flush_group(w, 0, err);
    if (rc) { w->dead = 1; return rc; }  /* (write_group itself leaves dead to its caller's thread) */
    an_pq_buf b = { 0 };
    an_tc t;
    an_tc_init(&t, &b);
    an_tc_begin(&t);  /* FileMetaData */
    an_tc_i32(&t, 1, 1);
    an_tc_list(&t, 2, AN_TC_STRUCT, (size_t)w->ncols + 1);
    an_tc_begin(&t);
    an_tc_string(&t, 4, "schema");
    an_tc_i32(&t, 5, w->ncols);
    an_tc_end(&t);
    for (int i = 0; i < w->ncols; i++) schema_leaf(&t, &w->col[i]);
    an_tc_i64(&t, 3, (int64_t)w->total_rows);
    an_tc_list(&t, 4, AN_TC_STRUCT, w->ngroups);
    for (size_t g = 0; g < w->ngroups; g++) {
        const chunk_meta *gm = w->meta + g * (size_t)w->ncols;
        int64_t unc = 0, comp = 0;
        an_tc_begin(&t);  /* RowGroup */
        an_tc_list(&t, 1, AN_TC_STRUCT, (size_t)w->ncols);
        for (int i = 0; i < w->ncols; i++) {
            column_chunk(&t, &w->col[i], &gm[i]);
            unc += gm[i].uncompressed;
            comp += gm[i].compressed;
        }
        an_tc_i64(&t, 2, unc);
        an_tc_i64(&t, 3, w->group_rows[g]);
        an_tc_i64(&t, 5, gm[0].start);
        an_tc_i64(&t, 6, comp);
        an_tc_end(&t);
    }
    an_tc_string(&t, 6, w->o.created_by);
    an_tc_list(&t, 7, AN_TC_STRUCT, (size_t)w->ncols);  /* column_orders */
    for (int i = 0; i < w->ncols; i++) {
        an_tc_begin(&t);
        an_tc_struct(&t, 1);  /* TypeDefinedOrder */
        an_tc_end(&t);
        an_tc_end(&t);
    }
    an_tc_end(&t);
    if (b.oom || b.n > UINT32_MAX) {
        an_pq_buf_free(&b);
        return rn_seterr(err, RN_ENOMEM, "out of memory writing the parquet footer");
    }
    uint8_t tail[8] = { (uint8_t)b.n, (uint8_t)(b.n >> 8), (uint8_t)(b.n >> 16), (uint8_t)(b.n >> 24),
                        'P', 'A', 'R', '1' };
    int ok = fwrite(b.p, 1, b.n, w->f) == b.n && fwrite(tail, 1, 8, w->f) == 8;
    int e = errno;
    w->offset += b.n + 8;
    an_pq_buf_free(&b);
    if (!ok) {
        w->dead = 1;
        return rn_seterr(err, RN_EIO, "write failed: %s", strerror(e ? e : EIO));
    }
    return RN_OK;
}

uint64_t an_pq_rows(const an_pq_writer *w) { return w->total_rows; }
uint64_t an_pq_bytes(const an_pq_writer *w) { return w->offset; }
