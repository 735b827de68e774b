/* test_tiered.c — the tiered memory state (rn_state.h): bit-identical to
 * the dense store on random models (prefill and step, CAPE on and off,
 * budgets from one slot to all of them, every online policy); the state
 * file holds the dense state after a flush; the counters equal the
 * simulator's replay of the same accesses, in the library and through
 * `trace --chunk 1` then `simulate`; bad options are refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_cache.h"
#include "an_stream.h"
#include "rn_model.h"
#include "rn_params.h"
#include "rn_runtime.h"
#include "rn_statefile.h"
#include "th.h"

#define TT_FILE th_path("tiered.state")

/* The scopes in the order these tests cycle through them: model, layer,
 * head. */
static const int scope_cycle[3] = { RN_CACHE_SCOPE_MODEL, RN_CACHE_SCOPE_LAYER, RN_CACHE_SCOPE_HEAD };

static void tiny_config(rn_config *c, uint64_t cape0, uint64_t cape1, float gamma)
{
    rn_config_default(c);
    c->vocab_size = 300;
    c->d_model = 32;
    c->n_layers = 2;
    c->n_heads = 3;
    c->d_p = 3;
    c->order = 3;   /* M = 27: a few slots, so small budgets evict often */
    c->d_v = 6;
    c->top_k = 4;
    c->d_ff = 40;
    c->gamma = gamma;
    c->eps = 1e-4f;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = cape0;
    c->cape_mask[1] = cape1;
}

/* Larger-than-init address weights so that addresses differ across tokens. */
static void make_model(rn_model *m, const rn_config *c, uint64_t seed)
{
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, c, seed, &err), RN_OK);
    rn_tensor_desc d[64];
    int n = rn_params_count_tensors(c);
    rn_params_layout(c, d);
    for (int i = 0; i < n; i++)
        if (strstr(d[i].name, "q_proj") || strstr(d[i].name, "k_proj") || strstr(d[i].name, "embed"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] *= 40.0f;
}

enum { T_PRE = 23, T_GEN = 9 };

/* Prefill T_PRE tokens (all rows' logits) in chunks of `chunk`, then step
 * T_GEN tokens; out [T_PRE + T_GEN, V]. */
static int run_seq(const rn_model *m, const rn_state_opts *so, int chunk, float *out,
                   rn_state_counters *cnt, rn_runtime **keep)
{
    rn_error err;
    rn_runtime *rt;
    int rc = rn_runtime_create_state(m, chunk, so, &rt, &err);
    if (rc) { fprintf(stderr, "%s\n", err.msg); return rc; }
    int tok[T_PRE + T_GEN];
    for (int i = 0; i < T_PRE + T_GEN; i++) tok[i] = (i * 37 + 11) % m->cfg.vocab_size;
    const int V = m->cfg.vocab_size;
    /* twice: the second sequence after a reset must give the same result */
    for (int rep = 0; rep < 2 && !rc; rep++) {
        rn_runtime_reset(rt);
        rc = rn_prefill(rt, tok, T_PRE, out, 1, &err);
        for (int i = 0; i < T_GEN && !rc; i++) rc = rn_step(rt, tok[T_PRE + i], out + (size_t)(T_PRE + i) * V, &err);
    }
    if (rc) fprintf(stderr, "%s\n", err.msg);
    if (cnt) rn_runtime_state_counters(rt, cnt);
    if (keep) *keep = rt;
    else rn_runtime_free(rt);
    return rc;
}

/* TT_FILE's header and row directory (keys: [1024] at least, aligned);
 * 1 when the header is valid and the directory passes its checks. */
static int read_header_dir(int fd, rn_statefile_info *info, uint32_t *keys, size_t cap)
{
    char hb[RN_STATEFILE_DATA];
    rn_error err;
    return pread(fd, hb, sizeof hb, 0) == (ssize_t)sizeof hb && rn_statefile_decode(hb, info, NULL) &&
           info->dir_count <= cap && rn_statefile_read_dir(fd, TT_FILE, info, keys, &err) == RN_OK;
}

/* The file, after a flush, holds the dense state: its header says clean,
 * its row directory passes its checksum and names each key once, each
 * row it names (read at its position) equals the dense row, and every
 * other dense row is still the initial one (core/state/rn_statefile.h). */
static int file_matches(rn_runtime *dense, rn_runtime *tiered, const rn_config *c)
{
    rn_error err;
    if (rn_runtime_flush_state(tiered, &err)) return 0;
    int fd = open(TT_FILE, O_RDONLY);
    if (fd < 0) return 0;
    const int64_t M = rn_config_slots(c);
    const int dv = c->d_v;
    float row[64];
    rn_statefile_info info;
    uint64_t nk = (uint64_t)c->n_layers * c->n_heads * M;
    static uint32_t keys[1024] __attribute__((aligned(4096)));
    int64_t pos[1024];
    for (size_t i = 0; i < 1024; i++) pos[i] = -1;
    int ok = nk <= 1024 && read_header_dir(fd, &info, keys, 1024) && info.state == RN_STATEFILE_CLEAN &&
             info.n_keys == nk && info.shape == rn_statefile_shape(c);
    for (uint64_t p = 0; ok && p < info.dir_count; p++) {
        if (pos[keys[p]] >= 0) ok = 0; /* a key at two positions */
        pos[keys[p]] = (int64_t)p;
    }
    for (int l = 0; l < c->n_layers && ok; l++)
        for (int h = 0; h < c->n_heads; h++) {
            const rn_real *S, *z;
            if (rn_runtime_head_state(dense, l, h, &S, &z, &err)) { ok = 0; continue; }
            for (int64_t s = 0; s < M; s++) {
                uint64_t key = ((uint64_t)l * c->n_heads + h) * M + s;
                int initial = z[s] == (float)(1.0 / (double)M);
                for (int i = 0; i < dv; i++) initial &= S[s * dv + i] == 0;
                /* a key not in the directory is the initial row (what the
                 * file holds elsewhere is not read: rows of a run before) */
                if (pos[key] < 0) { ok &= initial; continue; }
                if (pread(fd, row, sizeof(float) * (dv + 1), (off_t)(RN_STATEFILE_DATA + pos[key] * info.row_bytes)) !=
                    (ssize_t)(sizeof(float) * (dv + 1))) { ok = 0; continue; }
                if (memcmp(row, S + s * dv, sizeof(float) * dv) || row[dv] != z[s]) ok = 0;
            }
        }
    close(fd);
    return ok;
}

TH_TEST(test_tiered_bit_identical, "tiered state equals dense, bit for bit (policies, budgets, CAPE, chunks)")
{
    const char *pols[] = { "lru", "clock", "fifo", "lfu", "arc", "s3fifo" };
    const uint64_t cape[][2] = { { 0, 0 }, { 5, 2 } };
    const float gammas[] = { 1.0f, 0.5f };
    const uint64_t rows[] = { 1, 3, 40, 100, 1u << 20 }; /* budgets in slot rows; the last holds all */
    const int chunks[] = { 1, 7, 64 };
    int bad = 0, files_bad = 0, runs = 0;
    for (int ci = 0; ci < 2; ci++) {
        rn_config c;
        tiny_config(&c, cape[ci][0], cape[ci][1], gammas[ci]);
        rn_model m;
        make_model(&m, &c, 5 + ci);
        const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
        float *ref = malloc(nl * 4), *got = malloc(nl * 4);
        for (int k = 0; k < 3; k++) {
            rn_runtime *dense;
            CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, chunks[k], ref, NULL, &dense), RN_OK);
            for (int p = 0; p < 6; p++)
                for (int b = 0; b < 5; b++) {
                    /* the budget is per cache: one for the model, a layer or a head */
                    /* page cache: synchronous (the default), threads with read-ahead, threads without */
                    rn_state_opts so = { rows[b] * 4 * (c.d_v + 1) + (b & 1), TT_FILE, pols[p], 0, scope_cycle[b % 3], 0,
                                         (p + b + k) % 3 == 2, (p + b + k) % 3 ? RN_STATE_IO_THREADS : RN_STATE_IO_AUTO, 0 };
                    rn_runtime *rt = NULL;
                    rn_state_counters cnt;
                    memset(got, 0xff, nl * 4);
                    int rc = run_seq(&m, &so, chunks[k], got, &cnt, &rt);
                    CU_ASSERT_EQUAL(rc, RN_OK);
                    runs++;
                    if (rc || memcmp(ref, got, nl * 4)) bad++;
                    uint64_t acc = 2ull * (T_PRE + T_GEN) * c.n_layers * c.n_heads * c.top_k;
                    CU_ASSERT_EQUAL(cnt.accesses, acc);
                    CU_ASSERT_EQUAL(cnt.hits + cnt.misses, acc);
                    if (b == 4) { CU_ASSERT_EQUAL(cnt.bytes_read, 0); CU_ASSERT_EQUAL(cnt.evictions, 0); }
                    if (b == 0) CU_ASSERT(cnt.bytes_read > 0 && cnt.bytes_written > 0);
                    if (!file_matches(dense, rt, &c)) files_bad++;
                    rn_runtime_free(rt);
                }
            rn_runtime_free(dense);
        }
        free(ref); free(got);
        rn_model_free(&m);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(files_bad, 0);
    CU_ASSERT_EQUAL(runs, 2 * 3 * 6 * 5);
    unlink(TT_FILE);
}

