/* test_upgrade.c — `ramtrace upgrade` turns a schema version 1 file into the
 * current schema without changing an event.
 *
 * tests/data/trace-v1.db was written by ramtrace at commit f89b853 (schema
 * version 1): `ramtrace init --config samples/configs/tiny.cfg --seed 3`,
 * then `trace MODEL IN -j 1 --name first` and `trace MODEL IN -j 1 --ops r
 * --layers 1 --heads 0,2 --name second` with IN = "In the beginning God
 * created" (no newline), vacuumed with page_size 1024.  The same two traces
 * written now must read back identical, event by event, to the upgraded
 * file. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "tr_reader.h"
#include "tr_schema.h"
#include "tr_upgrade.h"

static char g_model[512], g_in[512], g_v2[512];

static int setup(void)
{
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(g_in, sizeof g_in, "%s", th_path("in.txt"));
    snprintf(g_v2, sizeof g_v2, "%s", th_path("now.db"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model)) return -1;
    const char *in = "In the beginning God created";
    if (th_write_file(g_in, in, strlen(in))) return -1;
    if (th_run("%s trace %s %s -o %s -j 1 --name first", th_bin(), g_model, g_in, g_v2)) return -1;
    if (th_run("%s trace %s %s -o %s -j 1 --ops r --layers 1 --heads 0,2 --name second", th_bin(), g_model,
               g_in, g_v2)) return -1;
    return 0;
}

TH_SUITE(upgrade, setup, NULL);

/* Every event of run `run` in a and b, compared field by field (weights
 * bit for bit). */
static void same_events(const char *a, const char *b, int run, size_t want)
{
    tr_db *da, *db;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(tr_open_read(a, &da, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(tr_open_read(b, &db, &err), RN_OK);
    tr_event *ea, *eb;
    size_t na, nb;
    CU_ASSERT_EQUAL_FATAL(tr_load_events(da, run, NULL, &ea, &na, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(tr_load_events(db, run, NULL, &eb, &nb, &err), RN_OK);
    CU_ASSERT_EQUAL(na, want);
    CU_ASSERT_EQUAL(na, nb);
    size_t bad = 0;
    for (size_t i = 0; i < na && i < nb; i++)
        bad += ea[i].layer != eb[i].layer || ea[i].head != eb[i].head || ea[i].pos != eb[i].pos ||
               ea[i].op != eb[i].op || ea[i].rank != eb[i].rank || ea[i].slot != eb[i].slot ||
               ea[i].addr != eb[i].addr || memcmp(&ea[i].weight, &eb[i].weight, sizeof(float));
    CU_ASSERT_EQUAL(bad, 0);
    tr_token *ta, *tb;
    int64_t nta, ntb;
    CU_ASSERT_EQUAL(tr_load_tokens(da, run, &ta, &nta, &err), RN_OK);
    CU_ASSERT_EQUAL(tr_load_tokens(db, run, &tb, &ntb, &err), RN_OK);
    CU_ASSERT_EQUAL(nta, ntb);
    for (int64_t i = 0; i < nta && i < ntb; i++)
        CU_ASSERT(ta[i].pos == tb[i].pos && ta[i].token_id == tb[i].token_id && !strcmp(ta[i].piece, tb[i].piece) &&
                  ta[i].generated == tb[i].generated);
    free(ta); free(tb);
    free(ea); free(eb);
    tr_close(da);
    tr_close(db);
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
    same_events(v1, g_v2, 1, 29 * 128);
    same_events(v1, g_v2, 2, 29 * 16);
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
    CU_ASSERT_EQUAL(th_run("%s upgrade %s", th_bin(), g_model), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
}
