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
    snprintf(g_model, sizeof g_model, "%s", th_path("co-tiny.bin"));
    snprintf(g_input, sizeof g_input, "%s", th_path("co-input.txt"));
    snprintf(g_db, sizeof g_db, "%s", th_path("co-t.db"));
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
                  th_bin(), args, th_path("co-head.err"), th_path("co-head.err"));
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
    snprintf(out, sizeof out, "%s", th_path("co-j.bin"));
    CU_ASSERT_EQUAL(th_run("%s eval samples/mqar.bin --task mqar --examples 2 --segments 64:4 -j 2 -f csv", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"(64,4)\",64,4,"));
    CU_ASSERT_EQUAL(th_run("%s train --task mqar --config samples/configs/mqar.cfg --steps 1 --batch 2 --set warmup=0 "
                           "--set eval_every=0 -j 1 -q -o %s", th_bin(), out), 0);
    CU_ASSERT(th_file_exists(out));
    CU_ASSERT_EQUAL(th_run("%s plot frontier -j 1 -o %s", th_bin(), th_path("co-f.png")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "needs --csv"));
    CU_ASSERT_EQUAL(th_run("%s overlap -j 1 %s", th_bin(), g_db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--pairs is required"));
}

TH_TEST(test_short_flags, "-f is --format in sql too (the SQL file is --file); version --help; -q upgrade/repair")
{
    char sqlf[512];
    snprintf(sqlf, sizeof sqlf, "%s", th_path("co-q.sql"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(sqlf, "SELECT 6 * 7 AS x", 17), 0);
    CU_ASSERT_EQUAL(th_run("%s sql %s \"SELECT 6 * 7 AS x\" -f csv", th_bin(), g_db), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "x\n42\n");
    CU_ASSERT_EQUAL(th_run("%s sql %s --file %s -f json", th_bin(), g_db, sqlf), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"x\": 42"));
    CU_ASSERT_EQUAL(th_run("%s sql %s --file %s -F csv", th_bin(), g_db, sqlf), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "x\n42\n");
    CU_ASSERT_EQUAL(th_run("%s sql %s -f %s -F csv", th_bin(), g_db, sqlf), 2); /* a file name is not a format */
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "the SQL file is --file"));
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
    snprintf(v1, sizeof v1, "%s", th_path("co-v1.db"));
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
    snprintf(db, sizeof db, "%s", th_path("co-k.db"));
    snprintf(db2, sizeof db2, "%s", th_path("co-k2.db"));
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

/* ---- help texts, registries and the completion ---- */

enum { MAXW = 256, WLEN = 48 };
typedef struct { int n; char w[MAXW][WLEN]; } wordset;

static int ws_has(const wordset *s, const char *w)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->w[i], w)) return 1;
    return 0;
}

static void ws_add(wordset *s, const char *w, size_t len)
{
    char t[WLEN];
    if (len >= WLEN) len = WLEN - 1;
    memcpy(t, w, len);
    t[len] = 0;
    if (!ws_has(s, t) && s->n < MAXW) snprintf(s->w[s->n++], WLEN, "%s", t);
}

/* Is w an option word: -x, or --lower-case-words? */
static int is_opt(const char *w, size_t len)
{
    if (len == 2) return w[0] == '-' && ((w[1] >= 'a' && w[1] <= 'z') || (w[1] >= 'A' && w[1] <= 'Z'));
    if (len < 3 || w[0] != '-' || w[1] != '-' || w[2] < 'a' || w[2] > 'z') return 0;
    for (size_t i = 3; i < len; i++)
        if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= '0' && w[i] <= '9') || w[i] == '-')) return 0;
    return 1;
}

/* The options a help text lists: in each line indented 2 to 6 spaces that
 * starts with '-', the text before the first double space, split at ", ",
 * each piece's first word (a trailing ',' dropped).  Written apart from
 * scripts/gen-completion's awk, to check it. */
