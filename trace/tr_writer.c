/* tr_writer.c — the tracing probe: per-head event blocks filled by the model
 * (producer, via rn_probe callbacks), a bounded queue of batches of sealed
 * blocks, and one writer thread that inserts each batch into SQLite in a
 * single transaction, one event_blocks row per block (tr_block.h).
 *
 * Every traced (layer, head) has an open block: the probe encodes each
 * group of K accesses straight into it (slots narrowed to the run's slot
 * width, weights copied or rounded to float16), and once the block holds
 * block_positions whole positions it is sealed: copied into the current
 * batch's arena.  A full batch goes to the thread and the producer takes a
 * free one, waiting only if all are in flight, which bounds memory.
 * tr_writer_finish seals the partial blocks.  A failure in the thread (disk
 * full, ...) is remembered; later batches are dropped and finish reports it.
 */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "rn_version.h"
#include "tr_block.h"
#include "tr_repair.h"
#include "tr_schema.h"
#include "tr_writer.h"

#define PIECE_LEN 32
#define TOK_ROWS 64 /* tokens rows per multi-row INSERT (5 parameters each) */

/* A sealed block in a batch: its slots at arena + off, its weights right
 * after them. */
typedef struct {
    int32_t pos0, npos;
    uint16_t layer, head;
    size_t off, slots_len, weights_len;
} blk_rec;

typedef struct {
    int64_t pos;
    int32_t id;
    int32_t generated;
    char piece[PIECE_LEN];
} tok_rec;

typedef struct {
    int n_blocks, n_tokens;
    int64_t n_events;
    size_t used;       /* arena bytes in use */
    blk_rec *blocks;   /* [bcap] */
    uint8_t *arena;    /* [acap] */
    tok_rec *toks;     /* [tcap] */
} batch;

/* One traced head's block being filled: npos whole positions from pos0,
 * then possibly the ops seen so far (cur_ops) of position pos0 + npos. */
typedef struct {
    int64_t pos0;
    int npos;
    int cur_ops;
    uint8_t *slots, *weights;  /* encoded, [bpos * nops * K] entries */
} open_block;

struct tr_writer {
    char *path;
    sqlite3 *db;
    int live_fd;       /* holds flock(LOCK_SH) on the file while the run lives */
    int durability;    /* TR_DURABILITY_* */
    sqlite3_stmt *ins_blk, *ins_tok, *ins_toks; /* ins_toks: TOK_ROWS rows at once */
    int64_t run_id;
    rn_config cfg;
    int K, L, H;
    int64_t *cape_m;   /* [L*H]: M for CAPE heads, 0 otherwise */
    tr_select sel;
    rn_probe probe;
    int sbits, wfmt, wb; /* slot bits, weight format, weight bytes */
    int nops, bpos;    /* ops per position, positions per block */
    open_block *open;  /* [L*H] (buffers only for traced heads) */
    int bcap, tcap;    /* blocks / tokens per batch */
    size_t acap;       /* arena bytes per batch */

    /* queue (guarded by mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv_full, cv_free;
    int nb;
    batch *batches;
    int *fullq, fq_head, fq_len;
    int *freeq, free_len;
    int stop;
    int failed;
    rn_error werr;
    pthread_t thread;
    int thread_started;

    batch *cur;        /* owned by the producer */
    /* positions 0..sealed_upto-1 of every traced head are sealed into
     * batches; flush_due: they grew and the current batch still holds
     * them, to be handed to the thread once their tokens rows are in
     * (tr_writer_add_token) or the next positions' accesses begin */
    int64_t sealed_upto;
    int flush_due;
    int64_t events, groups, tokens;           /* produced */
    int64_t committed_events, committed_tokens; /* written (thread) */
    double wait_s, insert_s, index_s;
    /* prefill chunks, as the runtime tells them (probe_chunk) */
    int64_t ch_pos0, ch_n; /* the chunk under way: [ch_pos0, ch_pos0 + ch_n) */
    int64_t *chunks;   /* [n_chunks][2]: pos0, n of the chunks of more than one row */
    int n_chunks, cap_chunks, ch_oom; /* ch_oom: a chunk could not be kept */
    int has_state;     /* tr_writer_set_state was called */
    tr_state_row state;
    char state_policy[32];
};

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int step_reset(tr_writer *w, sqlite3_stmt *st, rn_error *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(w->db, rc, w->path, "inserting events", err);
    return RN_OK;
}

