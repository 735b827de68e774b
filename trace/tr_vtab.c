/* tr_vtab.c — the ramtrace_events virtual table module (tr_vtab.h).
 *
 * A cursor runs one query over event_blocks in index order (run_id, layer,
 * head, pos0) and hands out each block's entries, so rows come in canonical
 * order (run, layer, head, pos, op, rank).  xBestIndex passes equality on
 * run_id, layer, head and op and any bound on pos down into that query (and
 * into the entries visited inside a block), so a query on one head reads
 * only that head's blocks; SQLite still re-checks every constraint (omit is
 * never set), which keeps non-integer comparisons right.  A block whose
 * header disagrees with its run, a block that repeats positions of the one
 * before it (a duplicated row), a slot outside [0, M) or a weight outside
 * [0, 1] ends the statement with SQLITE_CORRUPT and a "corrupt trace"
 * message.  No xUpdate: the table is read-only.
 *
 * Built twice: into ramtrace (plain sqlite3.h) and, with
 * -DTR_VTAB_EXTENSION, into the loadable extension, where every sqlite3_*
 * call goes through the loader's API table (sqlite3ext.h).
 */
#ifdef TR_VTAB_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#else
#include <sqlite3.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_block.h"
#include "tr_vtab.h"

enum { C_RUN, C_LAYER, C_HEAD, C_POS, C_OP, C_RANK, C_SLOT, C_ADDR, C_WEIGHT };

/* idxNum bits, in argv order. */
enum { B_RUN = 1, B_LAYER = 2, B_HEAD = 4, B_OP = 8, B_POS_EQ = 16, B_POS_GT = 32, B_POS_GE = 64,
       B_POS_LT = 128, B_POS_LE = 256, N_BITS = 9 };

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
    char *schema;
} ev_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    sqlite3_stmt *st;        /* the blocks */
    sqlite3_stmt *run_st;    /* one run's header */
    int eof;
    int64_t rowid;
    /* filter */
    int64_t lo, hi;          /* positions [lo, hi) */
    int op_only;             /* -1: both */
    /* the current block */
    int64_t run_id, layer, head, pos0, npos, ops, cape_m;
    const uint8_t *slots, *weights;
    int nops;
    int64_t e, n_ent;        /* next entry, entries */
    /* the current row */
    int64_t pos;
    int op, rank;
    uint32_t slot;
    float weight;
    /* the previous block's (run, layer, head) and end position: blocks come
     * sorted, so one that starts before that end repeats positions */
    int have_prev;
    int64_t prev_run, prev_layer, prev_head, prev_end;
    /* the run header of the current block */
    int64_t run_cached;
    tr_block_run run;
} ev_cursor;

static int ev_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **errmsg)
{
    (void)aux;
    (void)argc;
    (void)errmsg;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(run_id INTEGER, layer INTEGER, head INTEGER,"
                                      " pos INTEGER, op INTEGER, rank INTEGER, slot INTEGER,"
                                      " addr INTEGER, weight REAL)");
    if (rc != SQLITE_OK) return rc;
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    ev_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->db = db;
    v->schema = sqlite3_mprintf("%s", argv[1]);
    if (!v->schema) { sqlite3_free(v); return SQLITE_NOMEM; }
    *out = &v->base;
    return SQLITE_OK;
}

static int ev_disconnect(sqlite3_vtab *vt)
{
    ev_vtab *v = (ev_vtab *)vt;
    sqlite3_free(v->schema);
    sqlite3_free(v);
    return SQLITE_OK;
}

/* Is column c fixed by an equality among the used constraints? */
static int eq_fixed(int bits, int c)
{
    return (c == C_RUN && (bits & B_RUN)) || (c == C_LAYER && (bits & B_LAYER)) ||
           (c == C_HEAD && (bits & B_HEAD)) || (c == C_OP && (bits & B_OP)) ||
           (c == C_POS && (bits & B_POS_EQ));
}

