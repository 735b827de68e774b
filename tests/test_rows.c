/* test_rows.c — the row writer (core/base/rn_rows.h) against hand-written
 * expected text: CSV quoting, JSON escaping and values, null display text,
 * table alignment and the 1000-row measuring boundary, keyed and embedded
 * JSON, write errors; and the --format option of the commands (info and
 * eval rows, one-line errors). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_rows.h"
#include "th.h"

static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* Output of one result: ncol names, nrow rows of cells. */
static char *render(int fmt, const rn_rows_opts *o, int ncol, const char *const *names, int nrow,
                    const rn_cell *cells)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rn_rows w;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(rn_rows_begin(&w, f, fmt, ncol, names, o, &err), RN_OK);
    for (int r = 0; r < nrow; r++) CU_ASSERT_EQUAL(rn_rows_add(&w, cells + r * ncol), RN_OK);
    CU_ASSERT_EQUAL(rn_rows_end(&w, &err), RN_OK);
    fclose(f);
    return buf;
}

TH_TEST(test_format_parse, "format names")
{
    int fmt = -1;
    rn_error err = { 0 };
    CU_ASSERT(rn_format_parse("table", &fmt, &err) == RN_OK && fmt == RN_FMT_TABLE);
    CU_ASSERT(rn_format_parse("csv", &fmt, &err) == RN_OK && fmt == RN_FMT_CSV);
    CU_ASSERT(rn_format_parse("json", &fmt, &err) == RN_OK && fmt == RN_FMT_JSON);
    CU_ASSERT_EQUAL(rn_format_parse("xml", &fmt, &err), RN_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.msg, "--format: 'xml' is not table, csv or json");
    CU_ASSERT_EQUAL(rn_format_parse("CSV", &fmt, &err), RN_EINPUT);
}

TH_TEST(test_real_text, "shortest exact reals")
{
    char b[64];
    CU_ASSERT_STRING_EQUAL(rn_real_text(0.1, b, sizeof b), "0.1");
    CU_ASSERT_STRING_EQUAL(rn_real_text((double)0.1f, b, sizeof b), "0.100000001");
    CU_ASSERT_STRING_EQUAL(rn_real_text(1.0 / 3, b, sizeof b), "0.33333333333333331");
    CU_ASSERT_STRING_EQUAL(rn_real_text(-2.5e-300, b, sizeof b), "-2.5e-300");
    CU_ASSERT_STRING_EQUAL(rn_real_text(3, b, sizeof b), "3");
}

/* RFC 4180: a field with a comma, quote, CR or LF is quoted and its quotes
 * doubled; header names too; qtext always quotes; null shows its text. */
TH_TEST(test_csv_quoting, "CSV quoting")
{
    const char *names[4] = { "a", "b,c", "say \"x\"", "d" };
    const rn_cell cells[8] = {
        rn_cell_text("x,y"), rn_cell_text("say \"hi\""), rn_cell_text("l1\nl2"), rn_cell_text("cr\rx"),
        rn_cell_text("plain"), rn_cell_null("-"), rn_cell_qtext("p q"), rn_cell_null(NULL) };
    char *s = render(RN_FMT_CSV, NULL, 4, names, 2, cells);
    CU_ASSERT_STRING_EQUAL(s, "a,\"b,c\",\"say \"\"x\"\"\",d\n"
                              "\"x,y\",\"say \"\"hi\"\"\",\"l1\nl2\",\"cr\rx\"\n"
                              "plain,-,\"p q\",\n");
    free(s);
    /* numbers as their printf format, or the shortest exact text */
    const char *n2[5] = { "i", "u", "r6", "r", "b" };
    const rn_cell c2[5] = { rn_cell_int(-7), rn_cell_uint(UINT64_MAX), rn_cell_real(2.0 / 3, "%.6g"),
                            rn_cell_real(0.25, NULL), rn_cell_bool(1) };
    s = render(RN_FMT_CSV, NULL, 5, n2, 1, c2);
    CU_ASSERT_STRING_EQUAL(s, "i,u,r6,r,b\n-7,18446744073709551615,0.666667,0.25,true\n");
    free(s);
}

/* JSON: quote, backslash and control characters escaped; NaN, inf and
 * null as null; booleans; numbers bare; the one array layout. */
TH_TEST(test_json_values, "JSON escaping and values")
{
    const char *names[3] = { "t", "v", "k\"ey" };
    const rn_cell cells[9] = {
        rn_cell_text("q\"b\\c\x01\n\t"), rn_cell_real(NAN, NULL), rn_cell_null("-"),
        rn_cell_text(""), rn_cell_real(INFINITY, "%.6g"), rn_cell_bool(0),
        rn_cell_text("\xc3\xa9"), rn_cell_real(-1.5, "%.3f"), rn_cell_uint(42) };
    char *s = render(RN_FMT_JSON, NULL, 3, names, 3, cells);
    CU_ASSERT_STRING_EQUAL(s, "[\n"
                              "  {\"t\": \"q\\\"b\\\\c\\u0001\\n\\t\", \"v\": null, \"k\\\"ey\": null},\n"
                              "  {\"t\": \"\", \"v\": null, \"k\\\"ey\": false},\n"
                              "  {\"t\": \"\xc3\xa9\", \"v\": -1.500, \"k\\\"ey\": 42}\n"
                              "]\n");
    free(s);
    s = render(RN_FMT_JSON, NULL, 3, names, 0, NULL);
    CU_ASSERT_STRING_EQUAL(s, "[\n]\n");
    free(s);
}

