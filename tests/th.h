/* th.h — helpers for the CUnit suites in tests/test_*.c.
 *
 * Each tests/test_NAME.c is the suite NAME.  A test is added where it is
 * written:
 *
 *     TH_TEST(test_parse, "key = value parsing")
 *     {
 *         CU_ASSERT(...);
 *     }
 *
 * and scripts/gen-suites (run by make) collects the TH_TEST lines, in file
 * order, into the runner's table.  A suite with set-up or tear-down says so
 * once: TH_SUITE(NAME, init, cleanup);.  Tests run from the repository
 * root.  CLI tests run the binary named by $RAMTRACE_BIN (make test sets it).
 */
#ifndef TH_H
#define TH_H

#include <stddef.h>
#include <stdint.h>

#include <CUnit/CUnit.h>

/* A test function (external, so the generated table can name it). */
#define TH_TEST(fn, what) void fn(void)

/* A suite's set-up and tear-down (either may be NULL). */
typedef struct {
    CU_InitializeFunc init;
    CU_CleanupFunc cleanup;
} th_suite_fns;
#define TH_SUITE(name, init, cleanup) const th_suite_fns th_suite_##name = { init, cleanup }

/* The generated table's rows (build/gen/suites.h). */
typedef struct {
    const char *what;
    CU_TestFunc fn;
} th_case;
typedef struct {
    const char *name;
    const th_suite_fns *fns;  /* NULL: no set-up or tear-down */
    const th_case *cases;     /* ends with { NULL, NULL } */
} th_suite_def;

/* A fresh per-process scratch directory (removed at exit); th_path joins a
 * name onto it (static rotating buffers: copy if you keep more than 8). */
const char *th_tmpdir(void);
const char *th_path(const char *name);

/* Write len bytes to path (whole file).  Returns 0 on success. */
int th_write_file(const char *path, const void *data, size_t len);
/* Read a whole file (malloc'd, NUL-terminated; *len optional). NULL if missing. */
char *th_read_file(const char *path, size_t *len);
int th_file_exists(const char *path);

/* Run a shell command (printf-style), capturing stdout and stderr.  Returns
 * the exit status (128+sig if killed).  th_out()/th_err() give the captured
 * text of the last run. */
int th_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *th_out(void);
const char *th_err(void);

/* The ramtrace binary under test ($RAMTRACE_BIN, else ./ramtrace). */
const char *th_bin(void);

/* Non-zero when slow checks are enabled (make test-long). */
int th_long(void);

/* Count lines in a string. */
int th_count_lines(const char *s);

/* 1 when the two files exist and hold the same bytes. */
int th_files_equal(const char *a, const char *b);

/* One integer from sql on the SQLite file at path, through a fresh
 * connection that waits up to 5 s for locks; a text "ok" (PRAGMA
 * integrity_check) reads as 1.  -1: the query failed; -2: no database. */
int64_t th_sql_int(const char *path, const char *sql);

/* Write n bytes of repeated Genesis 1:1 to path (an input for traces). */
int th_write_verses(const char *path, size_t n);

#endif
