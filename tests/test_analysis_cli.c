/* test_analysis_cli.c — the analysis commands on a small hand-made trace
 * database: export round trip, simulate against a brute-force LRU, stats
 * counts, attribution through the database, and bad input (exit 2, one
 * line, no output file). */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "an_export.h"
#include "an_stream.h"
#include "rn_config.h"
#include "rn_rng.h"
#include "th.h"
#include "tr_writer.h"

#define NPOS 120
#define L 2
#define H 2
#define K 2
#define MS 16

typedef struct { int layer, head, pos, op; uint32_t slot[K]; float w[K]; } grp;
static grp G[NPOS * L * H * 2];
static int NG;
static char DB[4096];

static void config(rn_config *c)
{
    rn_config_default(c);
    c->n_layers = L; c->n_heads = H; c->d_p = 4; c->order = 2; c->top_k = K; c->d_v = 8;
    c->gamma = 0.5f; c->eps = 1e-3f;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 1;
}

/* Replay order (pos, layer, head, op): the order G is generated in. */
static int make_db(void)
{
    rn_config c;
    config(&c);
    rn_rng r;
    rn_rng_seed(&r, 8);
    NG = 0;
    for (int p = 0; p < NPOS; p++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++)
                for (int op = 0; op < 2; op++) {
                    grp *g = &G[NG++];
                    g->layer = l; g->head = h; g->pos = p; g->op = op;
                    g->slot[0] = (uint32_t)rn_rng_below(&r, MS);
                    g->slot[1] = (g->slot[0] + 1 + (uint32_t)rn_rng_below(&r, MS - 1)) % MS;
                    g->w[0] = (float)(0.3 + 0.6 * rn_rng_uniform(&r));
                    g->w[1] = (float)(0.05 + 0.2 * rn_rng_uniform(&r));
                }
    snprintf(DB, sizeof DB, "%s", th_path("an.db"));
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.name = "hand";
    meta.command = "trace";
    meta.cfg = &c;
    tr_writer *w;
    rn_error err;
    if (tr_writer_open(DB, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const rn_probe *pr = tr_writer_probe(w);
    /* per (layer, head) in increasing position, as the model reports */
    for (int p = 0; p < NPOS; p++) {
        tr_writer_add_token(w, p, 65 + p % 26, NULL, 0);
        for (int i = 0; i < NG; i++)
            if (G[i].pos == p) pr->access(pr->user, G[i].layer, G[i].head, p, G[i].op, K, G[i].slot, G[i].slot, G[i].w);
    }
    if (tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    return 0;
}

static int suite_init(void) { return make_db(); }

static uint64_t gid(const grp *g, int k) { return an_pack_id(g->layer, g->head, g->slot[k]); }

TH_TEST(test_export_roundtrip, "export round trip (oracleGeneral, CSV)")
{
    const char *og = th_path("an.og");
    CU_ASSERT_EQUAL_FATAL(th_run("%s export %s -o %s", th_bin(), DB, og), 0);
    size_t len;
    unsigned char *buf = (unsigned char *)th_read_file(og, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    size_t n = (size_t)NG * K;
    CU_ASSERT_EQUAL_FATAL(len, n * AN_OG_RECORD);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const grp *g = &G[i / K];
        an_og_record rec;
        an_og_decode(buf, i, &rec);
        int64_t next = -1;
        for (size_t j = i + 1; j < n && next < 0; j++)
            if (gid(&G[j / K], (int)(j % K)) == gid(g, (int)(i % K))) next = (int64_t)j + 1;
        if (rec.time != (uint32_t)g->pos || rec.obj_id != gid(g, (int)(i % K)) || rec.size != 36 ||
            rec.next != next)
            bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(buf);
    /* reads only, as CSV: one header plus one line per read */
    const char *csv = th_path("an.csv");
    CU_ASSERT_EQUAL(th_run("%s export %s --ops r -f csv -o %s", th_bin(), DB, csv), 0);
    char *t = th_read_file(csv, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(th_count_lines(t), 1 + NG / 2 * K);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "index,time,layer,head,slot,op,obj_id,next\n1,0,0,0,"));
    free(t);
    /* an empty selection still gets the CSV header */
    rn_config c;
    rn_config_default(&c);
    char *mem = NULL;
    size_t mlen = 0;
    FILE *f = open_memstream(&mem, &mlen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(an_export_write(f, AN_EXPORT_CSV, NULL, 0, &c, RN_OPS_BOTH, NULL, &err), RN_OK);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(mem, "index,time,layer,head,slot,op,obj_id,next\n");
    free(mem);
    /* a raised stop flag ends the write with RN_EINTR, before any row */
    volatile int stop = 1;
    mem = NULL;
    f = open_memstream(&mem, &mlen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(an_export_write(f, AN_EXPORT_CSV, NULL, 0, &c, RN_OPS_BOTH, &stop, &err), RN_EINTR);
    fclose(f);
    CU_ASSERT_EQUAL(mlen, 0);
    free(mem);
}

/* Brute-force LRU misses of capacity C in scope `scope` over op mask. */
static uint64_t brute_lru(int scope, int C, int ops)
{
    uint64_t misses = 0;
    for (int grp_id = 0; grp_id < (scope == 0 ? L * H : scope == 1 ? L : 1); grp_id++) {
        uint64_t cache[64];
        int n = 0;
        for (int i = 0; i < NG; i++) {
            const grp *g = &G[i];
            int gg = scope == 0 ? g->layer * H + g->head : scope == 1 ? g->layer : 0;
            if (gg != grp_id || !((ops >> g->op) & 1)) continue;
            for (int k = 0; k < K; k++) {
                uint64_t id = gid(g, k);
                int j = 0;
                while (j < n && cache[j] != id) j++;
                if (j == n) { misses++; if (n < C) n++; j = n - 1; }
                memmove(cache + 1, cache, sizeof *cache * (size_t)j);
                cache[0] = id;
            }
        }
    }
    return misses;
}

static uint64_t csv_misses(const char *out, const char *policy, int cap)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s,%d,", policy, cap);
    const char *p = strstr(out, key);
    if (!p) return UINT64_MAX;
    unsigned long long acc, hits, misses;
    if (sscanf(p + strlen(key), "%llu,%llu,%llu", &acc, &hits, &misses) != 3) return UINT64_MAX;
    return misses;
}

TH_TEST(test_simulate, "simulate equals brute-force LRU per scope")
{
    const char *scopes[] = { "head", "layer", "model" };
    for (int s = 0; s < 3; s++) {
        CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --scope %s --capacity 3,8 --policy lru,opt,arc --mrc -f csv",
                                     th_bin(), DB, scopes[s]), 0);
        CU_ASSERT_EQUAL(csv_misses(th_out(), "lru", 3), brute_lru(s, 3, 3));
        CU_ASSERT_EQUAL(csv_misses(th_out(), "lru", 8), brute_lru(s, 8, 3));
        CU_ASSERT_EQUAL(csv_misses(th_out(), "lru-exact", 8), brute_lru(s, 8, 3));
        CU_ASSERT(csv_misses(th_out(), "opt", 8) <= csv_misses(th_out(), "arc", 8));
    }
    CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --scope head --ops r --capacity 5 --policy lru -f csv",
                                 th_bin(), DB), 0);
    CU_ASSERT_EQUAL(csv_misses(th_out(), "lru", 5), brute_lru(0, 5, 2));
    CU_ASSERT_EQUAL(th_run("%s simulate %s --sweep -f json", th_bin(), DB), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"policy\": \"s3fifo\""));
    const char *mrc = th_path("mrc.csv");
    CU_ASSERT_EQUAL(th_run("%s simulate %s --scope head --capacity 4 --mrc-out %s", th_bin(), DB, mrc), 0);
    char *t = th_read_file(mrc, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(th_count_lines(t), 1 + MS);
    free(t);
}

