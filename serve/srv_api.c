/* srv_api.c — the viewer's JSON endpoints (srv_api.h).
 *
 * Each request borrows a read connection from a small pool (tr_db is not
 * shared between threads) and writes its answer into a memory stream.
 * Token text and every other string go out through rn_json_string, the
 * project's one JSON escaper; the page inserts them as text, never as
 * markup. */
#include "srv_api.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_load.h"
#include "an_mrc.h"
#include "an_spill.h"
#include "rn_rows.h"
#include "rn_version.h"
#include "srv_cache.h"
#include "srv_tile.h"
#include "tr_reader.h"
#include "viz_style.h"

#define POOL 8
#define TOKEN_BLOCK 4096
#define SLOT_LIST_MAX 5000
#define SQL_MAX_LEN 16384
#define MRC_MAX_POINTS 4096

struct srv_api {
    char *path;
    srv_api_opts o;
    srv_cache *cache;
    pthread_mutex_t mu;
    tr_db *pool[POOL];
    int npool;
};

int srv_api_open(const char *path, const srv_api_opts *o, srv_api **out, rn_error *err)
{
    *out = NULL;
    tr_db *db;
    int rc = tr_open_read(path, &db, err);
    if (rc) return rc;
    srv_api *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        tr_close(db);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    srv_api_opts def = { 64u << 20, { 5.0, 1000 }, NULL };
    a->o = o ? *o : def;
    if (!a->o.cache_bytes) a->o.cache_bytes = def.cache_bytes;
    if (!(a->o.sql.seconds > 0)) a->o.sql.seconds = def.sql.seconds;
    if (a->o.sql.max_rows < 1) a->o.sql.max_rows = def.sql.max_rows;
    if (!(a->cache = srv_cache_new(a->o.cache_bytes))) {
        free(a->path); free(a); tr_close(db);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&a->mu, NULL);
    a->pool[a->npool++] = db;
    *out = a;
    return RN_OK;
}

void srv_api_close(srv_api *a)
{
    if (!a) return;
    for (int i = 0; i < a->npool; i++) tr_close(a->pool[i]);
    srv_cache_free(a->cache);
    pthread_mutex_destroy(&a->mu);
    free(a->path);
    free(a);
}

size_t srv_api_cache_bytes(srv_api *a) { return srv_cache_bytes(a->cache); }

/* Borrow a read connection (a pooled one, else a new one). */
static int db_take(srv_api *a, tr_db **db, rn_error *err)
{
    pthread_mutex_lock(&a->mu);
    *db = a->npool ? a->pool[--a->npool] : NULL;
    pthread_mutex_unlock(&a->mu);
    return *db ? RN_OK : tr_open_read(a->path, db, err);
}

/* Give it back (closed when the pool is full). */
static void db_give(srv_api *a, tr_db *db)
{
    if (!db) return;
    pthread_mutex_lock(&a->mu);
    if (a->npool < POOL) { a->pool[a->npool++] = db; db = NULL; }
    pthread_mutex_unlock(&a->mu);
    if (db) tr_close(db);
}

/* One request being answered. */
typedef struct {
    srv_api *a;
    srv_arg_fn args;
    void *cls;
    tr_db *db;
    tr_run_info run;
    FILE *out;
    rn_error *err;
} req;

/* Integer argument name in [lo, hi]; def when absent (required: an error). */
static int arg_long(const req *q, const char *name, int64_t lo, int64_t hi, int64_t def, int required,
                    int64_t *v)
{
    const char *s = q->args(q->cls, name);
    if (!s || !*s) {
        if (required) return rn_seterr(q->err, RN_EINPUT, "parameter '%s' is required", name);
        *v = def;
        return RN_OK;
    }
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return rn_seterr(q->err, RN_EINPUT, "parameter '%s': '%.40s' is not an integer in [%lld, %lld]", name, s,
                         (long long)lo, (long long)hi);
    *v = x;
    return RN_OK;
}

/* Resolve ?run= (0 or absent: the latest). */
static int get_run(req *q)
{
    int64_t run;
    int rc = arg_long(q, "run", 0, INT32_MAX, 0, 0, &run);
    return rc ? rc : tr_run_get(q->db, run, &q->run, q->err);
}

