/* test_trace_cli.c — the trace commands end to end through the binary:
 * `trace`, `run --trace`, `runs`, `sql` (formats, read-only enforcement,
 * errors), Ctrl-C during a trace (run marked interrupted, everything flushed,
 * database intact) and SIGKILL (database intact, holding exactly a prefix of
 * the batches a complete run writes). */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_reader.h"
#include "tr_writer.h"

static char g_model[512], g_input[512];

/* A tiny byte-level model (2 layers, 4 heads, K = 8) and an input text. */
static int setup(void)
{
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(g_input, sizeof g_input, "%s", th_path("input.txt"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model))
        return -1;
    return th_write_verses(g_input, 400000);
}


TH_TEST(test_trace_and_sql, "trace, runs and sql commands")
{
    char small[512], db[512];
    snprintf(small, sizeof small, "%s", th_path("small.txt"));
    snprintf(db, sizeof db, "%s", th_path("cli.db"));
    th_write_file(small, "In the beginning God created the heaven and the earth.\n", 55);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --name first", th_bin(), g_model, small, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "56 tokens, 7168 events"));
    /* 56 tokens (BOS + 55 bytes) x 2 layers x 4 heads x 2 ops x 8 ranks */
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events"), 56 * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    /* A second run with a selection appends. */
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --layers 1 --heads 0,3 --ops w --no-index",
                           th_bin(), g_model, small, db), 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 2"), 56 * 2 * 8);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 2 AND (layer != 1 OR op != 0 OR head NOT IN (0, 3))"), 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 1"), 56 * 128);

    /* The block index exists (schema v2 keeps one index for every run,
     * maintained while loading; --no-index is accepted and changes nothing). */
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'event_blocks_key'"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                   " AND name LIKE 'event_%'"), 1);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o /nonexistent-dir/x.db", th_bin(), g_model, small), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "/nonexistent-dir/x.db: cannot open"));
    CU_ASSERT_EQUAL(th_run("%s runs %s", th_bin(), db), 0);
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "first"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "complete"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "layers=1 heads=0,3 ops=w"));

    CU_ASSERT_EQUAL(th_run("%s sql %s \"SELECT op, count(*) AS n FROM events WHERE run_id = 1 GROUP BY op\" --run 1 --format csv",
                           th_bin(), db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "op,n\n0,3584\n1,3584\n");
    CU_ASSERT_EQUAL(th_run("echo 'SELECT token_id, piece FROM tokens WHERE run_id = 1 AND pos < 2;' | %s sql %s --run 1 -F json",
                           th_bin(), db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "[\n  {\"token_id\": 256, \"piece\": \"<bos>\"},\n  {\"token_id\": 73, \"piece\": \"I\"}\n]\n");
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT count(*) AS reads FROM reads WHERE run_id = 1' --all-runs", th_bin(), db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "reads\n-----\n 3584\n");

    /* Slot utilisation agrees with a direct count on the stored blocks,
     * decoded by the C reader (the latest run traces writes of layer 1,
     * heads 0 and 3; no CAPE there). */
    char want[64];
    tr_db *tdb;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(db, &tdb, &err), RN_OK);
    tr_filter f = { 1, 0, RN_OPS_WRITE, 0, -1 };
    tr_event *ev;
    size_t nev;
    CU_ASSERT_EQUAL_FATAL(tr_load_events(tdb, 2, &f, &ev, &nev, &err), RN_OK);
    tr_close(tdb);
    CU_ASSERT_EQUAL(nev, 56 * 8);
    char seen[512] = { 0 };
    int64_t used = 0;
    for (size_t i = 0; i < nev; i++)
        if (ev[i].slot < sizeof seen && !seen[ev[i].slot]++) used++;
    free(ev);
    CU_ASSERT(used > 8);
    snprintf(want, sizeof want, "\n1,0,0,%lld,512,", (long long)used);
    CU_ASSERT_EQUAL(th_run("%s sql %s --file samples/queries/slot_utilisation.sql -F csv", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), want));
    /* Read-only: refused with a clear message, nothing changed. */
    CU_ASSERT_EQUAL(th_run("%s sql %s 'DELETE FROM runs'", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "read-only"));
    CU_ASSERT_EQUAL(th_run("%s sql %s \"SELECT 1; UPDATE runs SET name = 'x'\"", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE name = 'x'"), 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs"), 2);
    /* Table rows past the measured first 1000 keep long text whole. */
    CU_ASSERT_EQUAL(th_run("%s sql %s \"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                           "WHERE x < 1001) SELECT x, replace(hex(zeroblob(150)), '0', 'a') AS t FROM c\"",
                           th_bin(), db), 0);
    {
        char line[320];
        int k = snprintf(line, sizeof line, "\n1001  ");
        memset(line + k, 'a', 300);
        line[k + 300] = '\n';
        line[k + 301] = 0;
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), line));
    }
    /* Errors. */
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELEC 1'", th_bin(), db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "SQL error"));
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT 1'", th_bin(), small), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "not an SQLite database"));
    CU_ASSERT_EQUAL(th_run("%s runs %s", th_bin(), th_path("nope.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "nope.db: no such file"));
    CU_ASSERT_EQUAL(th_run("%s sql %s 'SELECT 1' --format xml", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --heads 4", th_bin(), g_model, small, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--heads: 4 is outside [0, 4)"));
    CU_ASSERT_EQUAL(th_run("%s trace %s %s", th_bin(), g_model, small), 2);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s", th_bin(), g_model, th_path("missing.txt"), db), 2);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs"), 2);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s", th_bin(), g_model, small, small), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "not an SQLite database"));
    for (int i = 0; i < 3; i++) {
        static const char *cmds[] = { "trace", "sql", "runs" };
        CU_ASSERT_EQUAL(th_run("%s %s --help", th_bin(), cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "usage: ramtrace"));
    }
}