static void expect_bad(const char *args, const char *needle);

TH_TEST(test_threads_option, "-j on every analysis command: simulate's and stats' output byte-identical on 1 and 3 threads; bad counts exit 2")
{
    char *one = NULL;
    const char *scopes[] = { "head", "model" };
    for (int s = 0; s < 2; s++) {
        for (int j = 1; j <= 3; j += 2) {
            CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --scope %s --policy lru,s3fifo,opt --capacity 3,8 --mrc -j %d",
                                         th_bin(), DB, scopes[s], j), 0);
            if (j == 1) one = strdup(th_out());
            else CU_ASSERT_STRING_EQUAL(th_out(), one);
        }
        free(one);
    }
    for (int j = 1; j <= 3; j += 2) {
        CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s -j %d", th_bin(), DB, j), 0);
        if (j == 1) one = strdup(th_out());
        else CU_ASSERT_STRING_EQUAL(th_out(), one);
    }
    free(one);
    CU_ASSERT_EQUAL(th_run("%s export %s --threads 2 -f csv -o %s", th_bin(), DB, th_path("j.csv")), 0);
    CU_ASSERT_EQUAL(th_run("%s attribute %s --layer 0 --head 0 --pos 3 -j 2", th_bin(), DB), 0);
    CU_ASSERT_EQUAL(th_run("%s plot mrc %s -j 2 -o %s", th_bin(), DB, th_path("j.png")), 0);
    char a[8192];
    const char *cmds[] = { "stats", "simulate", "export", "attribute", "plot mrc" };
    for (int i = 0; i < 5; i++) {
        snprintf(a, sizeof a, "%s %s -j 0 -o %s", cmds[i], DB, th_path("j0.out"));
        expect_bad(a, "--threads");
    }
}

