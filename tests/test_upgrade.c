/* test_upgrade.c — `ramtrace upgrade` turns a schema version 1 file into the
 * current schema without changing an event.
 *
 * tests/data/trace-v1.db was written by ramtrace at commit f89b853 (schema
 * version 1): `ramtrace init --config samples/configs/tiny.cfg --seed 3`,
 * then `trace MODEL IN -j 1 --name first` and `trace MODEL IN -j 1 --ops r
 * --layers 1 --heads 0,2 --name second` with IN = "In the beginning God
 * created" (no newline), vacuumed with page_size 1024.  The upgraded file
 * must read back, through the C reader, exactly the events of the version 1
 * rows (expanded here with schema v1's own rule), and the same tokens. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_reader.h"
#include "tr_schema.h"
#include "tr_upgrade.h"

#define V1 "tests/data/trace-v1.db"

TH_SUITE(upgrade, NULL, NULL);

/* The events of run `run` of the version 1 file, expanded from its
 * event_groups rows in canonical order (addr = (slot + pos) mod cape_m for
 * a CAPE head). */
static tr_event *v1_events_of(const char *path, int run, size_t *n)
{
    sqlite3 *h;
    *n = 0;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) return NULL;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT layer, head, pos, op, r0, n, cape_m, s0, w0, s1, w1, s2, w2, s3, w3, s4, w4,"
             " s5, w5, s6, w6, s7, w7 FROM event_groups WHERE run_id = %d ORDER BY layer, head, pos, op, r0", run);
    sqlite3_stmt *st;
    size_t cap = 1 << 14;
    tr_event *ev = malloc(sizeof *ev * cap);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) { sqlite3_close(h); free(ev); return NULL; }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int lanes = sqlite3_column_int(st, 5);
        for (int i = 0; i < lanes && *n < cap; i++) {
            tr_event *e = &ev[(*n)++];
            memset(e, 0, sizeof *e);
            e->layer = (uint16_t)sqlite3_column_int(st, 0);
            e->head = (uint16_t)sqlite3_column_int(st, 1);
            e->pos = sqlite3_column_int(st, 2);
            e->op = (uint8_t)sqlite3_column_int(st, 3);
            e->rank = (uint16_t)(sqlite3_column_int(st, 4) + i);
            int64_t cape_m = sqlite3_column_int64(st, 6);
            e->slot = (uint32_t)sqlite3_column_int64(st, 7 + 2 * i);
            e->addr = cape_m ? (uint32_t)((e->slot + (int64_t)e->pos) % cape_m) : e->slot;
            e->weight = (float)sqlite3_column_double(st, 8 + 2 * i);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return ev;
}

static tr_event *v1_events(int run, size_t *n) { return v1_events_of(V1, run, n); }

/* Every event of run `run` of the upgraded file against the version 1
 * rows, field by field (weights bit for bit), and its tokens. */
static void same_events(const char *up, int run, size_t want)
{
    tr_db *d;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(up, &d, &err), RN_OK);
    tr_event *ea, *eb;
    size_t na, nb;
    CU_ASSERT_EQUAL_FATAL(tr_load_events(d, run, NULL, &ea, &na, &err), RN_OK);
    eb = v1_events(run, &nb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(eb);
    CU_ASSERT_EQUAL(na, want);
    CU_ASSERT_EQUAL(na, nb);
    size_t bad = 0;
    for (size_t i = 0; i < na && i < nb; i++)
        bad += ea[i].layer != eb[i].layer || ea[i].head != eb[i].head || ea[i].pos != eb[i].pos ||
               ea[i].op != eb[i].op || ea[i].rank != eb[i].rank || ea[i].slot != eb[i].slot ||
               ea[i].addr != eb[i].addr || memcmp(&ea[i].weight, &eb[i].weight, sizeof(float));
    CU_ASSERT_EQUAL(bad, 0);
    tr_token *t;
    int64_t nt;
    CU_ASSERT_EQUAL(tr_load_tokens(d, run, &t, &nt, &err), RN_OK);
    CU_ASSERT_EQUAL(nt, 29);
    char sql[256];
    for (int64_t i = 0; i < nt; i++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM tokens WHERE run_id = %d AND pos = %lld AND token_id = %d"
                 " AND piece = '%s' AND phase = 'prompt'", run, (long long)i, t[i].token_id,
                 t[i].piece[0] == '\'' ? "" : t[i].piece);
        CU_ASSERT_EQUAL(th_sql_int(V1, sql), 1);
    }
    free(t);
    free(ea);
    free(eb);
    tr_close(d);
}

