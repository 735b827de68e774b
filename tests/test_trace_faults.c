/* test_trace_faults.c — traces under faults: two processes creating one new
 * file, a reader holding the file while a run writes, SIGKILL then
 * `repair` (and repair's rules against a hand-made broken run), a full disk
 * (a small tmpfs, when running as root), and export's output errors. */
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rn_modelfile.h"
#include "th.h"
#include "tr_repair.h"
#include "tr_schema.h"
#include "tr_writer.h"

static char g_model[512], g_input[512], g_small[512];

/* A tiny byte-level model (2 layers, 4 heads, K = 8: 128 events per
 * position), a long input and a short one. */
static int setup(void)
{
    snprintf(g_model, sizeof g_model, "%s", th_path("ftiny.bin"));
    snprintf(g_input, sizeof g_input, "%s", th_path("finput.txt"));
    snprintf(g_small, sizeof g_small, "%s", th_path("fsmall.txt"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model)) return -1;
    return th_write_verses(g_input, 400000) || th_write_verses(g_small, 40) ? -1 : 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}


/* Start a ramtrace command in the background; its pid, exit status and
 * stderr go to th_path(tag.pid/.status/.err).  Returns the pid (0: none). */
static pid_t bg_start(const char *tag, const char *args)
{
    char pidf[512], stf[512], errf[512];
    snprintf(pidf, sizeof pidf, "%s.pid", th_path(tag));
    snprintf(stf, sizeof stf, "%s.status", th_path(tag));
    snprintf(errf, sizeof errf, "%s.err", th_path(tag));
    unlink(pidf);
    unlink(stf);
    th_run("(%s %s 2>'%s' >/dev/null & echo $! > '%s.tmp'; mv '%s.tmp' '%s'; wait $!; echo $? > '%s.tmp';"
           " mv '%s.tmp' '%s') >/dev/null 2>&1 &", th_bin(), args, errf, pidf, pidf, pidf, stf, stf, stf);
    for (int i = 0; i < 1000; i++) {
        char *s = th_read_file(pidf, NULL);
        if (s) { pid_t p = (pid_t)atol(s); free(s); return p; }
        sleep_ms(10);
    }
    return 0;
}

/* Wait (up to timeout_s) for a background command's exit status (-1:
 * timed out). */
static int bg_wait(const char *tag, int timeout_s)
{
    char stf[512];
    snprintf(stf, sizeof stf, "%s.status", th_path(tag));
    for (int i = 0; i < timeout_s * 100; i++) {
        char *s = th_read_file(stf, NULL);
        if (s) { int v = atoi(s); free(s); return v; }
        sleep_ms(10);
    }
    return -1;
}

static char *bg_err(const char *tag)
{
    char errf[512];
    snprintf(errf, sizeof errf, "%s.err", th_path(tag));
    char *s = th_read_file(errf, NULL);
    return s ? s : calloc(1, 1);
}

/* Wait until the run's first batch is committed and visible. */
static int wait_first_batch(const char *db)
{
    for (int i = 0; i < 3000; i++) {
        if (th_sql_int(db, "SELECT count(*) FROM event_blocks") > 0) return 1;
        sleep_ms(10);
    }
    return 0;
}

/* The invariants of an analysable run: its counts are its rows, its
 * positions are 0..n_tokens-1, and every position with events has a token
 * row and all 128 events. */