TH_TEST(test_stats, "stats counts")
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s stats %s -f csv", th_bin(), DB), 0);
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 1 + L * H);
    /* layer 1 head 0: events and distinct slots by hand */
    int seen[MS] = { 0 }, distinct = 0, events = 0;
    for (int i = 0; i < NG; i++)
        if (G[i].layer == 1 && G[i].head == 0)
            for (int k = 0; k < K; k++) { events++; if (!seen[G[i].slot[k]]++) distinct++; }
    char want[64];
    snprintf(want, sizeof want, "\n1,0,0,%d,%d,%d,%d,", events, events / 2, events / 2, distinct);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), want));
    CU_ASSERT_EQUAL(th_run("%s stats %s -f json --layer 0", th_bin(), DB), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"cape\": true"));
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), DB), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "non-cape"));
}

/* Attribution through the database: the per-token coefficients from the
 * CLI equal a direct evaluation of the PDMA formula (stored weights are
 * float32, printed with 6 significant digits). */
TH_TEST(test_attribute, "attribute through the database")
{
    const int T = 57, layer = 1, head = 1;
    CU_ASSERT_EQUAL_FATAL(th_run("%s attribute %s --layer %d --head %d --pos %d --top 0 -f csv", th_bin(), DB,
                                 layer, head, T), 0);
    /* direct: for each read slot walk back the writes */
    double coef[NPOS] = { 0 };
    for (int i = 0; i < NG; i++) {
        const grp *rg = &G[i];
        if (rg->layer != layer || rg->head != head || rg->pos != T || rg->op != 1) continue;
        for (int k = 0; k < K; k++) {
            double P = 1, z = 0, part[NPOS] = { 0 };
            for (int j = NG - 1; j >= 0; j--) {
                const grp *wg = &G[j];
                if (wg->layer != layer || wg->head != head || wg->op != 0 || wg->pos > T) continue;
                for (int q = 0; q < K; q++)
                    if (wg->slot[q] == rg->slot[k]) {
                        part[wg->pos] += wg->w[q] * P;
                        z += wg->w[q] * P;
                        P *= pow(1.0 - wg->w[q], 0.5);
                    }
            }
            z += P / MS;
            for (int p = 0; p <= T; p++) coef[p] += rg->w[k] * part[p] / (z + 1e-3);
        }
    }
    int bad = 0, rows = 0;
    for (int p = 0; p <= T; p++) {
        if (coef[p] == 0) continue;
        char key[32];
        snprintf(key, sizeof key, "\n%d,", p);
        const char *s = strstr(th_out(), key);
        double got = s ? atof(s + strlen(key)) : -1;
        rows++;
        if (fabs(got - coef[p]) > 1e-5 * fabs(coef[p]) + 1e-7) bad++;
    }
    CU_ASSERT(rows > 3);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(th_count_lines(th_out()), 1 + rows);
    const char *mx = th_path("attr.csv");
    CU_ASSERT_EQUAL(th_run("%s attribute %s --layer 0 --head 1 --matrix -o %s", th_bin(), DB, mx), 0);
    char *t = th_read_file(mx, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(th_count_lines(t), 1 + NPOS);
    free(t);
}

static void expect_bad(const char *args, const char *needle)
{
    int rc = th_run("%s %s", th_bin(), args);
    if (rc != 2 || !strstr(th_err(), needle) || th_count_lines(th_err()) > 2)
        fprintf(stderr, "\n'%s' -> %d: %s", args, rc, th_err());
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), needle));
}