static void help_options(const char *help, wordset *s)
{
    for (const char *l = help; *l; ) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        size_t ind = 0;
        while (ind < len && l[ind] == ' ') ind++;
        if (ind >= 2 && ind <= 6 && ind < len && l[ind] == '-') {
            const char *p = l + ind, *end = l + len;
            for (const char *q = p; q + 1 < end; q++)
                if (q[0] == ' ' && q[1] == ' ') { end = q; break; }
            while (p < end) {
                const char *sep = p;
                while (sep < end && !(sep[0] == ',' && sep + 1 < end && sep[1] == ' ')) sep++;
                size_t wl = strcspn(p, " ,");
                if (p + wl > sep) wl = (size_t)(sep - p);
                if (is_opt(p, wl)) ws_add(s, p, wl);
                p = sep < end ? sep + 2 : end;
            }
        }
        l += len + (e != NULL);
    }
}

/* Every option word mentioned anywhere in a help text. */
static void help_mentions(const char *help, wordset *s)
{
    for (const char *p = help; (p = strstr(p, "--")); ) {
        size_t len = 2;
        while ((p[len] >= 'a' && p[len] <= 'z') || (p[len] >= '0' && p[len] <= '9') || p[len] == '-') len++;
        if ((p == help || p[-1] == ' ' || p[-1] == '[' || p[-1] == '(' || p[-1] == '\n') && is_opt(p, len))
            ws_add(s, p, len);
        p += len;
    }
}

/* The words of the lines under heading h ("commands:") of a help text. */
static void section_words(const char *help, const char *h, wordset *s)
{
    const char *p = strstr(help, h);
    if (!p) return;
    for (p = strchr(p, '\n'); p && p[1] == ' '; p = strchr(p + 1, '\n'))
        if (p[1] == ' ' && p[2] == ' ' && p[3] >= 'a' && p[3] <= 'z') ws_add(s, p + 3, strcspn(p + 3, " \n"));
}

/* What the completion offers for `ramtrace WORDS<TAB>` (cword: the index
 * of the word completed). */
static void complete(const char *file, const char *words, int cword, wordset *s)
{
    CU_ASSERT_EQUAL_FATAL(th_run("bash -c '. %s; COMP_WORDS=(ramtrace %s); COMP_CWORD=%d; _ramtrace; "
                                 "printf \"%%s\\n\" \"${COMPREPLY[@]}\"'", file, words, cword), 0);
    for (const char *l = th_out(); *l; ) {
        size_t len = strcspn(l, "\n");
        if (len) ws_add(s, l, len);
        l += len + (l[len] == '\n');
    }
}