/* --top-k K traces the model at another K: K events per op; in layer 0,
 * whose addresses depend on the tokens alone, the model's own top-K list
 * cut at K (later layers see other memory contents); K recorded in the
 * run's row; K outside 1..M exits 2. */
TH_TEST(test_trace_top_k, "trace --top-k: the first K ranks of the model's own list")
{
    char small[512], db[512];
    snprintf(small, sizeof small, "%s", th_path("topk.txt"));
    snprintf(db, sizeof db, "%s", th_path("topk.db"));
    th_write_file(small, "In the beginning God created the heaven and the earth.\n", 55);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s", th_bin(), g_model, small, db), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s --top-k 3", th_bin(), g_model, small, db), 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM main.events WHERE run_id = 2"), 56 * 2 * 4 * 2 * 3);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM main.events a JOIN main.events b ON a.layer = b.layer"
                                   " AND a.head = b.head AND a.pos = b.pos AND a.op = b.op AND a.rank = b.rank"
                                   " WHERE a.run_id = 1 AND b.run_id = 2 AND a.layer = 0 AND a.slot = b.slot"),
                    56 * 4 * 2 * 3);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND top_k = 3"), 1);
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --top-k 0", th_bin(), g_model, small, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--top-k"));
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --top-k 99999", th_bin(), g_model, small, db), 2);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs"), 2);
}

