/* test_parquet.c — the Parquet writer (analysis/an_parquet.h) and `export
 * --format parquet` (analysis/an_pq_export.h), checked by two independent
 * readers: DuckDB and hyparquet, run by node (tests/js/, installed by
 * scripts/setup with npm ci).  Where tests/js/node_modules is missing the
 * reader checks are skipped with one message; what needs no reader (files
 * framed as Parquet, bad input refused, nothing half-written) still runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "an_parquet.h"
#include "tr_reader.h"
#include "rn_rng.h"
#include "th.h"

/* Whether node and both readers are installed (message printed once). */
static int readers(void)
{
    static int have = -1;
    if (have < 0) {
        have = th_file_exists("tests/js/node_modules/hyparquet/package.json") &&
               th_file_exists("tests/js/node_modules/@duckdb/node-api/package.json") &&
               th_run("node --version") == 0;
        if (!have)
            fprintf(stderr, "\n  parquet: reader checks skipped: tests/js/node_modules is missing "
                            "(scripts/setup installs DuckDB and hyparquet with npm ci)\n");
    }
    return have;
}

typedef struct {
    const char *name;
    int type, enc;
    const void *vals;
} tcol;

static void json_value(FILE *f, const tcol *c, size_t i)
{
    switch (c->type) {
    case AN_PQ_INT32: fprintf(f, "%d", ((const int32_t *)c->vals)[i]); break;
    case AN_PQ_UINT32: fprintf(f, "%u", ((const uint32_t *)c->vals)[i]); break;
    case AN_PQ_INT64: fprintf(f, "\"%lld\"", (long long)((const int64_t *)c->vals)[i]); break;
    case AN_PQ_FLOAT: { uint32_t b; memcpy(&b, (const float *)c->vals + i, 4); fprintf(f, "\"%08x\"", b); break; }
    case AN_PQ_DOUBLE: { uint64_t b; memcpy(&b, (const double *)c->vals + i, 8); fprintf(f, "\"%016llx\"", (unsigned long long)b); break; }
    default: {
        an_pq_str s = ((const an_pq_str *)c->vals)[i];
        fputc('"', f);
        for (uint32_t k = 0; k < s.len; k++) fprintf(f, "%02x", (uint8_t)s.p[k]);
        fputc('"', f);
    }
    }
}

static const char *kind(int t)
{
    static const char *const k[] = { "int32", "uint32", "int64", "float", "double", "string" };
    return k[t];
}

static size_t type_size(int t)
{
    return t == AN_PQ_STRING ? sizeof(an_pq_str) : t == AN_PQ_INT64 || t == AN_PQ_DOUBLE ? 8 : 4;
}

/* Write n rows of the columns to pq_TAG.parquet (appended in uneven
 * slices) with a writer of its own, or (keep != NULL) with the writer *keep
 * reopened (an_pq_reopen; kept for the caller to free), then have both
 * readers compare it with the values. */