/* ---- counters against the simulator ---- */

typedef struct {
    tr_event *ev;
    size_t n, cap;
} ev_rec;

static void rec_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    ev_rec *r = user;
    for (int j = 0; j < k && r->n < r->cap; j++)
        r->ev[r->n++] = (tr_event){ .pos = pos, .slot = slot[j], .addr = addr[j], .weight = weight[j],
                                    .layer = (uint16_t)layer, .head = (uint16_t)head, .op = (uint8_t)op,
                                    .rank = (uint16_t)j };
}

TH_TEST(test_tiered_counters_simulate, "tiered hits and misses equal simulate's, per model, layer and head (step order)")
{
    rn_config c;
    tiny_config(&c, 3, 4, 0.7f);
    rn_model m;
    make_model(&m, &c, 11);
    const char *pols[] = { "lru", "clock", "fifo", "lfu", "arc", "s3fifo" };
    const uint64_t rows[] = { 1, 2, 7, 30, 90, 162 };
    int bad = 0;
    for (int sc = 0; sc < 3; sc++)
    for (int p = 0; p < 6; p++)
        for (int b = 0; b < 6; b++) {
            rn_state_opts so = { rows[b] * 4 * (c.d_v + 1), TT_FILE, pols[p], 0, scope_cycle[sc], 0, 0, 0, 0 };
            rn_error err;
            rn_runtime *rt;
            CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 1, &so, &rt, &err), RN_OK);
            ev_rec r = { malloc(sizeof(tr_event) * 20000), 0, 20000 };
            rn_probe pr = { .user = &r, .access = rec_access };
            rn_runtime_set_probe(rt, &pr);
            int tok[40];
            for (int i = 0; i < 40; i++) tok[i] = (i * 53 + 7) % c.vocab_size;
            CU_ASSERT_EQUAL(rn_prefill(rt, tok, 30, NULL, 0, &err), RN_OK);
            for (int i = 30; i < 40; i++) CU_ASSERT_EQUAL(rn_step(rt, tok[i], NULL, &err), RN_OK);
            rn_state_counters cnt;
            CU_ASSERT_EQUAL(rn_runtime_state_counters(rt, &cnt), 1);
            an_streams ss;
            CU_ASSERT_EQUAL_FATAL(an_streams_build(r.ev, r.n, &c, scope_cycle[sc], RN_OPS_BOTH, &ss, &err), RN_OK);
            CU_ASSERT_EQUAL(cnt.caches, sc == 0 ? 1u : sc == 1 ? (uint64_t)c.n_layers : (uint64_t)c.n_layers * c.n_heads);
            an_sim_result res = { 0 };
            for (int i = 0; i < ss.n; i++)
                CU_ASSERT_EQUAL(an_simulate(&ss.s[i], rn_policy_find(pols[p]), cnt.capacity, 0, NULL, &res, &err), RN_OK);
            if (res.hits != cnt.hits || res.misses != cnt.misses || res.accesses != cnt.accesses) {
                bad++;
                fprintf(stderr, "%s cap %llu: tiered %llu/%llu, simulate %llu/%llu\n", pols[p],
                        (unsigned long long)cnt.capacity, (unsigned long long)cnt.hits,
                        (unsigned long long)cnt.misses, (unsigned long long)res.hits,
                        (unsigned long long)res.misses);
            }
            an_streams_free(&ss);
            free(r.ev);
            rn_runtime_free(rt);
        }
    CU_ASSERT_EQUAL(bad, 0);
    rn_model_free(&m);
    unlink(TT_FILE);
}

/* The runtime's own order: the probe reports each forward call's accesses
 * layer by layer, head by head, position by position (rn_probe.h), which is
 * the order the tiered store accessed them in.  So a stream per cache, in
 * the probe's order, keyed by the store's own (layer·H + head)·M + slot,
 * replayed by the simulator, must give the store's counters: for prefill in
 * chunks of 1, 7 and 64 rows followed by steps. */
