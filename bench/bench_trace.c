/* bench_trace.c — what tracing costs, and what the packed store (schema v2)
 * reaches against its physical limits.
 *
 *  1. Sink throughput: the same synthetic event stream (KJV model shape:
 *     4 layers x 4 heads x 2 ops x K=8 per token; the accesses of 256
 *     positions precomputed and replayed, so the generator costs nothing)
 *     pushed through the trace writer's probe into SQLite, against
 *     appending packed binary records to a file (the ceiling) and against
 *     the disk's write bandwidth (the store's bytes written with one fsync).
 *     Events/s, median of 3, for each journal and synchronous setting
 *     (tr_schema.h TR_DURABILITY_*) and for --weights f16.
 *  2. Bytes per event on disk (everything: the block index included).
 *  3. Wall time of a prefill of data/kjv.txt (first 64 KiB) by a random model
 *     of samples/configs/kjv.cfg, traced (every layer and head) vs untraced,
 *     median of 3, and their ratio.
 *  4. (`paper`) the same for a random model of the paper's shape (27 layers
 *     x 16 heads, M = 4^5, K = 8, D = 1024; CAPE on layers 0-3 and half of
 *     4-7) over 2000 tokens, on the threads given by OMP_NUM_THREADS.
 *  5. (`read`) a synthetic run of the paper's shape with ~100M events:
 *     write it, then time reading one head with the C reader, and
 *     `SELECT layer, head, count(*) FROM events GROUP BY 1, 2` through the
 *     virtual table.
 *
 *  6. (`blocks`) the synthetic KJV stream written with blocks of 1, 4, 16,
 *     64, 256 and 1024 positions: ingest rate, bytes/event, and the time to
 *     read one head back with the C reader (the choice of 256).
 *
 * Usage: build/bench/bench_trace [TOKENS_PER_SYNTHETIC_RUN [sink|paper|read|blocks]]
 * (`sink` stops after part 2; `paper`, `read` and `blocks` run only that part).
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
#include "tr_block.h"
#include "tr_reader.h"
#include "tr_schema.h"
#include "tr_vtab.h"
#include "tr_writer.h"
#include "bench_synth.h"
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

/* Seconds to write `bytes` to path in 1 MiB pieces and fsync once: the
 * disk's write bandwidth for a file of that size. */
static double disk_write(const char *path, int64_t bytes)
{
    static char buf[1 << 20];
    memset(buf, 0x5a, sizeof buf);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    double t0 = bench_now();
    for (int64_t done = 0; done < bytes; done += sizeof buf)
        fwrite(buf, 1, (size_t)(bytes - done < (int64_t)sizeof buf ? bytes - done : (int64_t)sizeof buf), f);
    fflush(f);
    fsync(fileno(f));
    double t = bench_now() - t0;
    fclose(f);
    unlink(path);
    return t;
}

/* Prefill toks with a random model of c, untraced and traced (every
 * head, default settings), REPS times interleaved; print the medians. */