static void check_file_with(const char *tag, const tcol *tc, int nc, size_t n, an_pq_opts o, an_pq_writer **keep)
{
    char file[64], json[64];
    snprintf(file, sizeof file, "pq_%s.parquet", tag);
    snprintf(json, sizeof json, "pq_%s.json", tag);
    char fpath[4096], jpath[4096];
    snprintf(fpath, sizeof fpath, "%s", th_path(file));
    snprintf(jpath, sizeof jpath, "%s", th_path(json));
    an_pq_column cols[16];
    for (int c = 0; c < nc; c++) cols[c] = (an_pq_column){ tc[c].name, tc[c].type, tc[c].enc, 0 };
    FILE *f = fopen(fpath, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    an_pq_writer *w;
    rn_error err = { 0 };
    if (keep) {
        CU_ASSERT_EQUAL_FATAL(an_pq_reopen(keep, f, cols, nc, &o, &err), RN_OK);
        w = *keep;
    } else {
        CU_ASSERT_EQUAL_FATAL(an_pq_open(&w, f, cols, nc, &o, &err), RN_OK);
    }
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 3 + 1) {
        if (step > n - at) step = n - at;
        const void *v[16];
        for (int c = 0; c < nc; c++) v[c] = (const char *)tc[c].vals + at * type_size(tc[c].type);
        CU_ASSERT_EQUAL_FATAL(an_pq_append(w, step, v, &err), RN_OK);
    }
    CU_ASSERT_EQUAL(an_pq_finish(w, &err), RN_OK);
    CU_ASSERT_EQUAL(an_pq_rows(w), n);
    uint64_t bytes = an_pq_bytes(w);
    if (!keep) an_pq_free(w);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    /* framed as Parquet: magic at both ends, the footer length inside */
    size_t len;
    char *data = th_read_file(fpath, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL(len, bytes);
    CU_ASSERT(len >= 12 && !memcmp(data, "PAR1", 4) && !memcmp(data + len - 4, "PAR1", 4));
    uint32_t flen = (uint32_t)(uint8_t)data[len - 8] | (uint32_t)(uint8_t)data[len - 7] << 8 |
                    (uint32_t)(uint8_t)data[len - 6] << 16 | (uint32_t)(uint8_t)data[len - 5] << 24;
    CU_ASSERT(flen > 0 && flen <= len - 12);
    free(data);
    if (!readers()) return;
    FILE *j = fopen(jpath, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    fprintf(j, "{\"group_rows\": %zu, \"columns\": [", o.group_rows ? o.group_rows : (size_t)1 << 20);
    for (int c = 0; c < nc; c++) {
        fprintf(j, "%s{\"name\": \"%s\", \"kind\": \"%s\", \"values\": [", c ? ", " : "", tc[c].name, kind(tc[c].type));
        for (size_t i = 0; i < n; i++) {
            if (i) fputc(',', j);
            json_value(j, &tc[c], i);
        }
        fprintf(j, "]}");
    }
    fprintf(j, "]}\n");
    CU_ASSERT_EQUAL_FATAL(fclose(j), 0);
    int rc = th_run("node tests/js/pq_check.mjs %s %s", fpath, jpath);
    if (rc) fprintf(stderr, "\n%s%s", th_out(), th_err());
    CU_ASSERT_EQUAL(rc, 0);
}

static void check_file(const char *tag, const tcol *tc, int nc, size_t n, an_pq_opts o)
{
    check_file_with(tag, tc, nc, n, o, NULL);
}

TH_TEST(test_pq_empty, "writer: no rows (an empty file of every column type) and one row")
{
    int32_t i32[1] = { -7 };
    uint32_t u32[1] = { 4000000000u };
    int64_t i64[1] = { -((int64_t)1 << 40) };
    float fl[1] = { 0.25f };
    double db[1] = { -1e300 };
    an_pq_str st[1] = { { "x", 1 } };
    const tcol c[] = { { "a", AN_PQ_INT32, 1, i32 }, { "b", AN_PQ_UINT32, 0, u32 }, { "c", AN_PQ_INT64, 1, i64 },
                       { "d", AN_PQ_FLOAT, 1, fl }, { "e", AN_PQ_DOUBLE, 0, db }, { "f", AN_PQ_STRING, 1, st } };
    an_pq_opts o = { 0 };
    check_file("empty", c, 6, 0, o);
    check_file("one", c, 6, 1, o);
}

TH_TEST(test_pq_dict_overflow, "writer: dictionaries overflow to PLAIN by count and by bytes, chunk by chunk")
{
    enum { N = 5000 };
    static int32_t a[N];
    static uint32_t u[N];
    static int64_t l[N];
    static an_pq_str s[N];
    static char text[N][24];
    rn_rng r;
    rn_rng_seed(&r, 30);
    for (int i = 0; i < N; i++) {
        /* groups of 1000 rows: even groups few distinct values, odd groups many */
        int many = (i / 1000) % 2;
        a[i] = many ? (int32_t)rn_rng_below(&r, 1u << 30) - (1 << 29) : (int32_t)rn_rng_below(&r, 5);
        u[i] = many ? 0xfffffff0u + (uint32_t)rn_rng_below(&r, 16) : (uint32_t)rn_rng_below(&r, 3);
        l[i] = many ? (int64_t)rn_rng_below(&r, 1u << 31) << 20 : -3;
        unsigned x = (unsigned)rn_rng_below(&r, 1000);
        int len = many ? snprintf(text[i], sizeof text[i], "tok-%d-%u", i % 7, x)
                       : snprintf(text[i], sizeof text[i], "t%d", i % 7);
        s[i] = (an_pq_str){ text[i], (uint32_t)len };
    }
    const tcol c[] = { { "a", AN_PQ_INT32, 1, a }, { "u", AN_PQ_UINT32, 1, u }, { "l", AN_PQ_INT64, 1, l },
                       { "s", AN_PQ_STRING, 1, s } };
    an_pq_opts o = { 0 };
    o.group_rows = 1000;
    o.page_rows = 300;
    o.dict_max = 64;
    o.dict_bytes = 400;  /* the short strings fit, the long ones overflow by bytes */
    o.threads = 2;
    check_file("dict", c, 4, N, o);
}

TH_TEST(test_pq_floats, "writer: NaN, infinities, signed zeros and subnormals in floats and doubles; statistics skip NaN")
{
    enum { N = 40 };
    float f[N];
    double d[N];
    int32_t k[N];
    const float special[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, 3.4e38f, -1.5f, 0.5f, NAN };
    for (int i = 0; i < N; i++) {
        f[i] = i < 10 ? NAN : special[i % 10];  /* row group 0: NaN only (no range) */
        d[i] = i < 10 ? (i % 2 ? 0.0 : -0.0) : (double)special[i % 10] * 1e-300;  /* group 0: zeros only */
        k[i] = i;
    }
    f[3] = -NAN;
    const tcol c[] = { { "w", AN_PQ_FLOAT, 1, f }, { "x", AN_PQ_DOUBLE, 0, d }, { "i", AN_PQ_INT32, 0, k },
                       { "wp", AN_PQ_FLOAT, 0, f } };
    an_pq_opts o = { 0 };
    o.group_rows = 10;
    check_file("floats", c, 4, N, o);
}

TH_TEST(test_pq_strings, "writer: long strings, quotes, newlines, UTF-8, empty strings; dictionary and PLAIN")
{
    enum { N = 9 };
    static char big[100001];
    for (int i = 0; i < 100000; i++) big[i] = (char)('a' + i % 26);
    big[100000] = 0;
    const char *v[N] = { "", "\"quoted\", 'single'", "line\nbreak\r\n", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                         big, "tab\there", "\\x41 backslash", "", "\xe6\x97\xa5\xe6\x9c\xac" };
    an_pq_str s[N];
    for (int i = 0; i < N; i++) s[i] = (an_pq_str){ v[i], (uint32_t)strlen(v[i]) };
    const tcol c[] = { { "tok", AN_PQ_STRING, 1, s }, { "plain", AN_PQ_STRING, 0, s } };
    an_pq_opts o = { 0 };
    o.group_rows = 4;
    check_file("strings", c, 2, N, o);
}

TH_TEST(test_pq_rle_widths, "writer: RLE/bit-packed runs of every bit width 1..20, pages and row groups of odd sizes")
{
    enum { N = 120000 };
    static int32_t v[N];
    static uint32_t u[N];
    rn_rng r;
    rn_rng_seed(&r, 31);
    for (int i = 0; i < N; i++) {
        int width = 1 + (i / 6000) % 20;  /* the dictionary of a chunk grows with i */
        uint32_t x = (uint32_t)rn_rng_below(&r, 1u << width);
        /* runs of random length (1..40) of one value between random values */
        if (i > 0 && rn_rng_below(&r, 3) == 0) x = (uint32_t)v[i - 1];
        v[i] = (int32_t)x;
        u[i] = (uint32_t)(i / 37) * 2654435761u;
    }
    const tcol c[] = { { "v", AN_PQ_INT32, 1, v }, { "u", AN_PQ_UINT32, 1, u } };
    an_pq_opts o = { 0 };
    o.group_rows = 50001;
    o.page_rows = 7777;
    o.dict_max = 1u << 20;
    o.dict_bytes = (size_t)1 << 26;
    o.threads = 2;
    check_file("rle", c, 2, N, o);
}

TH_TEST(test_pq_delta, "writer: DELTA_BINARY_PACKED int32/uint32 of every step width, near the limits, PLAIN where a step needs 2^31")
{
    enum { N = 60013 };
    static int32_t pos[N], wide[N], jump[N];
    static uint32_t u[N];
    rn_rng r;
    rn_rng_seed(&r, 32);
    int32_t w = 0;
    for (int i = 0; i < N; i++) {
        pos[i] = i / 16;                                   /* steps 0 and +1 */
        int bits = (i / 500) % 32;                         /* steps of 0..31 bits, both signs */
        int64_t step = bits ? (int64_t)rn_rng_below(&r, 1u << bits) - ((int64_t)1 << (bits - 1)) : 0;
        int64_t next = (int64_t)w + step;
        if (next > INT32_MAX || next < INT32_MIN) next = (int64_t)w - step;
        w = (int32_t)next;
        wide[i] = w;
        /* uint32 high values; group 2 crosses 2^31 (a step of -2^32+1 as int32: PLAIN) */
        u[i] = (i / 10007) == 2 ? 2147483600u + (uint32_t)(i % 97) : 4294967000u - (uint32_t)rn_rng_below(&r, 200);
        /* near the int32 limits with small steps, and one group alternating the limits (PLAIN) */
        jump[i] = (i / 10007) == 4 ? (i % 2 ? INT32_MAX : INT32_MIN) : (i % 2 ? INT32_MAX - (int32_t)(i % 5) : INT32_MIN + (int32_t)(i % 3));
    }
    const tcol c[] = { { "pos", AN_PQ_INT32, AN_PQ_DELTA, pos }, { "wide", AN_PQ_INT32, AN_PQ_DELTA, wide },
                       { "u", AN_PQ_UINT32, AN_PQ_DELTA, u }, { "jump", AN_PQ_INT32, AN_PQ_DELTA, jump } };
    an_pq_opts o = { 0 };
    o.group_rows = 10007;
    o.page_rows = 1000;
    o.threads = 2;
    check_file("delta", c, 4, N, o);
    /* BEST: chunk by chunk the dictionary or deltas; floats PLAIN or split */
    {
        enum { M = 40000 };
        static uint32_t best[M];
        static float fw[M];
        static float groups[50][8];
        for (int g = 0; g < 50; g++)
            for (int k = 0; k < 8; k++) groups[g][k] = (float)rn_rng_below(&r, 1u << 30) / (float)(1u << 30);
        int g = 0;
        for (int i = 0; i < M; i++) {
            /* row groups 0, 2: a CAPE-like diagonal, and float groups of 8
             * repeated whole; 1, 3: few random values, smooth floats */
            int pattern = (i / 10000) % 2 == 0;
            int pos = i / 16, k = i % 16;
            best[i] = pattern ? (uint32_t)((k * 37 + 1000 - pos) % 1000) : (uint32_t)rn_rng_below(&r, 16);
            if (i % 8 == 0) g = (int)rn_rng_below(&r, 50);
            fw[i] = pattern ? groups[g][i % 8] : 1.0f + (float)i / (float)M;
        }
        const tcol cb[] = { { "best", AN_PQ_UINT32, AN_PQ_BEST, best }, { "fw", AN_PQ_FLOAT, AN_PQ_PLAIN, fw } };
        an_pq_opts ob = { 0 };
        ob.group_rows = 10000;
        ob.page_rows = 2500;
        check_file("best", cb, 2, M, ob);
        if (readers()) {
            CU_ASSERT_EQUAL(th_run("node tests/js/pq_query.mjs \"SELECT path_in_schema, string_agg(DISTINCT encodings, ';' "
                                   "ORDER BY encodings) FROM parquet_metadata('%s') GROUP BY 1 ORDER BY 1\"",
                                   th_path("pq_best.parquet")), 0);
            if (!strstr(th_out(), "DELTA_BINARY_PACKED;")) fprintf(stderr, "\n%s%s", th_out(), th_err());
            CU_ASSERT_STRING_EQUAL(th_out(), "best PLAIN, RLE, DELTA_BINARY_PACKED;PLAIN, RLE, RLE_DICTIONARY\n"
                                             "fw PLAIN, RLE;PLAIN, RLE, BYTE_STREAM_SPLIT\n");
        }
    }
    /* pages of 1 value (a header only), of one block and one value more */
    o.group_rows = 300;
    static const size_t pages[3] = { 1, 128, 129 };
    for (int k = 0; k < 3; k++) {
        char tag[32];
        o.page_rows = pages[k];
        snprintf(tag, sizeof tag, "delta_p%zu", pages[k]);
        check_file(tag, c, 4, 1000, o);
    }
}

/* ---- export --format parquet ---- */

static char TA[4096], TB[4096];

/* Trace A: two runs (all heads, f32; then layers 1 and 3, heads 0-1, reads
 * only, f16); trace B: one run over a prompt of quotes, newlines and UTF-8. */
static int make_traces(void)
{
    snprintf(TA, sizeof TA, "%s", th_path("pqx_a.db"));
    snprintf(TB, sizeof TB, "%s", th_path("pqx_b.db"));
    const char *prompt = "He said \"hi\",\nthen 'bye' \xe2\x80\x94 \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n\ttab, comma\n";
    char pp[4096];
    snprintf(pp, sizeof pp, "%s", th_path("pqx_prompt.txt"));
    if (th_write_file(pp, prompt, strlen(prompt))) return 1;
    if (th_run("%s trace samples/kjv.bin samples/prompts/kjv.txt -o %s -q", th_bin(), TA) ||
        th_run("%s trace samples/kjv.bin samples/prompts/kjv.txt -o %s -q --weights f16 --layers 1,3 --heads 0-1 "
               "--ops r", th_bin(), TA) ||
        th_run("%s trace samples/kjv.bin %s -o %s -q", th_bin(), pp, TB)) {
        fprintf(stderr, "%s", th_err());
        return 1;
    }
    return 0;
}

/* `ramtrace stats TRACE --run ID -f csv` into file name. */
static void stats_csv(const char *trace, int run, const char *name)
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s --run %d -f csv -q", th_bin(), trace, run), 0);
    CU_ASSERT_EQUAL(th_write_file(th_path(name), th_out(), strlen(th_out())), 0);
}

TH_TEST(test_pq_export_stats, "export: three runs of two traces as one dataset; stats' numbers by DuckDB SQL over it, every file by hyparquet")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", th_path("pqx_ds"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s export %s %s -f parquet -o %s -j 2", th_bin(), TA, TB, dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "export: 3 runs,"));
    char p[4096];
    snprintf(p, sizeof p, "%s/events/run=2/layer=3/part-0.parquet", dir);
    CU_ASSERT(th_file_exists(p));
    snprintf(p, sizeof p, "%s/events/run=2/layer=0", dir);  /* not traced in run 2 */
    CU_ASSERT_FALSE(th_file_exists(p));
    snprintf(p, sizeof p, "%s/runs/runs.parquet", dir);
    CU_ASSERT(th_file_exists(p));
    /* the layer files written at once (-j) are those written one by one */
    char dir1[4096];
    snprintf(dir1, sizeof dir1, "%s", th_path("pqx_ds_j1"));
    CU_ASSERT_EQUAL(th_run("%s export %s %s -f parquet -o %s -j 1 -q", th_bin(), TA, TB, dir1), 0);
    CU_ASSERT_EQUAL(th_run("diff -r %s %s", dir, dir1), 0);
    snprintf(dir1, sizeof dir1, "%s", th_path("pqx_ds_j5"));
    CU_ASSERT_EQUAL(th_run("%s export %s %s -f parquet -o %s -j 5 -q", th_bin(), TA, TB, dir1), 0);
    CU_ASSERT_EQUAL(th_run("diff -r %s %s", dir, dir1), 0);
    stats_csv(TA, 1, "pqx_s1.csv");
    stats_csv(TA, 2, "pqx_s2.csv");
    stats_csv(TB, 1, "pqx_s3.csv");
    if (!readers()) return;
    char a1[4096], a2[4096], a3[4096];
    snprintf(a1, sizeof a1, "1=%s", th_path("pqx_s1.csv"));
    snprintf(a2, sizeof a2, "2=%s", th_path("pqx_s2.csv"));
    snprintf(a3, sizeof a3, "3=%s", th_path("pqx_s3.csv"));
    int rc = th_run("node tests/js/pq_dataset.mjs %s samples/queries/parquet_stats.sql %s %s %s", dir, a1, a2, a3);
    if (rc) fprintf(stderr, "\n%s%s", th_out(), th_err());
    CU_ASSERT_EQUAL(rc, 0);
    /* one run, one head, one op of trace A alone */
    snprintf(dir, sizeof dir, "%s", th_path("pqx_ds1"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s export %s -f parquet --run 1 --layer 2 --head 3 --ops w -o %s", th_bin(), TA, dir), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s --run 1 --layer 2 --head 3 -f csv -q", th_bin(), TA), 0);
    char *csv = strdup(th_out());
    char *line = strchr(csv, '\n') + 1;
    long writes = 0;
    CU_ASSERT_EQUAL(sscanf(line, "%*d,%*d,%*d,%*d,%ld", &writes), 1);
    rc = th_run("node tests/js/pq_query.mjs \"SELECT count(*), min(op), max(op), min(head), max(head), min(layer) "
                "FROM read_parquet('%s/events/*/*/*.parquet', hive_partitioning = true)\"", dir);
    if (readers()) {
        char want[128];
        snprintf(want, sizeof want, "%ld 0 0 3 3 2\n", writes);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_STRING_EQUAL(th_out(), want);
    }
    free(csv);
}

