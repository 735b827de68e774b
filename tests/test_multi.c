/* test_multi.c — several trace files analysed as one study (`stats`,
 * `simulate`, `export` over several files or --all-runs,
 * analysis/an_runset.h): the same runs split over two files give the
 * numbers of one file holding them all (traced from the same prompts),
 * the pooled statistics equal an independent count over the loaded
 * events, the concatenated LRU stream's counts equal the runs' own, the
 * exported stream is the runs' exports renumbered, and runs of another
 * model are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "an_load.h"
#include "th.h"

static char ONE[4096], A[4096], B[4096], OTHER[4096];
static const char *const PROMPTS[3] = { "samples/prompts/kjv.txt", "samples/prompts/mqar-example0.txt",
                                        "samples/prompts/kjv-patch-clean.txt" };

/* ONE: runs 1-3 of the three prompts; A: the first; B: the other two;
 * OTHER: a trace of another model.  Made once. */
static int make_traces(void)
{
    static int made = -1;
    if (made >= 0) return made;
    snprintf(ONE, sizeof ONE, "%s", th_path("multi_one.db"));
    snprintf(A, sizeof A, "%s", th_path("multi_a.db"));
    snprintf(B, sizeof B, "%s", th_path("multi_b.db"));
    snprintf(OTHER, sizeof OTHER, "%s", th_path("multi_other.db"));
    made = 0;
    for (int i = 0; i < 3 && !made; i++)
        made = th_run("%s trace samples/kjv.bin %s -o %s -q && %s trace samples/kjv.bin %s -o %s -q", th_bin(),
                      PROMPTS[i], ONE, th_bin(), PROMPTS[i], i == 0 ? A : B) != 0;
    if (!made)
        made = th_run("%s init --config samples/configs/tiny.cfg -o %s -q && %s trace %s %s -o %s -q", th_bin(),
                      th_path("multi_tiny.bin"), th_bin(), th_path("multi_tiny.bin"), PROMPTS[0], OTHER) != 0;
    if (made) fprintf(stderr, "%s", th_err());
    return made;
}

/* The stdout of a command that must succeed (malloc'd). */
static char *out_of(const char *cmd)
{
    int rc = th_run("%s", cmd);
    if (rc) fprintf(stderr, "%s: %s", cmd, th_err());
    CU_ASSERT_EQUAL(rc, 0);
    return strdup(th_out());
}

/* Whether cmd over ONE --all-runs and over A B --all-runs print the same
 * (args: the options after the files). */
static void same_as_one_file(const char *command, const char *args)
{
    char c1[12288], c2[12288];
    snprintf(c1, sizeof c1, "%s %s %s --all-runs %s", th_bin(), command, ONE, args);
    snprintf(c2, sizeof c2, "%s %s %s %s --all-runs %s", th_bin(), command, A, B, args);
    char *o1 = out_of(c1), *o2 = out_of(c2);
    CU_ASSERT_PTR_NOT_NULL(strchr(o1, '\n'));
    if (strcmp(o1, o2)) fprintf(stderr, "\n%s\n%s\nvs\n%s\n%s\n", c1, o1, c2, o2);
    CU_ASSERT_STRING_EQUAL(o1, o2);
    free(o1); free(o2);
}

TH_TEST(test_multi_same_numbers, "stats, simulate, export over two files equal one file holding the same runs")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    same_as_one_file("stats", "-f csv -q");
    same_as_one_file("stats", "-f json -q --layer 1 --window 16 -j 2");
    same_as_one_file("simulate", "--policy all --capacity 1,16,256,4096 --mrc -f csv -q");
    same_as_one_file("simulate", "--scope head --policy lru,s3fifo,opt --capacity 8,64 -f csv -q");
    same_as_one_file("simulate", "--scope layer --order run --ops r --policy lru,arc --sweep -f csv -q");
    same_as_one_file("simulate", "--sample 0.5 --mrc --policy lru --capacity 64 -f csv -q");
    same_as_one_file("simulate", "--mrc-out - --policy lru --capacity 64 -q");
    same_as_one_file("export", "-f csv -o - -q");
    same_as_one_file("export", "-f csv --layer 2 --head 1 --ops w -o - -q");
    /* one run with --all-runs is that run */
    char c[8192];
    snprintf(c, sizeof c, "%s stats %s -f csv -q", th_bin(), A);
    char *o1 = out_of(c);
    snprintf(c, sizeof c, "%s stats %s --all-runs -f csv -q", th_bin(), A);
    char *o2 = out_of(c);
    CU_ASSERT_STRING_EQUAL(o1, o2);
    free(o1); free(o2);
    /* the default is each file's latest run: A's run and B's second */
    snprintf(c, sizeof c, "%s stats %s %s -q", th_bin(), A, B);
    CU_ASSERT_EQUAL(th_run("%s", c), 0);
    CU_ASSERT_EQUAL(th_run("%s stats %s %s", th_bin(), A, B), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "stats: 2 runs of 2 traces,"));
}

