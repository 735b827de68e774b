/* th.c — shared test helpers (see th.h). */
#include "th.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[256];
static char *g_out, *g_err;

static void cleanup(void)
{
    if (g_dir[0] && !getenv("TH_KEEP")) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd)) { /* best effort */ }
    }
    free(g_out);
    free(g_err);
}

const char *th_tmpdir(void)
{
    if (!g_dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/ramtrace-test.XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(1); }
        atexit(cleanup);
    }
    return g_dir;
}

const char *th_path(const char *name)
{
    static char buf[8][512];
    static int i;
    char *b = buf[i++ & 7];
    snprintf(b, 512, "%s/%s", th_tmpdir(), name);
    return b;
}

int th_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

char *th_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t got;
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; b = realloc(b, cap + 1); }
    }
    fclose(f);
    b[n] = 0;
    if (len) *len = n;
    return b;
}

int th_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int th_run(const char *fmt, ...)
{
    char cmd[8192], full[9000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    const char *o = th_path("th_run.out"), *e = th_path("th_run.err");
    char ob[512], eb[512];
    snprintf(ob, sizeof ob, "%s", o);
    snprintf(eb, sizeof eb, "%s", e);
    snprintf(full, sizeof full, "( %s ) >'%s' 2>'%s' </dev/null", cmd, ob, eb);
    int st = system(full);
    free(g_out);
    free(g_err);
    g_out = th_read_file(ob, NULL);
    g_err = th_read_file(eb, NULL);
    if (!g_out) g_out = calloc(1, 1);
    if (!g_err) g_err = calloc(1, 1);
    if (st == -1) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

const char *th_out(void) { return g_out ? g_out : ""; }
const char *th_err(void) { return g_err ? g_err : ""; }

const char *th_bin(void)
{
    const char *b = getenv("RAMTRACE_BIN");
    return b && *b ? b : "./ramtrace";
}

int th_long(void)
{
    const char *s = getenv("RN_TEST_LONG");
    return s && *s && strcmp(s, "0");
}

int th_files_equal(const char *a, const char *b)
{
    size_t la, lb;
    char *x = th_read_file(a, &la), *y = th_read_file(b, &lb);
    int eq = x && y && la == lb && !memcmp(x, y, la);
    free(x);
    free(y);
    return eq;
}

int64_t th_sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -2;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_TEXT ? !strcmp((const char *)sqlite3_column_text(st, 0), "ok")
                                                      : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

int th_write_verses(const char *path, size_t n)
{
    const char *verse = "In the beginning God created the heaven and the earth. ";
    size_t len = strlen(verse);
    char *t = malloc(n ? n : 1);
    if (!t) return -1;
    for (size_t i = 0; i < n; i++) t[i] = verse[i % len];
    int rc = th_write_file(path, t, n);
    free(t);
    return rc;
}

int th_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}
