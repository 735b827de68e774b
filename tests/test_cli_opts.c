/* test_cli_opts.c — the command line's conventions through the binary:
 * output into a closed pipe ends quietly (status 141) on every command that
 * writes much to stdout; -j on every computing command; -f is --format
 * everywhere (sql's file is --file); version --help; -q silences upgrade
 * and repair; run --top-k as trace's; simulate refuses a warm-up past the
 * run and a capacity past the scope's keys up front, on one line; plot's
 * kinds and simulate's policies listed from their registries; the bash
 * completion offers exactly the options each --help lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

static char g_model[512], g_input[512], g_db[512];

/* A tiny byte-level model, a 3,000-byte input and its trace (384,128
 * events: sql prints 26 MB of them). */
static int setup(void)
{
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(g_input, sizeof g_input, "%s", th_path("input.txt"));
    snprintf(g_db, sizeof g_db, "%s", th_path("t.db"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model)) return -1;
    if (th_write_verses(g_input, 3000)) return -1;
    return th_run("%s trace %s %s -o %s", th_bin(), g_model, g_input, g_db) ? -1 : 0;
}

TH_SUITE(cli_opts, setup, NULL);

/* `ramtrace ARGS | head -c 100`: the exit status of ramtrace (bash's
 * PIPESTATUS); its stderr in th_err(). */
static int into_head(const char *args)
{
    return th_run("bash -c '%s %s 2>%s | head -c 100 >/dev/null; exit ${PIPESTATUS[0]}'; rc=$?; cat %s >&2; exit $rc",
                  th_bin(), args, th_path("head.err"), th_path("head.err"));
}

TH_TEST(test_epipe, "output into a closed pipe: status 141 (as SIGPIPE), nothing on stderr")
{
    char a[2048];
    snprintf(a, sizeof a, "sql %s \"SELECT * FROM events\"", g_db);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    snprintf(a, sizeof a, "sql %s \"SELECT * FROM events\" -f json", g_db);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    snprintf(a, sizeof a, "-q slots %s %s --layer 0 --head 0 --writers 0", g_model, g_input);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    snprintf(a, sizeof a, "-q export %s -o - -f csv", g_db);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    snprintf(a, sizeof a, "-q export %s -o -", g_db);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    /* run stops generating once nobody reads */
    snprintf(a, sizeof a, "-q run %s %s -n 1000000 -t 0", g_model, g_input);
    CU_ASSERT_EQUAL(into_head(a), 141);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    /* a reader that takes everything is no failure */
    CU_ASSERT_EQUAL(th_run("bash -c '%s sql %s \"SELECT 1\" | head -c 100 >/dev/null; exit ${PIPESTATUS[0]}'", th_bin(),
                           g_db), 0);
    /* output to a full device is still an error, on one line */
    if (th_file_exists("/dev/full")) {
        CU_ASSERT_EQUAL(th_run("%s sql %s \"SELECT * FROM events\" > /dev/full", th_bin(), g_db), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "writing the output failed"));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_EQUAL(th_run("%s version > /dev/full", th_bin()), 1);
        CU_ASSERT_STRING_EQUAL(th_err(), "ramtrace: writing the output failed\n");
    }
}

