/* tr_upgrade.c — converting schema v1 trace files to the current schema
 * (tr_upgrade.h).
 *
 * Runs, tokens and heads are copied as they are (weight_format 'f32': v1
 * stored exact weights).  Events are read per run in canonical order
 * through the v1 run's partial index and re-packed by the same rule as the
 * writer: per (layer, head), blocks of up to TR_BLOCK_POSITIONS
 * consecutive whole positions (every traced op, ranks 0..K-1 each).  A
 * position that is not whole (the tail of a killed v1 run) ends its block
 * and is dropped; `repair` then cuts the run as usual.  Every v1 value is
 * checked as the v1 reader did (slot < M, weight in [0, 1], ranks in
 * order), so a corrupt v1 file is a one-line error and no output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_probe.h"
#include "tr_block.h"
#include "tr_repair.h"
#include "tr_schema.h"
#include "tr_upgrade.h"

/* One run being converted: the open block of the current (layer, head). */
typedef struct {
    sqlite3 *db;
    const char *path;
    sqlite3_stmt *ins;
    int64_t run_id, M, K, L, H;
    int ops, nops, sbits;
    int64_t layer, head, pos0, cape_m;
    int npos;
    int64_t cur_pos;      /* position being filled, -1 none */
    int cur_ops;          /* ops of cur_pos seen whole */
    int64_t next_rank;    /* next expected rank of the current (pos, op) */
    int cur_op;
    uint8_t *slots, *weights;  /* [TR_BLOCK_POSITIONS * nops * K] */
    int64_t events, dropped;
} conv;

/* Insert the open block's whole positions. */
static int flush(conv *c, rn_error *err)
{
    if (!c->npos) return RN_OK;
    int64_t n = (int64_t)c->npos * c->nops * c->K;
    sqlite3_stmt *st = c->ins;
    sqlite3_bind_int64(st, 1, c->run_id);
    sqlite3_bind_int64(st, 2, c->layer);
    sqlite3_bind_int64(st, 3, c->head);
    sqlite3_bind_int64(st, 4, c->pos0);
    sqlite3_bind_int64(st, 5, c->npos);
    sqlite3_bind_int64(st, 6, c->ops);
    sqlite3_bind_int64(st, 7, c->cape_m);
    sqlite3_bind_int64(st, 8, n);
    sqlite3_bind_blob64(st, 9, c->slots, (sqlite3_uint64)tr_slot_blob_len(n, c->sbits), SQLITE_STATIC);
    sqlite3_bind_blob64(st, 10, c->weights, (sqlite3_uint64)(n * 4), SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(c->db, rc, c->path, "writing event blocks", err);
    c->events += n;
    c->pos0 += c->npos;
    c->npos = 0;
    return RN_OK;
}

/* Drop the partial position being filled (not whole). */
static void drop_partial(conv *c)
{
    if (c->cur_pos < 0) return;
    int64_t seen = 0;
    for (int op = 0; op < 2; op++)
        if ((c->cur_ops >> op) & 1) seen += c->K;
    if (c->next_rank > 0) seen += c->next_rank;
    c->dropped += seen;
    c->cur_pos = -1;
}

static int corrupt(const conv *c, const char *what, rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "%s: corrupt trace (version 1): run %lld, layer %lld, head %lld: %s",
                     c->path, (long long)c->run_id, (long long)c->layer, (long long)c->head, what);
}