TH_TEST(test_run_trace, "run --trace records prompt and generated tokens")
{
    char prompt[512], db[512];
    snprintf(prompt, sizeof prompt, "%s", th_path("prompt.txt"));
    snprintf(db, sizeof db, "%s", th_path("run.db"));
    th_write_file(prompt, "And God said", 12);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 6 --seed 5 --trace %s --name gen", th_bin(), g_model,
                           prompt, db), 0);
    /* 13 prompt positions (BOS + 12) and the 5 generated tokens fed back. */
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM tokens WHERE phase = 'prompt'"), 13);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM tokens WHERE phase = 'generated'"), 5);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events"), 18 * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT max(pos) FROM events"), 17);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND name = 'gen'"
                           " AND prompt = 'And God said' AND sampling LIKE '%seed=5%'"), 1);
    /* The sample queries run (plain SQL through the views). */
    static const char *samples[] = { "slot_utilisation", "hottest_slots", "read_after_write",
                                     "reuse_intervals" };
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(th_run("%s sql %s --file samples/queries/%s.sql -F csv", th_bin(), db, samples[i]), 0);
        CU_ASSERT(th_count_lines(th_out()) > 2);
    }
    CU_ASSERT_EQUAL(th_run("%s run %s %s --trace %s --ops x", th_bin(), g_model, prompt, db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--ops"));
}

TH_TEST(test_interrupt, "SIGINT: interrupted, flushed, intact")
{
    char db[512], st[512];
    snprintf(db, sizeof db, "%s", th_path("int.db"));
    snprintf(st, sizeof st, "%s", th_path("int.status"));
    int rc = th_run("%s trace %s %s -o %s -j 1 & p=$!; sleep 1.5; kill -INT $p; wait $p; echo $? > %s",
                    th_bin(), g_model, g_input, db, st);
    CU_ASSERT_EQUAL(rc, 0);
    char *s = th_read_file(st, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(atoi(s), 130);
    free(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "interrupted"));
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    int64_t tokens = th_sql_int(db, "SELECT count(*) FROM tokens");
    int64_t events = th_sql_int(db, "SELECT count(*) FROM events");
    CU_ASSERT(tokens > 0 && tokens < 400001);
    /* Only whole positions, every one of them flushed and counted. */
    CU_ASSERT_EQUAL(events, tokens * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_events FROM runs"), events);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_tokens FROM runs"), tokens);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT max(pos) + 1 FROM events"), tokens);
}

/* Ctrl-C while `run --trace` generates: exit 130, run interrupted, whole
 * positions only, the generated ones included. */
TH_TEST(test_interrupt_run, "SIGINT during run --trace generation")
{
    char db[512], prompt[512], st[512];
    snprintf(db, sizeof db, "%s", th_path("intrun.db"));
    snprintf(prompt, sizeof prompt, "%s", th_path("intrun.txt"));
    snprintf(st, sizeof st, "%s", th_path("intrun.status"));
    th_write_file(prompt, "And God said", 12);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 100000000 -j 1 --trace %s > /dev/null & p=$!; sleep 1.5;"
                           " kill -INT $p; wait $p; echo $? > %s", th_bin(), g_model, prompt, db, st), 0);
    char *s = th_read_file(st, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(atoi(s), 130);
    free(s);
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    int64_t tokens = th_sql_int(db, "SELECT count(*) FROM tokens");
    CU_ASSERT(th_sql_int(db, "SELECT count(*) FROM tokens WHERE phase = 'generated'") > 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events"), tokens * 128);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT n_events FROM runs"), tokens * 128);
}

TH_TEST(test_sigkill, "SIGKILL: intact, a prefix of committed batches")
{
    char db[512], ref[512], cut[512];
    snprintf(db, sizeof db, "%s", th_path("kill.db"));
    snprintf(ref, sizeof ref, "%s", th_path("ref.db"));
    snprintf(cut, sizeof cut, "%s", th_path("cut.txt"));
    int rc = th_run("%s trace %s %s -o %s -j 1 & p=$!; sleep 2.5; kill -KILL $p; wait $p; true",
                    th_bin(), g_model, g_input, db);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(th_sql_int(db, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    int64_t groups = th_sql_int(db, "SELECT count(*) FROM event_blocks");
    int64_t maxpos = th_sql_int(db, "SELECT coalesce(max(pos0 + npos - 1), 0) FROM event_blocks");
    CU_ASSERT(groups > 0);
    /* Trace a prefix of the input long enough to cover every chunk the
     * killed run reached; its rows in insertion order must start with
     * exactly the killed run's rows. */
    size_t len;
    char *in = th_read_file(g_input, &len);
    size_t want = (size_t)(maxpos / 256 + 1) * 256;
    th_write_file(cut, in, want < len ? want : len);
    free(in);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s -j 1 --no-index", th_bin(), g_model, cut, ref), 0);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "ATTACH '%s' AS k; SELECT count(*) FROM (SELECT * FROM (SELECT layer, head, pos0, npos,"
             " ops, cape_m, n, slots, weights FROM main.event_blocks ORDER BY rowid LIMIT %lld)"
             " EXCEPT SELECT layer, head, pos0, npos, ops, cape_m, n, slots, weights FROM k.event_blocks)",
             db, (long long)groups);
    /* q1 runs one statement: attach separately. */
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(ref, &h), SQLITE_OK);
    char att[700];
    snprintf(att, sizeof att, "ATTACH '%s' AS k", db);
    CU_ASSERT_EQUAL(sqlite3_exec(h, att, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    const char *q = strstr(sql, "SELECT");
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), 0);   /* the prefix holds only killed-run rows */
    sqlite3_finalize(st);
    /* ... and the killed run only rows of the prefix: the same set. */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT layer, head, pos0 FROM k.event_blocks"
             " EXCEPT SELECT layer, head, pos0 FROM (SELECT * FROM main.event_blocks"
             " ORDER BY rowid LIMIT %lld))", (long long)groups);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* The reader and the runs listing work on it and count what is there. */
    CU_ASSERT_EQUAL(th_run("%s runs %s -F csv", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), ",running,"));
}

