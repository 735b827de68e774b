/* tr_repair.c — `ramtrace repair`: cut a run that never finished back to its
 * complete positions, recount it and mark it interrupted (tr_repair.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_probe.h"
#include "tr_block.h"
#include "tr_repair.h"
#include "tr_schema.h"

/* One integer result of sql with ?1 = run_id. */
static int query_i64(sqlite3 *db, const char *path, const char *sql, int64_t run_id, int64_t *out,
                     rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
    sqlite3_bind_int64(st, 1, run_id);
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return tr_sqlerr(db, rc, path, "repair", err);
    return RN_OK;
}

/* Run sql with ?1 = run_id and ?2.. = the n values of a; *changes gets the
 * rows it changed. */
static int exec_run(sqlite3 *db, const char *path, const char *sql, int64_t run_id, const int64_t *a,
                    int n, int64_t *changes, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
    sqlite3_bind_int64(st, 1, run_id);
    for (int i = 0; i < n; i++) sqlite3_bind_int64(st, 2 + i, a[i]);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(db, rc, path, "repair", err);
    if (changes) *changes = sqlite3_changes64(db);
    return RN_OK;
}

/* P: the number of leading complete positions 0..P-1 of the run (see
 * tr_repair.h): the run's contiguous token positions from 0, cut to the
 * end of every traced head's gap-free run of blocks from position 0. */
static int complete_prefix(sqlite3 *db, const char *path, int64_t run_id, int ops, int64_t *P, rn_error *err)
{
    sqlite3_stmt *tok = NULL, *hd = NULL, *blk = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT pos FROM tokens WHERE run_id = ?1 ORDER BY pos", -1, &tok, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT layer, head FROM heads WHERE run_id = ?1 ORDER BY layer, head", -1,
                                &hd, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT layer, head, pos0, npos, ops FROM event_blocks WHERE run_id = ?1"
                                " ORDER BY layer, head, pos0", -1, &blk, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(tok);
        sqlite3_finalize(hd);
        return tr_sqlerr(db, rc, path, "repair", err);
    }
    sqlite3_bind_int64(tok, 1, run_id);
    sqlite3_bind_int64(hd, 1, run_id);
    sqlite3_bind_int64(blk, 1, run_id);
    int64_t p = 0;
    int rt;
    while ((rt = sqlite3_step(tok)) == SQLITE_ROW && sqlite3_column_int64(tok, 0) == p) p++;
    if (rt == SQLITE_ROW) rt = SQLITE_DONE;
    /* Merge the heads (sorted) with the blocks (sorted the same way). */
    int rh, rb = sqlite3_step(blk);
    while (rt == SQLITE_DONE && (rh = sqlite3_step(hd)) == SQLITE_ROW) {
        int64_t l = sqlite3_column_int64(hd, 0), h = sqlite3_column_int64(hd, 1), end = 0;
        for (; rb == SQLITE_ROW; rb = sqlite3_step(blk)) {
            int64_t bl = sqlite3_column_int64(blk, 0), bh = sqlite3_column_int64(blk, 1);
            if (bl > l || (bl == l && bh > h)) break;
            if (bl < l || bh < h) continue;   /* a head not in `heads` */
            int64_t p0 = sqlite3_column_int64(blk, 2), np = sqlite3_column_int64(blk, 3);
            if (p0 == end && np > 0 && np <= (1 << 24) && sqlite3_column_int64(blk, 4) == ops) end += np;
        }
        if (end < p) p = end;
        if (rb != SQLITE_ROW && rb != SQLITE_DONE) { rt = rb; break; }
    }
    if (rt == SQLITE_DONE && rh != SQLITE_DONE) rt = rh;
    sqlite3_finalize(tok);
    sqlite3_finalize(hd);
    sqlite3_finalize(blk);
    if (rt != SQLITE_DONE) return tr_sqlerr(db, rt, path, "repair", err);
    *P = p;
    return RN_OK;
}

