/* tr_schema.c — creating and recognising trace databases.
 *
 * Storage layout (schema v2; docs/trace-schema.md explains the choice with
 * its measurements): events are kept in `event_blocks`, one row per (run,
 * layer, head) and block of up to TR_BLOCK_POSITIONS consecutive positions,
 * the slots and weights packed into two BLOBs (tr_block.h).  `events` is a
 * virtual table (module ramtrace_events, tr_vtab.c) that expands the blocks
 * into the same columns as schema v1's view; `reads` and `writes` are views
 * over it.  Every connection ramtrace opens registers the module; the
 * sqlite3 shell and Python load it from build/libramtrace_sql.so.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tr_schema.h"
#include "tr_stop.h"
#include "tr_vtab.h"

int tr_sqlerr(sqlite3 *db, int rc, const char *path, const char *what, rn_error *err)
{
    int prim = rc & 0xff;
    /* Our statements are fixed: SQLITE_ERROR on them means the file's schema
     * is not a trace's (a foreign or damaged file), which is bad input. */
    int code = (prim == SQLITE_FULL || prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN) ? RN_EIO
             : (prim == SQLITE_NOTADB || prim == SQLITE_CORRUPT || prim == SQLITE_ERROR ||
                prim == SQLITE_READONLY) ? RN_EINPUT
             : RN_EINTERNAL;
    if (prim == SQLITE_INTERRUPT) return rn_seterr(err, RN_EINTR, "%s: %s: interrupted", path, what);
    if (prim == SQLITE_NOTADB)
        return rn_seterr(err, code, "%s: not an SQLite database (so not a trace)", path);
    if (prim == SQLITE_READONLY)
        return rn_seterr(err, code, "%s: %s: the file is read-only", path, what);
    if (prim == SQLITE_ERROR)
        return rn_seterr(err, code, "%s: not a valid trace (%s: %s)", path, what,
                         db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return rn_seterr(err, code, "%s: %s: %s", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

int tr_exec(sqlite3 *db, const char *path, const char *sql, rn_error *err)
{
    return tr_exec_what(db, path, sql, "SQL failed", err);
}

int tr_exec_what(sqlite3 *db, const char *path, const char *sql, const char *what, rn_error *err)
{
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, what, err);
    return RN_OK;
}

/* Make the `events` virtual table's module known to db. */
static int register_vtab(sqlite3 *db, const char *path, rn_error *err)
{
    int rc = tr_vtab_register(db);
    return rc == SQLITE_OK ? RN_OK : tr_sqlerr(db, rc, path, "registering the events table", err);
}

/* The full schema as one SQL script. */
static void schema_sql(char *buf, size_t cap)
{
    snprintf(buf, cap,
        "PRAGMA application_id = %d;\n"
        "PRAGMA user_version = %d;\n"
        "CREATE TABLE runs(\n"
        "  run_id INTEGER PRIMARY KEY, name TEXT, command TEXT, status TEXT NOT NULL,\n"
        "  model_path TEXT, model_hash TEXT, config TEXT NOT NULL, prompt TEXT,\n"
        "  input_path TEXT, sampling TEXT, selection TEXT, start_time REAL, end_time REAL,\n"
        "  tool_version TEXT, n_layers INTEGER, n_heads INTEGER, n_slots INTEGER,\n"
        "  top_k INTEGER, n_tokens INTEGER, n_events INTEGER,\n"
        "  weight_format TEXT NOT NULL DEFAULT 'f32');\n"
        "CREATE TABLE tokens(run_id INTEGER NOT NULL, pos INTEGER NOT NULL,\n"
        "  token_id INTEGER NOT NULL, piece TEXT, phase TEXT NOT NULL,\n"
        "  PRIMARY KEY(run_id, pos));\n"
        "CREATE TABLE heads(run_id INTEGER NOT NULL, layer INTEGER NOT NULL,\n"
        "  head INTEGER NOT NULL, cape INTEGER NOT NULL, n_slots INTEGER NOT NULL,\n"
        "  PRIMARY KEY(run_id, layer, head));\n"
        "CREATE TABLE event_blocks(run_id INTEGER NOT NULL, layer INTEGER NOT NULL,\n"
        "  head INTEGER NOT NULL, pos0 INTEGER NOT NULL, npos INTEGER NOT NULL,\n"
        "  ops INTEGER NOT NULL, cape_m INTEGER NOT NULL, n INTEGER NOT NULL,\n"
        "  slots BLOB NOT NULL, weights BLOB NOT NULL);\n"
        "CREATE INDEX " TR_BLOCK_INDEX " ON event_blocks(run_id, layer, head, pos0);\n"
        "CREATE VIRTUAL TABLE events USING " TR_VTAB_MODULE ";\n"
        "CREATE VIEW writes AS SELECT * FROM events WHERE op = 0;\n"
        "CREATE VIEW reads AS SELECT * FROM events WHERE op = 1;\n",
        TR_APPLICATION_ID, TR_SCHEMA_VERSION);
}

int tr_schema_check(sqlite3 *db, const char *path, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "reading the header", err);
    rc = sqlite3_step(st);
    int64_t app = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return tr_sqlerr(db, rc, path, "reading the header", err);
    if (app != TR_APPLICATION_ID)
        return rn_seterr(err, RN_EINPUT, "%s: not a ramtrace trace database (application_id %lld)",
                         path, (long long)app);
    rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "reading the header", err);
    rc = sqlite3_step(st);
    int64_t ver = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (ver == 1)
        return rn_seterr(err, RN_EINPUT,
                         "%s: trace schema version 1 (one row per 8 ranks), this ramtrace reads version %d; "
                         "convert it with `ramtrace upgrade %s`", path, TR_SCHEMA_VERSION, path);
    if (ver != TR_SCHEMA_VERSION)
        return rn_seterr(err, RN_EINPUT,
                         "%s: trace schema version %lld, this ramtrace reads version %d",
                         path, (long long)ver, TR_SCHEMA_VERSION);
    return RN_OK;
}