/* Feed one v1 row (a group of n ranks from r0 of (layer, head, pos, op)). */
static int feed(conv *c, sqlite3_stmt *st, rn_error *err)
{
    for (int i = 0; i < 7; i++)
        if (sqlite3_column_type(st, i) != SQLITE_INTEGER) return corrupt(c, "a header value is not an integer", err);
    int64_t nl = sqlite3_column_int64(st, 5);
    for (int i = 0; i < nl && i < 8; i++) {
        int ts = sqlite3_column_type(st, 8 + 2 * i), tw = sqlite3_column_type(st, 9 + 2 * i);
        if (ts != SQLITE_INTEGER || (tw != SQLITE_INTEGER && tw != SQLITE_FLOAT))
            return corrupt(c, "a slot or weight is missing or not a number", err);
    }
    int64_t layer = sqlite3_column_int64(st, 0), head = sqlite3_column_int64(st, 1);
    int64_t pos = sqlite3_column_int64(st, 2), op = sqlite3_column_int64(st, 3);
    int64_t r0 = sqlite3_column_int64(st, 4), n = sqlite3_column_int64(st, 5);
    int64_t cape_m = sqlite3_column_int64(st, 6);
    if (layer < 0 || layer >= c->L || head < 0 || head >= c->H || pos < 0 || pos > INT32_MAX ||
        (op != RN_OP_WRITE && op != RN_OP_READ) || n < 1 || n > 8 || r0 < 0 || r0 + n > c->K ||
        (cape_m != 0 && cape_m != c->M))
        return corrupt(c, "a row outside the run's header", err);
    int rc = RN_OK;
    if (layer != c->layer || head != c->head) {
        drop_partial(c);
        if ((rc = flush(c, err))) return rc;
        c->layer = layer;
        c->head = head;
        c->cape_m = cape_m;
        c->npos = 0;
        c->pos0 = pos;
    }
    if (!((c->ops >> op) & 1)) { c->dropped += n; return RN_OK; } /* an op the selection did not trace */
    int64_t next = c->pos0 + c->npos;
    if (pos != c->cur_pos) {
        drop_partial(c);
        if (pos != next) {          /* a gap: the block ends */
            if ((rc = flush(c, err))) return rc;
            c->pos0 = next = pos;
        }
        c->cur_pos = pos;
        c->cur_ops = 0;
        c->cur_op = -1;
        c->next_rank = 0;
    }
    if ((int)op != c->cur_op) {
        if (c->next_rank != 0) return corrupt(c, "a group of fewer than top_k ranks", err);
        if ((c->cur_ops >> op) & 1) return corrupt(c, "an op stored twice", err);
        c->cur_op = (int)op;
    }
    if (r0 != c->next_rank) return corrupt(c, "ranks missing or repeated", err);
    int oi = c->nops == 2 ? (int)op : 0;
    size_t e = ((size_t)c->npos * c->nops + oi) * c->K + r0;
    for (int i = 0; i < n; i++) {
        int64_t s = sqlite3_column_int64(st, 8 + 2 * i);
        double w = sqlite3_column_double(st, 9 + 2 * i);
        if (s < 0 || s >= c->M) return corrupt(c, "a slot outside [0, M)", err);
        if (!(w >= 0 && w <= 1)) return corrupt(c, "a weight outside [0, 1]", err);
        uint32_t s32 = (uint32_t)s;
        float f = (float)w;
        tr_block_put_slots(c->slots, e + (size_t)i, &s32, 1, c->sbits);
        tr_block_put_weights(c->weights + (e + i) * 4, &f, 1, TR_WEIGHTS_F32);
    }
    c->next_rank = r0 + n;
    if (c->next_rank == c->K) {
        c->cur_ops |= 1 << op;
        c->next_rank = 0;
        c->cur_op = -1;
        if (c->cur_ops == c->ops) {
            c->cur_pos = -1;
            if (++c->npos == TR_BLOCK_POSITIONS) rc = flush(c, err);
        }
    }
    return rc;
}

/* Convert the events of every run of attached v1 into db's event_blocks. */
static int convert_events(sqlite3 *db, const char *path, tr_upgrade_result *res, rn_error *err)
{
    sqlite3_stmt *runs = NULL, *ins = NULL;
    int rc = RN_OK;
    int src = sqlite3_prepare_v2(db, "SELECT run_id, n_layers, n_heads, n_slots, top_k, selection FROM v1.runs"
                                     " ORDER BY run_id", -1, &runs, NULL);
    if (src == SQLITE_OK)
        src = sqlite3_prepare_v2(db, "INSERT INTO main.event_blocks VALUES(?,?,?,?,?,?,?,?,?,?)", -1, &ins, NULL);
    if (src != SQLITE_OK) {
        sqlite3_finalize(runs);
        return tr_sqlerr(db, src, path, "reading the version 1 runs", err);
    }
    while (!rc && (src = sqlite3_step(runs)) == SQLITE_ROW) {
        conv c = { .db = db, .path = path, .ins = ins, .layer = -1, .head = -1, .cur_pos = -1, .cur_op = -1 };
        c.run_id = sqlite3_column_int64(runs, 0);
        c.L = sqlite3_column_int64(runs, 1);
        c.H = sqlite3_column_int64(runs, 2);
        c.M = sqlite3_column_int64(runs, 3);
        c.K = sqlite3_column_int64(runs, 4);
        c.ops = tr_selection_ops((const char *)sqlite3_column_text(runs, 5));
        c.nops = tr_block_nops(c.ops);
        c.sbits = tr_slot_bits(c.M);
        if (c.L < 1 || c.L > 4096 || c.H < 1 || c.H > 64 || c.M < 1 || c.M > ((int64_t)1 << 32) || c.K < 1 ||
            c.K > c.M || c.K > 65536) {
            rc = rn_seterr(err, RN_EINPUT, "%s: corrupt trace (version 1): run %lld has an invalid header", path,
                           (long long)c.run_id);
            break;
        }
        size_t ents = (size_t)TR_BLOCK_POSITIONS * c.nops * c.K;
        c.slots = malloc((size_t)tr_slot_blob_len((int64_t)ents, c.sbits));
        c.weights = malloc(ents * 4);
        char sql[512];
        /* the literal run id lets SQLite use the v1 run's partial index */
        snprintf(sql, sizeof sql, "SELECT layer, head, pos, op, r0, n, cape_m, 0, s0, w0, s1, w1, s2, w2, s3, w3,"
                 " s4, w4, s5, w5, s6, w6, s7, w7 FROM v1.event_groups WHERE run_id = %lld"
                 " ORDER BY layer, head, pos, op, r0", (long long)c.run_id);
        sqlite3_stmt *st = NULL;
        if (!c.slots || !c.weights) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
        else if ((src = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
            rc = tr_sqlerr(db, src, path, "reading the version 1 events", err);
        while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
            /* columns shifted by one (the 0 at 7) so that slot i is 8 + 2i */
            rc = feed(&c, st, err);
        }
        if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(db, src, path, "reading the version 1 events", err);
        if (!rc) {
            drop_partial(&c);
            rc = flush(&c, err);
        }
        sqlite3_finalize(st);
        free(c.slots);
        free(c.weights);
        res->runs++;
        res->events += c.events;
        res->dropped_events += c.dropped;
    }
    if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(db, src, path, "reading the version 1 runs", err);
    sqlite3_finalize(runs);
    sqlite3_finalize(ins);
    return rc;
}

/* The user_version of a file with the trace application id; -1 (err set)
 * when it is not a trace. */
static int file_version(const char *path, int *ver, rn_error *err)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    int64_t app = 0, v = -1;
    sqlite3_stmt *st;
    if (rc == SQLITE_OK) sqlite3_busy_timeout(db, TR_WRITER_BUSY_MS);
    /* a v1 file left by a killed writer: recover its log into the file
     * (the new file must not find an old log beside it after the rename) */
    if (rc == SQLITE_OK) sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL)) == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) { app = sqlite3_column_int64(st, 0); rc = SQLITE_OK; }
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_OK && (rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL)) == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) { v = sqlite3_column_int64(st, 0); rc = SQLITE_OK; }
        sqlite3_finalize(st);
    }
    if (rc != SQLITE_OK) { tr_sqlerr(db, rc, path, "reading the header", err); sqlite3_close(db); return -1; }
    sqlite3_close(db);
    if (app != TR_APPLICATION_ID) {
        rn_seterr(err, RN_EINPUT, "%s: not a ramtrace trace database (application_id %lld)", path, (long long)app);
        return -1;
    }
    if (v != 1 && v != TR_SCHEMA_VERSION) {
        rn_seterr(err, RN_EINPUT, "%s: trace schema version %lld, this ramtrace upgrades version 1 to %d", path,
                  (long long)v, TR_SCHEMA_VERSION);
        return -1;
    }
    *ver = (int)v;
    return 0;
}