/* Bind token t to parameters p+1..p+5 of st (a tokens row). */
static void bind_token(tr_writer *w, sqlite3_stmt *st, int p, const tok_rec *t)
{
    sqlite3_bind_int64(st, p + 1, w->run_id);
    sqlite3_bind_int64(st, p + 2, t->pos);
    sqlite3_bind_int(st, p + 3, t->id);
    sqlite3_bind_text(st, p + 4, t->piece, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, p + 5, t->generated ? "generated" : "prompt", -1, SQLITE_STATIC);
}

/* Insert one batch (tokens and block rows) in a single transaction. */
static int insert_batch(tr_writer *w, batch *b, rn_error *err)
{
    /* IMMEDIATE: the write lock is taken (waiting on another writer) before
     * anything is read, so the transaction never has to upgrade. */
    int rc = tr_exec_what(w->db, w->path, "BEGIN IMMEDIATE", "waiting for another writer", err);
    if (rc) return rc;
    /* tokens rows TOK_ROWS to a statement, the rest one by one */
    int i = 0;
    for (; i + TOK_ROWS <= b->n_tokens && !rc; i += TOK_ROWS) {
        for (int j = 0; j < TOK_ROWS; j++) bind_token(w, w->ins_toks, 5 * j, &b->toks[i + j]);
        rc = step_reset(w, w->ins_toks, err);
    }
    for (; i < b->n_tokens && !rc; i++) {
        bind_token(w, w->ins_tok, 0, &b->toks[i]);
        rc = step_reset(w, w->ins_tok, err);
    }
    sqlite3_stmt *st = w->ins_blk;
    for (int i = 0; i < b->n_blocks && !rc; i++) {
        const blk_rec *k = &b->blocks[i];
        sqlite3_bind_int64(st, 1, w->run_id);
        sqlite3_bind_int(st, 2, k->layer);
        sqlite3_bind_int(st, 3, k->head);
        sqlite3_bind_int(st, 4, k->pos0);
        sqlite3_bind_int(st, 5, k->npos);
        sqlite3_bind_int(st, 6, w->sel.ops & RN_OPS_BOTH);
        sqlite3_bind_int64(st, 7, w->cape_m[k->layer * w->H + k->head]);
        sqlite3_bind_int64(st, 8, (int64_t)k->npos * w->nops * w->K);
        sqlite3_bind_blob64(st, 9, b->arena + k->off, k->slots_len, SQLITE_STATIC);
        sqlite3_bind_blob64(st, 10, b->arena + k->off + k->slots_len, k->weights_len, SQLITE_STATIC);
        rc = step_reset(w, st, err);
    }
    if (!rc) rc = tr_exec_what(w->db, w->path, "COMMIT", "inserting events", err);
    if (rc) sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* The writer thread: take full batches in order, insert, give them back. */
static void *writer_main(void *arg)
{
    tr_writer *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->fq_len && !w->stop) pthread_cond_wait(&w->cv_full, &w->mu);
        if (!w->fq_len) { pthread_mutex_unlock(&w->mu); break; }
        int idx = w->fullq[w->fq_head];
        w->fq_head = (w->fq_head + 1) % w->nb;
        w->fq_len--;
        int failed = w->failed;
        pthread_mutex_unlock(&w->mu);

        batch *b = &w->batches[idx];
        rn_error e = { 0 };
        int rc = RN_OK;
        if (!failed) {
            double t0 = now_mono();
            rc = insert_batch(w, b, &e);
            w->insert_s += now_mono() - t0;
        }
        pthread_mutex_lock(&w->mu);
        if (rc && !w->failed) { w->failed = 1; w->werr = e; }
        if (!rc && !failed) {
            w->committed_events += b->n_events;
            w->committed_tokens += b->n_tokens;
        }
        b->n_blocks = b->n_tokens = 0;
        b->n_events = 0;
        b->used = 0;
        w->freeq[w->free_len++] = idx;
        pthread_cond_signal(&w->cv_free);
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

/* Hand the current batch to the thread (if non-empty) and take a free one,
 * waiting while all are in flight. */
static void submit(tr_writer *w)
{
    if (!w->cur->n_blocks && !w->cur->n_tokens) return;
    pthread_mutex_lock(&w->mu);
    int idx = (int)(w->cur - w->batches);
    assert(w->fq_len < w->nb); /* the current batch is not queued: the ring has room */
    w->fullq[(w->fq_head + w->fq_len) % w->nb] = idx;
    w->fq_len++;
    pthread_cond_signal(&w->cv_full);
    if (!w->free_len) {
        double t0 = now_mono();
        while (!w->free_len) pthread_cond_wait(&w->cv_free, &w->mu);
        w->wait_s += now_mono() - t0;
    }
    w->cur = &w->batches[w->freeq[--w->free_len]];
    pthread_mutex_unlock(&w->mu);
}

/* Move the whole positions of open block ob (of layer, head) into the
 * current batch, submitting it first when the block does not fit. */
static void seal(tr_writer *w, open_block *ob, int layer, int head)
{
    if (!ob->npos) return;
    size_t ents = (size_t)ob->npos * w->nops * w->K;
    size_t sl = (size_t)tr_slot_blob_len((int64_t)ents, w->sbits), wl = ents * w->wb;
    batch *b = w->cur;
    if (b->n_blocks == w->bcap || b->used + sl + wl > w->acap) { submit(w); b = w->cur; }
    assert(b->n_blocks < w->bcap && b->used + sl + wl <= w->acap); /* acap holds the largest block */
    blk_rec *k = &b->blocks[b->n_blocks++];
    k->layer = (uint16_t)layer;
    k->head = (uint16_t)head;
    k->pos0 = (int32_t)ob->pos0;
    k->npos = ob->npos;
    k->off = b->used;
    k->slots_len = sl;
    k->weights_len = wl;
    memcpy(b->arena + b->used, ob->slots, sl);
    memcpy(b->arena + b->used + sl, ob->weights, wl);
    b->used += sl + wl;
    b->n_events += (int64_t)ents;
    ob->pos0 += ob->npos;
    ob->npos = 0;
}

/* End the chunk under way, keeping it when it has more than one row (an
 * allocation once the capacity doubles: between prefill chunks, never per
 * step).  Out of memory sets ch_oom, which finish reports. */
static void end_chunk(tr_writer *w)
{
    int64_t n = w->ch_n;
    w->ch_n = 0;
    if (n < 2) return;
    if (w->n_chunks == w->cap_chunks) {
        int cap = w->cap_chunks ? 2 * w->cap_chunks : 64;
        int64_t *b = realloc(w->chunks, sizeof *b * 2 * (size_t)cap);
        if (!b) { w->ch_oom = 1; return; }
        w->chunks = b;
        w->cap_chunks = cap;
    }
    w->chunks[2 * w->n_chunks] = w->ch_pos0;
    w->chunks[2 * w->n_chunks + 1] = n;
    w->n_chunks++;
}

/* rn_probe callback: the runtime's next forward call computes positions
 * pos0 .. pos0 + n - 1 together.  With one layer and one head its order is
 * that of n steps, and a chunk that continues the one under way extends it
 * (steps included): the run's order is the same either way
 * (docs/trace-schema.md). */
static void probe_chunk(void *user, int64_t pos0, int n)
{
    tr_writer *w = user;
    if (w->L * w->H == 1 && w->ch_n && pos0 == w->ch_pos0 + w->ch_n) {
        w->ch_n += n;
        return;
    }
    end_chunk(w);
    w->ch_pos0 = pos0;
    w->ch_n = n;
}

/* After a head sealed a block: when every traced head has now sealed past
 * sealed_upto, those positions are whole in the batches and due to be
 * committed (readers of a run in progress see them, a SIGKILL keeps them):
 * without this a batch went to the thread only when ~4 MiB full, thousands
 * of positions for a small model.  O(traced heads), once per sealed block. */
static void note_sealed(tr_writer *w)
{
    int64_t lo = INT64_MAX;
    for (int i = 0; i < w->L * w->H; i++)
        if (w->open[i].slots && w->open[i].pos0 < lo) lo = w->open[i].pos0;
    if (lo != INT64_MAX && lo > w->sealed_upto) {
        w->sealed_upto = lo;
        w->flush_due = 1;
    }
}

/* Hand the current batch to the thread if sealed positions are due. */
static void submit_sealed(tr_writer *w)
{
    w->flush_due = 0;
    submit(w);
}

/* rn_probe callback: encode one selected group into its head's open block. */
static void probe_access(void *user, int layer, int head, int pos, int op, int k,
                         const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    (void)addr; /* derived from slot, pos and the head's CAPE flag */
    tr_writer *w = user;
    /* the model reports its own layers, heads and top-K: those of the
     * config the writer was opened with */
    assert(layer >= 0 && layer < w->L && head >= 0 && head < w->H);
    assert((op == RN_OP_WRITE || op == RN_OP_READ) && k == w->K);
    /* the accesses of the positions after the sealed ones have begun and
     * no tokens row came meanwhile (a caller that adds them at the end):
     * commit the sealed ones now */
    if (w->flush_due && pos >= w->sealed_upto) submit_sealed(w);
    if (!tr_select_has(&w->sel, layer, head, op) || k != w->K) return;
    open_block *ob = &w->open[layer * w->H + head];
    int64_t next = ob->pos0 + ob->npos;   /* the position being filled */
    if (pos != next || (ob->cur_ops >> op) & 1) {
        /* Not the next position (or the op again): the partial position is
         * dropped and a new block starts at pos.  The model never does this
         * (positions of a head come in order, writes then reads). */
        seal(w, ob, layer, head);
        ob->pos0 = pos;
        ob->cur_ops = 0;
    }
    int oi = w->nops == 2 ? op : 0;
    size_t e = ((size_t)ob->npos * w->nops + oi) * w->K;
    tr_block_put_slots(ob->slots, e, slot, k, w->sbits);
    tr_block_put_weights(ob->weights + e * w->wb, weight, k, w->wfmt);
    ob->cur_ops |= 1 << op;
    w->events += k;
    w->groups++;
    if (ob->cur_ops == (w->sel.ops & RN_OPS_BOTH)) {
        ob->cur_ops = 0;
        if (++ob->npos == w->bpos) {
            seal(w, ob, layer, head);
            note_sealed(w);
        }
    }
}

void tr_writer_add_token(tr_writer *w, int64_t pos, int token_id, const char *piece, int generated)
{
    batch *b = w->cur;
    if (b->n_tokens == w->tcap) { submit(w); b = w->cur; }
    assert(b->n_tokens < w->tcap);
    tok_rec *t = &b->toks[b->n_tokens++];
    t->pos = pos;
    t->id = token_id;
    t->generated = generated != 0;
    snprintf(t->piece, sizeof t->piece, "%s", piece ? piece : "");
    w->tokens++;
    /* the tokens rows of the sealed positions are in: commit them together */
    if (w->flush_due && pos + 1 >= w->sealed_upto) submit_sealed(w);
}

const rn_probe *tr_writer_probe(tr_writer *w) { return &w->probe; }
int64_t tr_writer_run_id(const tr_writer *w) { return w->run_id; }

int tr_writer_failed(tr_writer *w, rn_error *err)
{
    pthread_mutex_lock(&w->mu);
    int f = w->failed;
    if (f && err) *err = w->werr;
    pthread_mutex_unlock(&w->mu);
    return f;
}

void tr_writer_get_stats(const tr_writer *w, tr_writer_stats *st)
{
    st->events = w->events;
    st->groups = w->groups;
    st->tokens = w->tokens;
    st->committed_events = w->committed_events;
    st->committed_tokens = w->committed_tokens;
    st->producer_wait_s = w->wait_s;
    st->insert_s = w->insert_s;
    st->index_s = w->index_s;
}

static void free_writer(tr_writer *w)
{
    if (!w) return;
    sqlite3_finalize(w->ins_blk);
    sqlite3_finalize(w->ins_tok);
    sqlite3_finalize(w->ins_toks);
    sqlite3_close(w->db);
    /* Closed after the connection: closing any descriptor of the file drops
     * the process's POSIX locks on it, SQLite's included. */
    if (w->live_fd >= 0) close(w->live_fd);
    if (w->batches)
        for (int i = 0; i < w->nb; i++) {
            free(w->batches[i].blocks);
            free(w->batches[i].arena);
            free(w->batches[i].toks);
        }
    if (w->open)
        for (int i = 0; i < w->L * w->H; i++) {
            free(w->open[i].slots);
            free(w->open[i].weights);
        }
    free(w->open);
    free(w->batches);
    free(w->fullq);
    free(w->freeq);
    free(w->cape_m);
    free(w->chunks);
    free(w->path);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_full);
    pthread_cond_destroy(&w->cv_free);
    free(w);
}

