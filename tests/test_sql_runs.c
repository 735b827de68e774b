/* test_sql_runs.c — one file, several runs: `ramtrace sql` scoped to one run
 * (the latest by default, --run N, --all-runs), its option errors and its
 * read-only guarantee; the sample queries on a two-run file; analysis of a
 * finished run while a live `ramtrace trace` appends another run to the same
 * file; and a run killed with SIGKILL next to a finished one (file intact,
 * every committed batch kept, the finished run untouched). */
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "th.h"

static char g_model[512], g_big[512], g_db[512];

/* Run lengths: BOS + the bytes of each input. */
#define RUN1_TOKENS 56   /* 55 bytes */
#define RUN2_TOKENS 21   /* 20 bytes */
#define EV_PER_TOKEN 128 /* 2 layers x 4 heads x 2 ops x K = 8 */

/* A tiny model, a two-run trace (runs of 56 and 21 tokens) and a large
 * input for the live-writer tests. */
static int setup(void)
{
    char in1[512], in2[512];
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(g_big, sizeof g_big, "%s", th_path("big.txt"));
    snprintf(g_db, sizeof g_db, "%s", th_path("two.db"));
    snprintf(in1, sizeof in1, "%s", th_path("in1.txt"));
    snprintf(in2, sizeof in2, "%s", th_path("in2.txt"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model)) return -1;
    if (th_write_file(in1, "In the beginning God created the heaven and the earth.\n", 55)) return -1;
    if (th_write_file(in2, "And God said, Let th", 20)) return -1;
    if (th_run("%s trace %s %s -o %s --name first", th_bin(), g_model, in1, g_db)) return -1;
    if (th_run("%s trace %s %s -o %s --name second", th_bin(), g_model, in2, g_db)) return -1;
    size_t n = 400000;
    char *t = malloc(n);
    const char *verse = "In the beginning God created the heaven and the earth. ";
    for (size_t i = 0; i < n; i++) t[i] = verse[i % strlen(verse)];
    int rc = th_write_file(g_big, t, n);
    free(t);
    return rc;
}
TH_SUITE(sql_runs, setup, NULL);

/* One integer from sql on path through the SQLite C API (read-only, no
 * scoping: the independent count the command's output is checked against).
 * A text result counts as 1 when it is "ok" (PRAGMA integrity_check). */
static int64_t q1(const char *path, const char *sql)
{
    sqlite3 *db;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) { sqlite3_close(db); return -2; }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_TEXT
                ? !strcmp((const char *)sqlite3_column_text(st, 0), "ok")
                : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The single integer `ramtrace sql DB SQL OPTS -F csv` prints, -1 on failure. */
static int64_t sql1(const char *db, const char *sql, const char *opts)
{
    if (th_run("%s sql %s \"%s\" %s -F csv", th_bin(), db, sql, opts)) return -1;
    const char *nl = strchr(th_out(), '\n');
    return nl ? strtoll(nl + 1, NULL, 10) : -1;
}

