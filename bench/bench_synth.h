/* bench_synth.h — the synthetic event stream of the benchmarks: a
 * deterministic stream of accesses (every layer, head and op, K slots per
 * token) written as a trace run, and the paper's model shape, so
 * bench_trace and bench_serve measure the same kind of trace. */
#ifndef BENCH_SYNTH_H
#define BENCH_SYNTH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "rn_config.h"
#include "tr_select.h"
#include "tr_schema.h" /* TR_DURABILITY_* */
#include "tr_writer.h"

/* Deterministic synthetic accesses for one (layer, head, pos, op). */
static inline void synth(int l, int h, int t, int op, int K, uint32_t M, uint32_t *slot, uint32_t *addr,
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

/* The accesses of 256 positions of every (layer, head, op), precomputed. */
typedef struct { uint32_t *slot; float *w; } synth_tab;

static inline int synth_make(synth_tab *tab, const rn_config *c)
{
    size_t groups = (size_t)c->n_layers * c->n_heads * 256 * 2, K = (size_t)c->top_k;
    tab->slot = malloc(sizeof(uint32_t) * groups * K);
    tab->w = malloc(sizeof(float) * groups * K);
    if (!tab->slot || !tab->w) return -1;
    uint32_t M = (uint32_t)rn_config_slots(c), addr[64];
    size_t g = 0;
    for (int l = 0; l < c->n_layers; l++)
        for (int h = 0; h < c->n_heads; h++)
            for (int t = 0; t < 256; t++)
                for (int op = 0; op < 2; op++, g++) synth(l, h, t, op, (int)K, M, tab->slot + g * K, addr, tab->w + g * K);
    return 0;
}

/* Feed T tokens of synthetic accesses into probe p, prefill-style (a layer
 * at a time over chunks of 256 positions, head-major), replaying tab. */
static inline void feed(const rn_probe *p, const rn_config *c, const synth_tab *tab, int T)
{
    int K = c->top_k;
    for (int t0 = 0; t0 < T; t0 += 256)
        for (int l = 0; l < c->n_layers; l++)
            for (int h = 0; h < c->n_heads; h++)
                for (int t = t0; t < T && t < t0 + 256; t++)
                    for (int op = 0; op < 2; op++) {
                        size_t g = ((((size_t)l * c->n_heads + h) * 256 + (size_t)(t - t0)) * 2 + op) * K;
                        p->access(p->user, l, h, t, op, K, tab->slot + g, tab->slot + g, tab->w + g);
                    }
}

/* Write one run of T tokens of the synthetic stream of c (and, with
 * tokens, its tokens rows) into db with the given options; the writer's
 * statistics in *st, wall seconds returned.  The sink measurements leave
 * the tokens rows out, as the benchmark always did (issue 13's baseline):
 * they cost about 1.8 us each, 14 ns per event of the KJV shape's 128
 * events per token and 0.3 ns of the paper shape's 6912. */
static inline double write_run(const char *db, const rn_config *c, const synth_tab *tab, int T, const tr_writer_opts *o,
                        int tokens, tr_writer_stats *st)
{
    rn_error err = { 0 };
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .command = "bench", .cfg = c };
    tr_writer *w;
    double t0 = bench_now();
    if (tr_writer_open(db, &meta, &sel, o, &w, &err)) { fprintf(stderr, "%s\n", err.msg); exit(1); }
    feed(tr_writer_probe(w), c, tab, T);
    for (int t = 0; t < T && tokens; t++) tr_writer_add_token(w, t, t % 256, NULL, 0);
    if (tr_writer_finish(w, TR_STATUS_COMPLETE, st, &err)) { fprintf(stderr, "%s\n", err.msg); exit(1); }
    return bench_now() - t0;
}

/* The paper's shape (issue 13): CAPE on every head of layers 0-3 and half
 * the heads of layers 4-7. */
static inline int paper_config(rn_config *c, rn_error *err)
{
    rn_config_default(c);
    c->vocab_size = 32000;
    c->tokenizer = RN_TOK_IDS;
    c->d_model = 1024;
    c->n_layers = 27;
    c->n_heads = 16;
    c->d_p = 4;
    c->order = 5;
    c->d_v = 64;
    c->top_k = 8;
    c->d_ff = 2816;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    for (int l = 0; l < 8; l++) c->cape_mask[l] = l < 4 ? 0xffff : 0x00ff;
    return rn_config_validate(c, err);
}

#endif
