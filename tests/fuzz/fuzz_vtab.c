/* fuzz_vtab.c — fuzz target: the `events` virtual table (trace/tr_vtab.c,
 * the module behind `ramtrace sql` and build/libramtrace_sql.so).
 *
 * Input: 6 bytes of query knobs, then the edit script of tracegen.h, which
 * breaks a copy of a small real trace.  The copy is opened read-only with
 * the module registered, as `ramtrace sql` opens it, and queried:
 *
 *   - a full scan in the table's own order, which must come out strictly
 *     increasing in (run_id, layer, head, pos, op, rank) (a duplicated
 *     block once handed out every event twice), with op 0 or 1 and weights
 *     in [0, 1];
 *   - `ORDER BY pos DESC, op DESC, rank DESC` on one head of run 1 (so the
 *     order the table gives is the one asked but for DESC), which must come
 *     out non-increasing (the table must not claim a DESC order);
 *   - a position range, an op and a layer/head pushed down into the table,
 *     against the same filter applied by SQLite alone (`+pos`, `+op`: no
 *     push-down), and against the full scan: the same count and sums;
 *   - `GROUP BY layer, head`, whose counts must add up to the full scan's;
 *   - bounds that are not integers (2.5, text, 1e300), which must not
 *     crash or differ from SQLite's own filtering.
 *
 * A query may fail (a corrupt block is SQLITE_CORRUPT, a broken schema an
 * error): that ends it, never the process.  Comparisons are made only
 * between queries that both ran to the end.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tr_vtab.h"
#include "tracegen.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tracegen_init();
    return 0;
}

/* The summary of a query's rows: count and two sums; ok = ran to the end. */
typedef struct {
    int ok;
    int64_t n, sum_slot, sum_pos_rank;
} summary;

/* Run sql (one statement; ?1..?4 bound to the int64 values given) and
 * summarise rows of (pos, rank, slot).  A failing statement gives ok = 0
 * and its message must be one line. */
static summary run_summary(sqlite3 *db, const char *sql, const int64_t *v, int nv)
{
    summary s = { 0, 0, 0, 0 };
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return s;
    for (int i = 0; i < nv; i++) sqlite3_bind_int64(st, i + 1, v[i]);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        s.n++;
        s.sum_slot += sqlite3_column_int64(st, 2);
        s.sum_pos_rank += sqlite3_column_int64(st, 0) * 31 + sqlite3_column_int64(st, 1);
    }
    if (rc != SQLITE_DONE) {
        const char *m = sqlite3_errmsg(db);
        fuzz_check(m && !strchr(m, '\n'), "%s: a message of more than one line: %s", sql, m ? m : "(null)");
    }
    s.ok = rc == SQLITE_DONE;
    sqlite3_finalize(st);
    return s;
}

/* Compare two summaries of the same rows when both queries completed. */
static void same(const summary *a, const summary *b, const char *what)
{
    if (!a->ok || !b->ok) return;
    fuzz_check(a->n == b->n && a->sum_slot == b->sum_slot && a->sum_pos_rank == b->sum_pos_rank,
               "%s: %lld rows (slots %lld) against %lld (slots %lld)", what, (long long)a->n,
               (long long)a->sum_slot, (long long)b->n, (long long)b->sum_slot);
}

/* The full scan in the table's order: strictly increasing keys, values in
 * range.  Returns its summary. */
static summary full_scan(sqlite3 *db)
{
    summary s = { 0, 0, 0, 0 };
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT run_id, layer, head, pos, op, rank, slot, addr, weight FROM events", -1, &st,
                           NULL) != SQLITE_OK)
        return s;
    int64_t prev[6] = { 0 };
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t k[6];
        for (int c = 0; c < 6; c++) k[c] = sqlite3_column_int64(st, c);
        double w = sqlite3_column_double(st, 8);
        fuzz_check((k[4] == 0 || k[4] == 1) && k[5] >= 0 && sqlite3_column_int64(st, 6) >= 0 &&
                   sqlite3_column_int64(st, 7) >= 0 && w >= 0 && w <= 1,
                   "row %lld out of range: op %lld rank %lld weight %g", (long long)s.n, (long long)k[4],
                   (long long)k[5], w);
        if (s.n) {
            int cmp = 0;
            for (int c = 0; c < 6 && !cmp; c++) cmp = prev[c] < k[c] ? -1 : prev[c] > k[c];
            fuzz_check(cmp < 0, "row %lld (run %lld layer %lld head %lld pos %lld op %lld rank %lld) does not "
                       "follow the row before it", (long long)s.n, (long long)k[0], (long long)k[1],
                       (long long)k[2], (long long)k[3], (long long)k[4], (long long)k[5]);
        }
        memcpy(prev, k, sizeof prev);
        s.n++;
        s.sum_slot += sqlite3_column_int64(st, 6);
        s.sum_pos_rank += k[3] * 31 + k[5];
    }
    s.ok = rc == SQLITE_DONE;
    sqlite3_finalize(st);
    return s;
}