TH_TEST(test_threads_everywhere, "-j on train, eval, overlap and plot frontier: the thread count, range-checked")
{
    const char *cmds[] = { "train", "eval", "overlap", "plot frontier", "run", "trace", "simulate", "stats",
                           "export", "attribute", "slots", "patch", "plot" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CU_ASSERT_EQUAL(th_run("%s %s -j 0", th_bin(), cmds[i]), 2);
        if (!strstr(th_err(), "--threads: 0 is out of range")) fprintf(stderr, "\n%s -j 0: %s", cmds[i], th_err());
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--threads: 0 is out of range"));
    }
    char out[512];
    snprintf(out, sizeof out, "%s", th_path("j.bin"));
    CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 --segments 64:4 -j 2 -f csv", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"(64,4)\",64,4,"));
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config samples/configs/mqar.cfg --steps 1 --batch 2 --set warmup=0 "
                           "--set eval_every=0 -j 1 -q -o %s", th_bin(), out), 0);
    CU_ASSERT(th_file_exists(out));
    CU_ASSERT_EQUAL(th_run("%s plot frontier -j 1 -o %s", th_bin(), th_path("f.png")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "needs --csv"));
    CU_ASSERT_EQUAL(th_run("%s overlap -j 1 %s", th_bin(), g_db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--pairs is required"));
}

TH_TEST(test_short_flags, "-f is --format in sql too (the SQL file is --file); version --help; -q upgrade/repair")
{
    char sqlf[512];
    snprintf(sqlf, sizeof sqlf, "%s", th_path("q.sql"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(sqlf, "SELECT 6 * 7 AS x", 17), 0);
    CU_ASSERT_EQUAL(th_run("%s sql %s \"SELECT 6 * 7 AS x\" -f csv", th_bin(), g_db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "x\n42\n");
    CU_ASSERT_EQUAL(th_run("%s sql %s --file %s -f json", th_bin(), g_db, sqlf), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"x\": 42"));
    CU_ASSERT_EQUAL(th_run("%s sql %s --file %s -F csv", th_bin(), g_db, sqlf), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "x\n42\n");
    CU_ASSERT_EQUAL(th_run("%s sql %s -f %s", th_bin(), g_db, sqlf), 2); /* a file name is not a format */
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    /* every command's -f, where it has one, is --format */
    const char *cmds[] = { "attribute", "eval", "export", "info", "overlap", "patch", "runs", "simulate", "slots",
                           "sql", "stats" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CU_ASSERT_EQUAL(th_run("%s %s --help", th_bin(), cmds[i]), 0);
        CU_ASSERT(strstr(th_out(), "  -f, --format ") || strstr(th_out(), "  -f, -F, --format "));
    }

    CU_ASSERT_EQUAL(th_run("%s version --help", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "usage: ramtrace version"));
    CU_ASSERT_EQUAL(th_run("%s version", th_bin()), 0);
    CU_ASSERT_EQUAL(strncmp(th_out(), "ramtrace ", 9), 0);
    CU_ASSERT_EQUAL(th_run("%s version extra", th_bin()), 2);

    char v1[512];
    snprintf(v1, sizeof v1, "%s", th_path("v1.db"));
    CU_ASSERT_EQUAL_FATAL(th_run("cp tests/data/trace-v1.db %s", v1), 0);
    CU_ASSERT_EQUAL(th_run("%s upgrade -q %s", th_bin(), v1), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "");
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    CU_ASSERT_EQUAL(th_run("%s upgrade %s", th_bin(), v1), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to do"));
    CU_ASSERT_EQUAL(th_run("%s repair --quiet %s", th_bin(), g_db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "");
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    CU_ASSERT_EQUAL(th_run("%s repair %s --run 1", th_bin(), g_db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "nothing to repair"));
    CU_ASSERT_EQUAL(th_run("%s repair -q %s --run 1", th_bin(), g_db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "");
}

TH_TEST(test_run_top_k, "run --top-k K: the K trace --top-k uses, recorded by --trace; out of range refused")
{
    char db[512], db2[512];
    snprintf(db, sizeof db, "%s", th_path("k.db"));
    snprintf(db2, sizeof db2, "%s", th_path("k2.db"));
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 -t 0 --top-k 3 --trace %s -q", th_bin(), g_model, g_input, db), 0);
    char *out_k3 = strdup(th_out());
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT top_k FROM runs"), 3);
    CU_ASSERT_EQUAL(th_sql_int(db, "SELECT count(*) FROM events WHERE rank >= 3"), 0);
    CU_ASSERT(th_sql_int(db, "SELECT count(*) FROM events WHERE rank = 2") > 0);
    /* the prompt's events are trace --top-k's */
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s --top-k 3 -q", th_bin(), g_model, g_input, db2), 0);
    const char *q = "SELECT count(*) * 1000003 + sum(slot * (rank + 1) + pos % 7) FROM events e JOIN tokens t "
                    "USING (run_id, pos) WHERE t.phase = 'prompt'";
    CU_ASSERT(th_sql_int(db, q) > 0);
    CU_ASSERT_EQUAL(th_sql_int(db2, q), th_sql_int(db, q));
    free(out_k3);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 --top-k 513", th_bin(), g_model, g_input), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--top-k: 513 is not in 1..min(512 slots"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 --top-k 0", th_bin(), g_model, g_input), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
}

TH_TEST(test_simulate_bounds, "simulate: --warmup past the run and --capacity past the scope's keys: one line, exit 2, before the load")
{
    /* the run has 3,001 positions (BOS + 3,000 bytes) */
    CU_ASSERT_EQUAL(th_run("%s simulate %s --warmup 3001", th_bin(), g_db), 2);
    CU_ASSERT_STRING_EQUAL(th_err(), "ramtrace: --warmup: 3001 is not below the run's 3001 tokens (nothing would be counted)\n");
    CU_ASSERT_STRING_EQUAL(th_out(), "");
    CU_ASSERT_EQUAL(th_run("%s simulate %s --warmup 99999 --capacity 4", th_bin(), g_db), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s simulate %s --warmup 3000 --capacity 4 -f csv -q", th_bin(), g_db), 0);
    CU_ASSERT(th_count_lines(th_out()) > 1);
    /* M = 512 slots, H = 4, L = 2: 512 keys per head, 2,048 per layer, 4,096 in all */
    CU_ASSERT_EQUAL(th_run("%s simulate %s --capacity 5000", th_bin(), g_db), 2);
    CU_ASSERT_STRING_EQUAL(th_err(), "ramtrace: --capacity: 5000 is larger than the 4096 keys a model cache can hold\n");
    CU_ASSERT_EQUAL(th_run("%s simulate %s --capacity 64,513 --scope head", th_bin(), g_db), 2);
    CU_ASSERT_STRING_EQUAL(th_err(), "ramtrace: --capacity: 513 is larger than the 512 keys a head cache can hold\n");
    CU_ASSERT_EQUAL(th_run("%s simulate %s --capacity 2049 --scope layer", th_bin(), g_db), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s simulate %s --capacity 2048 --scope layer -q -f csv", th_bin(), g_db), 0);
}