int tr_repair_db(sqlite3 *db, const char *path, int64_t run_id, tr_repair_result *r, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT status, top_k, selection, n_tokens, n_events, n_slots,"
                                " weight_format FROM runs"
                                " WHERE run_id = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
    sqlite3_bind_int64(st, 1, run_id);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE) return rn_seterr(err, RN_EINPUT, "%s: no run %lld", path, (long long)run_id);
        return tr_sqlerr(db, rc, path, "repair", err);
    }
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    snprintf(r->status, sizeof r->status, "%s", (const char *)sqlite3_column_text(st, 0));
    int64_t K = sqlite3_column_int64(st, 1);
    int ops = tr_selection_ops((const char *)sqlite3_column_text(st, 2));
    int64_t old_tokens = sqlite3_column_int64(st, 3), old_events = sqlite3_column_int64(st, 4);
    int64_t sbits = tr_slot_bits(sqlite3_column_int64(st, 5));
    int wfmt = tr_weights_parse((const char *)sqlite3_column_text(st, 6));
    sqlite3_finalize(st);
    if (wfmt < 0) return rn_seterr(err, RN_EINPUT, "%s: run %lld has an unknown weight_format", path, (long long)run_id);
    int64_t P = 0, ev_before = 0, cut = 0, dropped = 0, n_tok = 0, dups = 0;
    rc = complete_prefix(db, path, run_id, ops, &P, err);
    if (!rc) rc = query_i64(db, path, "SELECT coalesce(sum(n), 0) FROM event_blocks WHERE run_id = ?1",
                            run_id, &ev_before, err);
    if (!rc) rc = query_i64(db, path, "SELECT count(*) FROM tokens WHERE run_id = ?1", run_id, &n_tok, err);
    if (rc) return rc;
    /* A complete run is left alone when its rows match its counts (every
     * position complete, the blocks' events adding up to n_events); one
     * that lost a block, the tail of one or a tokens row, or holds a block
     * twice, is cut like any other run (the readers refuse it as corrupt). */
    if (!strcmp(r->status, "complete") && P == old_tokens && n_tok == old_tokens && ev_before == old_events) {
        snprintf(r->status_after, sizeof r->status_after, "complete");
        r->tokens = old_tokens;
        r->events = old_events;
        return RN_OK;
    }
    /* an event block stored twice (same head and first position): the
     * first copy stays */
    rc = exec_run(db, path, "DELETE FROM event_blocks WHERE run_id = ?1 AND rowid NOT IN (SELECT min(rowid)"
                  " FROM event_blocks WHERE run_id = ?1 GROUP BY layer, head, pos0)", run_id, NULL, 0, &dups, err);
    if (!rc) rc = exec_run(db, path, "DELETE FROM event_blocks WHERE run_id = ?1 AND pos0 >= ?2", run_id, &P, 1,
                           &dropped, err);
    /* A block across P keeps its positions before P: a prefix of both BLOBs
     * (entries are position-major; the slots' last byte may keep bits of
     * the next position, which no reader looks at). */
    int64_t a[4] = { P, K, sbits, tr_weight_bytes(wfmt) };
    if (!rc) rc = exec_run(db, path,
        "UPDATE event_blocks SET npos = ?2 - pos0,"
        " n = (?2 - pos0) * ((ops & 1) + ((ops >> 1) & 1)) * ?3,"
        " slots = substr(slots, 1, ((?2 - pos0) * ((ops & 1) + ((ops >> 1) & 1)) * ?3 * ?4 + 7) / 8),"
        " weights = substr(weights, 1, (?2 - pos0) * ((ops & 1) + ((ops >> 1) & 1)) * ?3 * ?5)"
        " WHERE run_id = ?1 AND pos0 < ?2 AND pos0 + npos > ?2", run_id, a, 4, &cut, err);
    r->dropped_blocks = dropped + cut + dups;
    if (!rc) rc = exec_run(db, path, "DELETE FROM tokens WHERE run_id = ?1 AND pos >= ?2", run_id, &P, 1,
                           &r->dropped_tokens, err);
    if (!rc) rc = query_i64(db, path, "SELECT count(*) FROM tokens WHERE run_id = ?1", run_id, &r->tokens, err);
    if (!rc) rc = query_i64(db, path, "SELECT coalesce(sum(n), 0) FROM event_blocks WHERE run_id = ?1",
                            run_id, &r->events, err);
    if (rc) return rc;
    r->dropped_events = ev_before - r->events;
    /* a complete run that only held a block twice keeps every position and
     * its counts: it stays complete */
    int whole = !strcmp(r->status, "complete") && r->tokens == old_tokens && r->events == old_events;
    snprintf(r->status_after, sizeof r->status_after, "%s", whole ? "complete" : "interrupted");
    r->changed = r->dropped_blocks || r->dropped_tokens || strcmp(r->status, r->status_after) ||
                 old_tokens != r->tokens || old_events != r->events;
    if (r->changed) {
        sqlite3_stmt *up;
        rc = sqlite3_prepare_v2(db, whole ? "UPDATE runs SET n_tokens = ?2, n_events = ?3 WHERE run_id = ?1"
                                          : "UPDATE runs SET status = 'interrupted', n_tokens = ?2, n_events = ?3"
                                            " WHERE run_id = ?1", -1, &up, NULL);
        if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
        sqlite3_bind_int64(up, 1, run_id);
        sqlite3_bind_int64(up, 2, r->tokens);
        sqlite3_bind_int64(up, 3, r->events);
        rc = sqlite3_step(up);
        sqlite3_finalize(up);
        if (rc != SQLITE_DONE) return tr_sqlerr(db, rc, path, "repair", err);
    }
    return RN_OK;
}

