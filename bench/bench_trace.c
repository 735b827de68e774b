/* bench_trace.c — what tracing costs.
 *
 *  1. Sink throughput: the same synthetic event stream (KJV model shape:
 *     4 layers x 4 heads x 2 ops x K=8 per token) pushed through the trace
 *     writer's probe into SQLite, against appending packed binary records to
 *     a file (the ceiling).  Events/s, median of 3, for each journal and
 *     synchronous setting (tr_schema.h TR_DURABILITY_*), with its ratio to
 *     the setting used before WAL.
 *  2. Bytes per event on disk before and after the run's index.
 *  3. Wall time of a prefill of data/kjv.txt (first 64 KiB) by a random model
 *     of samples/configs/kjv.cfg, traced (every layer and head) vs untraced,
 *     median of 3, and their ratio.
 *
 * Usage: build/bench/bench_trace [TOKENS_PER_SYNTHETIC_RUN [sink]]
 * (`sink` skips part 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rn_model.h"
#include "rn_runtime.h"
#include "rn_tokenizer.h"
#include "tr_schema.h"
#include "tr_writer.h"
#include "bench_util.h"

#define REPS 3

static int64_t file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

static int ignore_key(void *u, const char *k, const char *v, rn_error *e)
{
    (void)u; (void)k; (void)v; (void)e;
    return RN_OK;
}

/* Deterministic synthetic accesses for one (layer, head, pos, op). */
static void synth(int l, int h, int t, int op, int K, uint32_t M, uint32_t *slot, uint32_t *addr,
                  float *w)
{
    uint32_t x = (uint32_t)(l * 7919 + h * 104729 + t * 2654435761u + op * 40503u);
    for (int i = 0; i < K; i++) {
        x = x * 1664525u + 1013904223u;
        slot[i] = (x >> 8) % M;
        addr[i] = slot[i];
        w[i] = 0.5f / (float)(i + 1) + (float)(x & 0xffff) * 1e-9f;
    }
}

typedef struct { FILE *f; int64_t n; } bin_sink;

/* The ceiling: one packed 12-byte record per event (pos, slot, weight) plus
 * a 4-byte group header, appended with stdio. */
static void bin_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    (void)addr;
    bin_sink *s = user;
    uint32_t hdr = (uint32_t)(layer << 24 | head << 16 | op << 15 | k);
    fwrite(&hdr, 4, 1, s->f);
    fwrite(&pos, 4, 1, s->f);
    fwrite(slot, 4, k, s->f);
    fwrite(weight, 4, k, s->f);
    s->n += k;
}

/* Feed T tokens of synthetic accesses into probe p, prefill-style (a layer
 * at a time over chunks of 256 positions, head-major). */