/* ---- stats: the pooled numbers counted over the loaded events ---- */

typedef struct {
    uint64_t events, writes, reads, warm, cold, distinct;
    double entropy, ws_mean;
    uint32_t reuse_p50, reuse_p90;
} naive_head;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The smallest v with at least q·n of the sorted values <= v. */
static uint32_t pct(const uint32_t *v, size_t n, double q)
{
    for (size_t i = 0; i < n; i++)
        if ((double)(i + 1) >= q * (double)n - 1e-9) return v[i];
    return 0;
}

/* (layer, head) over runs 1-3 of ONE, each run a sequence of its own:
 * counts summed, slot distribution pooled, reuse times within a run. */
static void naive_stats(int layer, int head, int window, naive_head *o)
{
    memset(o, 0, sizeof *o);
    rn_error err = { 0 };
    uint64_t *cnt = NULL;
    uint32_t *reuse = NULL;
    size_t nre = 0, cap = 0;
    uint64_t ws = 0, nwin = 0;
    int64_t M = 0;
    for (int run = 1; run <= 3; run++) {
        an_run r;
        CU_ASSERT_EQUAL_FATAL(an_run_open(ONE, run, &r, &err), RN_OK);
        M = r.M;
        if (!cnt) cnt = calloc((size_t)M, sizeof *cnt);
        tr_event *ev = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL_FATAL(an_run_load(&r, layer, head, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
        uint8_t *written = calloc((size_t)M, 1);
        int32_t *last = malloc((size_t)M * sizeof *last), *lastwin = malloc((size_t)M * sizeof *lastwin);
        for (int64_t k = 0; k < M; k++) last[k] = lastwin[k] = -1;
        int32_t maxpos = -1;
        for (size_t i = 0; i < n; i++) {
            const tr_event *e = &ev[i];
            cnt[e->slot]++;
            o->events++;
            if (e->op == RN_OP_WRITE) { o->writes++; written[e->slot] = 1; }
            else { o->reads++; if (written[e->slot]) o->warm++; else o->cold++; }
            if (last[e->slot] >= 0) {
                if (nre == cap) { cap = cap ? 2 * cap : 1024; reuse = realloc(reuse, cap * sizeof *reuse); }
                reuse[nre++] = (uint32_t)(e->pos - last[e->slot]);
            }
            last[e->slot] = e->pos;
            if (lastwin[e->slot] != e->pos / window) { lastwin[e->slot] = e->pos / window; ws++; }
            if (e->pos > maxpos) maxpos = e->pos;
        }
        if (maxpos >= 0) nwin += (uint64_t)(maxpos / window + 1);
        free(written); free(last); free(lastwin); free(ev);
        an_run_close(&r);
    }
    for (int64_t k = 0; k < M; k++)
        if (cnt[k]) {
            o->distinct++;
            double p = (double)cnt[k] / (double)o->events;
            o->entropy -= p * log2(p);
        }
    qsort(reuse, nre, sizeof *reuse, cmp_u32);
    o->reuse_p50 = pct(reuse, nre, 0.5);
    o->reuse_p90 = pct(reuse, nre, 0.9);
    o->ws_mean = nwin ? (double)ws / (double)nwin : 0;
    free(cnt); free(reuse);
}

TH_TEST(test_multi_stats_pooled, "stats --all-runs: counts, distinct, entropy, warm/cold, reuse, ws pooled as counted over the events")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s --all-runs --window 16 -f csv -q", th_bin(), ONE), 0);
    char *csv = strdup(th_out());
    int rows = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "layer", 5)) continue;
        int layer, head, cape;
        unsigned long long ev, w, r, d, warm, cold;
        double used, H, Hn, hot, ws;
        unsigned p50, p90;
        int got = sscanf(line, "%d,%d,%d,%llu,%llu,%llu,%llu,%lf,%lf,%lf,%lf,%llu,%llu,%u,%u", &layer, &head, &cape,
                         &ev, &w, &r, &d, &used, &H, &Hn, &hot, &warm, &cold, &p50, &p90);
        CU_ASSERT_EQUAL_FATAL(got, 15);
        const char *lastc = strrchr(line, ',');
        ws = atof(lastc + 1);
        naive_head n;
        naive_stats(layer, head, 16, &n);
        CU_ASSERT_EQUAL(ev, n.events);
        CU_ASSERT_EQUAL(w, n.writes);
        CU_ASSERT_EQUAL(r, n.reads);
        CU_ASSERT_EQUAL(d, n.distinct);
        CU_ASSERT_EQUAL(warm, n.warm);
        CU_ASSERT_EQUAL(cold, n.cold);
        CU_ASSERT(fabs(H - n.entropy) <= 1e-5 * n.entropy);
        CU_ASSERT_EQUAL(p50, n.reuse_p50);
        CU_ASSERT_EQUAL(p90, n.reuse_p90);
        CU_ASSERT(fabs(ws - n.ws_mean) <= 1e-5 * n.ws_mean);
        rows++;
    }
    CU_ASSERT_EQUAL(rows, 16);
    free(csv);
}