/* ?layer= and ?head= inside the run's config; with any, -1 stands for all. */
static int get_head(req *q, int any, int *layer, int *head)
{
    int64_t l = -1, h = -1;
    int rc = arg_long(q, "layer", any ? -1 : 0, q->run.cfg.n_layers - 1, -1, !any, &l);
    if (!rc) rc = arg_long(q, "head", any ? -1 : 0, q->run.cfg.n_heads - 1, -1, !any, &h);
    *layer = (int)l;
    *head = (int)h;
    return rc;
}

static void hex_rgb(FILE *f, const char *name, viz_rgb c)
{
    fprintf(f, "\"%s\":\"#%02x%02x%02x\"", name, (int)(c.r * 255 + 0.5), (int)(c.g * 255 + 0.5),
            (int)(c.b * 255 + 0.5));
}

static int ep_info(req *q)
{
    const char *base = strrchr(q->a->path, '/');
    fputs("{\"trace\":", q->out);
    rn_json_string(q->out, base ? base + 1 : q->a->path);
    fprintf(q->out, ",\"version\":\"%s\",\"tile_cols\":%d,\"sql_seconds\":%g,\"sql_rows\":%lld,\"palette\":{",
            RAMTRACE_VERSION, SRV_TILE_COLS, q->a->o.sql.seconds, (long long)q->a->o.sql.max_rows);
    hex_rgb(q->out, "write", VIZ_WRITE_RGB);
    fputc(',', q->out);
    hex_rgb(q->out, "read", VIZ_READ_RGB);
    fputc(',', q->out);
    hex_rgb(q->out, "paper_write", VIZ_PAPER_WRITE_RGB);
    fputc(',', q->out);
    hex_rgb(q->out, "paper_read", VIZ_PAPER_READ_RGB);
    fputs("}}", q->out);
    return RN_OK;
}

/* The fields of one run the page shows. */
static void run_json(FILE *f, const tr_run_info *r)
{
    fprintf(f, "{\"id\":%lld,\"name\":", (long long)r->run_id);
    rn_json_string(f, r->name);
    fputs(",\"status\":", f);
    rn_json_string(f, r->status);
    fprintf(f, ",\"tokens\":%lld,\"events\":%lld,\"layers\":%d,\"heads\":%d,\"M\":%lld,\"K\":%d,"
            "\"start\":%.0f,\"end\":%.0f,\"model\":", (long long)r->n_tokens, (long long)r->n_events,
            r->cfg.n_layers, r->cfg.n_heads, (long long)rn_config_slots(&r->cfg), r->cfg.top_k, r->start_time,
            r->end_time);
    rn_json_string(f, r->model_path);
    fputc('}', f);
}

static int ep_runs(req *q)
{
    tr_run_info *runs;
    int n, rc = tr_list_runs(q->db, &runs, &n, q->err);
    if (rc) return rc;
    fputc('[', q->out);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', q->out);
        run_json(q->out, &runs[i]);
    }
    fputc(']', q->out);
    free(runs);
    return RN_OK;
}

/* The first generated position of the run (-1: none), read in blocks of
 * tokens so memory stays bounded. */
static int first_generated(req *q, int64_t *first)
{
    *first = -1;
    for (int64_t lo = 0;; lo += 65536) {
        tr_token *toks;
        int64_t n;
        int rc = tr_load_tokens_range(q->db, q->run.run_id, lo, lo + 65536, &toks, &n, q->err);
        if (rc) return rc;
        for (int64_t i = 0; i < n && *first < 0; i++)
            if (toks[i].generated) *first = toks[i].pos;
        free(toks);
        if (*first >= 0 || lo + 65536 > q->run.n_tokens) return RN_OK;
    }
}

static int ep_heads(req *q)
{
    tr_head_info *heads;
    int n;
    int64_t first_gen;
    int rc = tr_list_heads(q->db, q->run.run_id, &heads, &n, q->err);
    if (rc) return rc;
    if ((rc = first_generated(q, &first_gen))) { free(heads); return rc; }
    fputs("{\"run\":", q->out);
    run_json(q->out, &q->run);
    fprintf(q->out, ",\"first_generated\":%lld,\"list\":[", (long long)first_gen);
    int64_t *per_head = malloc(sizeof *per_head * (size_t)q->run.cfg.n_layers * (size_t)q->run.cfg.n_heads);
    if (!per_head) rc = rn_seterr(q->err, RN_ENOMEM, "out of memory");
    else rc = tr_count_events_by_head(q->db, q->run.run_id, per_head, q->err);
    for (int i = 0; i < n && !rc; i++)
        fprintf(q->out, "%s[%d,%d,%d,%lld]", i ? "," : "", heads[i].layer, heads[i].head, heads[i].cape,
                (long long)per_head[heads[i].layer * q->run.cfg.n_heads + heads[i].head]);
    free(per_head);
    fputs("]}", q->out);
    free(heads);
    return rc;
}

