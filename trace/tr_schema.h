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
#define TR_SCHEMA_VERSION 1
#define TR_APPLICATION_ID 0x524E5452
/* Ranks stored per event_groups row (a group of K > 8 takes ceil(K/8) rows). */
#define TR_LANES 8

/* Open path for writing (created if missing) with the bulk-load settings,
 * recover a hot journal, and create the schema in an empty file or check an
 * existing one. */
int tr_schema_open_write(const char *path, sqlite3 **db, rn_error *err);

/* Open path read-only and check it is a trace of TR_SCHEMA_VERSION
 * (RN_EINPUT naming the file otherwise); its statements stop on the stop
 * flag (tr_watch_stop).  A hot journal left by a killed
 * writer is rolled back first (through a short read-write open). */
int tr_schema_open_read(const char *path, sqlite3 **db, rn_error *err);

/* Make db's statements stop with SQLITE_INTERRUPT once the stop flag set
 * by tr_set_stop_flag (tr_query.h) is raised (tr_query.c). */
void tr_watch_stop(sqlite3 *db);

/* Check application_id/user_version of an open connection. */
int tr_schema_check(sqlite3 *db, const char *path, rn_error *err);

/* Execute SQL text; on failure set err with "path: what: sqlite message". */
int tr_exec(sqlite3 *db, const char *path, const char *sql, rn_error *err);

/* Map a SQLite result code and message into err (RN_EIO for disk full and
 * I/O errors, RN_EINPUT for not-a-database, RN_EINTR for an interrupted
 * statement, RN_EINTERNAL otherwise). */
int tr_sqlerr(sqlite3 *db, int rc, const char *path, const char *what, rn_error *err);

/* Name of the partial index holding one run's events. */
void tr_index_name(int64_t run_id, char *buf, size_t cap);

#endif