void tr_writer_set_state(tr_writer *w, const tr_state_row *row)
{
    w->state = *row;
    snprintf(w->state_policy, sizeof w->state_policy, "%s", row->policy ? row->policy : "lru");
    w->state.policy = w->state_policy;
    w->has_state = 1;
}

/* The run's tiered-state counters, one row in a table created with the
 * first run that has them. */
static int insert_state(tr_writer *w, rn_error *err)
{
    int rc = tr_exec_what(w->db, w->path,
                          "CREATE TABLE IF NOT EXISTS state_counters(run_id INTEGER PRIMARY KEY,"
                          " policy TEXT NOT NULL, scope TEXT NOT NULL, budget INTEGER NOT NULL, capacity INTEGER NOT NULL,"
                          " row_bytes INTEGER NOT NULL, direct INTEGER NOT NULL, chunk INTEGER NOT NULL,"
                          " accesses INTEGER NOT NULL, hits INTEGER NOT NULL, misses INTEGER NOT NULL,"
                          " bytes_read INTEGER NOT NULL, bytes_written INTEGER NOT NULL,"
                          " evictions INTEGER NOT NULL)",
                          "recording state counters", err);
    if (rc) return rc;
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO state_counters VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                 -1, &st, NULL);
    if (src == SQLITE_OK) {
        const tr_state_row *s = &w->state;
        sqlite3_bind_int64(st, 1, w->run_id);
        sqlite3_bind_text(st, 2, s->policy, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, rn_scope_name(s->scope), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)s->budget);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)s->c.capacity);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)s->c.row_bytes);
        sqlite3_bind_int(st, 7, s->direct);
        sqlite3_bind_int(st, 8, s->chunk);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)s->c.accesses);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)s->c.hits);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)s->c.misses);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)s->c.bytes_read);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)s->c.bytes_written);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)s->c.evictions);
        src = sqlite3_step(st);
        src = src == SQLITE_DONE ? SQLITE_OK : src;
    }
    sqlite3_finalize(st);
    return src != SQLITE_OK ? tr_sqlerr(w->db, src, w->path, "recording state counters", err) : RN_OK;
}