/* Keyed (first column's text as the key) and embedded (no newline). */
TH_TEST(test_json_keyed_embedded, "JSON keyed and embedded")
{
    const char *names[3] = { "group", "heads", "share" };
    const rn_cell cells[6] = { rn_cell_text("cape"), rn_cell_int(2), rn_cell_real(0.5, "%.6g"),
                               rn_cell_text("non-cape"), rn_cell_int(3), rn_cell_real(NAN, "%.6g") };
    const rn_rows_opts keyed = { .json_embed = 1, .json_keyed = 1 };
    char *s = render(RN_FMT_JSON, &keyed, 3, names, 2, cells);
    CU_ASSERT_STRING_EQUAL(s, "{\n  \"cape\": {\"heads\": 2, \"share\": 0.5},\n"
                              "  \"non-cape\": {\"heads\": 3, \"share\": null}\n}");
    free(s);
    const rn_rows_opts keyed_nl = { .json_keyed = 1 };
    s = render(RN_FMT_JSON, &keyed_nl, 3, names, 0, NULL);
    CU_ASSERT_STRING_EQUAL(s, "{\n}\n");
    free(s);
    const rn_rows_opts embed = { .json_embed = 1 };
    s = render(RN_FMT_JSON, &embed, 3, names, 1, cells);
    CU_ASSERT_STRING_EQUAL(s, "[\n  {\"group\": \"cape\", \"heads\": 2, \"share\": 0.5}\n]");
    free(s);
    s = render(RN_FMT_JSON, &embed, 3, names, 0, NULL);
    CU_ASSERT_STRING_EQUAL(s, "[\n]");
    free(s);
    /* CSV and table ignore the JSON options */
    s = render(RN_FMT_CSV, &keyed, 3, names, 1, cells);
    CU_ASSERT_STRING_EQUAL(s, "group,heads,share\ncape,2,0.5\n");
    free(s);
}

/* Numbers right, text left, the last column unpadded when text, a null's
 * display text keeps a column numeric, two spaces, a dashed rule. */
TH_TEST(test_table_alignment, "table alignment")
{
    const char *names[4] = { "name", "n", "x", "note" };
    const rn_cell cells[12] = {
        rn_cell_text("a"), rn_cell_int(5), rn_cell_real(1.5, "%.2f"), rn_cell_text("first"),
        rn_cell_text("bbbb"), rn_cell_uint(123), rn_cell_real(-2.25, "%.2f"), rn_cell_text("second"),
        rn_cell_text("c"), rn_cell_null("-"), rn_cell_real(0, "%.2f"), rn_cell_text("") };
    char *s = render(RN_FMT_TABLE, NULL, 4, names, 3, cells);
    CU_ASSERT_STRING_EQUAL(s, "name    n      x  note\n"
                              "----  ---  -----  ------\n"
                              "a       5   1.50  first\n"
                              "bbbb  123  -2.25  second\n"
                              "c       -   0.00  \n");
    free(s);
    /* a numeric last column is padded (right-aligned); UTF-8 counts code points */
    const char *n2[2] = { "k", "v" };
    const rn_cell c2[4] = { rn_cell_text("\xc3\xa9"), rn_cell_int(1), rn_cell_text("yy"), rn_cell_int(100) };
    s = render(RN_FMT_TABLE, NULL, 2, n2, 2, c2);
    CU_ASSERT_STRING_EQUAL(s, "k     v\n--  ---\n\xc3\xa9     1\nyy  100\n");
    free(s);
    /* no rows: the header and rule, columns as text */
    s = render(RN_FMT_TABLE, NULL, 2, n2, 0, NULL);
    CU_ASSERT_STRING_EQUAL(s, "k  v\n-  -\n");
    free(s);
}