static void check_whole_run(const char *db, int64_t run)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM tokens WHERE run_id = %lld", (long long)run);
    int64_t tokens = th_sql_int(db, sql);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE run_id = %lld", (long long)run);
    int64_t events = th_sql_int(db, sql);
    snprintf(sql, sizeof sql, "SELECT n_tokens FROM runs WHERE run_id = %lld", (long long)run);
    CU_ASSERT_EQUAL(th_sql_int(db, sql), tokens);
    snprintf(sql, sizeof sql, "SELECT n_events FROM runs WHERE run_id = %lld", (long long)run);
    CU_ASSERT_EQUAL(th_sql_int(db, sql), events);
    CU_ASSERT_EQUAL(events, tokens * 128);
    snprintf(sql, sizeof sql, "SELECT coalesce(max(pos) + 1, 0) FROM tokens WHERE run_id = %lld", (long long)run);
    CU_ASSERT_EQUAL(th_sql_int(db, sql), tokens);
    /* tokens are 0..n-1: a block whose last position has a token row has
     * token rows for all its positions */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM event_blocks g WHERE run_id = %lld AND NOT EXISTS"
             " (SELECT 1 FROM tokens t WHERE t.run_id = g.run_id AND t.pos = g.pos0 + g.npos - 1)", (long long)run);
    CU_ASSERT_EQUAL(th_sql_int(db, sql), 0);
}

/* Copy every schema object of trace ref into the open (empty) connection
 * db, inside its transaction. */
static int copy_schema(sqlite3 *db)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT sql FROM r.sqlite_master WHERE sql NOT NULL ORDER BY rowid", -1,
                                &st, NULL);
    if (rc != SQLITE_OK) return rc;
    char *sqls[32];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 32) sqls[n++] = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    for (int i = 0; i < n; i++) {
        if (!rc) rc = sqlite3_exec(db, sqls[i], NULL, NULL, NULL);
        free(sqls[i]);
    }
    char hdr[256];
    snprintf(hdr, sizeof hdr, "PRAGMA main.application_id = %d;"
             " PRAGMA main.user_version = %d;", TR_APPLICATION_ID, TR_SCHEMA_VERSION);
    if (!rc) rc = sqlite3_exec(db, hdr, NULL, NULL, NULL);
    return rc;
}

typedef struct { const char *path; const rn_config *cfg; int rc; rn_error err; } open_job;

static void *open_thread(void *arg)
{
    open_job *j = arg;
    tr_run_meta meta = { .command = "test", .cfg = j->cfg };
    tr_writer *w;
    j->rc = tr_writer_open(j->path, &meta, NULL, NULL, &w, &j->err);
    if (!j->rc) j->rc = tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &j->err);
    return NULL;
}

TH_TEST(test_create_race, "a new file created by another process meanwhile: the writer appends to it")
{
    /* The other creator holds the write lock and creates the schema after
     * this writer has looked at the still-empty file; the writer must wait
     * for it and then find the schema instead of creating it again. */
    char ref[512], db[512], att[700];
    snprintf(ref, sizeof ref, "%s", th_path("race_ref.db"));
    snprintf(db, sizeof db, "%s", th_path("race.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, ref), 0);
    rn_model m;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&m, g_model, &err), RN_OK);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    snprintf(att, sizeof att, "ATTACH '%s' AS r", ref);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(h, att, NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    open_job j = { db, &m.cfg, -1, { 0 } };
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, open_thread, &j), 0);
    sleep_ms(1000);  /* the writer has opened the empty file and waits on the lock */
    CU_ASSERT_EQUAL(copy_schema(h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    pthread_join(t, NULL);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(j.rc, RN_OK);
    if (j.rc) fprintf(stderr, "\n  writer: %s\n", j.err.msg);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), 1);
    rn_model_free(&m);
}

TH_TEST(test_create_race_processes, "two processes creating one new trace file at once both succeed")
{
    for (int i = 0; i < 6; i++) {
        char db[512];
        snprintf(db, sizeof db, "%s", th_path("race2.db"));
        unlink(db);
        int rc = th_run("%s trace %s %s -o %s -j 1 & p=$!; %s trace %s %s -o %s -j 1; a=$?; wait $p; b=$?;"
                        " echo $a $b", th_bin(), g_model, g_small, db, th_bin(), g_model, g_small, db);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_STRING_EQUAL(th_out(), "0 0\n");
        if (strcmp(th_out(), "0 0\n")) { fprintf(stderr, "\n  %s", th_err()); break; }
        CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
        check_whole_run(db, 1);
        check_whole_run(db, 2);
    }
}