/* The run's prefill chunks of more than one row, in a table created with
 * the first run that has them (docs/trace-schema.md). */
static int insert_chunks(tr_writer *w, rn_error *err)
{
    int rc = tr_exec_what(w->db, w->path,
                          "CREATE TABLE IF NOT EXISTS prefill_chunks(run_id INTEGER NOT NULL,"
                          " pos0 INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY(run_id, pos0))",
                          "recording prefill chunks", err);
    if (!rc) rc = tr_exec_what(w->db, w->path, "BEGIN", "recording prefill chunks", err);
    if (rc) return rc;
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO prefill_chunks VALUES(?,?,?)", -1, &st, NULL);
    for (int i = 0; i < w->n_chunks && src == SQLITE_OK; i++) {
        sqlite3_bind_int64(st, 1, w->run_id);
        sqlite3_bind_int64(st, 2, w->chunks[2 * i]);
        sqlite3_bind_int64(st, 3, w->chunks[2 * i + 1]);
        src = sqlite3_step(st);
        sqlite3_reset(st);
        src = src == SQLITE_DONE ? SQLITE_OK : src;
    }
    sqlite3_finalize(st);
    if (src != SQLITE_OK) {
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        return tr_sqlerr(w->db, src, w->path, "recording prefill chunks", err);
    }
    return tr_exec_what(w->db, w->path, "COMMIT", "recording prefill chunks", err);
}