static int ep_tokens(req *q)
{
    int64_t b;
    int rc = arg_long(q, "b", 0, INT32_MAX, 0, 0, &b);
    if (rc) return rc;
    tr_token *toks;
    int64_t n, p0 = b * TOKEN_BLOCK, p1 = p0 + TOKEN_BLOCK;
    if ((rc = tr_load_tokens_range(q->db, q->run.run_id, p0, p1, &toks, &n, q->err))) return rc;
    fprintf(q->out, "{\"p0\":%lld,\"p1\":%lld,\"tokens\":[", (long long)p0, (long long)p1);
    int first = 1;
    for (int64_t i = 0; i < n; i++) {
        fprintf(q->out, "%s[%d,%d,%d,", first ? "" : ",", toks[i].pos, toks[i].token_id, toks[i].generated);
        rn_json_string(q->out, toks[i].piece);
        fputc(']', q->out);
        first = 0;
    }
    fputs("]}", q->out);
    free(toks);
    return RN_OK;
}

static int ep_tile(req *q)
{
    int layer, head;
    int64_t z, t;
    int rc = get_head(q, 0, &layer, &head);
    if (!rc) rc = arg_long(q, "z", 0, SRV_TILE_MAX_Z, 0, 1, &z);
    if (!rc) rc = arg_long(q, "t", 0, INT32_MAX, 0, 1, &t);
    return rc ? rc : srv_tile_write(q->db, &q->run, layer, head, (int)z, t, q->out, q->err);
}

/* The token text of position pos into buf ("" when the run has none). */
static const char *piece_of(req *q, int64_t pos, char *buf, size_t cap)
{
    tr_token *t;
    int64_t n;
    rn_error e = { 0 };
    buf[0] = 0;
    if (!tr_load_tokens_range(q->db, q->run.run_id, pos, pos + 1, &t, &n, &e) && n)
        snprintf(buf, cap, "%s", t[0].piece);
    free(t);
    return buf;
}

/* One access of a slot listing: {"pos", "tok", "rank", "w", "addr"}. */
static void access_json(req *q, const tr_event *e)
{
    char wb[64], piece[sizeof ((tr_token *)0)->piece];
    fprintf(q->out, "{\"pos\":%d,\"rank\":%d,\"w\":%s,\"addr\":%u,\"tok\":", e->pos, e->rank,
            rn_real_text(e->weight, wb, sizeof wb), e->addr);
    rn_json_string(q->out, piece_of(q, e->pos, piece, sizeof piece));
    fputc('}', q->out);
}

/* Writers and readers of one slot of one head, in position order; at most
 * limit of each listed, all counted. */
static int ep_slot(req *q)
{
    int layer, head;
    int64_t slot, limit;
    int rc = get_head(q, 0, &layer, &head);
    if (!rc) rc = arg_long(q, "slot", 0, rn_config_slots(&q->run.cfg) - 1, 0, 1, &slot);
    if (!rc) rc = arg_long(q, "limit", 1, SLOT_LIST_MAX, 200, 0, &limit);
    if (rc) return rc;
    tr_filter f = tr_filter_all();
    f.layer = layer;
    f.head = head;
    /* two passes, one per op, so each list streams out in position order;
     * the listed accesses are kept (at most limit) and written after the
     * pass, since their token text is read on this same connection */
    tr_event *keep = malloc(sizeof *keep * (size_t)limit);
    if (!keep) return rn_seterr(q->err, RN_ENOMEM, "out of memory");
    fprintf(q->out, "{\"layer\":%d,\"head\":%d,\"slot\":%lld", layer, head, (long long)slot);
    for (int op = 0; op < 2 && !rc; op++) {
        tr_iter *it;
        f.ops = op == RN_OP_WRITE ? RN_OPS_WRITE : RN_OPS_READ;
        if ((rc = tr_iter_open(q->db, q->run.run_id, &f, &it, q->err))) break;
        fprintf(q->out, ",\"%s\":[", op == RN_OP_WRITE ? "writes" : "reads");
        tr_event e;
        int64_t n = 0;
        while ((rc = tr_iter_next(it, &e, q->err)) == 1)
            if (e.slot == (uint64_t)slot && n++ < limit) keep[n - 1] = e;
        tr_iter_close(it);
        for (int64_t i = 0; i < n && i < limit && !rc; i++) {
            if (i) fputc(',', q->out);
            access_json(q, &keep[i]);
        }
        fprintf(q->out, "],\"n_%s\":%lld", op == RN_OP_WRITE ? "writes" : "reads", (long long)n);
    }
    fputc('}', q->out);
    free(keep);
    return rc;
}