TH_TEST(test_tiered_counters_chunk_order, "tiered hits and misses equal simulate's in the runtime's chunk order")
{
    rn_config c;
    tiny_config(&c, 3, 4, 0.7f);
    rn_model m;
    make_model(&m, &c, 12);
    const char *pols[] = { "lru", "clock", "fifo", "lfu", "arc", "s3fifo" };
    const uint64_t rows[] = { 2, 30, 90 };
    const int chunks[] = { 1, 7, 64 };
    const int64_t M = rn_config_slots(&c), H = c.n_heads;
    int bad = 0, differs = 0;
    uint32_t *key = malloc(sizeof *key * 20000);
    for (int ci = 0; ci < 3; ci++)
        for (int sc = 0; sc < 3; sc++)
            for (int p = 0; p < 6; p++)
                for (int b = 0; b < 3; b++) {
                    rn_state_opts so = { rows[b] * 4 * (c.d_v + 1), TT_FILE, pols[p], 0, scope_cycle[sc], 0, 0, 0, 0 };
                    rn_error err;
                    rn_runtime *rt;
                    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, chunks[ci], &so, &rt, &err), RN_OK);
                    ev_rec r = { malloc(sizeof(tr_event) * 20000), 0, 20000 };
                    rn_probe pr = { .user = &r, .access = rec_access };
                    rn_runtime_set_probe(rt, &pr);
                    int tok[80];
                    for (int i = 0; i < 80; i++) tok[i] = (i * 53 + 7) % c.vocab_size;
                    CU_ASSERT_EQUAL(rn_prefill(rt, tok, 70, NULL, 0, &err), RN_OK);
                    for (int i = 70; i < 80; i++) CU_ASSERT_EQUAL(rn_step(rt, tok[i], NULL, &err), RN_OK);
                    rn_state_counters cnt;
                    CU_ASSERT_EQUAL(rn_runtime_state_counters(rt, &cnt), 1);
                    CU_ASSERT_EQUAL_FATAL(r.n < r.cap, 1);
                    /* one stream per cache: model, layer or head, in probe order */
                    int64_t G = sc == 0 ? 1 : sc == 1 ? c.n_layers : c.n_layers * H;
                    int64_t gkeys = c.n_layers * H * M / G;
                    an_sim_result res = { 0 }, step = { 0 };
                    for (int64_t g = 0; g < G; g++) {
                        size_t n = 0;
                        for (size_t i = 0; i < r.n; i++) {
                            int64_t k = ((int64_t)r.ev[i].layer * H + r.ev[i].head) * M + r.ev[i].slot;
                            if (k / gkeys == g) key[n++] = (uint32_t)(k - g * gkeys);
                        }
                        an_stream st = an_stream_from_keys(key, n, NULL);
                        CU_ASSERT_EQUAL(an_simulate(&st, rn_policy_find(pols[p]), cnt.capacity, 0, NULL, &res, &err),
                                        RN_OK);
                    }
                    /* the step order of the same accesses (an_streams_build) */
                    an_streams ss;
                    CU_ASSERT_EQUAL_FATAL(an_streams_build(r.ev, r.n, &c, sc == 0 ? RN_CACHE_SCOPE_MODEL : sc == 1 ?
                                                           RN_CACHE_SCOPE_LAYER : RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
                    for (int i = 0; i < ss.n; i++)
                        an_simulate(&ss.s[i], rn_policy_find(pols[p]), cnt.capacity, 0, NULL, &step, &err);
                    an_streams_free(&ss);
                    if (res.hits != cnt.hits || res.misses != cnt.misses || res.accesses != cnt.accesses) {
                        bad++;
                        fprintf(stderr, "chunk %d scope %d %s cap %llu: tiered %llu/%llu, simulate %llu/%llu\n",
                                chunks[ci], sc, pols[p], (unsigned long long)cnt.capacity,
                                (unsigned long long)cnt.hits, (unsigned long long)cnt.misses,
                                (unsigned long long)res.hits, (unsigned long long)res.misses);
                    }
                    if (step.hits != cnt.hits) differs++;
                    CU_ASSERT(ci > 0 || step.hits == cnt.hits); /* chunk 1: the step's order */
                    free(r.ev);
                    rn_runtime_free(rt);
                }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(differs > 0); /* the order matters for chunks of 7 and 64 (so the check above has teeth) */
    free(key);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_refusals, "tiered state: bad options are refused with the option's name")
{
    rn_config c;
    tiny_config(&c, 0, 0, 1.0f);
    rn_model m;
    make_model(&m, &c, 1);
    rn_error err;
    rn_runtime *rt = NULL;
    struct { rn_state_opts o; const char *word; } bad[] = {
        { { 1000, NULL, NULL, 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "--state-file" },
        { { 1000, TT_FILE, "opt", 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "--state-policy" },
        { { 1000, TT_FILE, "bogus", 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "bogus" },
        { { 10, TT_FILE, NULL, 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "--state-budget" },
        { { 1000, "/nonexistent-dir/x.state", NULL, 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "--state-file" },
        { { 0, TT_FILE, NULL, 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 }, "--state-file" },
        { { 1000, TT_FILE, NULL, 0, 7, 0, 0, 0, 0 }, "--state-scope" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_NOT_EQUAL(rn_runtime_create_state(&m, 4, &bad[i].o, &rt, &err), RN_OK);
        CU_ASSERT_PTR_NULL(rt);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, bad[i].word));
    }
    /* interventions and head state need the dense store */
    rn_state_opts so = { 1000, TT_FILE, NULL, 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 };
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    const rn_real *S, *z;
    CU_ASSERT_EQUAL(rn_runtime_head_state(rt, 0, 0, &S, &z, &err), RN_EINPUT);
    rn_runtime_free(rt);
    rn_model_free(&m);
    unlink(TT_FILE);
}

/* The first data row of a CSV output (after its header), "a,b,c,..." */
static const char *csv_row(const char *out)
{
    const char *nl = strchr(out, '\n');
    return nl ? nl + 1 : "";
}

TH_TEST(test_tiered_cli_trace_simulate, "trace --chunk 1 with a state budget: counters recorded equal simulate's")
{
    const char *in = th_path("in.txt"), *db = th_path("t.db"), *sf = th_path("cli.state");
    char inb[512], dbb[512], sfb[512];
    snprintf(inb, sizeof inb, "%s", in);
    snprintf(dbb, sizeof dbb, "%s", db);
    snprintf(sfb, sizeof sfb, "%s", sf);
    CU_ASSERT_EQUAL_FATAL(th_write_verses(inb, 4), 0);
    const char *pols[] = { "lru", "clock", "s3fifo", "arc" };
    const char *budgets[] = { "3000", "40K" };
    const char *scopes[] = { "model", "head", "layer", "model" }; /* by policy */
    int run = 0;
    for (int p = 0; p < 4; p++)
        for (int b = 0; b < 2; b++) {
            CU_ASSERT_EQUAL_FATAL(th_run("%s trace samples/kjv.bin %s -o %s --chunk 1 --state-budget %s "
                                         "--state-file %s --state-policy %s --state-scope %s -j 1",
                                         th_bin(), inb, dbb, budgets[b], sfb, pols[p], scopes[p]), 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "state: "));
            run++;
            CU_ASSERT_EQUAL_FATAL(th_run("%s sql -F csv %s \"SELECT capacity, hits, misses, chunk FROM "
                                         "state_counters WHERE run_id = %d AND scope = '%s'\"", th_bin(), dbb, run, scopes[p]), 0);
            unsigned long long cap = 0, hits = 0, misses = 0;
            int chunk = 0;
            CU_ASSERT_EQUAL_FATAL(sscanf(csv_row(th_out()), "%llu,%llu,%llu,%d", &cap, &hits, &misses, &chunk), 4);
            CU_ASSERT_EQUAL(chunk, 1);
            CU_ASSERT(misses > 0 && hits > 0);
            CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --run %d --scope %s --policy %s --capacity %llu -f csv",
                                         th_bin(), dbb, run, scopes[p], pols[p], cap), 0);
            char pol[32];
            unsigned long long scap = 0, acc = 0, shits = 0, smisses = 0;
            CU_ASSERT_EQUAL_FATAL(sscanf(csv_row(th_out()), "%31[^,],%llu,%llu,%llu,%llu", pol, &scap, &acc,
                                         &shits, &smisses), 5);
            CU_ASSERT_EQUAL(scap, cap);
            CU_ASSERT_EQUAL(shits, hits);
            CU_ASSERT_EQUAL(smisses, misses);
        }
}

/* The chunks a traced run records, and simulate --order run replaying them:
 * run (prompt + generated tokens) and trace with --chunk 1, 7 and 64. */
TH_TEST(test_tiered_cli_chunk_order, "run/trace --chunk 1, 7, 64 with a state budget: simulate replays the recorded chunks")
{
    const char *db = th_path("c.db"), *sf = th_path("c.state"), *in = th_path("c.txt");
    char dbb[512], sfb[512], inb[512];
    snprintf(dbb, sizeof dbb, "%s", db);
    snprintf(sfb, sizeof sfb, "%s", sf);
    snprintf(inb, sizeof inb, "%s", in);
    CU_ASSERT_EQUAL_FATAL(th_write_verses(inb, 150), 0); /* 150 bytes: two whole chunks of 64 */
    const int chunks[] = { 1, 7, 64 };
    const char *pols[] = { "lru", "arc", "s3fifo" };
    const char *scopes[] = { "model", "layer", "model" };
    int run = 0, step_differs = 0;
    for (int ci = 0; ci < 3; ci++)
        for (int p = 0; p < 3; p++)
            for (int cmd = 0; cmd < 2; cmd++) {
                if (cmd == 0) {
                    CU_ASSERT_EQUAL_FATAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 20 --seed 5 "
                                                 "--chunk %d --trace %s --state-budget 20K --state-file %s "
                                                 "--state-policy %s --state-scope %s -q", th_bin(), chunks[ci],
                                                 dbb, sfb, pols[p], scopes[p]), 0);
                } else {
                    CU_ASSERT_EQUAL_FATAL(th_run("%s trace samples/kjv.bin %s -o %s --chunk %d --state-budget 8K "
                                                 "--state-file %s --state-policy %s --state-scope %s -j 1 -q",
                                                 th_bin(), inb, dbb, chunks[ci], sfb, pols[p], scopes[p]), 0);
                }
                run++;
                /* no chunk recorded before the runs of 7: the table does not exist yet */
                CU_ASSERT_EQUAL_FATAL(th_run("%s sql -F csv %s \"SELECT capacity, hits, misses, %s FROM "
                                             "state_counters WHERE run_id = %d\"", th_bin(), dbb,
                                             chunks[ci] == 1 ? "0" : "(SELECT count(*) FROM prefill_chunks "
                                             "WHERE run_id = state_counters.run_id AND n = state_counters.chunk)", run), 0);
                unsigned long long cap = 0, hits = 0, misses = 0;
                int nch = -1;
                CU_ASSERT_EQUAL_FATAL(sscanf(csv_row(th_out()), "%llu,%llu,%llu,%d", &cap, &hits, &misses, &nch), 4);
                /* the prompt (157 tokens) and the input hold whole chunks */
                CU_ASSERT(chunks[ci] == 1 || nch >= 1);
                for (int order = 0; order < 2; order++) {
                    CU_ASSERT_EQUAL_FATAL(th_run("%s simulate %s --run %d --scope %s --policy %s --capacity %llu "
                                                 "-f csv%s", th_bin(), dbb, run, scopes[p], pols[p], cap,
                                                 order ? " --order step" : " --order run"), 0);
                    char pol[32];
                    unsigned long long scap = 0, acc = 0, shits = 0, smisses = 0;
                    CU_ASSERT_EQUAL_FATAL(sscanf(csv_row(th_out()), "%31[^,],%llu,%llu,%llu,%llu", pol, &scap,
                                                 &acc, &shits, &smisses), 5);
                    if (order == 0) {
                        CU_ASSERT_EQUAL(shits, hits);
                        CU_ASSERT_EQUAL(smisses, misses);
                    } else if (chunks[ci] == 1) {
                        CU_ASSERT_EQUAL(shits, hits);
                    } else
                        step_differs += shits != hits;
                }
            }
    CU_ASSERT(step_differs > 0);
    CU_ASSERT_EQUAL(th_run("%s simulate %s --order chunky", th_bin(), dbb), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--order"));
    unlink(sfb);
}

