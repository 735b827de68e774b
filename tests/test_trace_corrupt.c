/* test_trace_corrupt.c — a trace file is untrusted input.  A small real
 * trace is edited one way at a time (values out of the run's range, wrong
 * types, lying block headers, truncated or bad BLOBs, a lying token count)
 * and every reading command must answer with one
 * line naming a corrupt trace and exit 2: no crash, no truncated value
 * accepted, no allocation sized by a claimed position. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "an_stream.h"
#include "rn_config.h"
#include "th.h"
#include "tr_schema.h"
#include "tr_writer.h"

#define NPOS 24
static char g_db[512];

static void config(rn_config *c)
{
    rn_config_default(c);
    /* M = 9: not a power of two, so a 4-bit packed slot can be >= M */
    c->n_layers = 2; c->n_heads = 2; c->d_p = 3; c->order = 2; c->top_k = 2; c->d_v = 8;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 1; /* layer 0 head 0: CAPE, so cape_m = M there */
}

static int make_db(void)
{
    snprintf(g_db, sizeof g_db, "%s", th_path("good.db"));
    rn_config c;
    config(&c);
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .name = "corrupt-me", .command = "trace", .cfg = &c };
    tr_writer *w;
    rn_error err = { 0 };
    if (tr_writer_open(g_db, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
    const rn_probe *pr = tr_writer_probe(w);
    for (int p = 0; p < NPOS; p++) {
        tr_writer_add_token(w, p, 'a' + p % 26, NULL, 0);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 2; h++)
                for (int op = 0; op < 2; op++) {
                    uint32_t s[2] = { (uint32_t)(p + l + h + op) % 9, (uint32_t)(p * 3 + 1) % 9 };
                    if (s[1] == s[0]) s[1] = (s[0] + 1) % 9;
                    float wt[2] = { 0.7f, 0.2f };
                    pr->access(pr->user, l, h, p, op, 2, s, s, wt);
                }
    }
    return tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err) ? -1 : 0;
}

static int setup(void) { return make_db(); }

/* A copy of the good trace with one SQL edit applied. */
static const char *corrupted(const char *name, const char *sql)
{
    const char *path = th_path(name);
    char *copy = strdup(path);
    if (th_run("cp '%s' '%s'", g_db, copy) != 0) { free(copy); return NULL; }
    sqlite3 *s;
    /* an UPDATE must change a row, or the edit tests nothing */
    int ok = sqlite3_open(copy, &s) == SQLITE_OK && sqlite3_exec(s, sql, NULL, NULL, NULL) == SQLITE_OK &&
             (strncmp(sql, "UPDATE", 6) != 0 || sqlite3_changes(s) > 0);
    sqlite3_close(s);
    if (!ok) fprintf(stderr, "\nedit failed: %s\n", sql);
    CU_ASSERT(ok);
    th_run("true"); /* keep th_path's rotating buffer from reusing copy's text */
    static char keep[8][512];
    static int k;
    snprintf(keep[k % 8], sizeof keep[0], "%s", copy);
    free(copy);
    return keep[k++ % 8];
}

/* The reading commands on db: exit 2, one line, "corrupt trace".  The
 * first three read every event of the run; attribute (layer 0, head 0) and
 * plot (each traced head over [0, tokens)) read through a filter, so they
 * are asked only when the edited row is one they read (filtered). */
static void expect_corrupt(const char *db, const char *what, int filtered)
{
    static const char *const cmds[] = {
        "stats '%s'", "simulate '%s' --capacity 4", "export '%s' -f csv -o %s/x.csv",
        "attribute '%s' --layer 0 --head 0 --pos 5", "plot heatmap '%s' -o %s/x.png",
    };
    for (int i = 0; i < (filtered ? 5 : 3); i++) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, cmds[i], db, th_tmpdir());
        int rc = th_run("%s %s", th_bin(), cmd);
        int ok = rc == 2 && th_count_lines(th_err()) == 1 && strstr(th_err(), "corrupt trace");
        if (!ok) fprintf(stderr, "\n%s: ramtrace %s -> %d: %s", what, cmd, rc, th_err());
        CU_ASSERT(ok);
    }
}