TH_TEST(test_reader_holds_file, "a reader holding the file for 6 s: the run goes on, readers keep reading")
{
    /* The run must outlast the hold on any machine: at 63k tokens/s (this
     * model, -j 1) the 400 kB input took 6.3 s and a faster machine
     * finished it before the hold ended (exit 0, no interrupted run).
     * 4 MB: over a minute here; the run is interrupted once the hold has
     * seen it commit, so the time is that of the hold. */
    char db[512], in[512], args[2048];
    snprintf(db, sizeof db, "%s", th_path("hold.db"));
    snprintf(in, sizeof in, "%s", th_path("hold-input.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_verses(in, 4000000), 0);
    snprintf(args, sizeof args, "trace %s %s -o %s -j 1", g_model, in, db);
    pid_t p = bg_start("hold", args);
    CU_ASSERT_FATAL(p > 0);
    CU_ASSERT_FATAL(wait_first_batch(db));
    /* A reader opens a read transaction and keeps it for at least 6 s
     * (longer than a reader's busy timeout, TR_READER_BUSY_MS), reading
     * now and then, and until other readers have seen the writer commit
     * two batches past its snapshot (at most 60 s). */
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "BEGIN; SELECT count(*) FROM event_blocks;", NULL, NULL, NULL), SQLITE_OK);
    const int64_t held = th_sql_int(db, "SELECT count(*) FROM event_blocks");
    int reads_failed = 0;
    int64_t seen = 0, blocks = held;
    for (int i = 0; i < 300 && (i < 30 || blocks < held + 2); i++) {
        sleep_ms(200);
        CU_ASSERT_EQUAL(sqlite3_exec(h, "SELECT count(*) FROM tokens", NULL, NULL, NULL), SQLITE_OK);
        /* ... while other readers come and go */
        int64_t v = th_sql_int(db, "SELECT count(*) FROM tokens");
        if (v < 0) reads_failed++;
        else seen = v;
        int64_t b = th_sql_int(db, "SELECT count(*) FROM event_blocks");
        if (b > blocks) blocks = b;
    }
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(reads_failed, 0);
    CU_ASSERT(seen > 0);
    /* the run went on past the held snapshot, and is still running */
    CU_ASSERT(held > 0 && blocks >= held + 2);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    kill(p, SIGINT);
    CU_ASSERT_EQUAL(bg_wait("hold", 60), 130);
    char *e = bg_err("hold");
    CU_ASSERT_PTR_NULL(strstr(e, "locked"));
    if (strstr(e, "locked")) fprintf(stderr, "\n  %s", e);
    free(e);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    check_whole_run(db, 1);
    unlink(in);
}

TH_TEST(test_sigkill_repair, "SIGKILL after the first batch, then repair: stats works, counts are the rows")
{
    char db[512], args[2048];
    snprintf(db, sizeof db, "%s", th_path("killrep.db"));
    snprintf(args, sizeof args, "trace %s %s -o %s -j 1", g_model, g_input, db);
    pid_t p = bg_start("killrep", args);
    CU_ASSERT_FATAL(p > 0);
    CU_ASSERT_FATAL(wait_first_batch(db));
    /* A live writer's file is not repaired. */
    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "still writing"));
    kill(p, SIGKILL);
    CU_ASSERT_EQUAL(bg_wait("killrep", 30), 137);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    /* Analysis refuses the run and says how to recover it. */
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "ramtrace repair"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    int64_t events = th_sql_int(db, "SELECT sum(n) FROM event_blocks");
    CU_ASSERT(events > 0);

    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "run 1 was running"));
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    check_whole_run(db, 1);
    int64_t tokens = th_sql_int(db, "SELECT n_tokens FROM runs");
    CU_ASSERT(tokens > 0);
    /* Every complete position was kept: at most the chunk in flight (256
     * positions of 128 events) plus the positions of one partial batch were
     * dropped. */
    CU_ASSERT(th_sql_int(db, "SELECT sum(n) FROM event_blocks") <= events);
    CU_ASSERT(th_sql_int(db, "SELECT sum(n) FROM event_blocks") * 16 >= events * 15 - 16 * 256 * 128);
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), db), 0);
    CU_ASSERT_EQUAL(th_run("%s simulate %s -c 64", th_bin(), db), 0);
    CU_ASSERT_EQUAL(th_run("%s export %s -o %s.csv -f csv", th_bin(), db, db), 0);
    /* Idempotent: again changes nothing. */
    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to repair"));
    CU_ASSERT_EQUAL(th_run("%s repair %s --run 1", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "consistent"));
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_tokens FROM runs"), tokens);
    check_whole_run(db, 1);
}