/* The intervention specs of an intervened run, one row each, in a table
 * created with the first intervened run (inside insert_run's transaction). */
static int insert_interventions(tr_writer *w, const tr_run_meta *meta, rn_error *err)
{
    int rc = tr_exec_what(w->db, w->path,
                          "CREATE TABLE IF NOT EXISTS interventions(run_id INTEGER NOT NULL,"
                          " i INTEGER NOT NULL, spec TEXT NOT NULL, PRIMARY KEY(run_id, i))",
                          "recording interventions", err);
    if (rc) return rc;
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(w->db, "INSERT INTO interventions VALUES(?,?,?)", -1, &st, NULL);
    for (int i = 0; i < meta->n_interventions && src == SQLITE_OK; i++) {
        sqlite3_bind_int64(st, 1, w->run_id);
        sqlite3_bind_int(st, 2, i);
        sqlite3_bind_text(st, 3, meta->interventions[i], -1, SQLITE_STATIC);
        src = sqlite3_step(st);
        sqlite3_reset(st);
        src = src == SQLITE_DONE ? SQLITE_OK : src;
    }
    sqlite3_finalize(st);
    return src != SQLITE_OK ? tr_sqlerr(w->db, src, w->path, "recording interventions", err) : RN_OK;
}

/* Insert the runs row and the heads rows in one transaction. */
static int insert_run(tr_writer *w, const tr_run_meta *meta, rn_error *err)
{
    char *cfgtext = NULL, hash[32], selection[1024];
    size_t need = rn_config_format(&w->cfg, NULL, 0) + 1;
    if (!(cfgtext = malloc(need))) return rn_seterr(err, RN_ENOMEM, "out of memory");
    rn_config_format(&w->cfg, cfgtext, need);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)meta->model_hash);
    tr_select_format(&w->sel, &w->cfg, selection, sizeof selection);
    sqlite3_stmt *st = NULL;
    int rc = tr_exec_what(w->db, w->path, "BEGIN IMMEDIATE", "waiting for another writer", err);
    if (rc) { free(cfgtext); return rc; }
    int src = sqlite3_prepare_v2(w->db,
        "INSERT INTO runs(name, command, status, model_path, model_hash, config, prompt,"
        " input_path, sampling, selection, start_time, tool_version, n_layers, n_heads,"
        " n_slots, top_k, n_tokens, n_events, weight_format)"
        " VALUES(?,?,'running',?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,?)", -1, &st, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_text(st, 1, meta->name ? meta->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, meta->command ? meta->command : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, meta->model_path ? meta->model_path : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, cfgtext, -1, SQLITE_STATIC);
        if (meta->prompt) sqlite3_bind_text(st, 6, meta->prompt, -1, SQLITE_STATIC);
        if (meta->input_path) sqlite3_bind_text(st, 7, meta->input_path, -1, SQLITE_STATIC);
        if (meta->sampling) sqlite3_bind_text(st, 8, meta->sampling, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, selection, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 10, now_wall());
        sqlite3_bind_text(st, 11, RAMTRACE_VERSION, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 12, w->L);
        sqlite3_bind_int(st, 13, w->H);
        sqlite3_bind_int64(st, 14, rn_config_slots(&w->cfg));
        sqlite3_bind_int(st, 15, w->K);
        sqlite3_bind_text(st, 16, tr_weights_name(w->wfmt), -1, SQLITE_STATIC);
        src = sqlite3_step(st);
        src = src == SQLITE_DONE ? SQLITE_OK : src;
    }
    sqlite3_finalize(st);
    free(cfgtext);
    if (src != SQLITE_OK) rc = tr_sqlerr(w->db, src, w->path, "starting the run", err);
    w->run_id = sqlite3_last_insert_rowid(w->db);
    if (!rc) {
        src = sqlite3_prepare_v2(w->db, "INSERT INTO heads VALUES(?,?,?,?,?)", -1, &st, NULL);
        for (int l = 0; l < w->L && src == SQLITE_OK; l++)
            for (int h = 0; h < w->H && src == SQLITE_OK; h++) {
                if (!tr_select_has_head(&w->sel, l, h)) continue;
                sqlite3_bind_int64(st, 1, w->run_id);
                sqlite3_bind_int(st, 2, l);
                sqlite3_bind_int(st, 3, h);
                sqlite3_bind_int(st, 4, rn_config_cape(&w->cfg, l, h));
                sqlite3_bind_int64(st, 5, rn_config_slots(&w->cfg));
                src = sqlite3_step(st);
                sqlite3_reset(st);
                src = src == SQLITE_DONE ? SQLITE_OK : src;
            }
        sqlite3_finalize(st);
        if (src != SQLITE_OK) rc = tr_sqlerr(w->db, src, w->path, "recording heads", err);
    }
    if (!rc && meta->n_interventions > 0) rc = insert_interventions(w, meta, err);
    if (!rc) rc = tr_exec_what(w->db, w->path, "COMMIT", "starting the run", err);
    if (rc) sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Hold a shared flock on the database file for as long as the run is
 * being written: `ramtrace repair` takes it exclusively, so it never
 * repairs a run whose writer is alive (tr_repair.h). */
