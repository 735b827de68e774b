/* test_sqlext.c — one run read four ways finds the same events: the C
 * reader (tr_load_events), the `events` virtual table through the sqlite3
 * shell with the loadable extension (`.load build/libramtrace_sql`), the
 * same through `ramtrace sql`, and python/ramtrace (numpy).
 *
 * The trace: the tiny model over 600 bytes (601 positions: blocks of 256,
 * 256 and 89 per head), run 1 every head with exact weights, run 2 layer 1
 * reads only with --weights f16.  Filters exercise the constraints the
 * table pushes down (run, layer, head, op, pos ranges, a non-integer
 * bound).  The sqlite3 shell and python3 with numpy come from
 * scripts/setup; a test whose tool is missing says `skipped`. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_block.h"
#include "tr_reader.h"

static char g_model[512], g_db[512], g_ext[512];

static int setup(void)
{
    char in[512];
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(in, sizeof in, "%s", th_path("in.txt"));
    snprintf(g_db, sizeof g_db, "%s", th_path("ext.db"));
    /* the extension beside the binary under test (build/ or build-asan/) */
    snprintf(g_ext, sizeof g_ext, "%s", th_bin());
    char *slash = strrchr(g_ext, '/');
    snprintf(slash ? slash + 1 : g_ext, sizeof g_ext - (size_t)(slash ? slash + 1 - g_ext : 0), "libramtrace_sql");
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 5 -o %s", th_bin(), g_model)) return -1;
    if (th_write_verses(in, 600)) return -1;
    if (th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, in, g_db)) return -1;
    if (th_run("%s trace %s %s -o %s -j 1 --layers 1 --ops r --weights f16", th_bin(), g_model, in, g_db))
        return -1;
    return 0;
}

TH_SUITE(sqlext, setup, NULL);

/* The C reader's events of run with filter f. */
static tr_event *c_events(int run, const tr_filter *f, size_t *n)
{
    tr_db *d;
    rn_error err = { 0 };
    tr_event *ev = NULL;
    *n = 0;
    if (tr_open_read(g_db, &d, &err)) return NULL;
    if (tr_load_events(d, run, f, &ev, n, &err)) ev = NULL;
    else if (!ev) ev = malloc(sizeof *ev);  /* no events: an empty, non-NULL array */
    tr_close(d);
    return ev;
}

/* Compare the rows of table ev in path (layer, head, pos, op, rank, slot,
 * addr, weight by rowid) with the C reader's events; weights bit for bit. */
static void compare_table(const char *path, const tr_event *ev, size_t n)
{
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT layer, head, pos, op, rank, slot, addr, weight FROM ev"
                                                " ORDER BY rowid", -1, &st, NULL), SQLITE_OK);
    size_t i = 0, bad = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (i < n) {
            const tr_event *e = &ev[i];
            float w = (float)sqlite3_column_double(st, 7);
            bad += sqlite3_column_int64(st, 0) != e->layer || sqlite3_column_int64(st, 1) != e->head ||
                   sqlite3_column_int64(st, 2) != e->pos || sqlite3_column_int64(st, 3) != e->op ||
                   sqlite3_column_int64(st, 4) != e->rank || sqlite3_column_int64(st, 5) != e->slot ||
                   sqlite3_column_int64(st, 6) != e->addr || sqlite3_column_double(st, 7) != (double)e->weight ||
                   memcmp(&w, &e->weight, sizeof w);
        }
        i++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(i, n);
    CU_ASSERT_EQUAL(bad, 0);
}

/* Filters: SQL condition and the equivalent tr_filter. */
static const struct { const char *where; tr_filter f; } filters[] = {
    { "1", { -1, -1, RN_OPS_BOTH, 0, -1 } },
    { "layer = 1 AND head = 2", { 1, 2, RN_OPS_BOTH, 0, -1 } },
    { "head = 3 AND op = 1", { -1, 3, RN_OPS_READ, 0, -1 } },
    { "layer = 0 AND pos >= 250 AND pos < 300", { 0, -1, RN_OPS_BOTH, 250, 300 } },
    { "layer = 1 AND head = 0 AND op = 0 AND pos > 511 AND pos <= 520", { 1, 0, RN_OPS_WRITE, 512, 521 } },
    { "pos BETWEEN 255.5 AND 256.5", { -1, -1, RN_OPS_BOTH, 256, 257 } },
    { "pos = 600 AND layer = 1", { 1, -1, RN_OPS_BOTH, 600, 601 } },
};