TH_TEST(test_completion, "bash completion: for every command exactly the options its --help lists, -q too; plot's kinds")
{
    char file[512];
    snprintf(file, sizeof file, "%s", th_path("co-ramtrace.bash"));
    CU_ASSERT_EQUAL_FATAL(th_run("scripts/gen-completion %s %s", th_bin(), file), 0);
    CU_ASSERT_EQUAL(th_run("bash -n %s", file), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s --help", th_bin()), 0);
    char *top = strdup(th_out());
    wordset cmds = { 0 }, every = { 0 }, all = { 0 };
    section_words(top, "commands:", &cmds);
    const char *ev = strstr(top, "options of every command:");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    help_options(ev, &every);
    CU_ASSERT(ws_has(&every, "-q") && ws_has(&every, "--quiet"));
    CU_ASSERT(cmds.n >= 20);
    wordset first = { 0 };
    complete(file, "\"\"", 1, &first);
    for (int i = 0; i < cmds.n; i++) CU_ASSERT(ws_has(&first, cmds.w[i]));
    CU_ASSERT(ws_has(&first, "--version"));
    char *helps[MAXW] = { 0 };
    for (int i = 0; i < cmds.n; i++) {
        const char *c = cmds.w[i];
        CU_ASSERT_EQUAL_FATAL(th_run("%s %s --help", th_bin(), c), 0);
        helps[i] = strdup(th_out());
        wordset want = every, kinds = { 0 }, got = { 0 };
        help_options(helps[i], &want);
        CU_ASSERT(ws_has(&want, "--help"));
        section_words(helps[i], "kinds:", &kinds);
        for (int k = 0; k < kinds.n; k++) { /* plot patching has options of its own */
            CU_ASSERT_EQUAL_FATAL(th_run("%s %s %s --help", th_bin(), c, kinds.w[k]), 0);
            help_options(th_out(), &want);
        }
        char words[128];
        snprintf(words, sizeof words, "%s -", c);
        complete(file, words, 2, &got);
        for (int k = 0; k < want.n; k++) {
            if (!ws_has(&got, want.w[k])) fprintf(stderr, "\ncompletion of %s lacks %s", c, want.w[k]);
            CU_ASSERT(ws_has(&got, want.w[k]));
        }
        for (int k = 0; k < got.n; k++) {
            if (!ws_has(&want, got.w[k]) || !is_opt(got.w[k], strlen(got.w[k])))
                fprintf(stderr, "\ncompletion of %s offers %s, not in its --help", c, got.w[k]);
            CU_ASSERT(ws_has(&want, got.w[k]) && is_opt(got.w[k], strlen(got.w[k])));
            ws_add(&all, got.w[k], strlen(got.w[k]));
        }
        /* the first argument: the kinds, where the command has them */
        wordset arg = { 0 };
        snprintf(words, sizeof words, "%s \"\"", c);
        complete(file, words, 2, &arg);
        if (kinds.n) {
            CU_ASSERT_EQUAL(arg.n, kinds.n);
            for (int k = 0; k < kinds.n; k++) CU_ASSERT(ws_has(&arg, kinds.w[k]));
        }
    }
    /* an option a help text mentions is one some command (or ramtrace) takes */
    help_options(top, &all);
    for (int i = 0; i < cmds.n; i++) {
        wordset m = { 0 };
        help_mentions(helps[i], &m);
        for (int k = 0; k < m.n; k++) {
            if (!ws_has(&all, m.w[k])) fprintf(stderr, "\n%s --help mentions %s, which no command takes", cmds.w[i], m.w[k]);
            CU_ASSERT(ws_has(&all, m.w[k]));
        }
        free(helps[i]);
    }
    /* what the issue found missing or bogus */
    wordset train = { 0 }, plot = { 0 }, run = { 0 };
    complete(file, "train -", 2, &train);
    complete(file, "plot -", 2, &plot);
    complete(file, "run -", 2, &run);
    const char *tw[] = { "--lr", "--batch", "--seq-len", "--seed", "--eps-g", "--ckpt-every", "--max-seconds",
                         "--stop-after", "-j", "-q" };
    for (size_t k = 0; k < sizeof tw / sizeof tw[0]; k++) CU_ASSERT(ws_has(&train, tw[k]));
    const char *pw[] = { "--csv", "--anchors", "--answer", "--metric", "-q", "--quiet" };
    for (size_t k = 0; k < sizeof pw / sizeof pw[0]; k++) CU_ASSERT(ws_has(&plot, pw[k]));
    CU_ASSERT(ws_has(&run, "--state-file") && ws_has(&run, "--top-k") && !ws_has(&run, "--state-file:"));
    free(top);
}

TH_TEST(test_registries, "plot's kinds and the cache policies: help, errors and completion list the registries")
{
    /* plot --help's kinds, and the error for an unknown kind names each */
    CU_ASSERT_EQUAL_FATAL(th_run("%s plot --help", th_bin()), 0);
    wordset kinds = { 0 }, pols = { 0 };
    section_words(th_out(), "kinds:", &kinds);
    section_words(th_out(), "policies:", &pols);
    CU_ASSERT_EQUAL(kinds.n, 9);
    CU_ASSERT(ws_has(&kinds, "tiered") && ws_has(&kinds, "frontier") && ws_has(&kinds, "patching"));
    CU_ASSERT_EQUAL(th_run("%s plot nosuchkind %s -o %s", th_bin(), g_db, th_path("co-k.png")), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    for (int k = 0; k < kinds.n; k++) CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), kinds.w[k]));
    /* each kind is drawn or dispatched: no kind the help lists is unknown */
    for (int k = 0; k < kinds.n; k++) {
        CU_ASSERT_NOT_EQUAL(th_run("%s plot %s %s -o %s", th_bin(), kinds.w[k], th_path("co-nope.db"), th_path("co-k.png")), 0);
        CU_ASSERT_PTR_NULL(strstr(th_err(), "unknown plot kind"));
    }
    /* policies: simulate --help lists all seven; run and trace the online
     * ones (no opt); each is accepted where it is listed */
    CU_ASSERT_EQUAL(pols.n, 7);
    CU_ASSERT_EQUAL_FATAL(th_run("%s simulate --help", th_bin()), 0);
    wordset sim = { 0 }, st = { 0 };
    section_words(th_out(), "policies:", &sim);
    CU_ASSERT_EQUAL(sim.n, 7);
    CU_ASSERT_EQUAL_FATAL(th_run("%s run --help", th_bin()), 0);
    section_words(th_out(), "policies:", &st);
    CU_ASSERT_EQUAL(st.n, 6);
    CU_ASSERT(!ws_has(&st, "opt") && ws_has(&sim, "opt"));
    for (int k = 0; k < sim.n; k++) {
        CU_ASSERT_EQUAL(th_run("%s simulate %s --policy %s --capacity 8 -q -f csv", th_bin(), g_db, sim.w[k]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), sim.w[k]));
    }
    for (int k = 0; k < st.n; k++) {
        CU_ASSERT_EQUAL(th_run("%s run %s %s -n 1 -q --state-budget 64K --state-file %s --state-policy %s", th_bin(),
                               g_model, g_input, th_path("co-st.bin"), st.w[k]), 0);
    }
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 1 --state-budget 64K --state-file %s --state-policy nope", th_bin(), g_model,
                           g_input, th_path("co-st.bin")), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    for (int k = 0; k < st.n; k++) CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), st.w[k]));
    CU_ASSERT_EQUAL(th_run("%s simulate %s --policy nope", th_bin(), g_db), 2);
    for (int k = 0; k < sim.n; k++) CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), sim.w[k]));
}