/* The ids of the runs to repair: run_id itself, or every running run. */
static int pick_runs(sqlite3 *db, const char *path, int64_t run_id, int64_t **ids, int *n, rn_error *err)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, run_id > 0 ? "SELECT run_id FROM runs WHERE run_id = ?1"
                                               : "SELECT run_id FROM runs WHERE status = 'running' ORDER BY run_id",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
    sqlite3_bind_int64(st, 1, run_id);
    int cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            int64_t *t = realloc(*ids, sizeof *t * cap);
            if (!t) { sqlite3_finalize(st); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
            *ids = t;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(db, rc, path, "repair", err);
    if (run_id > 0 && *n == 0) return rn_seterr(err, RN_EINPUT, "%s: --run %lld: no such run", path, (long long)run_id);
    return RN_OK;
}

int tr_lock_idle(const char *path, const char *busy, int *fd, rn_error *err)
{
    struct stat stt;
    *fd = -1;
    if (stat(path, &stt) != 0) return rn_seterr(err, RN_EINPUT, "%s: no such file", path);
    if (S_ISDIR(stt.st_mode)) return rn_seterr(err, RN_EINPUT, "%s: is a directory", path);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        close(f);
        return rn_seterr(err, RN_EINPUT, "%s: a ramtrace process is still writing%s once that process has ended",
                         path, busy);
    }
    *fd = f;
    return RN_OK;
}

int tr_repair(const char *path, int64_t run_id, tr_repair_result **res, int *n, rn_error *err)
{
    *res = NULL;
    *n = 0;
    /* a run whose writer is alive is not repaired */
    int fd;
    int rc = tr_lock_idle(path, " a run to this file; repair it", &fd, err);
    if (rc) return rc;
    sqlite3 *db;
    rc = tr_schema_open_write(path, &db, err);
    if (rc) { close(fd); return rc; }
    int64_t *ids = NULL;
    int nids = 0;
    tr_repair_result *out = NULL;
    rc = tr_exec(db, path, "BEGIN IMMEDIATE", err);
    if (!rc) rc = pick_runs(db, path, run_id, &ids, &nids, err);
    if (!rc && nids && !(out = calloc(nids, sizeof *out))) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int i = 0; i < nids && !rc; i++) rc = tr_repair_db(db, path, ids[i], &out[i], err);
    if (!rc) rc = tr_exec(db, path, "COMMIT", err);
    if (rc) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    close(fd); /* after the connection: see tr_writer.c free_writer */
    free(ids);
    if (rc) { free(out); return rc; }
    *res = out;
    *n = nids;
    return RN_OK;
}