TH_TEST(test_repair_cli, "repair: a complete run is left alone; missing runs and files are exit 2")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("repcli.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    int64_t ev = th_sql_int(db, "SELECT n_events FROM runs");
    CU_ASSERT_EQUAL(th_run("%s repair %s --run 1", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "run 1 is complete"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to repair"));
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_events FROM runs WHERE status = 'complete'"), ev);
    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to repair"));
    CU_ASSERT_EQUAL(th_run("%s repair %s --run 7", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--run 7"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s repair %s --run x", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), th_path("nonexistent.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "nonexistent.db"));
    CU_ASSERT(!th_file_exists(th_path("nonexistent.db")));
    CU_ASSERT_EQUAL(th_run("%s repair %s", th_bin(), g_model), 2);
    CU_ASSERT_EQUAL(th_run("%s repair --help", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "--run N"));
}

/* Break a complete run by hand and check repair's cut against the rule
 * computed here: keep the longest prefix of positions that have a tokens
 * row and, for all 8 heads, blocks covering them without a gap. */
TH_TEST(test_repair_rules, "repair keeps exactly the complete prefix and recounts it")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("rules.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    int64_t n = th_sql_int(db, "SELECT n_tokens FROM runs WHERE run_id = 1");
    CU_ASSERT_EQUAL_FATAL(n, 41);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    /* run 1: the block of (layer 1, head 2), positions 0..40, is split
     * into 0..29 and 31..40 (position 30 of that head is lost: a gap), pos
     * 35 loses its token row, positions 38.. lose their token rows; counts
     * left stale.  16 entries of 9-bit packed slots (M = 512: 18 bytes)
     * and 4-byte weights per position. */
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM event_blocks WHERE run_id = 1 AND npos = 41"
                                   " AND length(slots) = 41 * 18 AND length(weights) = 41 * 64"), 8);
    CU_ASSERT_EQUAL(sqlite3_exec(h,
        "UPDATE runs SET status = 'running' WHERE run_id = 1;"
        "INSERT INTO event_blocks SELECT run_id, layer, head, 31, 10, ops, cape_m, 160,"
        "  substr(slots, 31 * 18 + 1, 180), substr(weights, 31 * 64 + 1, 640) FROM event_blocks"
        "  WHERE run_id = 1 AND layer = 1 AND head = 2;"
        "UPDATE event_blocks SET npos = 30, n = 480, slots = substr(slots, 1, 540),"
        "  weights = substr(weights, 1, 1920) WHERE run_id = 1 AND layer = 1 AND head = 2 AND pos0 = 0;"
        "DELETE FROM tokens WHERE run_id = 1 AND (pos = 35 OR pos >= 38);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    tr_repair_result *res;
    int nres;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_repair(db, 0, &res, &nres, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(nres, 1);
    CU_ASSERT_EQUAL(res[0].run_id, 1);
    CU_ASSERT(res[0].changed);
    CU_ASSERT_STRING_EQUAL(res[0].status, "running");
    CU_ASSERT_EQUAL(res[0].tokens, 30);
    CU_ASSERT_EQUAL(res[0].events, 30 * 128);
    CU_ASSERT_EQUAL(res[0].dropped_tokens, 41 - 30 - 1 - 3);   /* 30..37 but 35 */
    CU_ASSERT_EQUAL(res[0].dropped_blocks, 8);                  /* 7 cut, 1 deleted */
    CU_ASSERT_EQUAL(res[0].dropped_events, 11 * 128 - 16);
    free(res);
    check_whole_run(db, 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT status = 'interrupted' FROM runs WHERE run_id = 1"), 1);
    /* run 2 is untouched */
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 2"), 41 * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'complete'"), 1);
    /* A read-only selection (ops=r) expects 8 groups per position. */
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1 --ops r", th_bin(), g_model, g_small, db), 0);
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "UPDATE runs SET status = 'running', n_tokens = 0 WHERE run_id = 3;",
                                 NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_EQUAL_FATAL(tr_repair(db, 3, &res, &nres, &err), RN_OK);
    CU_ASSERT_EQUAL(res[0].tokens, 41);
    CU_ASSERT_EQUAL(res[0].events, 41 * 64);
    CU_ASSERT_EQUAL(res[0].dropped_events, 0);
    free(res);
    /* Idempotent. */
    CU_ASSERT_EQUAL_FATAL(tr_repair(db, 1, &res, &nres, &err), RN_OK);
    CU_ASSERT_EQUAL(res[0].changed, 0);
    CU_ASSERT_EQUAL(res[0].tokens, 30);
    free(res);
}

/* A run in progress written position by position as `run --trace` writes
 * it (a position's accesses, then its tokens row): every 256 positions (a
 * sealed block of every traced head) are committed with their tokens rows,
 * so a reader sees them while the run goes on and a SIGKILL keeps them, as
 * docs/tracing.md says.  The writer used to hand SQLite only full batches
 * (~4 MiB, or 8,192 tokens rows: for this small shape the tokens come
 * first): a reader saw nothing and a SIGKILL lost them all. */
TH_TEST(test_progress_bound, "a run in progress is committed every 256 positions; SIGKILL keeps them")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("progress.db"));
    rn_config c;
    rn_config_default(&c);
    c.n_layers = 2; c.n_heads = 2; c.d_p = 3; c.order = 2; c.top_k = 2; c.d_v = 8; /* M = 9 */
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    int pfd[2];
    CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
    pid_t p = fork();
    CU_ASSERT_FATAL(p >= 0);
    if (p == 0) {
        close(pfd[0]);
        tr_run_meta meta = { .command = "run", .cfg = &c };
        tr_writer *w;
        rn_error err = { 0 };
        if (tr_writer_open(db, &meta, NULL, NULL, &w, &err)) _exit(3);
        const rn_probe *pr = tr_writer_probe(w);
        for (int pos = 0; pos < 300; pos++) {
            for (int l = 0; l < 2; l++)
                for (int h = 0; h < 2; h++)
                    for (int op = 0; op < 2; op++) {
                        uint32_t s[2] = { (uint32_t)(pos + l) % 9, (uint32_t)(pos + h + 1) % 9 };
                        if (s[1] == s[0]) s[1] = (s[0] + 1) % 9;
                        float wt[2] = { 0.6f, 0.4f };
                        pr->access(pr->user, l, h, pos, op, 2, s, s, wt);
                    }
            tr_writer_add_token(w, pos, 'a' + pos % 26, NULL, pos > 10);
        }
        if (write(pfd[1], "x", 1) != 1) _exit(4);
        for (;;) pause();   /* the run goes on: never finished */
    }
    close(pfd[1]);
    char ch;
    int got = read(pfd[0], &ch, 1) == 1;
    close(pfd[0]);
    CU_ASSERT(got);
    /* positions 0..255 of the 4 heads: 256 x 4 x 2 ops x K = 2 events */
    int64_t tokens = -1, events = -1;
    for (int i = 0; got && i < 500; i++) {
        tokens = th_sql_int(db, "SELECT count(*) FROM tokens");
        events = th_sql_int(db, "SELECT coalesce(sum(n), 0) FROM event_blocks");
        if (tokens >= 256 && events >= 256 * 16) break;
        sleep_ms(10);
    }
    CU_ASSERT_EQUAL(tokens, 256);
    CU_ASSERT_EQUAL(events, 256 * 16);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    kill(p, SIGKILL);
    int st = 0;
    CU_ASSERT_EQUAL(waitpid(p, &st, 0), p);
    CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* repair keeps exactly the committed positions */
    tr_repair_result *res;
    int nres;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_repair(db, 0, &res, &nres, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(nres, 1);
    CU_ASSERT_EQUAL(res[0].tokens, 256);
    CU_ASSERT_EQUAL(res[0].events, 256 * 16);
    CU_ASSERT_EQUAL(res[0].dropped_events, 0);
    free(res);
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), db), 0);
}

