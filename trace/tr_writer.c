/* tr_writer.c — the tracing probe: a bounded queue of event batches between
 * the model (producer, via rn_probe callbacks) and one writer thread that
 * inserts each full batch into SQLite in a single transaction with prepared
 * multi-row INSERTs.
 *
 * Batches are allocated once at open; the probe only copies the K slots and
 * weights of a selected group into the current batch and, when it is full,
 * hands it to the thread and takes a free one (waiting only if all are in
 * flight, which bounds memory).  A failure in the thread (disk full, ...)
 * is remembered; later batches are dropped and finish reports it.
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
#include "tr_repair.h"
#include "tr_schema.h"
#include "tr_writer.h"

#define ROWS_PER_STMT 100            /* rows of one multi-row INSERT */
#define COLS (8 + 2 * TR_LANES)      /* columns of event_groups */
#define PIECE_LEN 32

typedef struct {
    int32_t pos;
    uint16_t layer, head;
    uint16_t k;
    uint8_t op;
} grp_meta;

typedef struct {
    int64_t pos;
    int32_t id;
    int32_t generated;
    char piece[PIECE_LEN];
} tok_rec;

typedef struct {
    int n_groups, n_tokens;
    int64_t n_events;
    grp_meta *meta;    /* [cap] */
    uint32_t *slot;    /* [cap * K] */
    float *w;          /* [cap * K] */
    tok_rec *toks;     /* [tcap] */
} batch;