static int ev_best_index(sqlite3_vtab *vt, sqlite3_index_info *ix)
{
    (void)vt;
    int use[N_BITS];
    for (int b = 0; b < N_BITS; b++) use[b] = -1;
    for (int i = 0; i < ix->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &ix->aConstraint[i];
        if (!c->usable) continue;
        int b = -1;
        if (c->op == SQLITE_INDEX_CONSTRAINT_EQ) {
            b = c->iColumn == C_RUN ? 0 : c->iColumn == C_LAYER ? 1 : c->iColumn == C_HEAD ? 2
              : c->iColumn == C_OP ? 3 : c->iColumn == C_POS ? 4 : -1;
        } else if (c->iColumn == C_POS) {
            b = c->op == SQLITE_INDEX_CONSTRAINT_GT ? 5 : c->op == SQLITE_INDEX_CONSTRAINT_GE ? 6
              : c->op == SQLITE_INDEX_CONSTRAINT_LT ? 7 : c->op == SQLITE_INDEX_CONSTRAINT_LE ? 8 : -1;
        }
        if (b >= 0 && use[b] < 0) use[b] = i;
    }
    int bits = 0, argv = 0;
    double cost = 1e9, rows = 1e9;
    static const double sel[N_BITS] = { 10, 20, 20, 2, 1e4, 3, 3, 3, 3 };
    for (int b = 0; b < N_BITS; b++) {
        if (use[b] < 0) continue;
        bits |= 1 << b;
        ix->aConstraintUsage[use[b]].argvIndex = ++argv;
        ix->aConstraintUsage[use[b]].omit = 0;
        cost /= sel[b];
        rows /= sel[b];
    }
    /* Rows come in (run_id, layer, head, pos, op, rank) order; an ORDER BY
     * that follows it (skipping columns fixed by equalities) is consumed. */
    int j = 0, ok = 1;
    for (int t = 0; t < ix->nOrderBy && ok; t++) {
        int col = ix->aOrderBy[t].iColumn;
        while (j <= C_RANK && j != col && eq_fixed(bits, j)) j++;
        if (j > C_RANK || col != j || ix->aOrderBy[t].desc) ok = 0;
        j++;
    }
    ix->orderByConsumed = ok && ix->nOrderBy > 0;
    ix->idxNum = bits;
    ix->estimatedCost = cost;
    ix->estimatedRows = (sqlite3_int64)(rows < 1 ? 1 : rows);
    return SQLITE_OK;
}

static int ev_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
    (void)vt;
    ev_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->eof = 1;
    *out = &c->base;
    return SQLITE_OK;
}