static int model_part(const rn_config *c, const int *toks, int n, const char *db, const char *label)
{
    rn_error err = { 0 };
    rn_model m;
    rn_runtime *rt;
    if (rn_model_create_random(&m, c, 1, &err) || rn_runtime_create(&m, 256, &rt, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double tu[REPS], tt[REPS], tw[REPS], wi[REPS];
    int64_t ev = 0;
    for (int r = 0; r < REPS; r++) {
        rn_runtime_reset(rt);
        rn_runtime_set_probe(rt, NULL);
        double t0 = bench_now();
        if (rn_prefill(rt, toks, n, NULL, 0, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tu[r] = bench_now() - t0;
        unlink(db);
        rn_runtime_reset(rt);
        tr_run_meta meta = { .command = "bench", .cfg = c };
        tr_writer *w;
        t0 = bench_now();
        if (tr_writer_open(db, &meta, NULL, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        rn_runtime_set_probe(rt, tr_writer_probe(w));
        if (rn_prefill(rt, toks, n, NULL, 0, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tr_writer_stats st;
        if (tr_writer_finish(w, TR_STATUS_COMPLETE, &st, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tt[r] = bench_now() - t0;
        tw[r] = st.producer_wait_s;
        wi[r] = st.insert_s;
        ev = st.events;
    }
    double mu = bench_median(tu, REPS), mt = bench_median(tt, REPS);
    printf("%s, prefill of %d tokens (%lld events), median of %d:\n", label, n, (long long)ev, REPS);
    printf("  untraced %.3f s; traced (every layer and head, WAL, synchronous=NORMAL, f32) %.3f s: ratio %.2fx"
           "  (model waited %.3f s, writer thread in SQLite %.3f s; %.1f bytes/event)\n",
           mu, mt, mt / mu, bench_median(tw, REPS), bench_median(wi, REPS), (double)file_size(db) / (double)ev);
    fflush(stdout);
    rn_runtime_free(rt);
    rn_model_free(&m);
    unlink(db);
    return 0;
}

/* Part 5: a ~100M-event run of the paper's shape, read back. */
static int read_part(const char *dir, int T)
{
    rn_config c;
    rn_error err = { 0 };
    if (paper_config(&c, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    synth_tab tab;
    if (synth_make(&tab, &c)) return 1;
    char db[256];
    snprintf(db, sizeof db, "%s/big.db", dir);
    unlink(db);
    tr_writer_stats st;
    tr_writer_opts o = { .durability = TR_DURABILITY_DEFAULT };
    double tw = write_run(db, &c, &tab, T, &o, 1, &st);
    printf("bench_trace read: paper shape, %d tokens = %lld events written in %.2f s (%.1f M events/s), %.2f bytes/event\n",
           T, (long long)st.events, tw, st.events / tw / 1e6, (double)file_size(db) / (double)st.events);
    double tr[REPS];
    size_t n = 0;
    for (int r = 0; r < REPS; r++) {
        tr_db *d;
        double t0 = bench_now();
        if (tr_open_read(db, &d, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        tr_filter f = tr_filter_all();
        f.layer = 13;
        f.head = 7;
        tr_event *ev;
        if (tr_load_events(d, 1, &f, &ev, &n, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        free(ev);
        tr_close(d);
        tr[r] = bench_now() - t0;
    }
    printf("  C reader, one head (layer 13, head 7): %zu events in %.3f s (median of %d)\n", n, bench_median(tr, REPS), REPS);
    printf("  (python: python3 python/ramtrace %s --layer 13 --head 7)\n", db);
    fflush(stdout);
    sqlite3 *h;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK || tr_vtab_register(h) != SQLITE_OK) return 1;
    sqlite3_stmt *q;
    double t0 = bench_now();
    if (sqlite3_prepare_v2(h, "SELECT layer, head, count(*) FROM events WHERE run_id = 1 GROUP BY 1, 2", -1, &q,
                           NULL) != SQLITE_OK) { fprintf(stderr, "%s\n", sqlite3_errmsg(h)); return 1; }
    int64_t rows = 0, total = 0;
    while (sqlite3_step(q) == SQLITE_ROW) { rows++; total += sqlite3_column_int64(q, 2); }
    sqlite3_finalize(q);
    double tg = bench_now() - t0;
    t0 = bench_now();
    if (sqlite3_prepare_v2(h, "SELECT count(*), sum(slot) FROM events WHERE run_id = 1 AND layer = 13 AND head = 7",
                           -1, &q, NULL) != SQLITE_OK) return 1;
    sqlite3_step(q);
    int64_t one = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    double t1 = bench_now() - t0;
    sqlite3_close(h);
    printf("  SQL GROUP BY layer, head over the virtual table: %lld groups, %lld events in %.2f s (%.1f M events/s)\n",
           (long long)rows, (long long)total, tg, total / tg / 1e6);
    printf("  SQL one head (count, sum(slot) WHERE layer = 13 AND head = 7): %lld events in %.3f s\n", (long long)one, t1);
    printf("  (the file is left for the python reader; remove %s)\n", dir);
    free(tab.slot);
    free(tab.w);
    return 0;
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 40000;
    const char *mode = argc > 2 ? argv[2] : "";
    rn_config c;
    rn_error err = { 0 };
    char dir[] = "/tmp/bench_trace.XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    char db[256], bin[256], raw[256];
    snprintf(db, sizeof db, "%s/t.db", dir);
    snprintf(bin, sizeof bin, "%s/t.bin", dir);
    snprintf(raw, sizeof raw, "%s/raw", dir);
    if (!strcmp(mode, "read")) return read_part(dir, T);
    if (!strcmp(mode, "paper")) {
        if (paper_config(&c, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        int n = T > 0 && T < 40000 ? T : 2000;
        int *toks = malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++) toks[i] = (int)((i * 2654435761u) % 32000u);
        int rc = model_part(&c, toks, n, db, "paper-shaped model (27 x 16 heads, M = 1024, K = 8)");
        free(toks);
        rmdir(dir);
        return rc;
    }
    rn_config_default(&c);
    if (rn_config_load_file(&c, "samples/configs/kjv.cfg", ignore_key, NULL, &err) ||
        rn_config_validate(&c, &err)) {
        fprintf(stderr, "bench_trace: %s\n", err.msg);
        return 1;
    }
    synth_tab tab;
    if (synth_make(&tab, &c)) { fprintf(stderr, "bench_trace: out of memory\n"); return 1; }
    if (!strcmp(mode, "blocks")) {
        static const int bps[] = { 1, 4, 16, 64, 256, 1024 };
        int64_t evs = (int64_t)T * c.n_layers * c.n_heads * 2 * c.top_k;
        printf("bench_trace blocks: %d tokens = %lld events (KJV shape), median of %d\n", T, (long long)evs, REPS);
        for (int b = 0; b < 6; b++) {
            double tw[REPS], trd[REPS];
            int64_t sz = 0;
            for (int r = 0; r < REPS; r++) {
                unlink(db);
                tr_writer_opts o = { .block_positions = bps[b] };
                tr_writer_stats st;
                tw[r] = write_run(db, &c, &tab, T, &o, 1, &st);
                sz = file_size(db);
                tr_db *d;
                tr_filter f = tr_filter_all();
                f.layer = 2;
                f.head = 1;
                tr_event *ev;
                size_t n;
                double t0 = bench_now();
                if (tr_open_read(db, &d, &err) || tr_load_events(d, 1, &f, &ev, &n, &err)) {
                    fprintf(stderr, "%s\n", err.msg);
                    return 1;
                }
                trd[r] = bench_now() - t0;
                free(ev);
                tr_close(d);
            }
            printf("  %4d positions/block: %7.2f M events/s, %.2f bytes/event, one head read in %.3f s\n", bps[b],
                   evs / bench_median(tw, REPS) / 1e6, (double)sz / evs, bench_median(trd, REPS));
            fflush(stdout);
        }
        unlink(db);
        rmdir(dir);
        return 0;
    }
    int64_t events = (int64_t)T * c.n_layers * c.n_heads * 2 * c.top_k;
    printf("bench_trace: synthetic stream of %d tokens = %lld events (L=%d H=%d K=%d M=%lld; no tokens rows), median of %d\n",
           T, (long long)events, c.n_layers, c.n_heads, c.top_k, (long long)rn_config_slots(&c), REPS);

    /* 1. sinks: the binary ceiling, the disk, and the writer under each
     * setting, interleaved within each repetition so that a busy machine
     * slows them alike. */
    static const struct { int mode, weights; const char *name; } modes[] = {
        { TR_DURABILITY_WAL_NORMAL, TR_WEIGHTS_F32, "WAL, synchronous=NORMAL (default), exact f32 weights" },
        { TR_DURABILITY_WAL_OFF, TR_WEIGHTS_F32, "WAL, synchronous=OFF, f32" },
        { TR_DURABILITY_ROLLBACK_OFF, TR_WEIGHTS_F32, "rollback journal, synchronous=OFF, f32" },
        { TR_DURABILITY_WAL_NORMAL, TR_WEIGHTS_F16, "WAL, synchronous=NORMAL, --weights f16" },
    };
    enum { NMODES = 4 };
    double tb[REPS], td[REPS], ts[NMODES][REPS], ins[NMODES][REPS];
    int64_t size[NMODES] = { 0 };
    for (int r = 0; r < REPS; r++) {
        bin_sink s = { fopen(bin, "wb"), 0 };
        if (!s.f) { perror(bin); return 1; }
        rn_probe p = { .user = &s, .access = bin_access };
        double t0 = bench_now();
        feed(&p, &c, &tab, T);
        fclose(s.f);
        tb[r] = bench_now() - t0;
        for (int m = 0; m < NMODES; m++) {
            unlink(db);
            tr_writer_opts o = { .durability = modes[m].mode, .weights = modes[m].weights };
            tr_writer_stats st;
            ts[m][r] = write_run(db, &c, &tab, T, &o, 0, &st);
            ins[m][r] = st.insert_s;
            size[m] = file_size(db);
        }
        td[r] = disk_write(raw, size[0]);
    }
    double mb = bench_median(tb, REPS), md = bench_median(td, REPS);
    printf("  binary append (ceiling, 12 bytes/event, page cache): %7.2f M events/s  (%.3f s)\n", events / mb / 1e6, mb);
    printf("  disk: %lld bytes (the default store's file) written and fsynced in %.3f s = %.0f MB/s"
           " = %.1f M events/s at its %.2f bytes/event\n", (long long)size[0], md, size[0] / md / 1e6,
           events / md / 1e6, (double)size[0] / events);
    for (int m = 0; m < NMODES; m++) {
        double ms = bench_median(ts[m], REPS), mins = bench_median(ins[m], REPS);
        printf("  SQLite trace writer, %s:\n"
               "      %7.2f M events/s  (%.3f s wall; writer thread in SQLite %.3f s)  = %.2fx the binary append's"
               " time, %.2fx the disk's; %.2f bytes/event (index included)\n",
               modes[m].name, events / ms / 1e6, ms, mins, ms / mb, ms / md, (double)size[m] / events);
    }
    fflush(stdout);
    free(tab.slot);
    free(tab.w);
    unlink(bin);
    if (!strcmp(mode, "sink")) { unlink(db); rmdir(dir); return 0; }

    /* 3. traced vs untraced model run */
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
    int rc = model_part(&c, toks, n, db, "KJV-shaped model, data/kjv.txt");
    free(toks);
    rmdir(dir);
    return rc;
}