/* Read-only commands leave nothing beside the trace: a read-only SQLite
 * connection to a WAL file creates TRACE.db-shm and an empty -wal and
 * cannot remove them, and every command used to leave both behind (the
 * docs say they go with the last connection).  The file itself is not
 * written.  While a writer has the file open they stay (they are its). */
TH_TEST(test_readers_leave_no_wal, "read-only commands leave no -wal or -shm beside the trace")
{
    char small[512], db[512], copy[512], wal[600], shm[600];
    snprintf(small, sizeof small, "%s", th_path("wal.txt"));
    snprintf(db, sizeof db, "%s", th_path("wal.db"));
    snprintf(copy, sizeof copy, "%s", th_path("wal-copy.db"));
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(shm, sizeof shm, "%s-shm", db);
    th_write_file(small, "In the beginning God created the heaven and the earth.\n", 55);
    CU_ASSERT_EQUAL_FATAL(th_run("%s trace %s %s -o %s", th_bin(), g_model, small, db), 0);
    CU_ASSERT(!th_file_exists(wal) && !th_file_exists(shm));
    CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", db, copy), 0);
    static const char *const cmds[] = {
        "stats %s", "simulate %s --capacity 8", "export %s -f csv -o %s.csv", "sql %s 'SELECT count(*) FROM events'",
        "runs %s", "plot heatmap %s -o %s.png", "attribute %s --layer 0 --head 0 --pos 5", "plot trace %s -o %s.png",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, cmds[i], db, db);
        int rc = th_run("%s %s", th_bin(), cmd);
        int ok = rc == 0 && !th_file_exists(wal) && !th_file_exists(shm);
        if (!ok) fprintf(stderr, "\nramtrace %s -> %d, -wal %d, -shm %d: %s", cmd, rc, th_file_exists(wal),
                         th_file_exists(shm), th_err());
        CU_ASSERT(ok);
        CU_ASSERT(th_files_equal(db, copy));
    }
    /* a writer's files stay while it has the file open: a reader that
     * closes meanwhile must not remove them */
    rn_config c;
    rn_config_default(&c);
    c.n_layers = 1; c.n_heads = 1; c.d_p = 3; c.order = 2; c.top_k = 2; c.d_v = 8;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    tr_run_meta meta = { .command = "test", .cfg = &c };
    tr_writer *w;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_writer_open(db, &meta, NULL, NULL, &w, &err), RN_OK);
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1", th_bin(), db), 0);
    CU_ASSERT(th_file_exists(wal) && th_file_exists(shm));
    tr_writer_add_token(w, 0, 'a', NULL, 0);
    CU_ASSERT_EQUAL(tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err), RN_OK);
    CU_ASSERT(!th_file_exists(wal) && !th_file_exists(shm));
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
}

TH_SUITE(trace_cli, setup, NULL);