/* Every traced head's accesses at one position: flat
 * [layer, head, op, rank, slot, addr, weight, ...]. */
static int ep_pos(req *q)
{
    int64_t pos;
    int rc = arg_long(q, "pos", 0, q->run.n_tokens > 0 ? q->run.n_tokens - 1 : 0, 0, 1, &pos);
    if (rc) return rc;
    char piece[sizeof ((tr_token *)0)->piece];
    fprintf(q->out, "{\"pos\":%lld,\"tok\":", (long long)pos);
    rn_json_string(q->out, piece_of(q, pos, piece, sizeof piece));
    fputs(",\"ev\":[", q->out);
    tr_filter f = tr_filter_all();
    f.pos_lo = pos;
    f.pos_hi = pos + 1;
    tr_iter *it;
    if ((rc = tr_iter_open(q->db, q->run.run_id, &f, &it, q->err))) return rc;
    tr_event e;
    int64_t n = 0;
    char wb[64];
    while ((rc = tr_iter_next(it, &e, q->err)) == 1)
        fprintf(q->out, "%s%d,%d,%d,%d,%u,%u,%s", n++ ? "," : "", e.layer, e.head, e.op, e.rank, e.slot, e.addr,
                rn_real_text(e.weight, wb, sizeof wb));
    tr_iter_close(it);
    fputs("]}", q->out);
    return rc;
}

/* The LRU miss-ratio curve of one head's cache, or of every traced head
 * each with its own cache (misses summed), through an_spill and an_mrc. */
static int ep_mrc(req *q)
{
    int layer, head;
    int rc = get_head(q, 1, &layer, &head);
    if (rc) return rc;
    an_run r;
    if ((rc = an_run_open(q->a->path, q->run.run_id, &r, q->err))) return rc;
    an_spill sp = { 0 };
    an_mrc m = { 0 };
    sp.fd_key = sp.fd_next = -1;
    if (!(rc = an_run_check_head(&r, layer, head, q->err)) &&
        !(rc = an_spill_build(&r, layer, head, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, 0, q->a->o.stop, &sp, q->err)) &&
        !(rc = an_mrc_build_spill(&sp, &m, q->err))) {
        int64_t step = m.n > MRC_MAX_POINTS ? (m.n + MRC_MAX_POINTS - 1) / MRC_MAX_POINTS : 1;
        char wb[64];
        fprintf(q->out, "{\"layer\":%d,\"head\":%d,\"caches\":%d,\"accesses\":%llu,\"cold\":%llu,\"capacity\":[",
                layer, head, sp.n, (unsigned long long)m.accesses, (unsigned long long)m.cold);
        for (int64_t i = 0; i < m.n; i += step)
            fprintf(q->out, "%s%llu", i ? "," : "", (unsigned long long)m.capacity[i]);
        fputs("],\"miss_ratio\":[", q->out);
        for (int64_t i = 0; i < m.n; i += step)
            fprintf(q->out, "%s%s", i ? "," : "", rn_real_text(m.miss_ratio[i], wb, sizeof wb));
        fputs("]}", q->out);
    }
    an_mrc_free(&m);
    an_spill_free(&sp);
    an_run_close(&r);
    return rc;
}