TH_TEST(test_upgrade_v1, "a version 1 file: refused with a pointer to upgrade, then upgraded exactly")
{
    char v1[512];
    snprintf(v1, sizeof v1, "%s", th_path("v1.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp tests/data/trace-v1.db %s", v1), 0);
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), v1), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "ramtrace upgrade"));
    CU_ASSERT_EQUAL(th_run("%s upgrade %s", th_bin(), v1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "schema version 1 -> 2: 2 runs, 4176 events"));
    CU_ASSERT_EQUAL(th_sql_int(v1, "PRAGMA user_version"), TR_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(th_sql_int(v1, "PRAGMA integrity_check"), 1);
    CU_ASSERT_EQUAL(th_sql_int(v1, "SELECT count(*) FROM sqlite_master WHERE name = 'event_groups'"), 0);
    CU_ASSERT_EQUAL(th_sql_int(v1, "SELECT count(*) FROM runs WHERE weight_format = 'f32'"), 2);
    /* 29 tokens x 2 layers x 4 heads x 2 ops x 8; 29 x 2 heads x 8 reads */
    same_events(v1, 1, 29 * 128);
    same_events(v1, 2, 29 * 16);
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1", th_bin(), v1), 0);
    /* Again: nothing to do, the file unchanged. */
    char copy[512];
    snprintf(copy, sizeof copy, "%s", th_path("v1-again.db"));
    CU_ASSERT_EQUAL(th_run("cp %s %s", v1, copy), 0);
    CU_ASSERT_EQUAL(th_run("%s upgrade %s", th_bin(), v1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to do"));
    CU_ASSERT(th_files_equal(v1, copy));
}

TH_TEST(test_upgrade_bad, "upgrade of a corrupt or foreign file: one line, exit 2, the file untouched")
{
    char v1[512], keep[512];
    snprintf(v1, sizeof v1, "%s", th_path("bad-v1.db"));
    snprintf(keep, sizeof keep, "%s", th_path("bad-v1-keep.db"));
    static const char *const edits[] = {
        "UPDATE event_groups SET s1 = 9999 WHERE rowid = 7",
        "UPDATE event_groups SET w0 = 1.5 WHERE rowid = 3",
        "UPDATE event_groups SET r0 = 3 WHERE rowid = 5",
        "UPDATE event_groups SET s0 = NULL WHERE rowid = 2",
        "UPDATE runs SET top_k = 0",
        "PRAGMA user_version = 7",
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        CU_ASSERT_EQUAL_FATAL(th_run("cp tests/data/trace-v1.db %s", v1), 0);
        sqlite3 *h;
        CU_ASSERT_EQUAL_FATAL(sqlite3_open(v1, &h), SQLITE_OK);
        CU_ASSERT_EQUAL(sqlite3_exec(h, edits[i], NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(h);
        CU_ASSERT_EQUAL(th_run("cp %s %s", v1, keep), 0);
        int rc = th_run("%s upgrade %s", th_bin(), v1);
        int ok = rc == 2 && th_count_lines(th_err()) == 1 && strstr(th_err(), v1);
        if (!ok) fprintf(stderr, "\n%s: upgrade -> %d: %s", edits[i], rc, th_err());
        CU_ASSERT(ok);
        CU_ASSERT(th_files_equal(v1, keep));
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.upgrade-tmp", v1);
        CU_ASSERT(!th_file_exists(tmp));
    }
    CU_ASSERT_EQUAL(th_run("%s upgrade %s", th_bin(), th_path("missing.db")), 2);
    CU_ASSERT_EQUAL(th_run("%s upgrade README.md", th_bin()), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
}

/* A version 1 run with a gap in one head's positions (position 5 of
 * layer 0, head 0 missing, as a v1 file can hold): the upgraded blocks
 * must end at the gap and start again at 6, so every later event keeps
 * its position (a block continued across the gap stored position 6 as 5,
 * 7 as 6, ...). */
TH_TEST(test_upgrade_gap, "upgrade of a version 1 run with a gap keeps every later position")
{
    char v1[512], orig[512];
    snprintf(v1, sizeof v1, "%s", th_path("gap-v1.db"));
    snprintf(orig, sizeof orig, "%s", th_path("gap-v1-orig.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp tests/data/trace-v1.db %s", v1), 0);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(v1, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "DELETE FROM event_groups WHERE run_id = 1 AND layer = 0 AND head = 0 AND pos = 5",
                                 NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT(sqlite3_changes(h) > 0);
    sqlite3_close(h);
    CU_ASSERT_EQUAL_FATAL(th_run("cp %s %s", v1, orig), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s upgrade %s", th_bin(), v1), 0);
    /* two blocks for that head: 0..4 and 6..28 */
    CU_ASSERT_EQUAL(th_sql_int(v1, "SELECT group_concat(pos0 || ':' || npos) = '0:5,6:23' FROM (SELECT pos0, npos"
                                   " FROM event_blocks WHERE run_id = 1 AND layer = 0 AND head = 0 ORDER BY pos0)"), 1);
    tr_db *d;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(v1, &d, &err), RN_OK);
    tr_event *ea, *eb;
    size_t na, nb;
    CU_ASSERT_EQUAL_FATAL(tr_load_events(d, 1, NULL, &ea, &na, &err), RN_OK);
    tr_close(d);
    eb = v1_events_of(orig, 1, &nb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(eb);
    CU_ASSERT_EQUAL(na, 29 * 128 - 16);
    CU_ASSERT_EQUAL(na, nb);
    size_t bad = 0;
    for (size_t i = 0; i < na && i < nb; i++)
        bad += ea[i].layer != eb[i].layer || ea[i].head != eb[i].head || ea[i].pos != eb[i].pos ||
               ea[i].op != eb[i].op || ea[i].rank != eb[i].rank || ea[i].slot != eb[i].slot ||
               ea[i].addr != eb[i].addr || memcmp(&ea[i].weight, &eb[i].weight, sizeof(float));
    CU_ASSERT_EQUAL(bad, 0);
    free(ea);
    free(eb);
    /* the run lost position 5 of one head: the analyses refuse it and
     * repair cuts it to positions 0..4 */
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1", th_bin(), v1), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "ramtrace repair"));
    CU_ASSERT_EQUAL(th_run("%s repair %s --run 1", th_bin(), v1), 0);
    CU_ASSERT_EQUAL(th_sql_int(v1, "SELECT n_tokens FROM runs WHERE run_id = 1"), 5);
    CU_ASSERT_EQUAL(th_run("%s stats %s --run 1", th_bin(), v1), 0);
}