TH_TEST(test_plot_trace_title, "plot trace --title: names the one panel, or heads a page of several")
{
    char a[512], b[512], c[512];
    const char *sel[] = { "--layers 1 --heads 0", "--layers 1" };
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s", th_path("co-ta.png"));
        snprintf(b, sizeof b, "%s", th_path("co-tb.png"));
        snprintf(c, sizeof c, "%s", th_path("co-tc.png"));
        CU_ASSERT_EQUAL_FATAL(th_run("%s plot trace %s %s --to 64 -o %s", th_bin(), g_db, sel[i], a), 0);
        CU_ASSERT_EQUAL_FATAL(th_run("%s plot trace %s %s --to 64 -o %s --title 'first title'", th_bin(), g_db, sel[i], b), 0);
        CU_ASSERT_EQUAL_FATAL(th_run("%s plot trace %s %s --to 64 -o %s --title 'other words'", th_bin(), g_db, sel[i], c), 0);
        CU_ASSERT(!th_files_equal(a, b));
        CU_ASSERT(!th_files_equal(b, c));
        CU_ASSERT_EQUAL_FATAL(th_run("%s plot trace %s %s --to 64 -o %s --title 'first title'", th_bin(), g_db, sel[i], c), 0);
        CU_ASSERT(th_files_equal(b, c)); /* the same title draws the same page */
    }
}