/* Widths come from the first 1000 rows; row 1001, wider, prints whole. */
TH_TEST(test_table_sample_boundary, "table: the 1000-row sample boundary")
{
    enum { N = RN_ROWS_SAMPLE + 1 };
    CU_ASSERT_EQUAL(RN_ROWS_SAMPLE, 1000);
    rn_cell *cells = malloc(sizeof *cells * 2 * N);
    for (int r = 0; r < N; r++) {
        cells[2 * r] = rn_cell_text(r == N - 1 ? "abcdefghij" : "ab");
        cells[2 * r + 1] = rn_cell_int(r + 1);
    }
    const char *names[2] = { "t", "n" };
    char *s = render(RN_FMT_TABLE, NULL, 2, names, N, cells);
    CU_ASSERT_EQUAL(th_count_lines(s), 2 + N);
    const char *head = "t      n\n--  ----\nab     1\nab     2\n";
    CU_ASSERT(strncmp(s, head, strlen(head)) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\nab  1000\nabcdefghij  1001\n"));
    free(s);
    /* a text last column past the sample is not cut either */
    for (int r = 0; r < N; r++) {
        cells[2 * r] = rn_cell_int(r);
        cells[2 * r + 1] = rn_cell_text(r == N - 1 ? "a long text past the sample" : "x");
    }
    s = render(RN_FMT_TABLE, NULL, 2, names, N, cells);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\n999  x\n1000  a long text past the sample\n"));
    free(s);
    free(cells);
}

/* A stream that fails: RN_EIO from rn_rows_end (and the writer is freed,
 * which the sanitizer build checks). */
TH_TEST(test_write_error, "write error")
{
    FILE *f = fopen("/dev/full", "w");
    if (!f) return;
    const char *names[1] = { "a" };
    rn_rows w;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(rn_rows_begin(&w, f, RN_FMT_TABLE, 1, names, NULL, &err), RN_OK);
    rn_cell c = rn_cell_text("x");
    rn_rows_add(&w, &c);
    CU_ASSERT_EQUAL(rn_rows_end(&w, &err), RN_EIO);
    fclose(f);
}

/* `info -f json|csv`: section,key,value rows, numbers as numbers. */
TH_TEST(test_cli_info_rows, "info -f json|csv")
{
    char model[512];
    snprintf(model, sizeof model, "%s", th_path("rows_tiny.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), model), 0);
    CU_ASSERT_EQUAL(th_run("%s info -f json %s", th_bin(), model), 0);
    const char *o = th_out();
    CU_ASSERT(starts(o, "[\n  {\"section\": \"file\", \"key\": \"path\", \"value\": \""));
    /* tiny.cfg: d_p 8, order 3, so M = 8^3 and d_k = 3 * 8 */
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "{\"section\": \"derived\", \"key\": \"slots\", \"value\": 512}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "{\"section\": \"derived\", \"key\": \"d_k\", \"value\": 24}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "{\"section\": \"config\", \"key\": \"tokenizer\", \"value\": \"bytes\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "{\"section\": \"cape_heads\", \"key\": \"layer0\", \"value\": \"0,1,2,3\"}"));
    size_t len = strlen(o);
    CU_ASSERT(len > 4 && !strcmp(o + len - 4, "}\n]\n"));
    CU_ASSERT_EQUAL(th_run("%s info %s --format csv", th_bin(), model), 0);
    CU_ASSERT(starts(th_out(), "section,key,value\nfile,path,"));
    /* total state L*H*M*(d_v+1) = 2*4*512*17 floats */
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\nderived,total_state_floats,69632\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\nconfig,cape_masks,\"15,0\"\n"));
}

/* `eval -f csv`: one row per rung (L and N as numbers) and a mean row. */
TH_TEST(test_cli_eval_csv, "eval -f csv|json")
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 -f csv", th_bin()), 0);
    const char *o = th_out();
    CU_ASSERT(starts(o, "segment,L,N,accuracy\n\"(64,4)\",64,4,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o, "\n\"(1024,256)\",1024,256,"));
    CU_ASSERT_EQUAL(th_count_lines(o), 1 + 7 + 1);
    const char *m = strstr(o, "\nmean,,,");
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    /* the mean is the mean of the rungs */
    double sum = 0;
    const char *p = o;
    for (int i = 0; i < 7; i++) {
        p = strchr(p, '\n') + 1;
        const char *e = strchr(p, '\n');
        while (e[-1] != ',') e--;
        sum += atof(e);
    }
    CU_ASSERT_DOUBLE_EQUAL(atof(m + 8), sum / 7, 1e-12);
    CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 --format json", th_bin()), 0);
    CU_ASSERT(starts(th_out(), "[\n  {\"segment\": \"(64,4)\", \"L\": 64, \"N\": 4, \"accuracy\": "));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "{\"segment\": \"mean\", \"L\": null, \"N\": null, \"accuracy\": "));
}

/* Every command with --format refuses an unknown one: exit 2, one line
 * naming --format (parsed before any file is opened). */
TH_TEST(test_cli_format_errors, "--format xml: exit 2, one line")
{
    const char *nope = th_path("nope.db");
    const char *cmds[][2] = {
        { "sql", "'SELECT 1' -F" }, { "runs", "--format" }, { "stats", "-f" }, { "simulate", "--format" },
        { "attribute", "--layer 0 --head 0 --pos 1 -f" }, { "info", "-f" }, { "eval", "--task mqar -f" } };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CU_ASSERT_EQUAL(th_run("%s %s %s %s xml", th_bin(), cmds[i][0], nope, cmds[i][1]), 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--format: 'xml' is not table, csv or json"));
        CU_ASSERT_EQUAL(th_out()[0], 0);
    }
}