static int ep_sql(req *q)
{
    const char *sql = q->args(q->cls, "q");
    if (!sql || !*sql) return rn_seterr(q->err, RN_EINPUT, "parameter 'q' (the SQL) is required");
    if (strlen(sql) > SQL_MAX_LEN) return rn_seterr(q->err, RN_EINPUT, "the SQL is longer than %d bytes", SQL_MAX_LEN);
    int truncated = 0;
    fputs("{\"results\":", q->out);
    int rc = tr_query_json_run(q->a->path, sql, q->run.run_id, &q->a->o.sql, q->out, &truncated, q->err);
    fprintf(q->out, ",\"truncated\":%s,\"max_rows\":%lld}", truncated ? "true" : "false",
            (long long)q->a->o.sql.max_rows);
    return rc;
}

typedef struct {
    const char *path;
    int (*fn)(req *q);
    int needs_run;   /* resolves ?run= first */
    int cacheable;   /* the answer depends only on the arguments named in keys */
    const char *keys[6];
} endpoint;

static const endpoint endpoints[] = {
    { "/api/info", ep_info, 0, 0, { NULL } },
    { "/api/runs", ep_runs, 0, 0, { NULL } },
    { "/api/heads", ep_heads, 1, 1, { NULL } },
    { "/api/tokens", ep_tokens, 1, 1, { "b", NULL } },
    { "/api/tile", ep_tile, 1, 1, { "layer", "head", "z", "t", NULL } },
    { "/api/slot", ep_slot, 1, 1, { "layer", "head", "slot", "limit", NULL } },
    { "/api/pos", ep_pos, 1, 1, { "pos", NULL } },
    { "/api/mrc", ep_mrc, 1, 1, { "layer", "head", NULL } },
    { "/api/sql", ep_sql, 1, 0, { NULL } },
};

/* The cache key of a request: path, resolved run and the named arguments. */
static void cache_key(const endpoint *ep, const req *q, char *key, size_t cap)
{
    size_t k = (size_t)snprintf(key, cap, "%s?run=%lld", ep->path, (long long)q->run.run_id);
    for (int i = 0; ep->keys[i] && k < cap; i++) {
        const char *v = q->args(q->cls, ep->keys[i]);
        k += (size_t)snprintf(key + k, cap - k, "&%s=%.40s", ep->keys[i], v ? v : "");
    }
}

/* An error answer {"error": msg}. */
static int error_reply(srv_reply *r, int status, const char *msg)
{
    FILE *f = open_memstream(&r->body, &r->len);
    if (!f) { r->body = NULL; r->len = 0; r->status = 500; return RN_ENOMEM; }
    fputs("{\"error\":", f);
    rn_json_string(f, msg);
    fputs("}\n", f);
    fclose(f);
    r->status = status;
    return RN_OK;
}

int srv_api_handle(srv_api *a, const char *path, srv_arg_fn args, void *cls, srv_reply *r)
{
    const endpoint *ep = NULL;
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
        if (!strcmp(path, endpoints[i].path)) ep = &endpoints[i];
    if (!ep) return error_reply(r, 404, "no such endpoint");
    rn_error err = { 0 };
    req q = { .a = a, .args = args, .cls = cls, .err = &err };
    int rc = db_take(a, &q.db, &err);
    char key[512];
    int cache = 0;
    if (!rc && ep->needs_run) rc = get_run(&q);
    if (!rc && ep->cacheable && strcmp(q.run.status, "running")) {
        cache_key(ep, &q, key, sizeof key);
        if (srv_cache_get(a->cache, key, &r->body, &r->len)) {
            db_give(a, q.db);
            r->status = 200;
            return RN_OK;
        }
        cache = 1;
    }
    char *body = NULL;
    size_t len = 0;
    if (!rc) {
        if (!(q.out = open_memstream(&body, &len))) rc = rn_seterr(&err, RN_ENOMEM, "out of memory");
        else {
            rc = ep->fn(&q);
            if (fclose(q.out) && !rc) rc = rn_seterr(&err, RN_ENOMEM, "out of memory");
        }
    }
    db_give(a, q.db);
    if (rc) {
        free(body);
        return error_reply(r, rc == RN_EINPUT ? 400 : rc == RN_EINTR ? 503 : 500, err.msg);
    }
    if (cache) srv_cache_put(a->cache, key, body, len);
    r->status = 200;
    r->body = body;
    r->len = len;
    return RN_OK;
}