/* The bulk reader under the export hands out the events of tr_iter_next,
 * field by field, whatever the batch size and the filter. */
static void compare_bulk(tr_db *db, int64_t run, tr_filter f, size_t cap)
{
    enum { CAP = 1000 };
    static int32_t ly[CAP], hd[CAP], ps[CAP], op[CAP], rk[CAP];
    static uint32_t sl[CAP], ad[CAP];
    static float wt[CAP];
    const tr_columns c = { ly, hd, ps, op, rk, sl, ad, wt };
    tr_iter *a, *b;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_iter_open(db, run, &f, &a, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(tr_iter_open(db, run, &f, &b, &err), RN_OK);
    size_t n, total = 0, bad = 0;
    tr_event e;
    do {
        CU_ASSERT_EQUAL_FATAL(tr_iter_read(b, &c, cap, &n, &err), RN_OK);
        for (size_t i = 0; i < n; i++) {
            CU_ASSERT_EQUAL_FATAL(tr_iter_next(a, &e, &err), 1);
            bad += e.layer != ly[i] || e.head != hd[i] || e.pos != ps[i] || e.op != op[i] || e.rank != rk[i] ||
                   e.slot != sl[i] || e.addr != ad[i] || memcmp(&e.weight, &wt[i], 4);
        }
        total += n;
    } while (n > 0);
    CU_ASSERT_EQUAL(tr_iter_next(a, &e, &err), 0);  /* both at the end */
    CU_ASSERT_EQUAL(tr_iter_read(b, &c, cap, &n, &err), RN_OK);  /* and it stays there */
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(total > 0);
    tr_iter_close(a);
    tr_iter_close(b);
}

TH_TEST(test_pq_bulk_reader, "export's bulk reader (tr_iter_read): tr_iter_next's events in batches of 1, 3, 7 and 1000, filtered by layer, head, op and positions")
{
    if (!th_file_exists(TA)) CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    tr_db *db;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(TA, &db, &err), RN_OK);
    static const size_t caps[4] = { 1, 3, 7, 1000 };
    for (int k = 0; k < 4; k++)
        for (int run = 1; run <= 2; run++) {
            tr_filter f = tr_filter_all();
            compare_bulk(db, run, f, caps[k]);
            f.layer = 1;
            f.ops = RN_OPS_READ;
            compare_bulk(db, run, f, caps[k]);
            f.layer = 3;
            f.head = 1;
            f.ops = run == 1 ? RN_OPS_WRITE : RN_OPS_BOTH;
            f.pos_lo = 3;
            f.pos_hi = 11;
            compare_bulk(db, run, f, caps[k]);
        }
    tr_close(db);
}