static void feed(const rn_probe *p, const rn_config *c, int T)
{
    int K = c->top_k;
    uint32_t M = (uint32_t)rn_config_slots(c), slot[64], addr[64];
    float w[64];
    for (int t0 = 0; t0 < T; t0 += 256)
        for (int l = 0; l < c->n_layers; l++)
            for (int h = 0; h < c->n_heads; h++)
                for (int t = t0; t < T && t < t0 + 256; t++)
                    for (int op = 0; op < 2; op++) {
                        synth(l, h, t, op, K, M, slot, addr, w);
                        p->access(p->user, l, h, t, op, K, slot, addr, w);
                    }
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 40000;
    rn_config c;
    rn_error err = { 0 };
    rn_config_default(&c);
    if (rn_config_load_file(&c, "samples/configs/kjv.cfg", ignore_key, NULL, &err) ||
        rn_config_validate(&c, &err)) {
        fprintf(stderr, "bench_trace: %s\n", err.msg);
        return 1;
    }
    char dir[] = "/tmp/bench_trace.XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    char db[256], bin[256];
    snprintf(db, sizeof db, "%s/t.db", dir);
    snprintf(bin, sizeof bin, "%s/t.bin", dir);
    int64_t events = (int64_t)T * c.n_layers * c.n_heads * 2 * c.top_k;
    printf("bench_trace: synthetic stream of %d tokens = %lld events (L=%d H=%d K=%d), median of %d\n",
           T, (long long)events, c.n_layers, c.n_heads, c.top_k, REPS);

    /* 1. sinks: the binary ceiling and the writer under each durability
     * setting (tr_schema.h), interleaved within each repetition so that a
     * busy machine slows them alike. */
    static const struct { int mode; const char *name; } modes[] = {
        { TR_DURABILITY_ROLLBACK_OFF, "rollback journal, synchronous=OFF (before WAL)" },
        { TR_DURABILITY_WAL_OFF, "WAL, synchronous=OFF" },
        { TR_DURABILITY_WAL_NORMAL, "WAL, synchronous=NORMAL (default)" },
    };
    enum { NMODES = 3 };
    double tb[REPS], ts[NMODES][REPS], tsi[REPS], ins[NMODES][REPS];
    int64_t size_before = 0, size_after = 0;
    for (int r = 0; r < REPS; r++) {
        bin_sink s = { fopen(bin, "wb"), 0 };
        if (!s.f) { perror(bin); return 1; }
        rn_probe p = { &s, bin_access };
        double t0 = bench_now();
        feed(&p, &c, T);
        fclose(s.f);
        tb[r] = bench_now() - t0;

        for (int m = 0; m < NMODES; m++) {
            unlink(db);
            tr_select sel;
            tr_select_all(&sel);
            tr_run_meta meta = { .command = "bench", .cfg = &c };
            tr_writer_opts o = { .build_index = 0, .durability = modes[m].mode };
            tr_writer *w;
            t0 = bench_now();
            if (tr_writer_open(db, &meta, &sel, &o, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            feed(tr_writer_probe(w), &c, T);
            tr_writer_stats st;
            if (tr_writer_finish(w, TR_STATUS_COMPLETE, &st, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            ts[m][r] = bench_now() - t0;
            ins[m][r] = st.insert_s;
        }
        /* the default mode's file, last written: size and index build */
        size_before = file_size(db);
        t0 = bench_now();
        if (tr_build_indexes(db, 1, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tsi[r] = bench_now() - t0;
        size_after = file_size(db);
    }
    double mb = bench_median(tb, REPS), mi = bench_median(tsi, REPS);
    printf("  binary append (ceiling):  %7.2f M events/s  (%.3f s)\n", events / mb / 1e6, mb);
    double base = bench_median(ts[0], REPS);
    for (int m = 0; m < NMODES; m++) {
        double ms = bench_median(ts[m], REPS), mins = bench_median(ins[m], REPS);
        printf("  SQLite trace writer, %s:\n"
               "                            %7.2f M events/s  (%.3f s wall; writer thread %.3f s"
               " = %.2f M events/s)  = %.2fx the ceiling's time, %.2fx the first setting's\n",
               modes[m].name, events / ms / 1e6, ms, mins, events / mins / 1e6, ms / mb, ms / base);
    }
    printf("  index build:              %7.3f s  (%.2f M events/s)\n", mi, events / mi / 1e6);
    printf("  bytes/event: %.2f before index, %.2f after (binary file: %.2f)\n",
           (double)size_before / events, (double)size_after / events,
           (double)file_size(bin) / events);

    fflush(stdout);
    if (argc > 2 && !strcmp(argv[2], "sink")) { unlink(db); unlink(bin); rmdir(dir); return 0; }

    /* 3. traced vs untraced model run */
    rn_model m;
    rn_runtime *rt;
    if (rn_model_create_random(&m, &c, 1, &err) || rn_runtime_create(&m, 256, &rt, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char *text;
    size_t len;
    int *toks, n;
    if (rn_read_file("data/kjv.txt", &text, &len, &err)) {
        fprintf(stderr, "bench_trace: %s (run scripts/setup)\n", err.msg);
        return 1;
    }
    if (len > 65536) len = 65536;
    if (rn_tokenize(&c, text, len, "data/kjv.txt", &toks, &n, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    free(text);
    double tu[REPS], tt[NMODES][REPS];
    int64_t ev = 0;
    for (int r = 0; r < REPS; r++) {
        rn_runtime_reset(rt);
        rn_runtime_set_probe(rt, NULL);
        double t0 = bench_now();
        if (rn_prefill(rt, toks, n, NULL, 0, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tu[r] = bench_now() - t0;

        for (int m = 0; m < NMODES; m++) {
            unlink(db);
            rn_runtime_reset(rt);
            tr_run_meta meta = { .command = "bench", .cfg = &c };
            tr_writer_opts o = { .build_index = 1, .durability = modes[m].mode };
            tr_writer *w;
            t0 = bench_now();
            if (tr_writer_open(db, &meta, NULL, &o, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            rn_runtime_set_probe(rt, tr_writer_probe(w));
            if (rn_prefill(rt, toks, n, NULL, 0, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            tr_writer_stats st;
            if (tr_writer_finish(w, TR_STATUS_COMPLETE, &st, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            tt[m][r] = bench_now() - t0;
            ev = st.events;
        }
    }
    double mu = bench_median(tu, REPS);
    printf("KJV-shaped model, prefill of %d tokens of data/kjv.txt (%lld events), median of %d:\n",
           n, (long long)ev, REPS);
    printf("  untraced %.3f s\n", mu);
    for (int m = 0; m < NMODES; m++) {
        double mt = bench_median(tt[m], REPS);
        printf("  traced (all layers and heads, index included), %s: %.3f s: ratio %.2fx\n",
               modes[m].name, mt, mt / mu);
    }
    free(toks);
    rn_runtime_free(rt);
    rn_model_free(&m);
    unlink(db);
    unlink(bin);
    rmdir(dir);
    return 0;
}