int tr_upgrade(const char *path, tr_upgrade_result *res, rn_error *err)
{
    memset(res, 0, sizeof *res);
    int fd;
    int lrc = tr_lock_idle(path, " to this file; upgrade it", &fd, err);
    if (lrc) return lrc;
    int ver = 0;
    if (file_version(path, &ver, err)) { close(fd); return err ? err->code : RN_EINPUT; }
    res->from_version = ver;
    if (ver == TR_SCHEMA_VERSION) { close(fd); return RN_OK; }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.upgrade-tmp", path);
    static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
    char p[4300];
    for (int i = 0; i < 4; i++) { snprintf(p, sizeof p, "%s%s", tmp, sfx[i]); unlink(p); }
    sqlite3 *db;
    int rc = tr_schema_open_write(tmp, &db, err);
    if (!rc) {
        char *att = sqlite3_mprintf("ATTACH %Q AS v1", path);
        rc = att ? tr_exec_what(db, path, att, "opening the version 1 file", err)
                 : rn_seterr(err, RN_ENOMEM, "out of memory");
        sqlite3_free(att);
    }
    if (!rc) rc = tr_exec_what(db, path, "BEGIN IMMEDIATE", "upgrading", err);
    if (!rc)
        rc = tr_exec_what(db, path,
            "INSERT INTO main.runs(run_id, name, command, status, model_path, model_hash, config, prompt,"
            " input_path, sampling, selection, start_time, end_time, tool_version, n_layers, n_heads, n_slots,"
            " top_k, n_tokens, n_events, weight_format) SELECT run_id, name, command, status, model_path,"
            " model_hash, config, prompt, input_path, sampling, selection, start_time, end_time, tool_version,"
            " n_layers, n_heads, n_slots, top_k, n_tokens, n_events, 'f32' FROM v1.runs;"
            "INSERT INTO main.tokens SELECT run_id, pos, token_id, piece, phase FROM v1.tokens;"
            "INSERT INTO main.heads SELECT run_id, layer, head, cape, n_slots FROM v1.heads;",
            "copying runs, tokens and heads", err);
    if (!rc) rc = convert_events(db, path, res, err);
    if (!rc) rc = tr_exec_what(db, path, "COMMIT", "upgrading", err);
    if (rc) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    if (db) sqlite3_exec(db, "DETACH v1", NULL, NULL, NULL);
    sqlite3_close(db);   /* the last connection: the log is checkpointed and removed */
    if (!rc && rename(tmp, path) != 0)
        rc = rn_seterr(err, RN_EIO, "%s: cannot rename the upgraded file into place: %s", path, strerror(errno));
    if (rc)
        for (int i = 0; i < 4; i++) { snprintf(p, sizeof p, "%s%s", tmp, sfx[i]); unlink(p); }
    close(fd);
    return rc;
}