TH_TEST(test_scoped_counts, "sql: latest run by default, --run N, --all-runs")
{
    /* The direct counts (C API, explicit run_id) the command must match. */
    int64_t ev1 = q1(g_db, "SELECT count(*) FROM events WHERE run_id = 1");
    int64_t ev2 = q1(g_db, "SELECT count(*) FROM events WHERE run_id = 2");
    CU_ASSERT_EQUAL(ev1, RUN1_TOKENS * EV_PER_TOKEN);
    CU_ASSERT_EQUAL(ev2, RUN2_TOKENS * EV_PER_TOKEN);

    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM events", ""), ev2);
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM events", "--run 1"), ev1);
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM events", "--run 2"), ev2);
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM events", "--all-runs"), ev1 + ev2);
    /* Every per-run name is scoped, not only events. */
    static const char *names[] = { "reads", "writes", "tokens", "heads", "event_blocks" };
    for (int i = 0; i < 5; i++) {
        char sql[256];
        int64_t want[2];
        /* event_blocks: its events (both runs may have one block per head) */
        const char *what = i == 4 ? "sum(n)" : "count(*)";
        for (int r = 0; r < 2; r++) {
            snprintf(sql, sizeof sql, "SELECT %s FROM %s WHERE run_id = %d", what, names[i], r + 1);
            want[r] = q1(g_db, sql);
        }
        CU_ASSERT(want[0] > want[1] || !strcmp(names[i], "heads"));
        snprintf(sql, sizeof sql, "SELECT %s AS n FROM %s", what, names[i]);
        CU_ASSERT_EQUAL(sql1(g_db, sql, ""), want[1]);
        CU_ASSERT_EQUAL(sql1(g_db, sql, "--run 1"), want[0]);
        CU_ASSERT_EQUAL(sql1(g_db, sql, "--all-runs"), want[0] + want[1]);
    }
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM tokens", "--run 1"), RUN1_TOKENS);
    /* No rows of another run leak through a scoped name. */
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM events WHERE run_id != 1", "--run 1"), 0);
    /* runs lists every run; runs_this is the scoped run's row. */
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM runs", "--run 1"), 2);
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT run_id FROM runs_this", ""), 2);
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT n_tokens FROM runs_this", "--run 1"), RUN1_TOKENS);
    /* main.NAME is the unscoped table (the documented way around the scope). */
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM main.events", ""), ev1 + ev2);
    /* A join written for one run agrees with the direct count. */
    CU_ASSERT_EQUAL(sql1(g_db, "SELECT count(*) AS n FROM tokens t JOIN reads e ON e.pos = t.pos",
                         "--run 1"),
                    q1(g_db, "SELECT count(*) FROM tokens t JOIN reads e ON e.run_id = t.run_id"
                             " AND e.pos = t.pos WHERE t.run_id = 1"));
    /* Two statements: both scoped. */
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT count(*) AS a FROM reads; SELECT count(*) AS b FROM writes'"
                           " --run 1 -F csv", th_bin(), g_db), 0);
    char want[64];
    snprintf(want, sizeof want, "a\n%d\n\nb\n%d\n", RUN1_TOKENS * 64, RUN1_TOKENS * 64);
    CU_ASSERT_STRING_EQUAL(th_out(), want);
}

TH_TEST(test_bad_run_option, "sql: bad --run (0, missing, non-numeric, absent run) is one line, exit 2")
{
    static const char *bad[] = { "--run 0", "--run -1", "--run x", "--run 1x", "--run 3",
                                 "--run 99999999999", "--run 1 --all-runs", "--run" };
    for (int i = 0; i < 8; i++) {
        /* "--run" last, so it has no value. */
        int rc = th_run("%s sql %s 'SELECT count(*) FROM events' %s", th_bin(), g_db, bad[i]);
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_STRING_EQUAL(th_out(), "");
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), i == 4 ? "no run 3" : "--run"));
        if (i == 4) CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), g_db));
    }
}

TH_TEST(test_scoped_read_only, "sql --run: still read-only, the file unchanged")
{
    int64_t before = q1(g_db, "SELECT count(*) FROM main.event_blocks");
    static const char *writes[] = {
        "DELETE FROM runs", "DELETE FROM events", "DELETE FROM main.event_blocks",
        "DROP VIEW temp.events", "CREATE TEMP TABLE x(a)",
        "UPDATE runs SET name = 'x' WHERE run_id = 1",
    };
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(th_run("%s sql %s \"%s\"", th_bin(), g_db, writes[i]), 2);
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_EQUAL(th_run("%s sql %s \"%s\" --run 1", th_bin(), g_db, writes[i]), 2);
        CU_ASSERT_EQUAL(th_run("%s sql %s \"%s\" --all-runs", th_bin(), g_db, writes[i]), 2);
    }
    CU_ASSERT_EQUAL(q1(g_db, "SELECT count(*) FROM main.event_blocks"), before);
    CU_ASSERT_EQUAL(q1(g_db, "SELECT count(*) FROM runs WHERE name = 'x'"), 0);
    CU_ASSERT_EQUAL(q1(g_db, "SELECT count(*) FROM sqlite_master WHERE name = 'runs_this'"), 0);
    CU_ASSERT_EQUAL(q1(g_db, "SELECT count(*) FROM runs"), 2);
}