static int ev_close(sqlite3_vtab_cursor *cur)
{
    ev_cursor *c = (ev_cursor *)cur;
    sqlite3_finalize(c->st);
    sqlite3_finalize(c->run_st);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Set the table's error message and return SQLITE_CORRUPT. */
static int corrupt(ev_cursor *c, const char *what)
{
    sqlite3_vtab *vt = c->base.pVtab;
    sqlite3_free(vt->zErrMsg);
    vt->zErrMsg = sqlite3_mprintf("corrupt trace: run %lld, layer %lld, head %lld, block at position %lld: %s",
                                  (long long)c->run_id, (long long)c->layer, (long long)c->head,
                                  (long long)c->pos0, what);
    return SQLITE_CORRUPT;
}

/* Load the header of run c->run_id into c->run. */
static int load_run(ev_cursor *c)
{
    ev_vtab *v = (ev_vtab *)c->base.pVtab;
    if (!c->run_st) {
        char *sql = sqlite3_mprintf("SELECT n_layers, n_heads, n_slots, top_k, weight_format FROM \"%w\".runs"
                                    " WHERE run_id = ?1", v->schema);
        if (!sql) return SQLITE_NOMEM;
        int rc = sqlite3_prepare_v2(v->db, sql, -1, &c->run_st, NULL);
        sqlite3_free(sql);
        if (rc != SQLITE_OK) return rc;
    }
    sqlite3_reset(c->run_st);
    sqlite3_bind_int64(c->run_st, 1, c->run_id);
    int rc = sqlite3_step(c->run_st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(c->run_st);
        return rc == SQLITE_DONE ? corrupt(c, "its run is not in `runs`") : rc;
    }
    tr_block_run *r = &c->run;
    r->L = sqlite3_column_int64(c->run_st, 0);
    r->H = sqlite3_column_int64(c->run_st, 1);
    r->M = sqlite3_column_int64(c->run_st, 2);
    r->K = sqlite3_column_int64(c->run_st, 3);
    r->n_tokens = -1;  /* a running run's count is not filled in yet */
    const unsigned char *wf = sqlite3_column_text(c->run_st, 4);
    r->weight_fmt = tr_weights_parse((const char *)wf);
    sqlite3_reset(c->run_st);
    /* layers and heads are 16-bit in every reader (and L - 1 is printed) */
    if (r->L < 1 || r->L > 65536 || r->H < 1 || r->H > 65536)
        return corrupt(c, "its run has an invalid n_layers or n_heads");
    if (r->M < 1 || r->M > ((int64_t)1 << 32) || r->K < 1 || r->K > r->M || r->weight_fmt < 0)
        return corrupt(c, "its run has an invalid n_slots, top_k or weight_format");
    r->slot_bits = tr_slot_bits(r->M);
    r->cape_mask = NULL; /* the extension has no config parser: cape_m is checked to be 0 or M only */
    c->run_cached = c->run_id;
    return SQLITE_OK;
}

/* Step to the next block row that has entries in [lo, hi); position c->e
 * at its first such entry.  Sets eof at the end. */
static int next_block(ev_cursor *c)
{
    for (;;) {
        int rc = sqlite3_step(c->st);
        if (rc == SQLITE_DONE) { c->eof = 1; return SQLITE_OK; }
        if (rc != SQLITE_ROW) return rc;
        sqlite3_stmt *st = c->st;
        c->run_id = sqlite3_column_int64(st, 0);
        c->layer = sqlite3_column_int64(st, 1);
        c->head = sqlite3_column_int64(st, 2);
        c->pos0 = sqlite3_column_int64(st, 3);
        if (c->run_id != c->run_cached || !c->run.K) {
            rc = load_run(c);
            if (rc) return rc;
        }
        tr_block_hdr h;
        h.pos0 = c->pos0;
        h.npos = sqlite3_column_int64(st, 4);
        h.ops = sqlite3_column_int64(st, 5);
        h.cape_m = sqlite3_column_int64(st, 6);
        h.n = sqlite3_column_int64(st, 7);
        for (int i = 0; i < 8; i++)
            if (sqlite3_column_type(st, i) != SQLITE_INTEGER) return corrupt(c, "a header column is not an integer");
        c->slots = sqlite3_column_blob(st, 8);
        h.slots_len = sqlite3_column_type(st, 8) == SQLITE_BLOB ? sqlite3_column_bytes(st, 8) : -1;
        c->weights = sqlite3_column_blob(st, 9);
        h.weights_len = sqlite3_column_type(st, 9) == SQLITE_BLOB ? sqlite3_column_bytes(st, 9) : -1;
        char why[160];
        if (tr_block_check(&h, c->layer, c->head, &c->run, why, sizeof why)) return corrupt(c, why);
        /* a block stored twice would hand out its events twice, and out of
         * the order xBestIndex promised */
        if (c->have_prev && c->run_id == c->prev_run && c->layer == c->prev_layer && c->head == c->prev_head &&
            h.pos0 < c->prev_end)
            return corrupt(c, "positions stored twice (a duplicated event block)");
        c->have_prev = 1;
        c->prev_run = c->run_id;
        c->prev_layer = c->layer;
        c->prev_head = c->head;
        c->prev_end = h.pos0 + h.npos;
        c->npos = h.npos;
        c->ops = h.ops;
        c->cape_m = h.cape_m;
        c->nops = tr_block_nops(h.ops);
        c->n_ent = h.n;
        int64_t per = (int64_t)c->nops * c->run.K;
        int64_t first = c->lo > c->pos0 ? c->lo - c->pos0 : 0;
        if (first >= c->npos || c->pos0 >= c->hi) continue;
        c->e = first * per;
        return SQLITE_OK;
    }
}

/* Advance to the next entry passing the filter (reading it into the row
 * fields), crossing blocks as needed. */
static int advance(ev_cursor *c)
{
    for (;;) {
        if (c->eof) return SQLITE_OK;
        if (c->e >= c->n_ent) {
            int rc = next_block(c);
            if (rc) return rc;
            continue;
        }
        int64_t K = c->run.K, per = c->nops * K, i = c->e;
        int64_t p = c->pos0 + i / per;
        if (p >= c->hi) { c->e = c->n_ent; continue; }
        int oi = (int)(i % per / K);
        int op = c->nops == 2 ? oi : (c->ops & 1 ? 0 : 1);
        if (c->op_only >= 0 && op != c->op_only) { c->e += K; continue; } /* skip the whole group */
        c->e++;
        uint32_t s = tr_block_slot(c->slots, (size_t)i, c->run.slot_bits);
        float w = tr_block_weight(c->weights, (size_t)i, c->run.weight_fmt);
        if ((int64_t)s >= c->run.M) return corrupt(c, "a slot is outside [0, M)");
        if (!(w >= 0 && w <= 1)) return corrupt(c, "a weight is not in [0, 1]");
        c->pos = p;
        c->op = op;
        c->rank = (int)(i % K);
        c->slot = s;
        c->weight = w;
        c->rowid++;
        return SQLITE_OK;
    }
}

/* The integer bound of a pos constraint, or 0 when v is not a number (no
 * filtering: SQLite re-checks the constraint itself). */
static int num(sqlite3_value *v, double *out)
{
    int t = sqlite3_value_numeric_type(v);
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return 0;
    *out = sqlite3_value_double(v);
    return !isnan(*out);
}

static int ev_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc, sqlite3_value **argv)
{
    (void)idxstr;
    ev_cursor *c = (ev_cursor *)cur;
    ev_vtab *v = (ev_vtab *)cur->pVtab;
    sqlite3_finalize(c->st);
    c->st = NULL;
    c->eof = 0;
    c->rowid = 0;
    c->lo = 0;
    c->hi = INT64_MAX;
    c->op_only = -1;
    c->n_ent = c->e = 0;
    c->run_cached = -1;
    c->have_prev = 0;
    memset(&c->run, 0, sizeof c->run);
    char where[512] = "";
    size_t n = 0;
    static const char *const col[4] = { "run_id", "layer", "head", "op" };
    int a = 0;
    int64_t eqv[4];
    int have[4] = { 0 };
    for (int b = 0; b < N_BITS && a < argc; b++) {
        if (!(idx & (1 << b))) continue;
        sqlite3_value *val = argv[a++];
        double d;
        if (b < 4) {
            /* equality: filter only on an exact integer value */
            if (sqlite3_value_numeric_type(val) == SQLITE_INTEGER) {
                eqv[b] = sqlite3_value_int64(val);
                have[b] = 1;
            } else if (num(val, &d) && d != floor(d)) {
                c->eof = 1;   /* an integer column never equals 1.5 */
            }
            continue;
        }
        if (!num(val, &d)) continue;
        if (d > 9e18) d = 9e18;
        if (d < -9e18) d = -9e18;
        int64_t lo = c->lo, hi = c->hi;
        switch (1 << b) {
        case B_POS_EQ: if (d != floor(d)) c->eof = 1; else { lo = (int64_t)d; hi = (int64_t)d + 1; } break;
        case B_POS_GT: lo = (int64_t)floor(d) + 1; break;
        case B_POS_GE: lo = (int64_t)ceil(d); break;
        case B_POS_LT: hi = (int64_t)ceil(d); break;
        case B_POS_LE: hi = (int64_t)floor(d) + 1; break;
        }
        if (lo > c->lo) c->lo = lo;
        if (hi < c->hi) c->hi = hi;
    }
    if (c->eof || c->lo >= c->hi) { c->eof = 1; return SQLITE_OK; }
    for (int b = 0; b < 3; b++)
        if (have[b]) n += snprintf(where + n, sizeof where - n, " AND %s = %lld", col[b], (long long)eqv[b]);
    if (have[3]) {
        if (eqv[3] != 0 && eqv[3] != 1) { c->eof = 1; return SQLITE_OK; }
        c->op_only = (int)eqv[3];
        n += snprintf(where + n, sizeof where - n, " AND (ops & %d) != 0", 1 << (int)eqv[3]);
    }
    if (c->hi < INT64_MAX) n += snprintf(where + n, sizeof where - n, " AND pos0 < %lld", (long long)c->hi);
    if (c->lo > 0) snprintf(where + n, sizeof where - n, " AND pos0 + npos > %lld", (long long)c->lo);
    char *sql = sqlite3_mprintf("SELECT run_id, layer, head, pos0, npos, ops, cape_m, n, slots, weights"
                                " FROM \"%w\".event_blocks WHERE 1%s ORDER BY run_id, layer, head, pos0",
                                v->schema, where);
    if (!sql) return SQLITE_NOMEM;
    int rc = sqlite3_prepare_v2(v->db, sql, -1, &c->st, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        sqlite3_free(cur->pVtab->zErrMsg);
        cur->pVtab->zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(v->db));
        return rc;
    }
    return advance(c);
}