TH_TEST(test_good_trace_reads, "the unedited trace reads")
{
    CU_ASSERT_EQUAL(th_run("%s stats '%s'", th_bin(), g_db), 0);
    CU_ASSERT_EQUAL(th_run("%s simulate '%s' --capacity 4", th_bin(), g_db), 0);
}

TH_TEST(test_out_of_range_values, "every out-of-range value is a one-line corrupt-trace error")
{
    /* One block per head: positions 0..23, 2 ops x K = 2 entries each, so
     * n = 96, 4-bit packed slots (M = 9: 48 bytes, entry 0 in the low half
     * of byte 0) and 4-byte float weights. */
#define ROW " WHERE layer = 0 AND head = 0"
    static const struct { const char *name, *sql; int filtered; } edits[] = {
        { "negative head", "UPDATE event_blocks SET head = -50" ROW, 0 },
        { "layer 65536", "UPDATE event_blocks SET layer = 65536" ROW, 0 },
        { "head past H", "UPDATE event_blocks SET head = 2" ROW, 0 },
        { "text layer", "UPDATE event_blocks SET layer = 'one'" ROW, 0 },
        { "position 2^31-1", "UPDATE event_blocks SET pos0 = 2147483647" ROW, 0 },
        { "position past the tokens", "UPDATE event_blocks SET pos0 = 1" ROW, 0 },
        { "fewer tokens claimed", "UPDATE runs SET n_tokens = 3", 0 },
        { "unknown weight format", "UPDATE runs SET weight_format = 'f8'", 0 },
        { "slot M", "UPDATE event_blocks SET slots = x'09' || substr(slots, 2)" ROW, 1 },
        { "slot 15", "UPDATE event_blocks SET slots = substr(slots, 1, 5) || x'ff' || substr(slots, 7)" ROW, 1 },
        { "op mask 7", "UPDATE event_blocks SET ops = 7" ROW, 1 },
        { "op mask 0", "UPDATE event_blocks SET ops = 0" ROW, 1 },
        { "no positions", "UPDATE event_blocks SET npos = 0" ROW, 1 },
        { "position count lies", "UPDATE event_blocks SET npos = 23" ROW, 1 },
        { "event count lies", "UPDATE event_blocks SET n = 95" ROW, 1 },
        { "CAPE modulus", "UPDATE event_blocks SET cape_m = 5" ROW, 1 },
        { "weight 2.5", "UPDATE event_blocks SET weights = x'00002040' || substr(weights, 5)" ROW, 1 },
        { "NaN weight", "UPDATE event_blocks SET weights = substr(weights, 1, 4) || x'0000c07f' || substr(weights, 9)" ROW, 1 },
        { "truncated slots", "UPDATE event_blocks SET slots = substr(slots, 1, 47)" ROW, 1 },
        { "truncated weights", "UPDATE event_blocks SET weights = substr(weights, 1, 383)" ROW, 1 },
        { "slots as text", "UPDATE event_blocks SET slots = 'abc'" ROW, 1 },
        { "empty weights", "UPDATE event_blocks SET weights = x''" ROW, 1 },
        { "real header", "UPDATE event_blocks SET npos = 24.5" ROW, 1 },
        { "duplicated block", "INSERT INTO event_blocks SELECT * FROM event_blocks" ROW, 1 },
    };
#undef ROW
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad%zu.db", i);
        const char *db = corrupted(name, edits[i].sql);
        if (db) expect_corrupt(db, edits[i].name, edits[i].filtered);
    }
}

/* cape_m must agree with the run's cape_masks: M on a head the config
 * marks CAPE (layer 0 head 0 here), 0 on the others.  A block that says
 * otherwise would be read with its slots shifted (or not) by position, so
 * it is refused, naming the file and the block. */