static int have(const char *cmd)
{
    return th_run("%s", cmd) == 0;
}

TH_TEST(test_shell_extension, "sqlite3 shell + .load: the same events as the C reader, every filter")
{
    if (!have("command -v sqlite3")) { printf("skipped: no sqlite3 shell "); return; }
    for (int run = 1; run <= 2; run++)
        for (size_t i = 0; i < sizeof filters / sizeof *filters; i++) {
            char out[512];
            snprintf(out, sizeof out, "%s", th_path("shell-out.db"));
            th_run("rm -f %s", out);
            int rc = th_run("sqlite3 -bail %s -cmd '.load %s' \"ATTACH '%s' AS o; CREATE TABLE o.ev AS SELECT"
                            " layer, head, pos, op, rank, slot, addr, weight FROM events WHERE run_id = %d AND %s"
                            " ORDER BY layer, head, pos, op, rank\"", g_db, g_ext, out, run, filters[i].where);
            if (rc) fprintf(stderr, "\nsqlite3: %s", th_err());
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            size_t n;
            tr_event *ev = c_events(run, &filters[i].f, &n);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
            CU_ASSERT(n > 0 || run == 2);  /* run 2 traces layer 1 only */
            compare_table(out, ev, n);
            free(ev);
        }
    /* Without the extension the tables still read; events names the module. */
    CU_ASSERT_EQUAL(th_run("sqlite3 %s 'SELECT count(*) FROM tokens'", g_db), 0);
    CU_ASSERT_EQUAL(strtol(th_out(), NULL, 10), 2 * 601);
    CU_ASSERT_NOT_EQUAL(th_run("sqlite3 %s 'SELECT count(*) FROM events'", g_db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no such module: ramtrace_events"));
    /* The table is read-only. */
    CU_ASSERT_NOT_EQUAL(th_run("sqlite3 %s -cmd '.load %s' 'DELETE FROM events'", g_db, g_ext), 0);
    CU_ASSERT_EQUAL(th_sql_int(g_db, "SELECT count(*) FROM events"), 601 * 128 + 601 * 32);
}

TH_TEST(test_ramtrace_sql, "ramtrace sql: the same counts as the C reader, scoped by run")
{
    for (int run = 1; run <= 2; run++)
        for (size_t i = 0; i < sizeof filters / sizeof *filters; i++) {
            CU_ASSERT_EQUAL_FATAL(th_run("%s sql %s --run %d -F csv \"SELECT count(*), coalesce(sum(slot), 0), coalesce(sum(rank * pos), 0)"
                                         " FROM events WHERE %s\"", th_bin(), g_db, run, filters[i].where), 0);
            size_t n;
            tr_event *ev = c_events(run, &filters[i].f, &n);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
            long long s = 0, rp = 0;
            for (size_t k = 0; k < n; k++) { s += ev[k].slot; rp += (long long)ev[k].rank * ev[k].pos; }
            char want[128];
            snprintf(want, sizeof want, "\n%zu,%lld,%lld\n", n, s, rp);
            CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), want));
            free(ev);
        }
}

/* The interpreter with numpy the python tests use, or NULL. */
static const char *python(void)
{
    const char *py = "/usr/bin/python3";
    if (!th_file_exists(py)) py = "python3";
    return th_run("%s -c 'import numpy'", py) ? NULL : py;
}