TH_TEST(test_tiered_cli_run, "run with a state budget prints what the dense run prints; bad options exit 2")
{
    const char *sf = th_path("run.state");
    char sfb[512], dense[8192];
    snprintf(sfb, sizeof sfb, "%s", sf);
    CU_ASSERT_EQUAL_FATAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 60 --seed 3", th_bin()), 0);
    snprintf(dense, sizeof dense, "%s", th_out());
    const char *pols[] = { "lru", "fifo", "lfu", "s3fifo" };
    const char *io[] = { "", "--state-io sync", "--state-io threads", "--state-io auto" };
    for (int p = 0; p < 4; p++) {
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 60 --seed 3 --state-budget 20K "
                               "--state-file %s --state-policy %s %s", th_bin(), sfb, pols[p], io[p]), 0);
        CU_ASSERT_STRING_EQUAL(th_out(), dense);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "state: "));
    }
    const char *bad[][2] = {
        { "--state-budget 20K", "--state-file" },
        { "--state-file %s", "--state-budget" },
        { "--state-budget 0 --state-file %s", "--state-budget" },
        { "--state-budget 1T7 --state-file %s", "--state-budget" },
        { "--state-budget 20K --state-file %s --state-policy opt", "--state-policy" },
        { "--state-budget 20K --state-file %s --state-policy nope", "--state-policy" },
        { "--state-budget 20K --state-file %s --intervene 'ablate-head 0.0'", "--intervene" },
        { "--state-budget 20K --state-file %s --device cuda", "cuda" },
        { "--state-budget 20K --state-file %s --state-scope slot", "--state-scope" },
        { "--state-budget 20K --state-file %s --state-io uring", "--state-io" },
        { "--state-budget 20K --state-file /nonexistent-dir/x.state", "--state-file" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char opts[1024];
        snprintf(opts, sizeof opts, bad[i][0], sfb);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 %s", th_bin(), opts), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), bad[i][1]));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    }
}

TH_TEST(test_tiered_direct, "tiered state with O_DIRECT equals dense (skipped where the file system refuses O_DIRECT)")
{
    rn_config c;
    tiny_config(&c, 6, 1, 0.5f);
    rn_model m;
    make_model(&m, &c, 21);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *got = malloc(nl * 4);
    CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, 5, ref, NULL, NULL), RN_OK);
    rn_state_opts so = { 10 * 4 * (c.d_v + 1), TT_FILE, "clock", 1, RN_CACHE_SCOPE_HEAD, 0, 0, 0, 0 };
    rn_error err;
    rn_runtime *rt;
    if (rn_runtime_create_state(&m, 5, &so, &rt, &err) == RN_EINPUT && strstr(err.msg, "O_DIRECT")) {
        fprintf(stderr, "(O_DIRECT refused here: %s) ", err.msg);
    } else {
        rn_runtime_free(rt);
        rn_state_counters cnt;
        CU_ASSERT_EQUAL(run_seq(&m, &so, 5, got, &cnt, NULL), RN_OK);
        CU_ASSERT_EQUAL(memcmp(ref, got, nl * 4), 0);
        /* a row takes one block of the file's O_DIRECT alignment (512 on most disks) */
        int fd = open(TT_FILE, O_RDONLY);
        uint32_t al = fd >= 0 ? rn_statefile_dio_align(fd) : 0;
        if (fd >= 0) close(fd);
        CU_ASSERT(al == 512 || al == 1024 || al == 2048 || al == 4096);
        CU_ASSERT_EQUAL(cnt.row_bytes, al);
        CU_ASSERT(cnt.bytes_read > 0 && cnt.bytes_read % al == 0);
    }
    free(ref); free(got);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_direct_memory, "the memory check sizes O_DIRECT frames by the disk's alignment: a 1 GiB budget of 260-byte rows is not counted as 4096-byte rows")
{
    rn_config c;
    tiny_config(&c, 0, 0, 1.0f);
    c.d_v = 64;   /* 260-byte rows */
    c.d_p = 4;
    c.order = 11; /* 6 · 4^11 keys: more than the budget's rows */
    unlink(TT_FILE);
    /* the path form, before the file exists, is its directory's device's */
    uint32_t al = rn_statefile_dio_align_path(TT_FILE);
    CU_ASSERT(al == 512 || al == 1024 || al == 2048 || al == 4096);
    int fd = open(TT_FILE, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(rn_statefile_dio_align(fd), al);
    close(fd);
    CU_ASSERT_EQUAL(rn_statefile_dio_align_path(TT_FILE), al);
    unlink(TT_FILE);
    CU_ASSERT_EQUAL(rn_statefile_dio_align_path("/nonexistent-dir/x.state"), 4096);

    const uint64_t budget = 1ull << 30, rows = budget / 260;
    rn_state_opts page = { .budget = budget, .file = TT_FILE, .policy = "lru", .scope = RN_CACHE_SCOPE_MODEL };
    rn_state_opts direct = page;
    direct.direct = 1;
    /* the padding of each frame (264 bytes through the page cache: 260 and
     * the row's checksum), and at most the fixed AIO and read-ahead buffers
     * more (a few MiB) */
    double pad = (double)rows * (double)(((264 + al - 1) / al) * al - 264);
    double diff = rn_state_bytes(&c, &direct) - rn_state_bytes(&c, &page);
    CU_ASSERT(diff >= pad);
    CU_ASSERT(diff <= pad + 64.0 * (1 << 20));
    /* on a 512-byte disk: 521 bytes a frame, its policy id, key map and
     * directory share about 100 more: about 2.4 times the budget (counted
     * with 4096-byte frames before: 16 times) */
    if (al == 512) CU_ASSERT(rn_state_bytes(&c, &direct) < 3.0 * (double)budget);
}

/* The header of TT_FILE: its state (RN_STATEFILE_*), or 0 when unreadable. */
static uint32_t file_state(uint64_t *generation)
{
    char hb[RN_STATEFILE_DATA];
    rn_statefile_info info;
    int fd = open(TT_FILE, O_RDONLY);
    if (fd < 0) return 0;
    int ok = pread(fd, hb, sizeof hb, 0) == (ssize_t)sizeof hb && rn_statefile_decode(hb, &info, NULL);
    close(fd);
    if (ok && generation) *generation = info.generation;
    return ok ? info.state : 0;
}

TH_TEST(test_tiered_file_header, "state file: dirty while written, clean after a flush, closed at the end; a dirty or foreign file is refused")
{
    rn_config c;
    tiny_config(&c, 1, 0, 1.0f);
    rn_model m;
    make_model(&m, &c, 31);
    rn_state_opts so = { 5 * 4 * (c.d_v + 1), TT_FILE, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 };
    rn_error err;
    rn_runtime *rt;
    unlink(TT_FILE);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    uint64_t gen = 99;
    CU_ASSERT_EQUAL(file_state(&gen), RN_STATEFILE_DIRTY);
    CU_ASSERT_EQUAL(gen, 0);
    int tok[20];
    for (int i = 0; i < 20; i++) tok[i] = (i * 31 + 3) % c.vocab_size;
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, 10, NULL, 0, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_flush_state(rt, &err), RN_OK);
    CU_ASSERT_EQUAL(file_state(&gen), RN_STATEFILE_CLEAN);
    CU_ASSERT_EQUAL(gen, 1);
    /* a step with 5 rows in memory evicts dirty rows: the header says dirty again */
    CU_ASSERT_EQUAL(rn_step(rt, tok[10], NULL, &err), RN_OK);
    CU_ASSERT_EQUAL(file_state(&gen), RN_STATEFILE_DIRTY);
    CU_ASSERT_EQUAL(gen, 1);
    rn_runtime_free(rt);
    CU_ASSERT_EQUAL(file_state(NULL), RN_STATEFILE_CLOSED);
    /* closed: replaced freely */
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    /* a clean file is replaced too */
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_flush_state(rt, &err), RN_OK);
    rn_runtime_free(rt);
    CU_ASSERT_EQUAL(file_state(NULL), RN_STATEFILE_CLEAN);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    /* a dirty header (what a killed run leaves) is refused, naming the file,
     * and the file is left alone; discard replaces it */
    char hb[RN_STATEFILE_DATA];
    rn_statefile_info info = { RN_STATEFILE_DIRTY, 3, rn_statefile_shape(&c), 28, 162, 0, 0, 0, 0 };
    int fd = open(TT_FILE, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(rn_statefile_write(fd, TT_FILE, &info, hb, &err), RN_OK);
    close(fd);
    rt = NULL;
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(rt);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, TT_FILE));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "dirty"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "after 3 flushes"));
    CU_ASSERT_EQUAL(file_state(NULL), RN_STATEFILE_DIRTY);
    so.discard = 1;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    so.discard = 0;
    /* a file that is not a state file (or a corrupt header) is not replaced */
    CU_ASSERT_EQUAL_FATAL(th_write_file(TT_FILE, "precious data\n", 14), 0);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a ramtrace state file"));
    size_t len = 0;
    char *txt = th_read_file(TT_FILE, &len);
    CU_ASSERT(txt && len == 14 && !memcmp(txt, "precious data\n", 14));
    free(txt);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_cli_killed, "a run killed mid-way (SIGKILL) leaves its state file flagged: the next run refuses it (exit 2); page cache and O_DIRECT")
{
    const char *sf = th_path("killed.state");
    char sfb[512];
    snprintf(sfb, sizeof sfb, "%s", sf);
    const char *modes[] = { "", "--state-direct" }; /* threads; native AIO */
    for (int d = 0; d < 2; d++) {
        unlink(sfb);
        /* wait for the file's header, let it run a little, then SIGKILL */
        int rc = th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 100000 --state-budget 4K --state-file %s %s "
                        "-q >/dev/null 2>&1 & pid=$!; i=0; while [ ! -s %s ] && [ $i -lt 200 ]; do sleep 0.05; "
                        "i=$((i+1)); done; sleep 0.5; kill -9 $pid; wait $pid", th_bin(), sfb, modes[d], sfb);
        CU_ASSERT_EQUAL(rc, 128 + 9);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 5 --state-budget 4K --state-file %s %s",
                               th_bin(), sfb, modes[d]), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), sfb));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "dirty"));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 5 --state-budget 4K --state-file %s "
                               "--state-discard %s", th_bin(), sfb, modes[d]), 0);
        /* a normal end leaves it closed: the next run replaces it */
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 5 --state-budget 4K --state-file %s %s",
                               th_bin(), sfb, modes[d]), 0);
    }
    unlink(sfb);
}