/* Number of tables in the file (0 for a new, empty database). */
static int count_tables(sqlite3 *db, const char *path, int *n, rn_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "reading the schema", err);
    rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return tr_sqlerr(db, rc, path, "reading the schema", err);
    return RN_OK;
}

/* Create the schema in an empty file or check an existing one, inside one
 * BEGIN IMMEDIATE transaction: the write lock is taken before the tables are
 * counted, so of two processes creating the same new file one creates the
 * schema and the other, waiting on the lock, then finds and checks it. */
static int create_or_check(sqlite3 *db, const char *path, rn_error *err)
{
    int rc = tr_exec_what(db, path, "BEGIN IMMEDIATE", "waiting for another writer", err);
    if (rc) return rc;
    int n = 0;
    rc = count_tables(db, path, &n, err);
    if (!rc && n == 0) {
        char sql[16384];
        schema_sql(sql, sizeof sql);
        rc = tr_exec_what(db, path, sql, "creating the schema", err);
    } else if (!rc)
        rc = tr_schema_check(db, path, err);
    if (!rc) rc = tr_exec_what(db, path, "COMMIT", "creating the schema", err);
    if (rc) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Set the journal mode and synchronous level of a writer connection. */
static int set_durability(sqlite3 *db, const char *path, int mode, rn_error *err)
{
    if (mode == TR_DURABILITY_ROLLBACK_OFF)
        return tr_exec(db, path, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF;", err);
    /* The switch to WAL escalates the statement's own read lock to a write
     * lock, and SQLite does not call the busy handler for an escalation
     * (another writer could be waiting on it): a second process creating the
     * same file may hold its BEGIN IMMEDIATE lock just then, and the pragma
     * fails at once with SQLITE_BUSY. Retry it here for as long as the busy
     * timeout would have waited; once the other process has switched the file
     * to WAL, the pragma only reports "wal". */
    sqlite3_stmt *st;
    int rc, wal = 0;
    for (int waited = 0;; waited += 5) {
        rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc != SQLITE_OK) return tr_sqlerr(db, rc, path, "setting the journal mode", err);
        rc = sqlite3_step(st);
        wal = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        if ((rc & 0xff) != SQLITE_BUSY || waited >= TR_WRITER_BUSY_MS) break;
        sqlite3_sleep(5);
    }
    if (rc != SQLITE_ROW) return tr_sqlerr(db, rc, path, "setting the journal mode", err);
    if (!wal)
        return rn_seterr(err, RN_EIO, "%s: cannot switch to WAL journaling (a file system without "
                         "shared memory, e.g. a network mount?)", path);
    return tr_exec(db, path, mode == TR_DURABILITY_WAL_OFF ? "PRAGMA synchronous=OFF;"
                                                            : "PRAGMA synchronous=NORMAL;", err);
}

/* Remove path and its journal files (a database this open created and could
 * not even give its schema). */
static void remove_db_files(const char *path)
{
    static const char *const sfx[] = { "", "-journal", "-wal", "-shm" };
    char p[4096];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

int tr_schema_open_write_mode(const char *path, int mode, sqlite3 **out, rn_error *err)
{
    sqlite3 *db = NULL;
    *out = NULL;
    struct stat stt;
    int existed = stat(path, &stt) == 0;
    if (existed && S_ISDIR(stt.st_mode)) return rn_seterr(err, RN_EINPUT, "%s: is a directory", path);
    /* NOMUTEX: one thread at a time uses a writer connection (the caller,
     * then the writer thread, then the caller again after joining it), so
     * the per-call mutex of every bind is pure cost. */
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        rn_seterr(err, RN_EINPUT, "%s: cannot open for writing: %s", path,
                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return RN_EINPUT;
    }
    /* A writer waits up to TR_WRITER_BUSY_MS for another writer's
     * transaction (readers never block it under WAL; docs/tracing.md). */
    sqlite3_busy_timeout(db, TR_WRITER_BUSY_MS);
    rc = register_vtab(db, path, err);
    if (!rc) rc = tr_exec(db, path, "PRAGMA cache_size=-32768; PRAGMA temp_store=FILE;", err);
    /* The schema is created in rollback mode (a fresh file's first
     * transaction), then the file is switched to WAL: the switch needs the
     * file to exist, and a concurrent creator waits on BEGIN IMMEDIATE. */
    if (!rc) rc = create_or_check(db, path, err);
    if (!rc) rc = set_durability(db, path, mode, err);
    if (rc) {
        sqlite3_close(db);
        /* A file this call created and left without a schema (disk full) is
         * removed rather than left behind empty. */
        struct stat now;
        if (!existed && stat(path, &now) == 0 && now.st_size == 0) remove_db_files(path);
        return rc;
    }
    *out = db;
    return RN_OK;
}

int tr_schema_open_write(const char *path, sqlite3 **out, rn_error *err)
{
    return tr_schema_open_write_mode(path, TR_DURABILITY_DEFAULT, out, err);
}

/* 1 when path has a non-empty rollback journal beside it. */
static int has_hot_journal(const char *path)
{
    char j[4096];
    struct stat st;
    snprintf(j, sizeof j, "%s-journal", path);
    return stat(j, &st) == 0 && st.st_size > 0;
}

int tr_schema_open_read(const char *path, sqlite3 **out, rn_error *err)
{
    sqlite3 *db = NULL;
    *out = NULL;
    struct stat stt;
    if (stat(path, &stt) != 0) return rn_seterr(err, RN_EINPUT, "%s: no such file", path);
    if (S_ISDIR(stt.st_mode)) return rn_seterr(err, RN_EINPUT, "%s: is a directory", path);
    if (has_hot_journal(path) && access(path, W_OK) == 0) {
        /* A writer was killed mid-transaction: roll the journal back so the
         * file shows exactly its committed batches. */
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
            sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
        sqlite3_close(db);
        db = NULL;
    }
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path,
                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return RN_EINPUT;
    }
    sqlite3_busy_timeout(db, TR_READER_BUSY_MS);
    tr_watch_stop(db);
    rc = register_vtab(db, path, err);
    if (!rc) rc = tr_schema_check(db, path, err);
    if (rc) { sqlite3_close(db); return rc; }
    *out = db;
    return RN_OK;
}

void tr_schema_close_read(sqlite3 *db, const char *path)
{
    sqlite3_close(db);
    if (!path) return;
    char wal[4200], shm[4200];
    struct stat sw, ss;
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    int have_wal = stat(wal, &sw) == 0, have_shm = stat(shm, &ss) == 0;
    if ((!have_wal && !have_shm) || (have_wal && sw.st_size > 0) || access(path, W_OK) != 0) return;
    sqlite3 *rw = NULL;
    /* no busy timeout: a writer holding the file means the files stay */
    if (sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK)
        sqlite3_exec(rw, "PRAGMA query_only = 1; SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    sqlite3_close(rw);
}