TH_TEST(test_python_reader, "python/ramtrace: the same events as the C reader")
{
    const char *py = python();
    if (!py) { printf("skipped: no python3 with numpy "); return; }
    char dir[512], p[700];
    snprintf(dir, sizeof dir, "%s", th_path("py"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s", dir), 0);
    static const struct { const char *args; tr_filter f; int run; } cases[] = {
        { "--run 1", { -1, -1, RN_OPS_BOTH, 0, -1 }, 1 },
        { "", { -1, -1, RN_OPS_BOTH, 0, -1 }, 2 },
        { "--run 1 --layer 0 --head 1 --pos 200:520 --ops w", { 0, 1, RN_OPS_WRITE, 200, 520 }, 1 },
        { "--run 1 --pos 256:", { -1, -1, RN_OPS_BOTH, 256, -1 }, 1 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int rc = th_run("%s python/ramtrace %s %s --dump %s", py, g_db, cases[c].args, dir);
        if (rc) fprintf(stderr, "\npython: %s", th_err());
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        size_t n;
        tr_event *ev = c_events(cases[c].run, &cases[c].f, &n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
        static const char *const cols[] = { "layer", "head", "pos", "op", "rank", "slot", "addr", "weight" };
        static const size_t width[] = { 2, 2, 4, 1, 2, 4, 4, 4 };
        void *a[8];
        size_t len[8];
        for (int k = 0; k < 8; k++) {
            snprintf(p, sizeof p, "%s/%s.bin", dir, cols[k]);
            a[k] = th_read_file(p, &len[k]);
            CU_ASSERT_EQUAL(len[k], n * width[k]);
        }
        size_t bad = 0;
        for (size_t i = 0; i < n && a[7] && len[7] == n * 4; i++) {
            uint16_t l, h, r;
            int32_t ps;
            uint8_t op;
            uint32_t s, ad;
            float w;
            memcpy(&l, (char *)a[0] + 2 * i, 2); memcpy(&h, (char *)a[1] + 2 * i, 2);
            memcpy(&ps, (char *)a[2] + 4 * i, 4); memcpy(&op, (char *)a[3] + i, 1);
            memcpy(&r, (char *)a[4] + 2 * i, 2); memcpy(&s, (char *)a[5] + 4 * i, 4);
            memcpy(&ad, (char *)a[6] + 4 * i, 4); memcpy(&w, (char *)a[7] + 4 * i, 4);
            bad += l != ev[i].layer || h != ev[i].head || ps != ev[i].pos || op != ev[i].op || r != ev[i].rank ||
                   s != ev[i].slot || ad != ev[i].addr || memcmp(&w, &ev[i].weight, 4);
        }
        CU_ASSERT_EQUAL(bad, 0);
        for (int k = 0; k < 8; k++) free(a[k]);
        free(ev);
    }
    /* A corrupt block: one line naming the file, exit 2. */
    char bad[512];
    snprintf(bad, sizeof bad, "%s", th_path("py-bad.db"));
    CU_ASSERT_EQUAL(th_run("cp %s %s", g_db, bad), 0);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(bad, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "UPDATE event_blocks SET weights = substr(weights, 2) WHERE rowid = 3", NULL,
                                 NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(th_run("%s python/ramtrace %s --run 1", py, bad), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "corrupt trace"));
}

TH_TEST(test_python_bad_args, "python/ramtrace: a bad option is one line and exit 2, a bad argument a ValueError")
{
    const char *py = python();
    if (!py) { printf("skipped: no python3 with numpy "); return; }
    /* option -> the words the one line must hold */
    static const struct { const char *args, *want; } cases[] = {
        { "--pos a:b", "--pos: 'a:b' is not LO:HI" },
        { "--pos 7", "--pos: '7' is not LO:HI" },
        { "--pos 5:2", "--pos: lo 5 > hi 2" },
        { "--pos=-3:", "--pos: (-3, None): positions are >= 0" },
        { "--layer 9", "--layer: 9 does not exist (the model of run 2 has 2 layers)" },
        { "--run 1 --layer 2", "--layer: 2 does not exist (the model of run 1 has 2 layers)" },
        { "--layer -1", "--layer: -1 does not exist" },
        { "--head 4", "--head: 4 does not exist (the model of run 2 has 4 heads)" },
        { "--run 2 --layer 0", "--layer: run 2 traced no head matching layer 0, head -1" },
        { "--ops x", "--ops: invalid choice: 'x'" },
        { "--layer x", "--layer: invalid int value: 'x'" },
        { "--run 9", "no run 9" },
        { "--run 99999999999999999999", "no run 99999999999999999999" },
        { "--dump /nonexistent-dir", "--dump: /nonexistent-dir: not a directory" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int rc = th_run("%s python/ramtrace %s %s", py, g_db, cases[c].args);
        if (rc != 2 || th_count_lines(th_err()) != 1 || !strstr(th_err(), cases[c].want))
            fprintf(stderr, "\n%s: rc %d: %s", cases[c].args, rc, th_err());
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), cases[c].want));
        CU_ASSERT_PTR_NULL(strstr(th_err(), "Traceback"));
        CU_ASSERT_EQUAL(th_out()[0], '\0');
    }
    /* Good options next to them still load (layer 1 of run 2: reads only);
     * a bound past every int32 position selects as no bound does. */
    CU_ASSERT_EQUAL(th_run("%s python/ramtrace %s --layer 1 --head 3 --pos :", py, g_db), 0);
    CU_ASSERT_EQUAL(strtol(th_out(), NULL, 10), 601 * 8);
    CU_ASSERT_EQUAL(th_run("%s python/ramtrace %s --layer 1 --head 3 --pos 600:99999999999999999999", py, g_db), 0);
    CU_ASSERT_EQUAL(strtol(th_out(), NULL, 10), 8);
    CU_ASSERT_EQUAL(th_run("%s python/ramtrace %s --pos 99999999999999999999:", py, g_db), 0);
    CU_ASSERT_EQUAL(strtol(th_out(), NULL, 10), 0);

    /* The API: ValueError (ArgError), its message naming the argument. */
    static const char script[] =
        "import sys; sys.path.insert(0, 'python'); import ramtrace\n"
        "cases = [dict(ops='x'), dict(ops=None), dict(layer=9), dict(head=4), dict(layer=-1), dict(layer=1.0),\n"
        "         dict(pos=(5, 2)), dict(pos=5), dict(pos=('a', 3)), dict(pos=(-1, None)), dict(run=1, layer=2)]\n"
        "for kw in cases:\n"
        "    try:\n"
        "        ramtrace.load_events(sys.argv[1], **kw); print('loaded')\n"
        "    except ValueError as e:\n"
        "        print(type(e).__name__, e)\n";
    char path[512];
    snprintf(path, sizeof path, "%s", th_path("py-args.py"));
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(script, f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(th_run("%s %s %s", py, path, g_db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(),
                           "ArgError ops: 'x' is not one of 'rw', 'r', 'w'\n"
                           "ArgError ops: None is not one of 'rw', 'r', 'w'\n"
                           "ArgError layer: 9 does not exist (the model of run 2 has 2 layers)\n"
                           "ArgError head: 4 does not exist (the model of run 2 has 4 heads)\n"
                           "ArgError layer: -1 does not exist (the model of run 2 has 2 layers)\n"
                           "ArgError layer: 1.0 is not an integer\n"
                           "ArgError pos: lo 5 > hi 2\n"
                           "ArgError pos: 5 is not a pair (lo, hi)\n"
                           "ArgError pos: 'a' is not an integer\n"
                           "ArgError pos: (-1, None): positions are >= 0\n"
                           "ArgError layer: 2 does not exist (the model of run 1 has 2 layers)\n");
}

TH_TEST(test_demo_make, "make demo builds the extension that the demo (and the README after it) loads")
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", th_path("demo-build"));
    /* -n: what make would run in a build directory that holds nothing yet */
    CU_ASSERT_EQUAL_FATAL(th_run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n demo BUILD='%s'", dir), 0);
    char want[600];
    snprintf(want, sizeof want, "-o %s/libramtrace_sql.so", dir);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), want));
    /* built before the demo runs, which is told where it is */
    snprintf(want, sizeof want, "RAMTRACE_SQLEXT=%s/libramtrace_sql scripts/demo", dir);
    const char *build = strstr(th_out(), "/libramtrace_sql.so"), *demo = strstr(th_out(), want);
    CU_ASSERT_PTR_NOT_NULL(demo);
    CU_ASSERT(build && demo && build < demo);
}

TH_TEST(test_demo_script, "scripts/demo: sqlite3 + .load and Python read its trace; a python3 without numpy is named")
{
    if (!have("command -v sqlite3")) { printf("skipped: no sqlite3 shell "); return; }
    const char *py = python();
    if (!py || strcmp(py, "/usr/bin/python3")) { printf("skipped: no /usr/bin/python3 with numpy "); return; }
    /* a python3 first on PATH that cannot import numpy (as a pyenv or a
     * venv without it): the system interpreter without its site packages */
    char bin[512], fake[600], out[512];
    snprintf(bin, sizeof bin, "%s", th_path("nonumpy"));
    snprintf(fake, sizeof fake, "%s/python3", bin);
    snprintf(out, sizeof out, "%s", th_path("demo-out"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s && printf '#!/bin/sh\\nexec /usr/bin/python3 -S \"$@\"\\n' > %s"
                                 " && chmod +x %s", bin, fake, fake), 0);
    CU_ASSERT_NOT_EQUAL_FATAL(th_run("%s -c 'import numpy'", fake), 0);

    int rc = th_run("PATH='%s':\"$PATH\" RAMTRACE='%s' RAMTRACE_SQLEXT='%s' RAMTRACE_DEMO_OUT='%s' scripts/demo", bin,
                    th_bin(), g_ext, out);
    if (rc) fprintf(stderr, "\ndemo: %s", th_err());
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const char *o = th_out();
    /* the shell's count and the module's, one head of the sample's run */
    const char *s = strstr(o, "== the plain sqlite3 shell with the extension"), *p = strstr(o, "== Python (numpy)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    long n_sql = strtol(strchr(s, '\n') + 1, NULL, 10), n_py = strtol(strchr(p, '\n') + 1, NULL, 10);
    CU_ASSERT(n_sql > 0);
    CU_ASSERT_EQUAL(n_sql, n_py);
    char want[700];
    snprintf(want, sizeof want, "note: the python3 on PATH (%s) has no numpy; scripts/setup installed it for"
             " /usr/bin/python3: run python/ramtrace with /usr/bin/python3", fake);
    CU_ASSERT_PTR_NOT_NULL(strstr(o, want));
    snprintf(want, sizeof want, "%s/demo-mrc.png", out);
    CU_ASSERT(th_file_exists(want));

    /* the module itself, under that interpreter: one line, exit 2 */
    CU_ASSERT_EQUAL(th_run("%s python/ramtrace %s", fake, g_db), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "ramtrace: numpy is not installed for"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "run this module with /usr/bin/python3"));
}

TH_TEST(test_f16_run, "--weights f16: the same slots as the exact run, weights rounded to float16")
{
    tr_filter f = { 1, -1, RN_OPS_READ, 0, -1 };
    size_t n1, n2;
    tr_event *a = c_events(1, &f, &n1), *b = c_events(2, &f, &n2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(n1, 601 * 32);
    CU_ASSERT_EQUAL(n1, n2);
    size_t bad = 0;
    for (size_t i = 0; i < n1 && i < n2; i++)
        bad += a[i].pos != b[i].pos || a[i].head != b[i].head || a[i].rank != b[i].rank || a[i].slot != b[i].slot ||
               b[i].weight != tr_f16_to_f32(tr_f32_to_f16(a[i].weight));
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(th_sql_int(g_db, "SELECT count(*) FROM runs WHERE run_id = 2 AND weight_format = 'f16'"), 1);
    CU_ASSERT_EQUAL(th_sql_int(g_db, "SELECT count(*) FROM runs WHERE run_id = 1 AND weight_format = 'f32'"), 1);
    free(a);
    free(b);
}

/* ORDER BY against the table's own order (run, layer, head, pos, op, rank):
 * an ascending order is consumed, a descending one must be left to SQLite
 * (a table that claimed it would hand out 0, 1, 2 for DESC). */
TH_TEST(test_order_desc, "ORDER BY pos DESC (and other orders the table does not give) come out sorted")
{
    static const struct { const char *sql, *head, *want; } q[] = {
        { "SELECT pos FROM events WHERE layer = 0 AND head = 0 AND op = 0 AND rank = 0 ORDER BY pos DESC LIMIT 3",
          "pos\n", "600\n599\n598\n" },
        { "SELECT pos, op, rank FROM events WHERE layer = 1 AND head = 2 ORDER BY pos DESC, op DESC, rank DESC LIMIT 3",
          "pos,op,rank\n", "600,1,7\n600,1,6\n600,1,5\n" },
        { "SELECT pos, rank FROM events WHERE layer = 1 AND head = 2 AND op = 1 ORDER BY pos, rank DESC LIMIT 3",
          "pos,rank\n", "0,7\n0,6\n0,5\n" },
        { "SELECT layer, head FROM events WHERE pos = 7 AND op = 0 AND rank = 0 ORDER BY layer, head DESC LIMIT 3",
          "layer,head\n", "0,3\n0,2\n0,1\n" },
        { "SELECT pos FROM events WHERE layer = 0 AND head = 1 AND op = 1 AND rank = 3 ORDER BY pos LIMIT 3",
          "pos\n", "0\n1\n2\n" },
    };
    int shell = have("command -v sqlite3");
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        CU_ASSERT_EQUAL(th_run("%s sql %s --run 1 -F csv \"%s\"", th_bin(), g_db, q[i].sql), 0);
        int ok = !strncmp(th_out(), q[i].head, strlen(q[i].head)) &&
                 !strcmp(th_out() + strlen(q[i].head), q[i].want);
        if (!ok) fprintf(stderr, "\nramtrace sql: %s -> %s", q[i].sql, th_out());
        CU_ASSERT(ok);
        if (!shell) continue;
        /* the loadable extension: the same module, no run scoping */
        CU_ASSERT_EQUAL(th_run("sqlite3 -csv %s -cmd '.load %s' \"%s\"", g_db, g_ext, q[i].sql), 0);
        /* run 2 traced layer 1's reads too: the shell sees every run, so
         * only compare the queries run 2 cannot answer */
        if (!strstr(q[i].sql, "layer = 1") && !strstr(q[i].sql, "pos = 7")) {
            ok = !strcmp(th_out(), q[i].want);
            if (!ok) fprintf(stderr, "\nsqlite3 .load: %s -> %s", q[i].sql, th_out());
            CU_ASSERT(ok);
        }
    }
}

/* A duplicated event_blocks row: the C reader refuses it; the virtual
 * table must too (it returned every event of the block twice, and an
 * ORDER BY it had claimed came out unsorted). */
TH_TEST(test_duplicated_block, "a duplicated block is a corrupt trace through the table as through the C reader")
{
    char dup[512];
    snprintf(dup, sizeof dup, "%s", th_path("dup.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", g_db, dup), 0);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(dup, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "INSERT INTO event_blocks SELECT * FROM event_blocks WHERE run_id = 1 AND"
                                    " layer = 0 AND head = 1 AND pos0 = 256", NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_changes(h), 1);
    sqlite3_close(h);
    static const char *const qs[] = {
        "SELECT count(*) FROM events",
        "SELECT pos FROM events WHERE layer = 0 AND head = 1 AND op = 0 AND rank = 0 ORDER BY pos",
        "SELECT count(*) FROM events WHERE layer = 0 AND head = 1 AND pos >= 300",
    };
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        int rc = th_run("%s sql %s --run 1 -F csv \"%s\"", th_bin(), dup, qs[i]);
        int ok = rc == 2 && th_count_lines(th_err()) == 1 && strstr(th_err(), "corrupt trace") &&
                 strstr(th_err(), "twice");
        if (!ok) fprintf(stderr, "\nramtrace sql %s -> %d: %s%s", qs[i], rc, th_out(), th_err());
        CU_ASSERT(ok);
        if (!have("command -v sqlite3")) continue;
        rc = th_run("sqlite3 %s -cmd '.load %s' \"%s\"", dup, g_ext, qs[i]);
        ok = rc != 0 && strstr(th_err(), "twice");
        if (!ok) fprintf(stderr, "\nsqlite3 .load %s -> %d: %s", qs[i], rc, th_err());
        CU_ASSERT(ok);
    }
    /* heads other than the duplicated one still read */
    CU_ASSERT_EQUAL(th_run("%s sql %s --run 1 -F csv \"SELECT count(*) AS n FROM events WHERE layer = 1\"",
                           th_bin(), dup), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "n\n38464\n");
    tr_db *d;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(dup, &d, &err), RN_OK);
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL(tr_load_events(d, 1, NULL, &ev, &n, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "twice"));
    tr_close(d);
}

/* `sql --help` names only tables a trace has (it named event_groups, the
 * table of schema version 1), and each of them answers a query. */
TH_TEST(test_sql_help_tables, "sql --help names the tables that exist")
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s sql --help", th_bin()), 0);
    char help[4096];
    snprintf(help, sizeof help, "%s", th_out());
    CU_ASSERT_PTR_NULL(strstr(help, "event_groups"));
    static const char *const names[] = { "runs", "tokens", "heads", "events", "writes", "reads", "event_blocks",
                                         "runs_this" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(help, names[i]));
        int rc = th_run("%s sql %s \"SELECT count(*) FROM %s\"", th_bin(), g_db, names[i]);
        if (rc) fprintf(stderr, "\nsql: %s: %s", names[i], th_err());
        CU_ASSERT_EQUAL(rc, 0);
    }
    CU_ASSERT_NOT_EQUAL(th_run("%s sql %s \"SELECT count(*) FROM event_groups\"", th_bin(), g_db), 0);
}