/* ---- simulate: the concatenated stream's LRU is the runs' LRU summed ---- */

/* misses of `simulate TRACE SEL --policy lru --capacity C --scope S` */
static unsigned long long lru_misses(const char *trace, const char *sel, int cap, const char *scope)
{
    CU_ASSERT_EQUAL(th_run("%s simulate %s %s --policy lru --capacity %d --scope %s -f csv -q", th_bin(), trace,
                           sel, cap, scope), 0);
    const char *row = strchr(th_out(), '\n');
    unsigned long long acc = 0, hits = 0, misses = 0;
    int c;
    CU_ASSERT_FATAL(row && sscanf(row + 1, "lru,%d,%llu,%llu,%llu", &c, &acc, &hits, &misses) == 4);
    return misses;
}

TH_TEST(test_multi_simulate_lru_sum, "simulate --all-runs: LRU misses are the runs' own summed (a run's slots are its own keys)")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    static const char *const scopes[3] = { "model", "layer", "head" };
    static const int caps[3] = { 8, 200, 900 };
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3; c++) {
            if (s == 2 && caps[c] > 256) continue; /* above a head's M */
            unsigned long long sum = 0;
            for (int run = 1; run <= 3; run++) {
                char sel[32];
                snprintf(sel, sizeof sel, "--run %d", run);
                sum += lru_misses(ONE, sel, caps[c], scopes[s]);
            }
            CU_ASSERT_EQUAL(lru_misses(ONE, "--all-runs", caps[c], scopes[s]), sum);
        }
}

/* ---- export: the stream is the runs' own exports, renumbered ---- */

/* `export ONE --all-runs ARGS -o p1` and `export A B --all-runs ARGS -o
 * p2`, p1 and p2 the scratch paths n1 and n2. */
static void export_both(const char *args, const char *n1, const char *n2, char *p1, char *p2)
{
    snprintf(p1, 4096, "%s", th_path(n1));
    snprintf(p2, 4096, "%s", th_path(n2));
    CU_ASSERT_EQUAL(th_run("%s export %s --all-runs %s -o %s -q", th_bin(), ONE, args, p1), 0);
    CU_ASSERT_EQUAL(th_run("%s export %s %s --all-runs %s -o %s -q", th_bin(), A, B, args, p2), 0);
}