struct tr_writer {
    char *path;
    sqlite3 *db;
    int live_fd;       /* holds flock(LOCK_SH) on the file while the run lives */
    int durability;    /* TR_DURABILITY_* */
    sqlite3_stmt *ins_multi, *ins_one, *ins_tok;
    int64_t run_id;
    rn_config cfg;
    int K, L, H;
    int64_t *cape_m;   /* [L*H]: M for CAPE heads, 0 otherwise */
    tr_select sel;
    rn_probe probe;
    int build_index;
    int cap, tcap;     /* groups / tokens per batch */

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
    int64_t events, groups, tokens;           /* produced */
    int64_t committed_events, committed_tokens; /* written (thread) */
    double wait_s, insert_s, index_s;
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

/* Bind one event_groups row (lanes r0..r0+n-1 of group g) at parameter
 * offset base. */
static void bind_row(sqlite3_stmt *st, int base, const tr_writer *w, const grp_meta *g, int r0,
                     int n, const uint32_t *slot, const float *wt)
{
    sqlite3_bind_int64(st, base + 1, w->run_id);
    sqlite3_bind_int(st, base + 2, g->layer);
    sqlite3_bind_int(st, base + 3, g->head);
    sqlite3_bind_int(st, base + 4, g->pos);
    sqlite3_bind_int(st, base + 5, g->op);
    sqlite3_bind_int(st, base + 6, r0);
    sqlite3_bind_int(st, base + 7, n);
    sqlite3_bind_int64(st, base + 8, w->cape_m[g->layer * w->H + g->head]);
    for (int i = 0; i < TR_LANES; i++) {
        if (i < n) {
            sqlite3_bind_int64(st, base + 9 + 2 * i, slot[i]);
            sqlite3_bind_double(st, base + 10 + 2 * i, (double)wt[i]);
        } else {
            sqlite3_bind_null(st, base + 9 + 2 * i);
            sqlite3_bind_null(st, base + 10 + 2 * i);
        }
    }
}

static int step_reset(tr_writer *w, sqlite3_stmt *st, rn_error *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(w->db, rc, w->path, "inserting events", err);
    return RN_OK;
}

/* Insert one batch (tokens and event rows) in a single transaction. */
static int insert_batch(tr_writer *w, batch *b, rn_error *err)
{
    /* IMMEDIATE: the write lock is taken (waiting on another writer) before
     * anything is read, so the transaction never has to upgrade. */
    int rc = tr_exec_what(w->db, w->path, "BEGIN IMMEDIATE", "waiting for another writer", err);
    if (rc) return rc;
    for (int i = 0; i < b->n_tokens && !rc; i++) {
        const tok_rec *t = &b->toks[i];
        sqlite3_bind_int64(w->ins_tok, 1, w->run_id);
        sqlite3_bind_int64(w->ins_tok, 2, t->pos);
        sqlite3_bind_int(w->ins_tok, 3, t->id);
        sqlite3_bind_text(w->ins_tok, 4, t->piece, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->ins_tok, 5, t->generated ? "generated" : "prompt", -1, SQLITE_STATIC);
        rc = step_reset(w, w->ins_tok, err);
    }
    int rows = 0;
    for (int gi = 0; gi < b->n_groups && !rc; gi++) {
        const grp_meta *g = &b->meta[gi];
        const uint32_t *slot = b->slot + (size_t)gi * w->K;
        const float *wt = b->w + (size_t)gi * w->K;
        for (int r0 = 0; r0 < g->k && !rc; r0 += TR_LANES) {
            int n = g->k - r0 < TR_LANES ? g->k - r0 : TR_LANES;
            /* Rows go into the multi-row statement; the tail of the batch
             * (fewer than ROWS_PER_STMT rows left) uses the one-row one. */
            bind_row(w->ins_multi, rows * COLS, w, g, r0, n, slot + r0, wt + r0);
            if (++rows == ROWS_PER_STMT) {
                rc = step_reset(w, w->ins_multi, err);
                rows = 0;
            }
        }
    }
    if (!rc && rows) {
        /* Re-bind the pending rows one at a time. */
        int pending = rows, seen = 0, total = 0;
        for (int gi = 0; gi < b->n_groups; gi++) total += (b->meta[gi].k + TR_LANES - 1) / TR_LANES;
        int skip = total - pending;
        for (int gi = 0; gi < b->n_groups && !rc; gi++) {
            const grp_meta *g = &b->meta[gi];
            for (int r0 = 0; r0 < g->k && !rc; r0 += TR_LANES, seen++) {
                if (seen < skip) continue;
                int n = g->k - r0 < TR_LANES ? g->k - r0 : TR_LANES;
                bind_row(w->ins_one, 0, w, g, r0, n, b->slot + (size_t)gi * w->K + r0,
                         b->w + (size_t)gi * w->K + r0);
                rc = step_reset(w, w->ins_one, err);
            }
        }
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
        b->n_groups = b->n_tokens = 0;
        b->n_events = 0;
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
    if (!w->cur->n_groups && !w->cur->n_tokens) return;
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

/* rn_probe callback: copy one selected group into the current batch. */
static void probe_access(void *user, int layer, int head, int pos, int op, int k,
                         const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    (void)addr; /* derived from slot, pos and the head's CAPE flag */
    tr_writer *w = user;
    /* the model reports its own layers, heads and top-K: those of the
     * config the writer was opened with */
    assert(layer >= 0 && layer < w->L && head >= 0 && head < w->H);
    assert((op == RN_OP_WRITE || op == RN_OP_READ) && k >= 0 && k <= w->K);
    if (!tr_select_has(&w->sel, layer, head, op)) return;
    batch *b = w->cur;
    if (b->n_groups == w->cap) { submit(w); b = w->cur; }
    assert(b->n_groups < w->cap); /* submit hands back an empty batch */
    int i = b->n_groups++;
    grp_meta *g = &b->meta[i];
    g->pos = pos;
    g->layer = (uint16_t)layer;
    g->head = (uint16_t)head;
    g->op = (uint8_t)op;
    g->k = (uint16_t)k;
    memcpy(b->slot + (size_t)i * w->K, slot, sizeof(uint32_t) * k);
    memcpy(b->w + (size_t)i * w->K, weight, sizeof(float) * k);
    b->n_events += k;
    w->events += k;
    w->groups++;
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
    sqlite3_finalize(w->ins_multi);
    sqlite3_finalize(w->ins_one);
    sqlite3_finalize(w->ins_tok);
    sqlite3_close(w->db);
    /* Closed after the connection: closing any descriptor of the file drops
     * the process's POSIX locks on it, SQLite's included. */
    if (w->live_fd >= 0) close(w->live_fd);
    if (w->batches)
        for (int i = 0; i < w->nb; i++) {
            free(w->batches[i].meta);
            free(w->batches[i].slot);
            free(w->batches[i].w);
            free(w->batches[i].toks);
        }
    free(w->batches);
    free(w->fullq);
    free(w->freeq);
    free(w->cape_m);
    free(w->path);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_full);
    pthread_cond_destroy(&w->cv_free);
    free(w);
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
        " n_slots, top_k, n_tokens, n_events)"
        " VALUES(?,?,'running',?,?,?,?,?,?,?,?,?,?,?,?,?,0,0)", -1, &st, NULL);
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
    size_t cap = (size_t)ROWS_PER_STMT * (COLS * 2 + 4) + 64;
    char *sql = malloc(cap);
    if (!sql) return rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++) {
        int rows = pass ? 1 : ROWS_PER_STMT;
        size_t n = (size_t)snprintf(sql, cap, "INSERT INTO event_groups VALUES");
        for (int r = 0; r < rows; r++) {
            sql[n++] = r ? ',' : ' ';
            sql[n++] = '(';
            for (int c = 0; c < COLS; c++) {
                if (c) sql[n++] = ',';
                sql[n++] = '?';
            }
            sql[n++] = ')';
        }
        sql[n] = 0;
        int rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                    pass ? &w->ins_one : &w->ins_multi, NULL);
        if (rc != SQLITE_OK) { free(sql); return tr_sqlerr(w->db, rc, w->path, "preparing inserts", err); }
    }
    free(sql);
    int rc = sqlite3_prepare_v3(w->db, "INSERT INTO tokens VALUES(?,?,?,?,?)", -1,
                                SQLITE_PREPARE_PERSISTENT, &w->ins_tok, NULL);
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
    w->build_index = opts ? opts->build_index : 1;
    w->nb = opts && opts->queue_batches >= 2 ? opts->queue_batches : 4;
    size_t per_group = sizeof(grp_meta) + (size_t)w->K * (sizeof(uint32_t) + sizeof(float));
    w->cap = opts && opts->batch_groups > 0 ? opts->batch_groups : (int)((4u << 20) / per_group);
    if (w->cap < 16) w->cap = 16;
    w->tcap = 8192;
    w->path = strdup(path);
    w->cape_m = calloc((size_t)w->L * w->H, sizeof(int64_t));
    w->batches = calloc(w->nb, sizeof(batch));
    w->fullq = calloc(w->nb, sizeof(int));
    w->freeq = calloc(w->nb, sizeof(int));
    if (!w->path || !w->cape_m || !w->batches || !w->fullq || !w->freeq) goto oom;
    for (int i = 0; i < w->nb; i++) {
        batch *b = &w->batches[i];
        b->meta = malloc(sizeof(grp_meta) * w->cap);
        b->slot = malloc(sizeof(uint32_t) * (size_t)w->cap * w->K);
        b->w = malloc(sizeof(float) * (size_t)w->cap * w->K);
        b->toks = malloc(sizeof(tok_rec) * w->tcap);
        if (!b->meta || !b->slot || !b->w || !b->toks) goto oom;
        if (i) w->freeq[w->free_len++] = i;
    }
    w->cur = &w->batches[0];
    int64_t M = rn_config_slots(&w->cfg);
    for (int l = 0; l < w->L; l++)
        for (int h = 0; h < w->H; h++)
            w->cape_m[l * w->H + h] = rn_config_cape(&w->cfg, l, h) ? M : 0;
    w->probe.user = w;
    w->probe.access = probe_access;

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

/* Build the partial index of one run on an open connection. */
static int build_index(sqlite3 *db, const char *path, int64_t run_id, rn_error *err)
{
    char name[64], sql[512];
    tr_index_name(run_id, name, sizeof name);
    snprintf(sql, sizeof sql,
             "CREATE INDEX IF NOT EXISTS %s ON event_groups(layer, head, pos, op, r0)"
             " WHERE run_id = %lld", name, (long long)run_id);
    return tr_exec(db, path, sql, err);
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
    if (w->failed) repair_failed_run(w);
    if (!rc && w->build_index) {
        double t0 = now_mono();
        rc = build_index(w->db, w->path, w->run_id, &e2);
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
    rc = build_index(db, path, run_id, err);
    sqlite3_close(db);
    return rc;
}