/* export must fail with status `status` and one line holding needle, and
 * leave neither dir nor its temporary. */
static void expect_refused(const char *cmd, int status, const char *needle, const char *dir)
{
    int rc = th_run("%s", cmd);
    if (rc != status || !strstr(th_err(), needle) || th_count_lines(th_err()) != 1)
        fprintf(stderr, "\n'%s' -> %d: %s", cmd, rc, th_err());
    CU_ASSERT_EQUAL(rc, status);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), needle));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_FALSE(th_file_exists(dir));
    CU_ASSERT_NOT_EQUAL(th_run("ls -d %s.tmp.* 2>/dev/null", dir), 0);
}

TH_TEST(test_pq_export_corrupt, "export --format parquet of a trace with a NaN weight or one above 1 in a block: one line, exit 2, no dataset")
{
    if (!th_file_exists(TA)) CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    static const float bad[2] = { NAN, 2.5f };
    for (int k = 0; k < 2; k++) {
        char db[4096], dir[4096], cmd[16384];
        snprintf(db, sizeof db, "%s", th_path(k ? "pqx_bad_w2.db" : "pqx_bad_w1.db"));
        snprintf(dir, sizeof dir, "%s", th_path(k ? "pqx_bad_w2" : "pqx_bad_w1"));
        CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", TA, db), 0);
        /* entry 1 + 9k of one block's weights (f32) replaced, as a BLOB */
        static const char *where = " FROM event_blocks WHERE run_id = 1 AND layer = 2 AND head = 1 AND pos0 = 0";
        char sql[512];
        sqlite3 *q;
        sqlite3_stmt *st = NULL;
        int ok = sqlite3_open(db, &q) == SQLITE_OK;
        snprintf(sql, sizeof sql, "SELECT weights, rowid%s", where);
        ok = ok && sqlite3_prepare_v2(q, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
        int len = ok ? sqlite3_column_bytes(st, 0) : 0;
        int64_t rowid = ok ? sqlite3_column_int64(st, 1) : 0;
        uint8_t *w = malloc((size_t)len + 1);
        ok = ok && w && len >= 40 && sqlite3_column_type(st, 0) == SQLITE_BLOB;
        if (ok) {
            memcpy(w, sqlite3_column_blob(st, 0), (size_t)len);
            memcpy(w + 4 + 36 * k, &bad[k], 4);
        }
        sqlite3_finalize(st);
        st = NULL;
        ok = ok && sqlite3_prepare_v2(q, "UPDATE event_blocks SET weights = ? WHERE rowid = ?", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_bind_blob(st, 1, w, len, SQLITE_STATIC) == SQLITE_OK && sqlite3_bind_int64(st, 2, rowid) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(q) == 1;
        sqlite3_finalize(st);
        sqlite3_close(q);
        free(w);
        CU_ASSERT_FATAL(ok);
        snprintf(cmd, sizeof cmd, "%s export %s -f parquet --run 1 -o %s -j 2", th_bin(), db, dir);
        CU_ASSERT_EQUAL(th_run("%s", cmd), 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "corrupt trace"));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "layer 2, head 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), k ? "weight 2.5 not in [0, 1]" : "weight nan not in [0, 1]"));
        CU_ASSERT_FALSE(th_file_exists(dir));
        CU_ASSERT_NOT_EQUAL(th_run("ls -d %s.tmp.* 2>/dev/null", dir), 0);
    }
}

TH_TEST(test_pq_export_bad, "export --format parquet: an existing directory, a full disk, bad options: one line, non-zero, no dataset")
{
    if (!th_file_exists(TA)) CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    char dir[4096], cmd[16384];
    snprintf(dir, sizeof dir, "%s", th_path("pqx_bad"));
    /* the output exists: refused, and what is there is untouched */
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir %s && touch %s/keep", dir, dir), 0);
    CU_ASSERT_EQUAL(th_run("%s export %s -f parquet -o %s", th_bin(), TA, dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "exists"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    char keep[4200];
    snprintf(keep, sizeof keep, "%s/keep", dir);
    CU_ASSERT(th_file_exists(keep));
    snprintf(dir, sizeof dir, "%s", th_path("pqx_bad2"));
    /* a disk that fills mid-dataset (a file size limit: writes fail with EFBIG) */
    snprintf(cmd, sizeof cmd, "trap '' XFSZ; ulimit -f 64; exec %s export %s %s -f parquet -o %s", th_bin(), TA, TB, dir);
    expect_refused(cmd, 1, "write failed", dir);
    snprintf(cmd, sizeof cmd, "%s export %s %s/none.db -f parquet -o %s", th_bin(), TA, th_tmpdir(), dir);
    expect_refused(cmd, 2, "none.db", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -f parquet --layer 7 -o %s", th_bin(), TA, dir);
    expect_refused(cmd, 2, "--layer", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -f parquet --run 2 --layer 0 -o %s", th_bin(), TA, dir);
    expect_refused(cmd, 2, "traced no head", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -f parquet --run 5 -o %s", th_bin(), TA, dir);
    expect_refused(cmd, 2, "run", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -f parquet -o -", th_bin(), TA);
    expect_refused(cmd, 2, "directory", dir);
    snprintf(cmd, sizeof cmd, "%s export -f parquet -o %s", th_bin(), dir);
    expect_refused(cmd, 2, "trace", dir);
}

TH_TEST(test_pq_disk_full, "writer: a full disk (/dev/full) fails the append or finish with one line, in a background row group too")
{
    enum { N = 200000 };
    static int32_t v[N];
    rn_rng r;
    rn_rng_seed(&r, 32);
    for (int i = 0; i < N; i++) v[i] = (int32_t)rn_rng_below(&r, 1u << 30);
    an_pq_column col = { "v", AN_PQ_INT32, 1, 0 };
    for (int g = 0; g < 2; g++) {
        FILE *f = fopen("/dev/full", "wb");
        if (!f) return;  /* no /dev/full here */
        an_pq_opts o = { 0 };
        o.group_rows = g ? 30000 : N;  /* g = 1: groups written in the background */
        an_pq_writer *w;
        rn_error err = { 0 };
        int rc = an_pq_open(&w, f, &col, 1, &o, &err);
        const void *vals[1] = { v };
        for (int k = 0; k < 4 && rc == RN_OK; k++) rc = an_pq_append(w, N / 4, vals, &err);
        if (rc == RN_OK) rc = an_pq_finish(w, &err);
        CU_ASSERT_EQUAL(rc, RN_EIO);  /* chunks this large bypass stdio's buffer */
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "write failed: No space left on device"));
        CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
        an_pq_free(w);
        fclose(f);
    }
}

TH_TEST(test_pq_reopen, "writer reuse: one writer, failed on a full disk mid-file, reopened for files of other encodings and sizes")
{
    enum { N = 50000 };
    static int32_t a[N], b[N];
    static float wt[N];
    rn_rng r;
    rn_rng_seed(&r, 77);
    for (int i = 0; i < N; i++) {
        a[i] = (int32_t)rn_rng_below(&r, 1u << 30);
        b[i] = (int32_t)rn_rng_below(&r, 9) - 4;
        wt[i] = (float)rn_rng_below(&r, 64) / 64.0f;  /* few distinct: a dictionary fits */
    }
    an_pq_opts o = { 0 };
    o.group_rows = 8000;
    o.page_rows = 3000;
    an_pq_writer *w = NULL;
    rn_error err = { 0 };
    an_pq_column cols[3] = { { "a", AN_PQ_INT32, AN_PQ_PLAIN, 0 }, { "b", AN_PQ_INT32, AN_PQ_DICT, 0 },
                             { "w", AN_PQ_FLOAT, AN_PQ_PLAIN, 0 } };
    FILE *f = fopen("/dev/full", "wb");
    if (f) {  /* the first file fails in a background row group; the writer is reused after */
        int rc = an_pq_reopen(&w, f, cols, 3, &o, &err);
        const void *vals[3] = { a, b, wt };
        for (int k = 0; k < 5 && rc == RN_OK; k++) rc = an_pq_append(w, N / 5, vals, &err);
        if (rc == RN_OK) rc = an_pq_finish(w, &err);
        CU_ASSERT_EQUAL(rc, RN_EIO);
        if (w) an_pq_abandon(w);
        fclose(f);
    }
    const tcol c1[] = { { "a", AN_PQ_INT32, AN_PQ_PLAIN, a }, { "b", AN_PQ_INT32, AN_PQ_DICT, b },
                        { "w", AN_PQ_FLOAT, AN_PQ_DICT, wt } };
    check_file_with("reopen1", c1, 3, N, o, &w);
    const an_pq_writer *first = w;
    /* fewer rows than a group, other encodings: the same writer */
    const tcol c2[] = { { "a", AN_PQ_INT32, AN_PQ_DELTA, b }, { "b", AN_PQ_INT32, AN_PQ_BEST, a },
                        { "w", AN_PQ_FLOAT, AN_PQ_PLAIN, wt + 7 } };
    check_file_with("reopen2", c2, 3, 5000, o, &w);
    CU_ASSERT_PTR_EQUAL(w, first);
    /* another group size: a new writer */
    o.group_rows = 4000;
    check_file_with("reopen3", c1, 3, 9000, o, &w);
    an_pq_free(w);
}