TH_TEST(test_multi_export_stream, "export --all-runs: each run's records, index, time and next shifted, run in the id's top bits")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s export %s --all-runs -f csv -o - -q", th_bin(), ONE), 0);
    char *all = strdup(th_out());
    char *line = strchr(all, '\n') + 1; /* past the header */
    unsigned long long index0 = 0, time0 = 0;
    for (int run = 1; run <= 3; run++) {
        CU_ASSERT_EQUAL_FATAL(th_run("%s sql %s \"SELECT n_tokens FROM runs WHERE run_id = %d\" -f csv -q", th_bin(),
                                     ONE, run), 0);
        unsigned long long ntok = strtoull(strchr(th_out(), '\n') + 1, NULL, 10);
        CU_ASSERT_EQUAL_FATAL(th_run("%s export %s --run %d -f csv -o - -q", th_bin(), ONE, run), 0);
        char *one = strdup(th_out()), *save = NULL;
        unsigned long long n = 0;
        for (char *l = strtok_r(strchr(one, '\n') + 1, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            unsigned long long idx, t, id, id2, idx2, t2;
            long long nx, nx2;
            int L, H, S, L2, H2, S2;
            char op, op2;
            CU_ASSERT_FATAL(sscanf(l, "%llu,%llu,%d,%d,%d,%c,%llu,%lld", &idx, &t, &L, &H, &S, &op, &id, &nx) == 8);
            CU_ASSERT_FATAL(sscanf(line, "%llu,%llu,%d,%d,%d,%c,%llu,%lld", &idx2, &t2, &L2, &H2, &S2, &op2, &id2,
                                   &nx2) == 8);
            CU_ASSERT_EQUAL(idx2, idx + index0);
            CU_ASSERT_EQUAL(t2, t + time0);
            CU_ASSERT(L2 == L && H2 == H && S2 == S && op2 == op);
            CU_ASSERT_EQUAL(id2, id | (unsigned long long)(run - 1) << 48);
            CU_ASSERT_EQUAL(nx2, nx < 0 ? -1 : nx + (long long)index0);
            line = strchr(line, '\n') + 1;
            n++;
        }
        free(one);
        index0 += n;
        time0 += ntok;
    }
    CU_ASSERT_EQUAL(*line, '\0');
    free(all);
    /* oracleGeneral: the same bytes from one file and from two */
    char o1[4096], o2[4096];
    export_both("", "multi_1.og", "multi_2.og", o1, o2);
    CU_ASSERT_EQUAL(th_run("cmp %s %s", o1, o2), 0);
    CU_ASSERT_EQUAL(th_run("test $(stat -c %%s %s) -eq $((24 * %llu))", o1, index0), 0);
    /* Parquet: the same event files; the runs table names each run's file */
    char d1[4096], d2[4096];
    export_both("-f parquet", "multi_pq1", "multi_pq2", d1, d2);
    CU_ASSERT_EQUAL(th_run("diff -r %s/events %s/events", d1, d2), 0);
    if (th_file_exists("tests/js/node_modules/@duckdb/node-api/package.json") && th_run("node --version") == 0) {
        CU_ASSERT_EQUAL(th_run("node tests/js/pq_query.mjs \"SELECT string_agg(run || ':' || regexp_replace(trace, "
                               "'.*/', '') || ':' || run_id, ' ' ORDER BY run) FROM read_parquet('%s/runs/runs.parquet')\"",
                               d2), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "1:multi_a.db:1 2:multi_b.db:1 3:multi_b.db:2"));
    }
}

/* cmd must exit 2 with one line on stderr holding needle. */
static void refused(const char *needle, const char *fmt, const char *a, const char *b, const char *c)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, fmt, th_bin(), a, b, c);
    CU_ASSERT_EQUAL(th_run("%s", cmd), 2);
    const char *e = th_err();
    CU_ASSERT_PTR_NOT_NULL(strstr(e, needle));
    CU_ASSERT_PTR_NOT_NULL(strchr(e, '\n'));
    CU_ASSERT_PTR_NULL(strchr(e, '\n') ? strchr(e, '\n') + 1 == e + strlen(e) ? NULL : strchr(e, '\n') : NULL);
    if (!strstr(e, needle)) fprintf(stderr, "\n%s -> %s", cmd, e);
}

TH_TEST(test_multi_refused, "several runs: another model, --warmup, --run with --all-runs: one line, exit 2, nothing written")
{
    CU_ASSERT_EQUAL_FATAL(make_traces(), 0);
    char d[4096];
    snprintf(d, sizeof d, "%s", th_path("multi_none"));
    refused("traces another model", "%s stats %s %s%s", A, OTHER, "");
    refused("traces another model", "%s simulate %s %s --policy lru --capacity 8%s", A, OTHER, "");
    refused("traces another model", "%s export %s %s -f csv -o %s", A, OTHER, d);
    refused("traces another model", "%s export %s %s -f parquet -o %s", OTHER, A, d);
    CU_ASSERT_FALSE(th_file_exists(d));
    refused("--warmup", "%s simulate %s %s --warmup 5 --capacity 8%s", A, B, "");
    refused("exclude each other", "%s stats %s %s --run 1 --all-runs%s", A, B, "");
    refused("larger than", "%s simulate %s %s --all-runs --scope head --capacity 769%s", A, B, "");
}