/* A two-op run whose head holds a one-op block (writes only) from
 * position 20: those positions are not complete, so the run is cut at 20
 * (a repair that looked only at positions kept all 41). */
TH_TEST(test_repair_one_op_block, "repair: a one-op block does not count toward a two-op run's prefix")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("oneop.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    /* (layer 0, head 1): positions 0..19 both ops, 20..40 writes only (21
     * positions x 8 ranks: 168 9-bit slots in 189 bytes, 672 bytes of
     * weights) */
    CU_ASSERT_EQUAL(sqlite3_exec(h,
        "UPDATE runs SET status = 'running';"
        "INSERT INTO event_blocks SELECT run_id, layer, head, 20, 21, 1, cape_m, 168,"
        "  substr(slots, 1, 189), substr(weights, 1, 672) FROM event_blocks WHERE layer = 0 AND head = 1;"
        "UPDATE event_blocks SET npos = 20, n = 320, slots = substr(slots, 1, 360),"
        "  weights = substr(weights, 1, 1280) WHERE layer = 0 AND head = 1 AND pos0 = 0;", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    tr_repair_result *res;
    int nres;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_repair(db, 0, &res, &nres, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(nres, 1);
    CU_ASSERT_EQUAL(res[0].tokens, 20);
    CU_ASSERT_EQUAL(res[0].events, 20 * 128);
    free(res);
    check_whole_run(db, 1);
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), db), 0);
}