TH_TEST(test_cape_m_against_masks, "cape_m that contradicts the run's cape_masks is a corrupt block")
{
    static const struct { const char *name, *sql, *block, *why; int filtered; } edits[] = {
        { "cape_m = M on a content-only head", "UPDATE event_blocks SET cape_m = 9 WHERE layer = 0 AND head = 1",
          "layer 0, head 1", "content-only", 0 },
        { "cape_m = M on layer 1", "UPDATE event_blocks SET cape_m = 9 WHERE layer = 1 AND head = 0",
          "layer 1, head 0", "content-only", 0 },
        { "cape_m = 0 on a CAPE head", "UPDATE event_blocks SET cape_m = 0 WHERE layer = 0 AND head = 0",
          "layer 0, head 0", "CAPE (expected M)", 1 },
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char name[64];
        snprintf(name, sizeof name, "capem%zu.db", i);
        const char *db = corrupted(name, edits[i].sql);
        if (!db) continue;
        expect_corrupt(db, edits[i].name, edits[i].filtered);
        int rc = th_run("%s stats '%s'", th_bin(), db);
        int ok = rc == 2 && strstr(th_err(), name) && strstr(th_err(), edits[i].block) &&
                 strstr(th_err(), edits[i].why);
        if (!ok) fprintf(stderr, "\n%s: stats -> %d: %s", edits[i].name, rc, th_err());
        CU_ASSERT(ok);
    }
}

/* A complete run that lost rows analysed as if it were whole would report
 * fewer events than it recorded, exit 0: every reading command refuses it
 * (one line naming the file, the run and `ramtrace repair`), and `repair
 * --run 1` cuts it to its complete positions (it used to call such a run
 * consistent and leave it). */
TH_TEST(test_short_complete_run, "a complete run that lost a block, a block's tail or a token is corrupt; repair cuts it")
{
    /* (layer 1, head 1): one block of positions 0..23, n = 96 (2 ops x
     * K = 2), 4-bit slots (48 bytes), f32 weights (384 bytes) */
#define ROW " WHERE layer = 1 AND head = 1"
    static const struct { const char *name, *sql, *why; int64_t tokens, events; } edits[] = {
        { "lost block", "DELETE FROM event_blocks" ROW, "hold positions 0..-1 of its 24", 0, 0 },
        { "lost tail", "UPDATE event_blocks SET npos = 20, n = 80, slots = substr(slots, 1, 40),"
                       " weights = substr(weights, 1, 320)" ROW, "hold positions 0..19 of its 24", 20, 320 },
        { "lost tail, counts edited to match", "UPDATE event_blocks SET npos = 20, n = 80, slots = substr(slots, 1, 40),"
          " weights = substr(weights, 1, 320)" ROW "; UPDATE runs SET n_events = n_events - 16",
          "hold positions 0..19 of its 24", 20, 320 },
        { "lost token row", "DELETE FROM tokens WHERE pos = 23", "records 24 tokens and holds 23", 23, 23 * 16 },
        { "lost events only", "UPDATE runs SET n_events = n_events + 16", "records 400 events and its blocks hold 384",
          24, 384 },
    };
#undef ROW
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char name[64];
        snprintf(name, sizeof name, "short%zu.db", i);
        const char *db = corrupted(name, edits[i].sql);
        if (!db) continue;
        expect_corrupt(db, edits[i].name, 1);
        int rc = th_run("%s stats '%s'", th_bin(), db);
        int ok = rc == 2 && strstr(th_err(), name) && strstr(th_err(), "run 1 is complete") &&
                 strstr(th_err(), edits[i].why) && strstr(th_err(), "ramtrace repair");
        if (!ok) fprintf(stderr, "\n%s: stats -> %d: %s", edits[i].name, rc, th_err());
        CU_ASSERT(ok);
        /* repair cuts it to its complete prefix and marks it interrupted;
         * then it reads, and a second repair finds it consistent */
        CU_ASSERT_EQUAL(th_run("%s repair '%s' --run 1", th_bin(), db), 0);
        ok = strstr(th_out(), "was complete") && strstr(th_out(), "now interrupted");
        if (!ok) fprintf(stderr, "\n%s: repair: %s", edits[i].name, th_out());
        CU_ASSERT(ok);
        char q[128];
        snprintf(q, sizeof q, "SELECT n_tokens = %lld AND n_events = %lld AND status = 'interrupted' FROM runs",
                 (long long)edits[i].tokens, (long long)edits[i].events);
        CU_ASSERT_EQUAL(th_sql_int(db, q), 1);
        CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events"), edits[i].events);
        if (edits[i].tokens) CU_ASSERT_EQUAL(th_run("%s stats '%s'", th_bin(), db), 0);
        CU_ASSERT_EQUAL(th_run("%s repair '%s' --run 1", th_bin(), db), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "consistent"));
    }
    /* the unedited complete run: consistent, untouched */
    const char *db = corrupted("whole.db", "SELECT 1");
    CU_ASSERT_EQUAL(th_run("%s repair '%s' --run 1", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "run 1 is complete and consistent (24 tokens, 384 events)"));
    CU_ASSERT(th_files_equal(db, g_db));
}