/* ---- many small runs in a few files, under a descriptor limit ---- */

enum { MANY_FILES = 3, SEEDS = 5, HEADS = 8 };
static char MANY[MANY_FILES][4096], SEED[4096];
static unsigned long long copies[SEEDS + 1];  /* runs of each seed over the files */

/* Run `to` of db, a copy of run `from` of the attached seed, every table's rows. */
static int copy_run(sqlite3 *db, int from, int to)
{
    static const char *const tables[] = { "runs", "tokens", "heads", "event_blocks", "prefill_chunks" };
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        char sql[512];
        snprintf(sql, sizeof sql, "CREATE TEMP TABLE c AS SELECT * FROM seed.%s WHERE run_id = %d; "
                 "UPDATE c SET run_id = %d; INSERT INTO main.%s SELECT * FROM c; DROP TABLE c;",
                 tables[t], from, to, tables[t]);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) return 1;
    }
    return 0;
}

/* SEED: five runs of a tiny model over short texts of different lengths;
 * MANY[f]: SEED's runs, then runs 6..100+f, each a copy of a seed run in
 * a rotating order (303 runs in all).  Made once. */
static int make_many(void)
{
    static int made = -1;
    if (made >= 0) return made;
    made = 1;
    char model[4096];
    snprintf(model, sizeof model, "%s", th_path("many_tiny.bin"));
    snprintf(SEED, sizeof SEED, "%s", th_path("many_seed.db"));
    if (th_run("%s init --config samples/configs/tiny.cfg -o %s -q", th_bin(), model)) return made;
    static const char *const text[SEEDS] = { "In the", "beginning God", "created the heaven and",
                                             "the earth. And the earth was", "without form, and void; and dark" };
    for (int s = 0; s < SEEDS; s++) {
        char p[64];
        snprintf(p, sizeof p, "many_p%d.txt", s);
        const char *pp = th_path(p);
        if (th_write_file(pp, text[s], strlen(text[s])) ||
            th_run("%s trace %s %s -o %s -q", th_bin(), model, th_path(p), SEED))
            return made;
        copies[s + 1] += MANY_FILES;
    }
    for (int f = 0; f < MANY_FILES; f++) {
        char name[64];
        snprintf(name, sizeof name, "many_%d.db", f);
        snprintf(MANY[f], sizeof MANY[f], "%s", th_path(name));
        if (th_run("cp %s %s", SEED, MANY[f])) return made;
        sqlite3 *db;
        char sql[4200];
        snprintf(sql, sizeof sql, "ATTACH '%s' AS seed; BEGIN", SEED);
        int ok = sqlite3_open(MANY[f], &db) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
        for (int k = SEEDS + 1; k <= 100 + f && ok; k++) {
            int s = (k * 7 + f) % SEEDS + 1;
            ok = !copy_run(db, s, k);
            copies[s]++;
        }
        ok = ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
        sqlite3_close(db);
        if (!ok) return made;
    }
    made = 0;
    return made;
}

/* Per head (layer * 4 + head of the tiny model): events, writes, reads,
 * warm and cold reads of a `stats ... -f csv` output, added times mult. */
static void add_stats(const char *csv, unsigned long long mult, unsigned long long sum[HEADS][5])
{
    const char *line = strchr(csv, '\n');
    int rows = 0;
    for (; line && line[1]; line = strchr(line + 1, '\n')) {
        int layer, head, cape;
        unsigned long long v[5], d, skip[2];
        double x[4];
        int got = sscanf(line + 1, "%d,%d,%d,%llu,%llu,%llu,%llu,%lf,%lf,%lf,%lf,%llu,%llu", &layer, &head, &cape,
                         &v[0], &v[1], &v[2], &d, &x[0], &x[1], &x[2], &x[3], &skip[0], &skip[1]);
        CU_ASSERT_EQUAL_FATAL(got, 13);
        CU_ASSERT_FATAL(layer >= 0 && layer < 2 && head >= 0 && head < 4);
        v[3] = skip[0];
        v[4] = skip[1];
        for (int k = 0; k < 5; k++) sum[layer * 4 + head][k] += mult * v[k];
        rows++;
    }
    CU_ASSERT_EQUAL(rows, HEADS);
}