TH_TEST(test_tiered_prefetch, "read-ahead changes neither outputs nor counters, and serves misses (page cache and O_DIRECT)")
{
    rn_config c;
    tiny_config(&c, 5, 2, 0.9f);
    rn_model m;
    make_model(&m, &c, 41);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *got = malloc(nl * 4);
    const char *pols[] = { "lru", "arc", "s3fifo" };
    const uint64_t rows[] = { 3, 20, 60 };
    int served = 0;
    for (int direct = 0; direct < 2; direct++)
        for (int p = 0; p < 3; p++)
            for (int b = 0; b < 3; b++)
                for (int chunk = 1; chunk <= 9; chunk += 8) {
                    /* page cache: the threads' read-ahead (the default there is synchronous) */
                    rn_state_opts so = { rows[b] * 4 * (c.d_v + 1), TT_FILE, pols[p], direct, RN_CACHE_SCOPE_MODEL, 0, 1,
                                         direct ? RN_STATE_IO_AUTO : RN_STATE_IO_THREADS, 0 };
                    rn_state_counters off, on;
                    int rc = run_seq(&m, &so, chunk, ref, &off, NULL);
                    if (direct && rc) { fprintf(stderr, "(O_DIRECT refused here) "); goto done; }
                    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
                    so.no_prefetch = 0;
                    CU_ASSERT_EQUAL_FATAL(run_seq(&m, &so, chunk, got, &on, NULL), RN_OK);
                    CU_ASSERT_EQUAL(memcmp(ref, got, nl * 4), 0);
                    CU_ASSERT_EQUAL(off.prefetched, 0);
                    CU_ASSERT(on.prefetched <= on.misses);
                    served += on.prefetched > 0;
                    on.prefetched = 0;
                    CU_ASSERT_EQUAL(memcmp(&on, &off, sizeof on), 0);
                }
done:
    CU_ASSERT(served > 0);
    free(ref); free(got);
    rn_model_free(&m);
    unlink(TT_FILE);
}

/* One sequence (prefill in chunks of `chunk`, then steps) on a fresh file,
 * flushed at the end; logits into out, the whole file into *file. */