static int take_live_lock(tr_writer *w, rn_error *err)
{
    w->live_fd = open(w->path, O_RDONLY | O_CLOEXEC);
    if (w->live_fd < 0 || flock(w->live_fd, LOCK_SH) != 0)
        return rn_seterr(err, RN_EIO, "%s: cannot lock the file against repair", w->path);
    return RN_OK;
}

static int prepare_inserts(tr_writer *w, rn_error *err)
{
    int rc = sqlite3_prepare_v3(w->db, "INSERT INTO event_blocks VALUES(?,?,?,?,?,?,?,?,?,?)", -1,
                                SQLITE_PREPARE_PERSISTENT, &w->ins_blk, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(w->db, "INSERT INTO tokens VALUES(?,?,?,?,?)", -1,
                                SQLITE_PREPARE_PERSISTENT, &w->ins_tok, NULL);
    if (rc == SQLITE_OK) {
        /* INSERT INTO tokens VALUES(?,?,?,?,?),(?,?,?,?,?),... TOK_ROWS times */
        char sql[32 + TOK_ROWS * 12];
        size_t n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO tokens VALUES");
        for (int j = 0; j < TOK_ROWS; j++) n += (size_t)snprintf(sql + n, sizeof sql - n, "%s(?,?,?,?,?)", j ? "," : "");
        rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &w->ins_toks, NULL);
    }
    if (rc != SQLITE_OK) return tr_sqlerr(w->db, rc, w->path, "preparing inserts", err);
    return RN_OK;
}

