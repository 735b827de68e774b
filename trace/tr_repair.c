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

/* Run sql with ?1 = run_id, ?2 = a; *changes gets the rows it changed. */
static int exec_run(sqlite3 *db, const char *path, const char *sql, int64_t run_id, int64_t a,
                    int64_t *changes, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_bind_parameter_count(st) >= 2) sqlite3_bind_int64(st, 2, a);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tr_sqlerr(db, rc, path, "repair", err);
    if (changes) *changes = sqlite3_changes64(db);
    return RN_OK;
}

/* Number of traced ops in a run's selection text ("... ops=rw"). */
static int selection_ops(const char *sel)
{
    const char *o = sel ? strstr(sel, "ops=") : NULL;
    if (!o) return 2;
    o += 4;
    return (!strncmp(o, "rw", 2) || !strncmp(o, "wr", 2)) ? 2 : 1;
}

/* P: the number of leading complete positions 0..P-1 of the run (see
 * tr_repair.h).  Two ordered streams are merged: the run's token
 * positions and its positions whose groups are complete. */
static int complete_prefix(sqlite3 *db, const char *path, int64_t run_id, int64_t groups_per_pos,
                           int64_t K, int64_t *P, rn_error *err)
{
    sqlite3_stmt *tok = NULL, *cmp = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT pos FROM tokens WHERE run_id = ?1 ORDER BY pos", -1, &tok, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
            "SELECT pos FROM (SELECT pos, sum(n) AS s FROM event_groups WHERE run_id = ?1"
            " GROUP BY pos, layer, head, op) GROUP BY pos"
            " HAVING count(*) = ?2 AND min(s) = ?3 AND max(s) = ?3 ORDER BY pos", -1, &cmp, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(tok);
        return tr_sqlerr(db, rc, path, "repair", err);
    }
    sqlite3_bind_int64(tok, 1, run_id);
    sqlite3_bind_int64(cmp, 1, run_id);
    sqlite3_bind_int64(cmp, 2, groups_per_pos);
    sqlite3_bind_int64(cmp, 3, K);
    int64_t p = 0;
    int rt = SQLITE_ROW, rg = SQLITE_ROW;
    for (;;) {
        rt = sqlite3_step(tok);
        if (rt != SQLITE_ROW || sqlite3_column_int64(tok, 0) != p) break;
        if (groups_per_pos > 0) {
            /* no groups are expected when the selection traced nothing */
            rg = sqlite3_step(cmp);
            if (rg != SQLITE_ROW || sqlite3_column_int64(cmp, 0) != p) break;
        }
        p++;
    }
    sqlite3_finalize(tok);
    sqlite3_finalize(cmp);
    if ((rt != SQLITE_ROW && rt != SQLITE_DONE) || (rg != SQLITE_ROW && rg != SQLITE_DONE))
        return tr_sqlerr(db, rt != SQLITE_ROW && rt != SQLITE_DONE ? rt : rg, path, "repair", err);
    *P = p;
    return RN_OK;
}

int tr_repair_db(sqlite3 *db, const char *path, int64_t run_id, tr_repair_result *r, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT status, top_k, selection, n_tokens, n_events FROM runs"
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
    int nops = selection_ops((const char *)sqlite3_column_text(st, 2));
    int64_t old_tokens = sqlite3_column_int64(st, 3), old_events = sqlite3_column_int64(st, 4);
    sqlite3_finalize(st);
    if (!strcmp(r->status, "complete")) {
        r->tokens = old_tokens;
        r->events = old_events;
        return RN_OK;
    }
    int64_t heads = 0, P = 0;
    rc = query_i64(db, path, "SELECT count(*) FROM heads WHERE run_id = ?1", run_id, &heads, err);
    if (!rc) rc = complete_prefix(db, path, run_id, heads * nops, K, &P, err);
    int64_t ev_before = 0;
    if (!rc) rc = query_i64(db, path, "SELECT coalesce(sum(n), 0) FROM event_groups WHERE run_id = ?1",
                            run_id, &ev_before, err);
    if (!rc) rc = exec_run(db, path, "DELETE FROM event_groups WHERE run_id = ?1 AND pos >= ?2", run_id, P,
                           &r->dropped_groups, err);
    if (!rc) rc = exec_run(db, path, "DELETE FROM tokens WHERE run_id = ?1 AND pos >= ?2", run_id, P,
                           &r->dropped_tokens, err);
    if (!rc) rc = query_i64(db, path, "SELECT count(*) FROM tokens WHERE run_id = ?1", run_id, &r->tokens, err);
    if (!rc) rc = query_i64(db, path, "SELECT coalesce(sum(n), 0) FROM event_groups WHERE run_id = ?1",
                            run_id, &r->events, err);
    if (rc) return rc;
    r->dropped_events = ev_before - r->events;
    r->changed = r->dropped_groups || r->dropped_tokens || strcmp(r->status, "interrupted") ||
                 old_tokens != r->tokens || old_events != r->events;
    if (r->changed) {
        sqlite3_stmt *up;
        rc = sqlite3_prepare_v2(db, "UPDATE runs SET status = 'interrupted', n_tokens = ?2, n_events = ?3"
                                " WHERE run_id = ?1", -1, &up, NULL);
        if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "repair", err);
        sqlite3_bind_int64(up, 1, run_id);
        sqlite3_bind_int64(up, 2, r->tokens);
        sqlite3_bind_int64(up, 3, r->events);
        rc = sqlite3_step(up);
        sqlite3_finalize(up);
        if (rc != SQLITE_DONE) return tr_sqlerr(db, rc, path, "repair", err);
    }
    /* The index a killed run never got (idempotent). */
    char name[64], sql[512];
    tr_index_name(run_id, name, sizeof name);
    snprintf(sql, sizeof sql, "CREATE INDEX IF NOT EXISTS %s ON event_groups(layer, head, pos, op, r0)"
             " WHERE run_id = %lld", name, (long long)run_id);
    return tr_exec(db, path, sql, err);
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

int tr_repair(const char *path, int64_t run_id, tr_repair_result **res, int *n, rn_error *err)
{
    *res = NULL;
    *n = 0;
    struct stat stt;
    if (stat(path, &stt) != 0) return rn_seterr(err, RN_EINPUT, "%s: no such file", path);
    if (S_ISDIR(stt.st_mode)) return rn_seterr(err, RN_EINPUT, "%s: is a directory", path);
    /* Every live writer holds a shared flock on the file (tr_writer.c):
     * a run whose writer is alive is not repaired. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: a ramtrace process is still writing a run to this file; "
                         "repair it once that process has ended", path);
    }
    sqlite3 *db;
    int rc = tr_schema_open_write(path, &db, err);
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