/* A block stored twice: the reader refuses it; repair drops the second
 * copy and, every position being kept, leaves the run complete. */
TH_TEST(test_repair_duplicate_block, "repair drops a block stored twice and keeps the run complete")
{
    const char *db = corrupted("dup.db", "INSERT INTO event_blocks SELECT * FROM event_blocks WHERE layer = 0 AND head = 1");
    if (!db) return;
    CU_ASSERT_EQUAL(th_run("%s stats '%s'", th_bin(), db), 2);
    CU_ASSERT_EQUAL(th_run("%s repair '%s' --run 1", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "now complete with 24 tokens, 384 events"));
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM event_blocks"), 4);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT status = 'complete' FROM runs"), 1);
    CU_ASSERT_EQUAL(th_run("%s stats '%s'", th_bin(), db), 0);
}

/* Streams of a run whose positions are huge but few: memory follows the
 * number of events, not the largest position (this once sized a counting
 * array by the position: 16 GiB for one event at 2^31 - 1). */
TH_TEST(test_streams_memory_bounded, "stream memory follows events, not positions")
{
    rn_config c;
    config(&c);
    tr_event ev[6];
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 6; i++) {
        ev[i].layer = (uint16_t)(i % 2);
        ev[i].pos = i < 3 ? i : INT32_MAX - 6 + i;
        ev[i].slot = (uint32_t)(i * 5 % 9);
        ev[i].op = (uint8_t)(i % 2);
        ev[i].weight = 0.5f;
    }
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    an_streams ss;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, 6, &c, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, &ss, &err), RN_OK);
    getrusage(RUSAGE_SELF, &after);
    CU_ASSERT(after.ru_maxrss - before.ru_maxrss < 64 * 1024); /* KiB: far below the 16 GiB of old */
    /* replay order (pos, layer, head, op, rank): by position */
    CU_ASSERT_EQUAL(ss.n, 1);
    CU_ASSERT_EQUAL(ss.s[0].n, 6);
    for (int i = 1; i < 6; i++) CU_ASSERT(ss.s[0].pos[i - 1] <= ss.s[0].pos[i]);
    CU_ASSERT_EQUAL(ss.s[0].pos[5], INT32_MAX - 1);
    an_streams_free(&ss);
    /* an event outside the config names it (and reads nothing freed) */
    ev[4].head = 9;
    CU_ASSERT_EQUAL(an_streams_build(ev, 6, &c, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "head 9"));
}

/* A file that is SQLite with a trace's header but not a trace's tables
 * (a foreign or damaged schema) is bad input: one line, exit 2 (it was
 * exit 1, "no such table"). */
TH_TEST(test_foreign_schema, "a foreign schema is bad input")
{
    static const char *const edits[] = { "DROP TABLE runs", "DROP TABLE event_blocks",
                                         "DROP TABLE heads; CREATE TABLE heads(x)" };
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "schema%d.db", i);
        const char *db = corrupted(name, edits[i]);
        const char *cmds[] = { "stats", "runs", "simulate" };
        for (int c = 0; c < 3 && db; c++) {
            int rc = th_run("%s %s '%s'", th_bin(), cmds[c], db);
            if (i > 0 && c == 1) continue; /* runs reads only the runs table */
            int ok = rc == 2 && th_count_lines(th_err()) == 1 && strstr(th_err(), name);
            if (!ok) fprintf(stderr, "\n%s on '%s' -> %d: %s", cmds[c], edits[i], rc, th_err());
            CU_ASSERT(ok);
        }
    }
    /* a read-only file refused by SQLite is bad input too (exit 2), and any
     * message is one line whatever the library put in it */
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(tr_sqlerr(NULL, SQLITE_READONLY, "ro.db", "inserting events", &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "read-only"));
    rn_seterr(&err, RN_EINPUT, "x: malformed schema:\nCREATE TABLE t(\r\n  a)");
    CU_ASSERT_PTR_NULL(strpbrk(err.msg, "\r\n"));
}

TH_SUITE(trace_corrupt, setup, NULL);