static int run_flushed(const rn_model *m, const rn_state_opts *so, int chunk, float *out, rn_state_counters *cnt,
                       char **file, size_t *len)
{
    rn_error err;
    rn_runtime *rt;
    unlink(TT_FILE);
    int rc = rn_runtime_create_state(m, chunk, so, &rt, &err);
    if (rc) return rc;
    int tok[T_PRE + T_GEN];
    for (int i = 0; i < T_PRE + T_GEN; i++) tok[i] = (i * 37 + 11) % m->cfg.vocab_size; /* as run_seq */
    const int V = m->cfg.vocab_size;
    rc = rn_prefill(rt, tok, T_PRE, out, 1, &err);
    for (int i = 0; i < T_GEN && !rc; i++) rc = rn_step(rt, tok[T_PRE + i], out + (size_t)(T_PRE + i) * V, &err);
    if (!rc) rc = rn_runtime_flush_state(rt, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    rn_runtime_state_counters(rt, cnt);
    rn_runtime_free(rt);
    *file = th_read_file(TT_FILE, len);
    return rc;
}

TH_TEST(test_tiered_aio, "O_DIRECT with native AIO, with threads and synchronous: the same logits as dense, the same counters, byte-identical flushed files")
{
    rn_config c;
    tiny_config(&c, 3, 1, 0.8f);
    rn_model m;
    make_model(&m, &c, 51);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *a = malloc(nl * 4), *t = malloc(nl * 4);
    const char *pols[] = { "lru", "arc", "s3fifo", "clock" };
    const uint64_t rows[] = { 1, 3, 17, 60 }; /* 1 row: every miss evicts the row just written */
    int runs = 0, aio_runs = 0;
    for (int chunk = 1; chunk <= 64; chunk *= 8) {
        CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, chunk, ref, NULL, NULL), RN_OK);
        for (int p = 0; p < 4; p++)
            for (int b = 0; b < 4; b++) {
                rn_state_opts so = { rows[b] * 4 * (c.d_v + 1), TT_FILE, pols[p], 1, scope_cycle[b % 3], 0, p & 1,
                                     RN_STATE_IO_AUTO, 0 };
                rn_state_counters ca, ct;
                char *fa = NULL, *ft = NULL;
                size_t la = 0, lt = 0;
                int rc = run_flushed(&m, &so, chunk, a, &ca, &fa, &la);
                if (rc == RN_EINPUT) { fprintf(stderr, "(O_DIRECT refused here) "); free(fa); goto done; }
                CU_ASSERT_EQUAL(rc, RN_OK);
                /* threads, and (every other run) no threads at all */
                so.io = (p + b) & 1 ? RN_STATE_IO_SYNC : RN_STATE_IO_THREADS;
                CU_ASSERT_EQUAL(run_flushed(&m, &so, chunk, t, &ct, &ft, &lt), RN_OK);
                runs++;
                aio_runs += ca.aio;
                CU_ASSERT_EQUAL(ct.aio, 0);
                CU_ASSERT_EQUAL(ca.aio_errno, 0);
                CU_ASSERT_EQUAL(memcmp(ref, a, nl * 4), 0);
                CU_ASSERT_EQUAL(memcmp(ref, t, nl * 4), 0);
                /* counters: every one the same but which path did the I/O and
                 * how many rows came from a read started ahead */
                CU_ASSERT(ca.prefetched <= ca.misses);
                if (p & 1) CU_ASSERT_EQUAL(ca.prefetched + ct.prefetched, 0); /* --state-no-prefetch */
                ca.aio = 0;
                ca.prefetched = ct.prefetched = 0;
                CU_ASSERT_EQUAL(memcmp(&ca, &ct, sizeof ca), 0);
                CU_ASSERT(ca.bytes_written > 0 && (b > 0 || ca.bytes_read > 0));
                CU_ASSERT(fa && ft && la == lt && la > RN_STATEFILE_DATA);
                if (fa && ft && la == lt) CU_ASSERT_EQUAL(memcmp(fa, ft, la), 0);
                if (fa && ft && la == lt && memcmp(fa, ft, la)) {
                    size_t i = 0;
                    while (fa[i] == ft[i]) i++;
                    fprintf(stderr, "chunk %d %s rows %d: files differ at %zu of %zu\n", chunk, pols[p], (int)rows[b], i, la);
                }
                free(fa);
                free(ft);
            }
    }
    CU_ASSERT_EQUAL(runs, 3 * 4 * 4);
    CU_ASSERT_EQUAL(aio_runs, runs); /* io_setup works here (else the fallback test below says why) */
    /* two sequences with a reset between them (the file's blocks kept): the
     * flushed file still holds the dense state */
    for (int p = 0; p < 2; p++) {
        rn_state_opts so = { 2 * 4 * (c.d_v + 1), TT_FILE, pols[p], 1, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_AUTO, 0 };
        rn_runtime *dense, *rt;
        CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, 7, ref, NULL, &dense), RN_OK);
        CU_ASSERT_EQUAL_FATAL(run_seq(&m, &so, 7, a, NULL, &rt), RN_OK);
        CU_ASSERT_EQUAL(memcmp(ref, a, nl * 4), 0);
        CU_ASSERT(file_matches(dense, rt, &c));
        rn_runtime_free(rt);
        rn_runtime_free(dense);
    }
done:
    free(ref); free(a); free(t);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_aio_fallback, "io_setup refused (RAMTRACE_AIO_FAIL): O_DIRECT falls back to threads with a one-line note, same outputs")
{
    rn_config c;
    tiny_config(&c, 0, 2, 1.0f);
    rn_model m;
    make_model(&m, &c, 61);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *got = malloc(nl * 4);
    CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, 3, ref, NULL, NULL), RN_OK);
    rn_state_opts so = { 4 * 4 * (c.d_v + 1), TT_FILE, "lru", 1, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_AUTO, 0 };
    rn_state_counters cnt;
    setenv("RAMTRACE_AIO_FAIL", "1", 1);
    int rc = run_seq(&m, &so, 3, got, &cnt, NULL);
    unsetenv("RAMTRACE_AIO_FAIL");
    if (rc == RN_EINPUT) {
        fprintf(stderr, "(O_DIRECT refused here) ");
    } else {
        CU_ASSERT_EQUAL(rc, RN_OK);
        CU_ASSERT_EQUAL(cnt.aio, 0);
        CU_ASSERT_EQUAL(cnt.aio_errno, EAGAIN);
        CU_ASSERT(cnt.bytes_written > 0);
        CU_ASSERT_EQUAL(memcmp(ref, got, nl * 4), 0);
        /* without the variable: AIO, no note */
        CU_ASSERT_EQUAL(run_seq(&m, &so, 3, got, &cnt, NULL), RN_OK);
        CU_ASSERT_EQUAL(cnt.aio, 1);
        CU_ASSERT_EQUAL(cnt.aio_errno, 0);
        /* the command: same output, one note line before the counters */
        const char *sf = th_path("fb.state");
        char sfb[512], dense[8192];
        snprintf(sfb, sizeof sfb, "%s", sf);
        CU_ASSERT_EQUAL_FATAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 30 --seed 4", th_bin()), 0);
        snprintf(dense, sizeof dense, "%s", th_out());
        CU_ASSERT_EQUAL(th_run("RAMTRACE_AIO_FAIL=1 %s run samples/kjv.bin samples/prompts/kjv.txt -n 30 --seed 4 "
                               "--state-budget 4K --state-file %s --state-direct", th_bin(), sfb), 0);
        CU_ASSERT_STRING_EQUAL(th_out(), dense);
        const char *note = strstr(th_err(), "ramtrace: note: --state-direct: native AIO unavailable (io_setup: ");
        CU_ASSERT_PTR_NOT_NULL(note);
        CU_ASSERT_PTR_NULL(note ? strstr(note + 1, "ramtrace: note:") : NULL);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "bytes, O_DIRECT): "));
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 30 --seed 4 --state-budget 4K "
                               "--state-file %s --state-direct", th_bin(), sfb), 0);
        CU_ASSERT_STRING_EQUAL(th_out(), dense);
        CU_ASSERT_PTR_NULL(strstr(th_err(), "note:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "bytes, O_DIRECT, AIO): "));
        unlink(sfb);
    }
    free(ref); free(got);
    rn_model_free(&m);
    unlink(TT_FILE);
}

/* A model with 4096 slots a head (24,576 keys), so that a run writes back
 * thousands of distinct rows. */
static void wide_config(rn_config *c)
{
    tiny_config(c, 0, 0, 1.0f);
    c->d_p = 4;
    c->order = 6;
}