TH_TEST(test_samples_per_run, "sample queries: scoped to the chosen run, counts not doubled")
{
    /* read_after_write's reads column summed over heads = the run's reads. */
    static const char *runs[] = { "--run 1", "--run 2", "" };
    int64_t want[] = { RUN1_TOKENS * 64, RUN2_TOKENS * 64, RUN2_TOKENS * 64 };
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL_FATAL(th_run("%s sql %s --file samples/queries/read_after_write.sql -F csv %s",
                                     th_bin(), g_db, runs[r]), 0);
        const char *p = strchr(th_out(), '\n');
        int64_t sum = 0;
        int rows = 0;
        while (p && p[1]) {
            long layer, head, reads;
            if (sscanf(p + 1, "%ld,%ld,%ld", &layer, &head, &reads) == 3) { sum += reads; rows++; }
            p = strchr(p + 1, '\n');
        }
        CU_ASSERT_EQUAL(rows, 8);
        CU_ASSERT_EQUAL(sum, want[r]);
    }
    /* Every sample gives rows for either run, and different ones. */
    static const char *samples[] = { "slot_utilisation", "hottest_slots", "read_after_write",
                                     "reuse_intervals" };
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(th_run("%s sql %s --file samples/queries/%s.sql -F csv --run 1", th_bin(), g_db,
                               samples[i]), 0);
        char *one = strdup(th_out());
        CU_ASSERT(th_count_lines(one) > 2);
        CU_ASSERT_EQUAL(th_run("%s sql %s --file samples/queries/%s.sql -F csv", th_bin(), g_db,
                               samples[i]), 0);
        CU_ASSERT(th_count_lines(th_out()) > 2);
        CU_ASSERT_STRING_NOT_EQUAL(one, th_out());
        free(one);
    }
    /* slot_utilisation's writes column: the run's writes per head. */
    CU_ASSERT_EQUAL(th_run("%s sql %s --file samples/queries/slot_utilisation.sql -F csv --run 1",
                           th_bin(), g_db), 0);
    char want1[64];
    snprintf(want1, sizeof want1, ",%d,", RUN1_TOKENS * 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), want1));
}

/* Run sql (statements, no result) on path read-write; 0 on success. */
static int exec_rw(const char *path, const char *sql)
{
    sqlite3 *db;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

TH_TEST(test_scope_edges, "sql: no runs gives empty scoped names; the latest is the highest run_id")
{
    char empty[512];
    snprintf(empty, sizeof empty, "%s", th_path("empty.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", g_db, empty), 0);
    CU_ASSERT_EQUAL_FATAL(exec_rw(empty, "DELETE FROM event_blocks; DELETE FROM tokens;"
                                         " DELETE FROM heads; DELETE FROM runs"), SQLITE_OK);
    CU_ASSERT_EQUAL(sql1(empty, "SELECT count(*) AS n FROM events", ""), 0);
    CU_ASSERT_EQUAL(sql1(empty, "SELECT count(*) AS n FROM runs_this", ""), 0);
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT 1' --run 1", th_bin(), empty), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no run 1"));
    /* Runs 1 and 3 (run 2's rows moved to id 3): the default is run 3. */
    char gap[512];
    snprintf(gap, sizeof gap, "%s", th_path("gap.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", g_db, gap), 0);
    CU_ASSERT_EQUAL_FATAL(exec_rw(gap, "UPDATE runs SET run_id = 3 WHERE run_id = 2;"
                                       " UPDATE tokens SET run_id = 3 WHERE run_id = 2;"
                                       " UPDATE heads SET run_id = 3 WHERE run_id = 2;"
                                       " UPDATE event_blocks SET run_id = 3 WHERE run_id = 2"), SQLITE_OK);
    CU_ASSERT_EQUAL(sql1(gap, "SELECT run_id FROM runs_this", ""), 3);
    CU_ASSERT_EQUAL(sql1(gap, "SELECT count(*) AS n FROM events", ""), RUN2_TOKENS * EV_PER_TOKEN);
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT 1' --run 2", th_bin(), gap), 2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    nanosleep(&(struct timespec){ (time_t)s, (long)((s - (time_t)s) * 1e9) }, NULL);
}

/* Start `ramtrace trace` of the big input into db in the background
 * (stdout and stderr to files). */
static pid_t start_writer(const char *db)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (!freopen(th_path("writer.out"), "w", stdout) || !freopen(th_path("writer.err"), "w", stderr))
        _exit(99);
    execl(th_bin(), th_bin(), "trace", g_model, g_big, "-o", db, "-j", "1", "--name", "live",
          (char *)NULL);
    _exit(98);
}