TH_TEST(test_bad_input, "bad input: exit 2, one line, no output")
{
    char a[8192];
    snprintf(a, sizeof a, "simulate %s --run 9", DB); expect_bad(a, "run");
    snprintf(a, sizeof a, "stats %s --layer 5", DB); expect_bad(a, "--layer");
    snprintf(a, sizeof a, "attribute %s --layer 0 --head 7 --pos 3", DB); expect_bad(a, "--head");
    snprintf(a, sizeof a, "attribute %s --layer 0 --head 0 --pos 999", DB); expect_bad(a, "--pos");
    snprintf(a, sizeof a, "simulate %s --capacity 0", DB); expect_bad(a, "--capacity");
    snprintf(a, sizeof a, "simulate %s --capacity 17 --scope head", DB); expect_bad(a, "--capacity");
    snprintf(a, sizeof a, "simulate %s --policy lru,belady --capacity 4", DB); expect_bad(a, "belady");
    snprintf(a, sizeof a, "simulate %s --scope galaxy", DB); expect_bad(a, "--scope");
    snprintf(a, sizeof a, "stats %s/missing.db", th_tmpdir()); expect_bad(a, "missing.db");
    snprintf(a, sizeof a, "export %s -f avro -o %s", DB, th_path("x.out")); expect_bad(a, "avro");
    /* an output that names the input trace is refused; the trace survives */
    snprintf(a, sizeof a, "export %s -o %s", DB, DB); expect_bad(a, "replace the input");
    snprintf(a, sizeof a, "attribute %s --layer 0 --head 0 --pos 3 -o %s", DB, DB); expect_bad(a, "replace the input");
    snprintf(a, sizeof a, "simulate %s --capacity 4 --mrc-out %s", DB, DB); expect_bad(a, "replace the input");
    CU_ASSERT_EQUAL(th_run("%s stats %s", th_bin(), DB), 0);
    snprintf(a, sizeof a, "export %s --layer 3 -o %s", DB, th_path("x.out")); expect_bad(a, "--layer");
    CU_ASSERT_FALSE(th_file_exists(th_path("x.out")));
    /* a run still marked running */
    const char *db2 = th_path("running.db");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp %s %s", DB, db2);
    CU_ASSERT_EQUAL_FATAL(th_run("%s", cmd), 0);
    sqlite3 *s;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db2, &s), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(s, "UPDATE runs SET status='running'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    snprintf(a, sizeof a, "simulate %s --capacity 4", db2); expect_bad(a, "running");
    snprintf(a, sizeof a, "export %s -o %s", db2, th_path("y.out")); expect_bad(a, "running");
    CU_ASSERT_FALSE(th_file_exists(th_path("y.out")));
    const char *cmds[] = { "stats", "simulate", "export", "attribute" };
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(th_run("%s %s --help", th_bin(), cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "usage: ramtrace"));
    }
}

TH_SUITE(analysis_cli, suite_init, NULL);