TH_TEST(test_tiered_disk_use, "a state file uses about rows written x row bytes of disk (packed rows, preallocated in chunks), page cache and O_DIRECT")
{
    rn_config c;
    wide_config(&c);
    rn_model m;
    make_model(&m, &c, 71);
    enum { T = 120 };
    int tok[T];
    for (int i = 0; i < T; i++) tok[i] = (i * 71 + 5) % c.vocab_size;
    const uint64_t nk = (uint64_t)c.n_layers * c.n_heads * rn_config_slots(&c);
    uint32_t *keys = aligned_alloc(4096, nk * 4 + 4096);
    int direct_ran = 0;
    for (int direct = 0; direct < 2; direct++) {
        rn_state_opts so = { 3 * 4 * (c.d_v + 1), TT_FILE, "lru", direct, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_AUTO, 0 };
        rn_error err;
        rn_runtime *rt;
        unlink(TT_FILE);
        int rc = rn_runtime_create_state(&m, 8, &so, &rt, &err);
        if (direct && rc == RN_EINPUT && strstr(err.msg, "O_DIRECT")) { fprintf(stderr, "(O_DIRECT refused here) "); break; }
        CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
        CU_ASSERT_EQUAL(rn_prefill(rt, tok, T - 20, NULL, 0, &err), RN_OK);
        for (int i = T - 20; i < T; i++) CU_ASSERT_EQUAL(rn_step(rt, tok[i], NULL, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_runtime_flush_state(rt, &err), RN_OK);
        rn_state_counters cnt;
        rn_runtime_state_counters(rt, &cnt);
        rn_runtime_free(rt);
        int fd = open(TT_FILE, O_RDONLY);
        CU_ASSERT_FATAL(fd >= 0);
        rn_statefile_info info;
        struct stat sb;
        CU_ASSERT_FATAL(read_header_dir(fd, &info, keys, nk) && !fstat(fd, &sb));
        close(fd);
        /* every write-back is counted; the directory holds each key written once */
        const uint64_t rows = info.dir_count, stride = cnt.row_bytes;
        CU_ASSERT(rows > 2000 && rows <= cnt.bytes_written / stride);
        /* disk: the rows (in whole append blocks), the header and the
         * directory, plus less than one preallocation chunk; the layout
         * before (row at key · stride, one 4 KiB block each under O_DIRECT)
         * needed rows · 4096 */
        uint64_t used = (uint64_t)sb.st_blocks * 512;
        uint64_t apb = stride < 4096 ? 4096 / stride : 1;
        uint64_t data = (rows + apb - 1) / apb * apb * stride, dir = (rows * 4 + 4095) / 4096 * 4096;
        CU_ASSERT(used >= rows * stride);
        CU_ASSERT(used <= RN_STATEFILE_DATA + data + dir + RN_STATE_PREALLOC + 4096);
        if (direct) CU_ASSERT(used < rows * 4096 / 2);
        /* the apparent size too: the data region is packed, not L·H·M rows */
        CU_ASSERT((uint64_t)sb.st_size <= RN_STATEFILE_DATA + data + dir + RN_STATE_PREALLOC + 4096);
        if (direct) CU_ASSERT((uint64_t)sb.st_size < RN_STATEFILE_DATA + nk * stride);
        CU_ASSERT_EQUAL(info.dir_off % 4096, 0);
        CU_ASSERT(info.dir_off >= RN_STATEFILE_DATA + data);
        if (direct) direct_ran = 1;
    }
    (void)direct_ran;
    free(keys);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_append_block, "fresh rows still in the unfinished append block are read back right (budgets of 1 and 3 rows; every I/O path, page cache and O_DIRECT)")
{
    rn_config c;
    tiny_config(&c, 2, 1, 0.9f);
    rn_model m;
    make_model(&m, &c, 81);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *got = malloc(nl * 4);
    const int io[] = { RN_STATE_IO_AUTO, RN_STATE_IO_SYNC, RN_STATE_IO_THREADS };
    int runs = 0;
    for (int chunk = 1; chunk <= 8; chunk += 7) {
        rn_runtime *dense;
        CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, chunk, ref, NULL, &dense), RN_OK);
        for (int direct = 0; direct < 2; direct++)
            for (int b = 1; b <= 3; b += 2)
                for (int i = 0; i < 3; i++) {
                    rn_state_opts so = { (uint64_t)b * 4 * (c.d_v + 1), TT_FILE, "lru", direct, RN_CACHE_SCOPE_MODEL, 0, 0, io[i], 0 };
                    rn_state_counters cnt;
                    rn_runtime *rt = NULL;
                    unlink(TT_FILE);
                    int rc = run_seq(&m, &so, chunk, got, &cnt, &rt);
                    if (direct && rc == RN_EINPUT) continue; /* O_DIRECT refused here */
                    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
                    runs++;
                    CU_ASSERT_EQUAL(memcmp(ref, got, nl * 4), 0);
                    CU_ASSERT(cnt.bytes_read > 0);
                    /* the page cache's append block holds 146 rows of 28
                     * bytes, nearly all the 162 keys (most misses read
                     * their row from it); O_DIRECT's 8 rows of 512 */
                    CU_ASSERT(file_matches(dense, rt, &c));
                    rn_runtime_free(rt);
                }
        rn_runtime_free(dense);
    }
    CU_ASSERT(runs >= 12);
    free(ref); free(got);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_file_versions, "a state file of format version 1, or one whose row directory fails its checksum, is refused (exit 2) and left alone; --state-discard replaces it")
{
    rn_config c;
    tiny_config(&c, 1, 1, 1.0f);
    rn_model m;
    make_model(&m, &c, 91);
    rn_state_opts so = { 4 * 4 * (c.d_v + 1), TT_FILE, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 0 };
    rn_error err;
    rn_runtime *rt = NULL;
    /* version 1's header: the same magic, version 1, its fields */
    char v1[RN_STATEFILE_DATA];
    memset(v1, 0, sizeof v1);
    memcpy(v1, "RNSTATE", 8);
    uint32_t ver = 1, clean = RN_STATEFILE_CLEAN;
    memcpy(v1 + 8, &ver, 4);
    memcpy(v1 + 12, &clean, 4);
    CU_ASSERT_EQUAL_FATAL(th_write_file(TT_FILE, v1, sizeof v1), 0);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(rt);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, TT_FILE));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "format version 1"));
    size_t len = 0;
    char *txt = th_read_file(TT_FILE, &len);
    CU_ASSERT(txt && len == sizeof v1 && !memcmp(txt, v1, sizeof v1));
    free(txt);
    /* the command: one line, exit 2; --state-discard replaces it */
    char sfb[512];
    snprintf(sfb, sizeof sfb, "%s", th_path("v1.state"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(sfb, v1, sizeof v1), 0);
    CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 --state-budget 4K --state-file %s",
                           th_bin(), sfb), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "format version 1"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 --state-budget 4K --state-file %s "
                           "--state-discard", th_bin(), sfb), 0);
    unlink(sfb);
    so.file = TT_FILE; /* th_path's buffer held v1.state */
    so.discard = 1;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    so.discard = 0;
    /* a clean file: accepted while its directory is intact; one flipped
     * byte of the directory and it is refused */
    int tok[30];
    for (int i = 0; i < 30; i++) tok[i] = (i * 13 + 1) % c.vocab_size;
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, 30, NULL, 0, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_flush_state(rt, &err), RN_OK);
    rn_runtime_free(rt);
    static uint32_t keys[1024] __attribute__((aligned(4096)));
    rn_statefile_info info;
    int fd = open(TT_FILE, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(read_header_dir(fd, &info, keys, 1024));
    CU_ASSERT_EQUAL(info.state, RN_STATEFILE_CLEAN);
    CU_ASSERT(info.dir_count > 10);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK); /* intact: replaced */
    CU_ASSERT_EQUAL(rn_runtime_flush_state(rt, &err), RN_OK);
    rn_runtime_free(rt);
    /* the run above flushed an empty state: write the earlier header back
     * (its directory is still where it was: nothing was written since) */
    char hb[RN_STATEFILE_DATA];
    CU_ASSERT_EQUAL(rn_statefile_write(fd, TT_FILE, &info, hb, &err), RN_OK);
    CU_ASSERT_FATAL(read_header_dir(fd, &info, keys, 1024));
    uint32_t k3 = keys[3] ^ 1u;
    CU_ASSERT_EQUAL(pwrite(fd, &k3, 4, (off_t)(info.dir_off + 12)), 4);
    CU_ASSERT_EQUAL(rn_statefile_read_dir(fd, TT_FILE, &info, keys, &err), RN_EINPUT);
    close(fd);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "row directory fails its checksum"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, TT_FILE));
    so.discard = 1;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    rn_runtime_free(rt);
    rn_model_free(&m);
    unlink(TT_FILE);
}

/* One piece of a sequence on TT_FILE: resume (or start) it, prefill or
 * step tokens [from, to) with their logits into out, flush unless last. */
static int resume_piece(const rn_model *m, rn_state_opts so, int chunk, int resume, int from, int to, int prefill,
                        int flush, float *out)
{
    rn_error err;
    rn_runtime *rt;
    so.resume = resume;
    int rc = rn_runtime_create_state(m, chunk, &so, &rt, &err);
    if (rc) { fprintf(stderr, "%s\n", err.msg); return rc; }
    int tok[T_PRE + T_GEN];
    for (int i = 0; i < T_PRE + T_GEN; i++) tok[i] = (i * 37 + 11) % m->cfg.vocab_size; /* as run_seq */
    const int V = m->cfg.vocab_size;
    if (rn_runtime_pos(rt) != from) rc = RN_EINTERNAL;
    if (!rc && prefill) rc = rn_prefill(rt, tok + from, to - from, out + (size_t)from * V, 1, &err);
    for (int i = from; i < to && !rc && !prefill; i++) rc = rn_step(rt, tok[i], out + (size_t)i * V, &err);
    if (!rc && flush) rc = rn_runtime_flush_state(rt, &err);
    if (rc) fprintf(stderr, "resume piece %d..%d: %s\n", from, to, rc == RN_EINTERNAL ? "position" : err.msg);
    rn_runtime_free(rt);
    return rc;
}