/* Wait until run `run` of db holds at least one committed event block (at
 * most limit seconds).  Returns its committed block count, or -1. */
static int64_t wait_for_groups(const char *db, int run, double limit)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM event_blocks WHERE run_id = %d", run);
    for (double t0 = now_s(); now_s() - t0 < limit; sleep_s(0.02)) {
        if (!th_file_exists(db)) continue;
        int64_t n = q1(db, sql);
        if (n > 0) return n;
    }
    return -1;
}

/* Send sig to pid and wait at most limit seconds (then SIGKILL).  Returns
 * the exit status (128 + signal when a signal ended it), -1 when it had to
 * be killed after the limit. */
static int stop_bounded(pid_t pid, int sig, double limit)
{
    int status = 0;
    kill(pid, sig);
    for (double t0 = now_s();; sleep_s(0.01)) {
        if (waitpid(pid, &status, WNOHANG) == pid) break;
        if (now_s() - t0 > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The analysis commands on run 1 of db, outputs under prefix; their
 * stdout concatenated (malloc'd), NULL if one failed. */
static char *analyse_run1(const char *db, const char *prefix)
{
    char png[512], csv[512], out[1 << 14];
    size_t n = 0;
    snprintf(png, sizeof png, "%s", th_path(prefix));
    strcat(png, ".png");
    snprintf(csv, sizeof csv, "%s", th_path(prefix));
    strcat(csv, ".csv");
    if (th_run("%s stats %s --run 1 -f csv", th_bin(), db)) return NULL;
    n += (size_t)snprintf(out + n, sizeof out - n, "%s", th_out());
    if (n >= sizeof out) return NULL;
    if (th_run("%s simulate %s --run 1 --policy lru,opt --capacity 2,8 -f csv", th_bin(), db)) return NULL;
    n += (size_t)snprintf(out + n, sizeof out - n, "%s", th_out());
    if (n >= sizeof out) return NULL;
    if (th_run("%s plot heatmap %s --run 1 -o %s", th_bin(), db, png)) return NULL;
    if (th_run("%s export %s --run 1 --format csv -o %s", th_bin(), db, csv)) return NULL;
    return strdup(out);
}

TH_TEST(test_analyse_during_live_write, "stats, simulate, plot heatmap, export on run 1 while run 2 is written")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("live.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s --name first", th_bin(), g_model,
                                 th_path("in1.txt"), db), 0);
    char *quiet = analyse_run1(db, "quiet");
    CU_ASSERT_PTR_NOT_NULL_FATAL(quiet);
    CU_ASSERT(strlen(quiet) > 100);

    pid_t pid = start_writer(db);
    CU_ASSERT_FATAL(pid > 0);
    int64_t seen = wait_for_groups(db, 2, 30);
    CU_ASSERT(seen > 0);
    char *live = analyse_run1(db, "live");
    /* The writer was still at work the whole time: not exited, run 2 still
     * `running` and growing. */
    CU_ASSERT_EQUAL(waitpid(pid, NULL, WNOHANG), 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'running'"), 1);
    CU_ASSERT_PTR_NOT_NULL(live);
    if (live) CU_ASSERT_STRING_EQUAL(live, quiet);
    /* The analysis commands refuse the run in progress (the default run is
     * the latest, run 2) with one line, exit 2. */
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "run 2 is still running"));
    /* sql sees the running run's committed batches. */
    CU_ASSERT(sql1(db, "SELECT count(*) AS n FROM event_blocks", "") >= seen);

    int rc = stop_bounded(pid, SIGINT, 20);
    CU_ASSERT(rc == 130 || rc == 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT status = 'interrupted' FROM runs WHERE run_id = 2"), 1);
    /* Files written during the live write equal the quiet ones. */
    size_t la, lb;
    char *a = th_read_file(th_path("quiet.png"), &la), *b = th_read_file(th_path("live.png"), &lb);
    CU_ASSERT(a && b && la == lb && la > 0 && !memcmp(a, b, la));
    free(a); free(b);
    a = th_read_file(th_path("quiet.csv"), &la);
    b = th_read_file(th_path("live.csv"), &lb);
    CU_ASSERT(a && b && la == lb && la > 0 && !memcmp(a, b, la));
    free(a); free(b);
    /* And after it, run 1 still gives the same results. */
    char *after = analyse_run1(db, "after");
    CU_ASSERT(after && !strcmp(after, quiet));
    free(after);
    free(live);
    free(quiet);
}

TH_TEST(test_sigkill_next_to_finished_run, "SIGKILL: integrity_check ok, committed batches kept, run 1 intact")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("killed.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s --name first", th_bin(), g_model,
                                 th_path("in1.txt"), db), 0);
    int64_t run1 = q1(db, "SELECT count(*) FROM event_blocks WHERE run_id = 1");
    pid_t pid = start_writer(db);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT(wait_for_groups(db, 2, 30) > 0);
    /* Let it commit a few more batches, and note what a reader saw committed
     * last before the kill. */
    sleep_s(0.3);
    int64_t committed = q1(db, "SELECT count(*) FROM event_blocks WHERE run_id = 2");
    CU_ASSERT_EQUAL(stop_bounded(pid, SIGKILL, 20), 128 + SIGKILL);

    /* integrity_check through the C API (read-write: the next connection
     * recovers the log as any SQLite client would). */
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(st, 0), "ok");
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* Every batch a reader saw committed is still there. */
    int64_t groups = q1(db, "SELECT count(*) FROM event_blocks WHERE run_id = 2");
    CU_ASSERT(groups >= committed);
    CU_ASSERT(committed > 0);
    /* Each stored block is complete (whole positions: 2 ops x K = 8 entries
     * each, BLOBs of 9-bit packed slots (M = 512) and 4-byte weights), none
     * covers a position twice, and the run is `running` until repaired. */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM event_blocks WHERE run_id = 2 AND (npos < 1 OR ops != 3"
                           " OR n != npos * 16 OR length(slots) != (n * 9 + 7) / 8 OR length(weights) != n * 4)"), 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM event_blocks a JOIN event_blocks b ON a.run_id = b.run_id"
                           " AND a.layer = b.layer AND a.head = b.head AND a.rowid != b.rowid"
                           " AND a.pos0 < b.pos0 + b.npos AND b.pos0 < a.pos0 + a.npos WHERE a.run_id = 2"), 0);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM events WHERE run_id = 2"),
                    q1(db, "SELECT sum(n) FROM event_blocks WHERE run_id = 2"));
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'running'"), 1);
    /* The finished run is untouched and still analysable. */
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM event_blocks WHERE run_id = 1"), run1);
    CU_ASSERT_EQUAL(q1(db, "SELECT count(*) FROM runs WHERE run_id = 1 AND status = 'complete'"), 1);
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1 -f csv", th_bin(), db), 0);
    CU_ASSERT_EQUAL(sql1(db, "SELECT count(*) AS n FROM events", "--run 1"), RUN1_TOKENS * EV_PER_TOKEN);
}