TH_TEST(test_multi_many_runs, "303 runs in 3 files under ulimit -n 64: stats, simulate, export --all-runs equal each run computed alone, summed")
{
    CU_ASSERT_EQUAL_FATAL(make_many(), 0);
    char files[3 * 4096 + 8];
    snprintf(files, sizeof files, "%s %s %s", MANY[0], MANY[1], MANY[2]);
    unsigned long long total = 0;
    for (int s = 1; s <= SEEDS; s++) total += copies[s];
    CU_ASSERT_EQUAL_FATAL(total, 303);
    /* each seed run alone, times its copies */
    unsigned long long want[HEADS][5] = { { 0 } }, got[HEADS][5] = { { 0 } };
    unsigned long long want_miss[2] = { 0 }, want_events = 0;
    for (int s = 1; s <= SEEDS; s++) {
        CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s --run %d -f csv -q", th_bin(), SEED, s), 0);
        add_stats(th_out(), copies[s], want);
        CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --run %d --policy lru --capacity 8,64 --scope head -f csv -q",
                                     th_bin(), SEED, s), 0);
        unsigned long long acc = 0, hits = 0, miss[2] = { 0, 0 };
        int cap = 0;
        const char *row = strchr(th_out(), '\n');
        CU_ASSERT_FATAL(row && sscanf(row + 1, "lru,%d,%llu,%llu,%llu", &cap, &acc, &hits, &miss[0]) == 4);
        row = strchr(row + 1, '\n');
        CU_ASSERT_FATAL(row && sscanf(row + 1, "lru,%d,%llu,%llu,%llu", &cap, &acc, &hits, &miss[1]) == 4);
        want_miss[0] += copies[s] * miss[0];
        want_miss[1] += copies[s] * miss[1];
        want_events += copies[s] * acc;
    }
    /* all together, with 64 descriptors: the files' connections are shared
     * by their runs (one per run would need over 300) */
    CU_ASSERT_EQUAL_FATAL(th_run("ulimit -n 64 && %s stats %s --all-runs -f csv -q -j 2", th_bin(), files), 0);
    char *limited = strdup(th_out());
    add_stats(limited, 1, got);
    CU_ASSERT_EQUAL(memcmp(got, want, sizeof got), 0);
    CU_ASSERT_EQUAL(th_run("%s stats %s --all-runs -f csv -q -j 1", th_bin(), files), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), limited);  /* the limit changes nothing, nor the threads */
    free(limited);
    CU_ASSERT_EQUAL_FATAL(th_run("ulimit -n 64 && %s simulate %s --all-runs --policy lru --capacity 8,64 --scope head "
                                 "-f csv -q", th_bin(), files), 0);
    unsigned long long acc = 0, hits = 0, miss[2] = { 0, 0 };
    int cap = 0;
    const char *row = strchr(th_out(), '\n');
    CU_ASSERT_FATAL(row && sscanf(row + 1, "lru,%d,%llu,%llu,%llu", &cap, &acc, &hits, &miss[0]) == 4);
    CU_ASSERT_EQUAL(acc, want_events);
    row = strchr(row + 1, '\n');
    CU_ASSERT_FATAL(row && sscanf(row + 1, "lru,%d,%llu,%llu,%llu", &cap, &acc, &hits, &miss[1]) == 4);
    CU_ASSERT_EQUAL(miss[0], want_miss[0]);
    CU_ASSERT_EQUAL(miss[1], want_miss[1]);
    CU_ASSERT_EQUAL(th_run("ulimit -n 64 && %s export %s --all-runs -f csv -o - -q | wc -l", th_bin(), files), 0);
    CU_ASSERT_EQUAL(strtoull(th_out(), NULL, 10), want_events + 1);  /* + the header */
    char dir[4096], expect[128];
    snprintf(dir, sizeof dir, "%s", th_path("many_pq"));
    CU_ASSERT_EQUAL(th_run("ulimit -n 64 && %s export %s --all-runs -f parquet -o %s -j 2", th_bin(), files, dir), 0);
    snprintf(expect, sizeof expect, "export: 303 runs, %llu events,", want_events);
    if (!strstr(th_err(), expect)) fprintf(stderr, "\n%s", th_err());
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), expect));
}