static int ev_next(sqlite3_vtab_cursor *cur) { return advance((ev_cursor *)cur); }

static int ev_eof(sqlite3_vtab_cursor *cur) { return ((ev_cursor *)cur)->eof; }

static int ev_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i)
{
    ev_cursor *c = (ev_cursor *)cur;
    switch (i) {
    case C_RUN: sqlite3_result_int64(ctx, c->run_id); break;
    case C_LAYER: sqlite3_result_int64(ctx, c->layer); break;
    case C_HEAD: sqlite3_result_int64(ctx, c->head); break;
    case C_POS: sqlite3_result_int64(ctx, c->pos); break;
    case C_OP: sqlite3_result_int(ctx, c->op); break;
    case C_RANK: sqlite3_result_int(ctx, c->rank); break;
    case C_SLOT: sqlite3_result_int64(ctx, c->slot); break;
    case C_ADDR:
        /* slot < M <= 2^32 and pos < 2^63 - 2^32: no overflow */
        sqlite3_result_int64(ctx, c->cape_m > 0 ? (int64_t)((c->slot + c->pos) % c->cape_m) : (int64_t)c->slot);
        break;
    default: sqlite3_result_double(ctx, (double)c->weight); break;
    }
    return SQLITE_OK;
}

static int ev_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *r)
{
    *r = ((ev_cursor *)cur)->rowid;
    return SQLITE_OK;
}

static sqlite3_module ev_module = {
    .iVersion = 0,
    .xCreate = ev_connect,
    .xConnect = ev_connect,
    .xBestIndex = ev_best_index,
    .xDisconnect = ev_disconnect,
    .xDestroy = ev_disconnect,
    .xOpen = ev_open,
    .xClose = ev_close,
    .xFilter = ev_filter,
    .xNext = ev_next,
    .xEof = ev_eof,
    .xColumn = ev_column,
    .xRowid = ev_rowid,
};

int tr_vtab_register(sqlite3 *db)
{
    return sqlite3_create_module_v2(db, TR_VTAB_MODULE, &ev_module, NULL, NULL);
}

#ifdef TR_VTAB_EXTENSION
/* Entry point of build/libramtrace_sql.so (SQLite derives the name from
 * the file name: libramtrace_sql -> sqlite3_ramtracesql_init). */
#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_ramtracesql_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api)
{
    SQLITE_EXTENSION_INIT2(api);
    (void)errmsg;
    return tr_vtab_register(db);
}
#endif