TH_TEST(test_tiered_resume, "a sequence resumed from clean state files (flushed, closed, reopened twice) is bit-identical to the dense runtime's; a file not flushed clean, of another model or row size, is refused")
{
    rn_config c;
    tiny_config(&c, 4, 1, 0.8f);
    rn_model m;
    make_model(&m, &c, 101);
    const size_t nl = (size_t)(T_PRE + T_GEN) * c.vocab_size;
    float *ref = malloc(nl * 4), *got = malloc(nl * 4);
    const char *pols[] = { "lru", "arc" };
    const uint64_t rows[] = { 3, 40 };
    int runs = 0;
    for (int chunk = 1; chunk <= 7; chunk += 6) {
        CU_ASSERT_EQUAL_FATAL(run_seq(&m, NULL, chunk, ref, NULL, NULL), RN_OK);
        for (int direct = 0; direct < 2; direct++)
            for (int p = 0; p < 2; p++)
                for (int b = 0; b < 2; b++) {
                    rn_state_opts so = { rows[b] * 4 * (c.d_v + 1), TT_FILE, pols[p], direct, RN_CACHE_SCOPE_MODEL, 0, 0,
                                         (p + b) & 1 ? RN_STATE_IO_SYNC : RN_STATE_IO_AUTO, 0 };
                    unlink(TT_FILE);
                    memset(got, 0xff, nl * 4);
                    int rc = resume_piece(&m, so, chunk, 0, 0, T_PRE, 1, 1, got);
                    if (direct && rc == RN_EINPUT) continue; /* O_DIRECT refused here */
                    CU_ASSERT_EQUAL(rc, RN_OK);
                    CU_ASSERT_EQUAL(resume_piece(&m, so, chunk, 1, T_PRE, T_PRE + 4, 0, 1, got), RN_OK);
                    CU_ASSERT_EQUAL(resume_piece(&m, so, chunk, 1, T_PRE + 4, T_PRE + T_GEN, 0, 0, got), RN_OK);
                    CU_ASSERT_EQUAL(memcmp(ref, got, nl * 4), 0);
                    runs++;
                }
    }
    CU_ASSERT(runs >= 8);
    /* refusals: the last piece ended without a flush (closed) */
    rn_state_opts so = { 3 * 4 * (c.d_v + 1), TT_FILE, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, 0, 1 };
    rn_error err;
    rn_runtime *rt = NULL;
    unlink(TT_FILE);
    CU_ASSERT_EQUAL(resume_piece(&m, so, 4, 0, 0, 10, 1, 0, got), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--state-resume"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not flushed clean"));
    CU_ASSERT_EQUAL(file_state(NULL), RN_STATEFILE_CLOSED); /* left alone */
    CU_ASSERT_EQUAL(resume_piece(&m, so, 4, 0, 0, 10, 1, 1, got), RN_OK); /* now clean */
    rn_config c2 = c;
    c2.order = 4;
    rn_model m2;
    make_model(&m2, &c2, 102);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m2, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "another model"));
    rn_model_free(&m2);
    so.direct = 1;
    int rc = rn_runtime_create_state(&m, 4, &so, &rt, &err);
    CU_ASSERT_EQUAL(rc, RN_EINPUT);
    CU_ASSERT(strstr(err.msg, "another size") || strstr(err.msg, "O_DIRECT"));
    so.direct = 0;
    so.discard = 1;
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--state-resume"));
    CU_ASSERT_EQUAL(file_state(NULL), RN_STATEFILE_CLEAN);
    free(ref); free(got);
    rn_model_free(&m);
    unlink(TT_FILE);
}

TH_TEST(test_tiered_cli_resume, "run --state-save then run --state-resume with the rest of the prompt prints what one dense run of the whole prompt prints; bad combinations exit 2")
{
    char sf[512], p1[512], p2[512], p12[512], dense[8192];
    snprintf(sf, sizeof sf, "%s", th_path("resume.state"));
    snprintf(p1, sizeof p1, "%s", th_path("p1.txt"));
    snprintf(p2, sizeof p2, "%s", th_path("p2.txt"));
    snprintf(p12, sizeof p12, "%s", th_path("p12.txt"));
    size_t len = 0;
    char *text = th_read_file("samples/prompts/kjv.txt", &len);
    CU_ASSERT_FATAL(text && len > 100);
    CU_ASSERT_EQUAL_FATAL(th_write_file(p1, text, 60), 0);
    CU_ASSERT_EQUAL_FATAL(th_write_file(p2, text + 60, len - 60), 0);
    CU_ASSERT_EQUAL_FATAL(th_write_file(p12, text, len), 0);
    free(text);
    CU_ASSERT_EQUAL_FATAL(th_run("%s run samples/kjv.bin %s -n 40 --seed 5", th_bin(), p12), 0);
    snprintf(dense, sizeof dense, "%s", th_out());
    const char *modes[] = { "", "--state-direct" };
    for (int d = 0; d < 2; d++) {
        unlink(sf);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin %s -n 0 --state-budget 4K --state-file %s --state-save %s",
                               th_bin(), p1, sf, modes[d]), 0);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin %s -n 40 --seed 5 --state-budget 4K --state-file %s "
                               "--state-resume %s", th_bin(), p2, sf, modes[d]), 0);
        CU_ASSERT_STRING_EQUAL(th_out(), dense);
        /* that run did not save: its file is closed, not resumable */
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin %s -n 4 --state-budget 4K --state-file %s --state-resume %s",
                               th_bin(), p2, sf, modes[d]), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--state-resume"));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    }
    const char *bad[][2] = {
        { "--state-resume", "--state-resume" },
        { "--state-save", "--state-save" },
        { "--state-budget 4K --state-file %s --state-resume --trace x.db", "--trace" },
        { "--state-budget 4K --state-file %s --state-resume --state-discard", "--state-discard" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char opts[1024];
        snprintf(opts, sizeof opts, bad[i][0], sf);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin %s -n 2 %s", th_bin(), p2, opts), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), bad[i][1]));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    }
    unlink(sf);
}

TH_TEST(test_tiered_plot, "plot tiered draws a bench CSV; a CSV without its columns or with a bad number exits 2 naming it")
{
    char csv[512], png[512], bad[512];
    snprintf(csv, sizeof csv, "%s", th_path("b.csv"));
    snprintf(png, sizeof png, "%s", th_path("b.png"));
    snprintf(bad, sizeof bad, "%s", th_path("bad.csv"));
    const char *ok = "budget_bytes,policy,slots,predicted_hit,hit,tokens,reads,tok_s_cache,tok_s_direct,"
                     "tok_s_direct_noprefetch,read_rate\n"
                     "8388608,lru,32263,35.46,35.46,457,6600,210,70,60,11019\n"
                     "2097152,lru,8065,27.99,27.99,457,15309,200,50,40,11019\n"
                     "33554432,lru,129055,41.12,41.12,457,0,300,230,220,11019\n"
                     "2097152,s3fifo,8065,29.99,29.99,457,14000,190,52,41,11019\n";
    CU_ASSERT_EQUAL_FATAL(th_write_file(csv, ok, strlen(ok)), 0);
    CU_ASSERT_EQUAL(th_run("%s plot tiered %s -o %s", th_bin(), csv, png), 0);
    size_t len = 0;
    char *img = th_read_file(png, &len);
    CU_ASSERT(img && len > 1000 && !memcmp(img, "\x89PNG", 4));
    free(img);
    const char *nocol = "budget_bytes,policy,tokens\n1,lru,3\n";
    CU_ASSERT_EQUAL_FATAL(th_write_file(bad, nocol, strlen(nocol)), 0);
    CU_ASSERT_EQUAL(th_run("%s plot tiered %s -o %s", th_bin(), bad, png), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no column reads"));
    char badnum[1024];
    snprintf(badnum, sizeof badnum, "%.*s2097152,lru,8065,27.99,27.99,457,many,200,50,40,11019\n",
             (int)(strchr(ok, '\n') - ok + 1), ok);
    CU_ASSERT_EQUAL_FATAL(th_write_file(bad, badnum, strlen(badnum)), 0);
    CU_ASSERT_EQUAL(th_run("%s plot tiered %s -o %s", th_bin(), bad, png), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "bad.csv:2: reads 'many'"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
}