int tr_writer_open(const char *path, const tr_run_meta *meta, const tr_select *sel,
                   const tr_writer_opts *opts, tr_writer **out, rn_error *err)
{
    *out = NULL;
    if (!meta || !meta->cfg) return rn_seterr(err, RN_EINTERNAL, "%s: run without a config", path);
    int rc = rn_config_validate(meta->cfg, err);
    if (rc) return rc;
    tr_writer *w = calloc(1, sizeof *w);
    if (!w) return rn_seterr(err, RN_ENOMEM, "out of memory");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv_full, NULL);
    pthread_cond_init(&w->cv_free, NULL);
    w->live_fd = -1;
    w->durability = opts ? opts->durability : TR_DURABILITY_DEFAULT;
    w->cfg = *meta->cfg;
    w->K = w->cfg.top_k;
    w->L = w->cfg.n_layers;
    w->H = w->cfg.n_heads;
    if (sel) w->sel = *sel;
    else tr_select_all(&w->sel);
    w->wfmt = opts ? opts->weights : TR_WEIGHTS_F32;
    if (w->wfmt != TR_WEIGHTS_F32 && w->wfmt != TR_WEIGHTS_F16) {
        free_writer(w);
        return rn_seterr(err, RN_EINTERNAL, "%s: unknown weight format %d", path, opts->weights);
    }
    int64_t M = rn_config_slots(&w->cfg);
    w->sbits = tr_slot_bits(M);
    w->wb = tr_weight_bytes(w->wfmt);
    w->nops = tr_block_nops(w->sel.ops & RN_OPS_BOTH);
    w->bpos = opts && opts->block_positions > 0 ? opts->block_positions : TR_BLOCK_POSITIONS;
    if (w->bpos > (1 << 20)) w->bpos = 1 << 20;
    w->nb = opts && opts->queue_batches >= 2 ? opts->queue_batches : 4;
    /* A batch: about 4 MiB of encoded events (batch_groups groups of K, if
     * given), and at least one largest block. */
    size_t per_group = (size_t)tr_slot_blob_len(w->K, w->sbits) + 1 + (size_t)w->K * w->wb;
    size_t max_block = (size_t)w->bpos * (w->nops ? w->nops : 1) * per_group;
    w->acap = opts && opts->batch_groups > 0 ? (size_t)opts->batch_groups * per_group : (size_t)4 << 20;
    if (w->acap < max_block) w->acap = max_block;
    size_t min_block = (w->nops ? w->nops : 1) * per_group;
    w->bcap = (int)(w->acap / min_block + 1);
    w->tcap = 8192;
    w->path = strdup(path);
    w->cape_m = calloc((size_t)w->L * w->H, sizeof(int64_t));
    w->open = calloc((size_t)w->L * w->H, sizeof(open_block));
    w->batches = calloc(w->nb, sizeof(batch));
    w->fullq = calloc(w->nb, sizeof(int));
    w->freeq = calloc(w->nb, sizeof(int));
    if (!w->path || !w->cape_m || !w->open || !w->batches || !w->fullq || !w->freeq) goto oom;
    for (int i = 0; i < w->nb; i++) {
        batch *b = &w->batches[i];
        b->blocks = malloc(sizeof(blk_rec) * w->bcap);
        b->arena = malloc(w->acap);
        b->toks = malloc(sizeof(tok_rec) * w->tcap);
        if (!b->blocks || !b->arena || !b->toks) goto oom;
        if (i) w->freeq[w->free_len++] = i;
    }
    for (int l = 0; l < w->L; l++)
        for (int h = 0; h < w->H; h++) {
            open_block *ob = &w->open[l * w->H + h];
            if (!w->nops || !tr_select_has_head(&w->sel, l, h)) continue;
            size_t ents = (size_t)w->bpos * w->nops * w->K;
            ob->slots = calloc((size_t)tr_slot_blob_len((int64_t)ents, w->sbits), 1);
            ob->weights = malloc(ents * w->wb);
            if (!ob->slots || !ob->weights) goto oom;
        }
    w->cur = &w->batches[0];
    for (int l = 0; l < w->L; l++)
        for (int h = 0; h < w->H; h++)
            w->cape_m[l * w->H + h] = rn_config_cape(&w->cfg, l, h) ? M : 0;
    w->probe.user = w;
    w->probe.access = probe_access;
    w->probe.chunk = probe_chunk;

    rc = tr_schema_open_write_mode(path, w->durability, &w->db, err);
    if (!rc) rc = take_live_lock(w, err);
    if (!rc) rc = insert_run(w, meta, err);
    if (!rc) rc = prepare_inserts(w, err);
    if (!rc && pthread_create(&w->thread, NULL, writer_main, w) != 0)
        rc = rn_seterr(err, RN_EINTERNAL, "%s: cannot start the writer thread", path);
    if (rc) { free_writer(w); return rc; }
    w->thread_started = 1;
    *out = w;
    return RN_OK;