/* Root only: a tmpfs of size_k KiB at dir (0 when it cannot be mounted). */
static int mount_small(const char *dir, int size_k)
{
    if (geteuid() != 0) return 0;
    mkdir(dir, 0755);
    char opt[64];
    snprintf(opt, sizeof opt, "size=%dk", size_k);
    return mount("tmpfs", dir, "tmpfs", 0, opt) == 0;
}

TH_TEST(test_disk_full, "disk full: no empty file, one-line error naming it, committed counts, old runs intact")
{
    char dir[512], db[512], db2[512], fill[512];
    snprintf(dir, sizeof dir, "%s", th_path("full"));
    if (!mount_small(dir, 512)) {
        printf("skipped: needs root (mounts a small tmpfs) ... ");
        return;
    }
    snprintf(db, sizeof db, "%s/t.db", dir);
    snprintf(db2, sizeof db2, "%s/new.db", dir);
    snprintf(fill, sizeof fill, "%s/fill", dir);
    /* An earlier run that fits, then one that does not. */
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    int rc = th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_input, db);
    CU_ASSERT(rc != 0 && rc != 2);
    const char *e = strstr(th_err(), "ramtrace: ");
    CU_ASSERT_PTR_NOT_NULL(e);
    if (e) {
        CU_ASSERT_PTR_NOT_NULL(strstr(e, db));
        CU_ASSERT_PTR_NOT_NULL(strstr(e, "full"));
        CU_ASSERT_EQUAL(th_count_lines(e), 1);
    }
    /* The reported counts are what the file holds. */
    long long tok = -1, ev = -1;
    const char *line = strstr(th_err(), "trace: run 2 in ");
    CU_ASSERT_PTR_NOT_NULL(line);
    if (line) CU_ASSERT_EQUAL(sscanf(strchr(line, ':') + 1, " run 2 in %*s %lld tokens, %lld events", &tok, &ev), 2);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_tokens FROM runs WHERE run_id = 2"), tok);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_events FROM runs WHERE run_id = 2"), ev);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 2"), ev);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM tokens WHERE run_id = 2"), tok);
    CU_ASSERT(ev < 400001LL * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'interrupted'"), 1);
    /* The earlier run is intact. */
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE run_id = 1 AND status = 'complete'"), 1);
    check_whole_run(db, 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM tokens WHERE run_id = 1"), 41);
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1", th_bin(), db), 0);
    /* run --trace, too, reports what the file holds (a fresh file on a
     * second small file system, so that the run can start). */
    char dir2[512], db3[600];
    snprintf(dir2, sizeof dir2, "%s", th_path("full2"));
    snprintf(db3, sizeof db3, "%s/r.db", dir2);
    if (!mount_small(dir2, 256)) {
        CU_FAIL("cannot mount a second tmpfs");
        umount(dir);
        return;
    }
    rc = th_run("%s run %s %s -n 20000 -j 1 --trace %s > /dev/null", th_bin(), g_model, g_small, db3);
    CU_ASSERT(rc != 0 && rc != 2);
    line = strstr(th_err(), "trace: run 1 in ");
    CU_ASSERT_PTR_NOT_NULL(line);
    tok = ev = -1;
    if (line) CU_ASSERT_EQUAL(sscanf(strchr(line, ':') + 1, " run 1 in %*s %lld tokens, %lld events", &tok, &ev), 2);
    CU_ASSERT_EQUAL(th_sql_int(db3, "SELECT count(*) FROM events"), ev);
    CU_ASSERT_EQUAL(th_sql_int(db3, "SELECT count(*) FROM tokens"), tok);
    CU_ASSERT_EQUAL(th_sql_int(db3, "SELECT n_events FROM runs WHERE status = 'interrupted'"), ev);
    CU_ASSERT_EQUAL(umount(dir2), 0);
    /* A full disk: a new trace cannot hold even its schema, and leaves no
     * file behind. */
    th_run("dd if=/dev/zero of=%s bs=4k", fill);
    rc = th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db2);
    CU_ASSERT(rc != 0 && rc != 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), db2));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT(!th_file_exists(db2));
    char side[600];
    snprintf(side, sizeof side, "%s-wal", db2);
    CU_ASSERT(!th_file_exists(side));
    snprintf(side, sizeof side, "%s-journal", db2);
    CU_ASSERT(!th_file_exists(side));
    /* export to the full disk names its output. */
    char out[600];
    snprintf(out, sizeof out, "%s/x.csv", dir);
    rc = th_run("%s export %s --run 1 -f csv -o %s", th_bin(), db, out);
    CU_ASSERT(rc != 0 && rc != 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), out));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT(!th_file_exists(out));
    CU_ASSERT_EQUAL(umount(dir), 0);
}

TH_TEST(test_export_output_dir, "export -o DIR is exit 2 naming the directory")
{
    char db[512];
    snprintf(db, sizeof db, "%s", th_path("expdir.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1", th_bin(), g_model, g_small, db), 0);
    CU_ASSERT_EQUAL(th_run("%s export %s -o %s", th_bin(), db, th_tmpdir()), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), th_tmpdir()));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "directory"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
}

TH_SUITE(trace_faults, setup, NULL);