/* ORDER BY pos DESC, op DESC, rank DESC on one head: non-increasing. */
static void order_desc(sqlite3 *db, int64_t layer, int64_t head)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT pos, op, rank FROM events WHERE run_id = 1 AND layer = ?1 AND head = ?2"
                               " ORDER BY pos DESC, op DESC, rank DESC", -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, layer);
    sqlite3_bind_int64(st, 2, head);
    int64_t prev[3] = { 0 }, n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t k[3] = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2) };
        if (n++) {
            int cmp = 0;
            for (int c = 0; c < 3 && !cmp; c++) cmp = prev[c] < k[c] ? -1 : prev[c] > k[c];
            fuzz_check(cmp >= 0, "ORDER BY pos DESC: (%lld, %lld, %lld) after (%lld, %lld, %lld)", (long long)k[0],
                       (long long)k[1], (long long)k[2], (long long)prev[0], (long long)prev[1], (long long)prev[2]);
        }
        memcpy(prev, k, sizeof prev);
    }
    sqlite3_finalize(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    fuzz_in in = { data, size };
    int64_t layer = fuzz_u8(&in) % 3, head = fuzz_u8(&in) % 3;
    int64_t lo = (int8_t)fuzz_u8(&in) % 24, hi = fuzz_u8(&in) % 26;
    int64_t op = fuzz_u8(&in) % 3;  /* 2: no op filter */
    uint8_t odd = fuzz_u8(&in);
    char path[512];
    fuzz_path(path, sizeof path, "v.db");
    tracegen_build(path, &in);
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return 0;
    }
    fuzz_check(tr_vtab_register(db) == SQLITE_OK, "%s", "registering the module");

    summary all = full_scan(db);
    order_desc(db, layer, head);

    /* the same filter pushed down and applied by SQLite alone */
    int64_t v[4] = { lo, hi, op, layer };
    const char *pushed = op < 2 ? "SELECT pos, rank, slot FROM events WHERE pos >= ?1 AND pos < ?2 AND op = ?3"
                                  " AND layer = ?4"
                                : "SELECT pos, rank, slot FROM events WHERE pos >= ?1 AND pos < ?2 AND layer = ?4";
    const char *plain = op < 2 ? "SELECT pos, rank, slot FROM events WHERE +pos >= ?1 AND +pos < ?2 AND +op = ?3"
                                 " AND +layer = ?4"
                               : "SELECT pos, rank, slot FROM events WHERE +pos >= ?1 AND +pos < ?2 AND +layer = ?4";
    summary a = run_summary(db, pushed, v, 4), b = run_summary(db, plain, v, 4);
    same(&a, &b, "a filter pushed down against SQLite's own");
    /* the full scan, filtered here: the same rows */
    if (all.ok && op == 2 && lo <= 0 && hi >= 25) {
        summary c = run_summary(db, "SELECT pos, rank, slot FROM events WHERE layer = ?4", v, 4);
        summary d = run_summary(db, "SELECT pos, rank, slot FROM events WHERE +layer = ?4", v, 4);
        same(&c, &d, "one layer pushed down against SQLite's own");
    }
    /* one head, an equality on pos */
    int64_t w[4] = { layer, head, lo, 0 };
    a = run_summary(db, "SELECT pos, rank, slot FROM events WHERE layer = ?1 AND head = ?2 AND pos = ?3", w, 3);
    b = run_summary(db, "SELECT pos, rank, slot FROM events WHERE +layer = ?1 AND +head = ?2 AND +pos = ?3", w, 3);
    same(&a, &b, "pos = N pushed down against SQLite's own");
    /* counts per head add up to the scan */
    sqlite3_stmt *st;
    if (all.ok && sqlite3_prepare_v2(db, "SELECT layer, head, count(*) FROM events GROUP BY 1, 2", -1, &st, NULL) ==
                      SQLITE_OK) {
        int64_t total = 0;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) total += sqlite3_column_int64(st, 2);
        if (rc == SQLITE_DONE) fuzz_check(total == all.n, "GROUP BY counts %lld, the scan %lld", (long long)total,
                                          (long long)all.n);
        sqlite3_finalize(st);
    }
    /* bounds that are not integers */
    static const char *const odd_bounds[] = { "2.5", "'x'", "1e300", "-1e300", "NULL", "x'00'", "9223372036854775807",
                                              "-9223372036854775808" };
    const char *ob = odd_bounds[odd % 8];
    char q1[256], q2[256];
    snprintf(q1, sizeof q1, "SELECT pos, rank, slot FROM events WHERE pos %s %s AND layer %s 1.0",
             odd & 8 ? ">" : "<=", ob, odd & 16 ? "=" : ">=");
    snprintf(q2, sizeof q2, "SELECT pos, rank, slot FROM events WHERE +pos %s %s AND +layer %s 1.0",
             odd & 8 ? ">" : "<=", ob, odd & 16 ? "=" : ">=");
    a = run_summary(db, q1, NULL, 0);
    b = run_summary(db, q2, NULL, 0);
    same(&a, &b, q1);
    sqlite3_close(db);
    return 0;
}