oom:
    free_writer(w);
    return rn_seterr(err, RN_ENOMEM, "%s: out of memory for the trace queue", path);
}

/* Make sure the block index exists (every v2 file is created with it;
 * idempotent). */
static int build_index(sqlite3 *db, const char *path, rn_error *err)
{
    return tr_exec(db, path, "CREATE INDEX IF NOT EXISTS " TR_BLOCK_INDEX
                             " ON event_blocks(run_id, layer, head, pos0)", err);
}

/* After a writer failure the committed batches may end inside a chunk:
 * events of positions whose tokens row was in the lost batch.  Cut the run
 * back to its complete positions (tr_repair_db) so that it holds only whole
 * positions, and count what it holds.  Best effort: on a still-full disk the
 * deletion itself may fail; the run then needs `ramtrace repair` later. */
static void repair_failed_run(tr_writer *w)
{
    tr_repair_result r;
    rn_error e = { 0 };
    if (tr_exec(w->db, w->path, "BEGIN IMMEDIATE", &e)) return;
    if (tr_repair_db(w->db, w->path, w->run_id, &r, &e) || tr_exec(w->db, w->path, "COMMIT", &e)) {
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        return;
    }
    w->committed_tokens = r.tokens;
    w->committed_events = r.events;
}

int tr_writer_finish(tr_writer *w, int status, tr_writer_stats *st, rn_error *err)
{
    for (int l = 0; l < w->L; l++)
        for (int h = 0; h < w->H; h++)
            if (w->open[l * w->H + h].slots) seal(w, &w->open[l * w->H + h], l, h);
    submit(w);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv_full);
    pthread_mutex_unlock(&w->mu);
    if (w->thread_started) pthread_join(w->thread, NULL);
    w->thread_started = 0;

    int rc = RN_OK;
    if (w->failed) { rc = w->werr.code; if (err) *err = w->werr; }
    const char *stext = status == TR_STATUS_COMPLETE ? "complete"
                      : status == TR_STATUS_INTERRUPTED ? "interrupted" : "running";
    if (rc && status == TR_STATUS_COMPLETE) stext = "interrupted";
    sqlite3_stmt *up = NULL;
    int src = sqlite3_prepare_v2(w->db,
        "UPDATE runs SET status = ?, end_time = ?, n_tokens = ?, n_events = ? WHERE run_id = ?",
        -1, &up, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_text(up, 1, stext, -1, SQLITE_STATIC);
        sqlite3_bind_double(up, 2, now_wall());
        sqlite3_bind_int64(up, 3, w->committed_tokens);
        sqlite3_bind_int64(up, 4, w->committed_events);
        sqlite3_bind_int64(up, 5, w->run_id);
        src = sqlite3_step(up);
        src = src == SQLITE_DONE ? SQLITE_OK : src;
    }
    sqlite3_finalize(up);
    rn_error e2 = { 0 };
    if (src != SQLITE_OK && !rc) rc = tr_sqlerr(w->db, src, w->path, "finishing the run", err);
    if (w->has_state && !rc) rc = insert_state(w, err);
    end_chunk(w);
    if (w->ch_oom && !rc) rc = rn_seterr(err, RN_ENOMEM, "out of memory recording prefill chunks");
    if (w->n_chunks && !rc) rc = insert_chunks(w, err);
    if (w->failed) repair_failed_run(w);
    if (!rc) {
        double t0 = now_mono();
        rc = build_index(w->db, w->path, &e2);
        if (rc && err) *err = e2;
        w->index_s = now_mono() - t0;
    }
    if (st) tr_writer_get_stats(w, st);
    free_writer(w);
    return rc;
}

int tr_build_indexes(const char *path, int64_t run_id, rn_error *err)
{
    sqlite3 *db;
    int rc = tr_schema_open_write(path, &db, err);
    if (rc) return rc;
    (void)run_id;
    rc = build_index(db, path, err);
    sqlite3_close(db);
    return rc;
}
