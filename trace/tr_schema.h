/* tr_schema.h — the trace database schema (docs/trace-schema.md) shared by
 * the writer and the readers: creating it, recognising a trace file and its
 * version, and opening connections with the right settings.  Internal to
 * trace/ and its commands; analysis/ and viz/ use tr_reader.h. */
#ifndef TR_SCHEMA_H
#define TR_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

/* Schema version stored in PRAGMA user_version; files are recognised by
 * PRAGMA application_id = TR_APPLICATION_ID ("RNTR"). */
#define TR_SCHEMA_VERSION 2
#define TR_APPLICATION_ID 0x524E5452
/* Positions per event_blocks row (the writer's default; a reader accepts
 * any count up to 2^24) and the index over the rows. */
#define TR_BLOCK_POSITIONS 256
#define TR_BLOCK_INDEX "event_blocks_key"

/* How a writer connection journals and syncs (docs/tracing.md, "What
 * survives what"):
 *   WAL_NORMAL   WAL journal, synchronous=NORMAL (the default): readers
 *                read while a run writes; an OS crash or power loss may
 *                lose the last batches but never corrupts the file.
 *   WAL_OFF      WAL, synchronous=OFF (measured by bench/bench_trace.c).
 *   ROLLBACK_OFF the settings before WAL (rollback journal, synchronous=
 *                OFF): kept only so the benchmark can compare. */
enum { TR_DURABILITY_WAL_NORMAL = 0, TR_DURABILITY_WAL_OFF = 1, TR_DURABILITY_ROLLBACK_OFF = 2,
       TR_DURABILITY_DEFAULT = TR_DURABILITY_WAL_NORMAL };

/* How long a writer waits for another writer's transaction (ms). */
#define TR_WRITER_BUSY_MS 60000
/* How long a reader waits (ms): only ever for a rollback-mode writer or a
 * WAL recovery, never for a WAL writer's batches. */
#define TR_READER_BUSY_MS 5000

/* Open path for writing (created if missing) with the bulk-load settings
 * and the default durability: create the schema in an empty file or check
 * an existing one (in one BEGIN IMMEDIATE transaction, so concurrent
 * creators do not collide), then switch to WAL.  A file this call created
 * but could not give a schema (disk full) is removed again. */
int tr_schema_open_write(const char *path, sqlite3 **db, rn_error *err);

/* The same with a chosen TR_DURABILITY_* mode. */
int tr_schema_open_write_mode(const char *path, int mode, sqlite3 **db, rn_error *err);

/* Open path read-only and check it is a trace of TR_SCHEMA_VERSION
 * (RN_EINPUT naming the file otherwise); its statements stop on the stop
 * flag (tr_watch_stop).  A hot journal left by a killed
 * writer is rolled back first (through a short read-write open). */
int tr_schema_open_read(const char *path, sqlite3 **db, rn_error *err);

/* Close a connection of tr_schema_open_read.  A read-only connection to a
 * WAL file creates the -shm (and an empty -wal) beside it and, unable to
 * checkpoint, never removes them; so when the log is empty (nothing a
 * reader could lose) and the file is writable, a short read-write
 * connection is opened and closed, which removes both if, and only if, no
 * other connection (a live writer, another reader) has the file open:
 * SQLite's own rule for the last connection.  The database file itself is
 * not written. */
void tr_schema_close_read(sqlite3 *db, const char *path);

/* Check application_id/user_version of an open connection. */
int tr_schema_check(sqlite3 *db, const char *path, rn_error *err);

/* Execute SQL text; on failure set err with "path: what: sqlite message". */
int tr_exec(sqlite3 *db, const char *path, const char *sql, rn_error *err);
/* The same with "path: what: sqlite message". */
int tr_exec_what(sqlite3 *db, const char *path, const char *sql, const char *what, rn_error *err);

/* Map a SQLite result code and message into err (RN_EIO for disk full and
 * I/O errors, RN_EINPUT for not-a-database, RN_EINTR for an interrupted
 * statement, RN_EINTERNAL otherwise). */
int tr_sqlerr(sqlite3 *db, int rc, const char *path, const char *what, rn_error *err);

#endif
