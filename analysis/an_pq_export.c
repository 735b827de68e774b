/* an_pq_export.c — trace runs to a Parquet dataset (an_pq_export.h):
 * events streamed per (run, layer) through a trace iterator into the
 * Parquet writer (an_parquet.h), the runs table, and the all-or-nothing
 * directory. */
#include "an_pq_export.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <omp.h>
#include <unistd.h>

#include "an_load.h"
#include "an_parquet.h"
#include "an_runset.h"
#include "tr_block.h"

#define BATCH 65536

enum { C_HEAD, C_POS, C_OP, C_RANK, C_SLOT, C_ADDR, C_WEIGHT, C_TOKEN, N_EVCOLS };

/* Pages hold a whole row group's chunk (PAGE_ROWS = the writer's group):
 * zstd finds more repeats in one long page than in eight short ones
 * (the 10M-event bench trace: 1.4% fewer bytes, the CPU the same), and
 * readers skip by the chunks' statistics, not by page.  Slots and
 * addresses, a third of the bytes, compress better at a higher zstd
 * level: on the 100M-event trace, levels 1, 2, 3 give 3.60, 3.50, 3.45
 * bytes/event for 3.77, 3.92, 4.3 s of CPU; level 2 takes most of the
 * gain for 4% more CPU.  The weights (random low mantissa bytes) gain
 * 0.2% at level 3 and keep level 1.  docs/analysis.md has the
 * measurements. */
#define PAGE_ROWS ((size_t)1 << 20)
#define SLOT_LEVEL 2

/* Dictionaries where a chunk's distinct values are few: not pos (a
 * dictionary page of every position costs more than zstd over its runs;
 * it steps by 0 or +1 within a head, so DELTA_BINARY_PACKED holds a row
 * in a bit), and weight only for runs recorded as float16 (at most 2^16
 * values; f32 weights are nearly all distinct, so they go PLAIN as byte
 * streams). */
static const an_pq_column event_cols[N_EVCOLS] = {
    { "head", AN_PQ_INT32, AN_PQ_DICT, 0 }, { "pos", AN_PQ_INT32, AN_PQ_DELTA, 0 }, { "op", AN_PQ_INT32, AN_PQ_DICT, 0 },
    { "rank", AN_PQ_INT32, AN_PQ_DICT, 0 }, { "slot", AN_PQ_UINT32, AN_PQ_BEST, SLOT_LEVEL },
    { "addr", AN_PQ_UINT32, AN_PQ_BEST, SLOT_LEVEL },
    { "weight", AN_PQ_FLOAT, AN_PQ_PLAIN, 0 }, { "token", AN_PQ_STRING, AN_PQ_DICT, 0 },
};

/* One event batch, column by column. */
typedef struct {
    int32_t head[BATCH], pos[BATCH], op[BATCH], rank[BATCH];
    uint32_t slot[BATCH], addr[BATCH];
    float weight[BATCH];
    an_pq_str token[BATCH];
} batch;

/* A run chosen for export, opened and checked. */
typedef struct {
    const char *trace;
    an_run *r;         /* in the run set */
    int64_t exported;  /* events written */
} run_src;

/* What each thread writing layer files keeps from one file to the next
 * (and from run to run): its writer's buffers (an_pq_reopen), its batch,
 * and its connection to the trace file it reads. */
typedef struct {
    an_pq_writer *w;
    batch *b;
    tr_db *db;
    const char *db_path;       /* the file db is open on */
} worker;

typedef struct {
    const an_pq_export_opts *o;
    const volatile int *stop;
    an_pq_export_result *res;
    int par;                   /* layer files written at once */
    int col_threads;           /* each file's columns encoded at once */
    volatile int failed;       /* a layer file failed: the others stop */
    worker *wk;                /* [par] */
} ctx;

static int nftw_remove(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(p);
    return 0;
}

/* Remove a partial dataset tree. */
static void remove_tree(const char *dir) { nftw(dir, nftw_remove, 16, FTW_DEPTH | FTW_PHYS); }

static int make_dir(const char *p, rn_error *err)
{
    if (mkdir(p, 0755) == 0) return RN_OK;
    return rn_seterr(err, errno == ENOSPC || errno == EDQUOT ? RN_EIO : RN_EINPUT, "%s: cannot create: %s", p,
                     strerror(errno));
}

/* Flush and close f (the data reaches the disk at dataset_sync). */
static int close_file(FILE *f, const char *path, rn_error *err)
{
    int ok = fflush(f) == 0;
    int e = errno;
    ok &= fclose(f) == 0;
    if (!ok) return rn_seterr(err, RN_EIO, "%s: write failed: %s", path, strerror(e ? e : errno));
    return RN_OK;
}

/* Every file of the finished dataset dir on disk before it is renamed
 * into place: one syncfs of its file system, not an fsync per file (a
 * dataset of many small runs has thousands of files, and their fsyncs
 * took most of its export's time).  fd is the dataset directory opened
 * when it was made: syncfs reports a write error of the file system that
 * happened since fd was opened, even one another process's sync has
 * already seen (Linux 5.8 on), so it must be opened before the first
 * write, not here.  A write the disk refused shows here (RN_EIO). */
static int dataset_sync(int fd, const char *dir, rn_error *err)
{
    if (syncfs(fd) != 0) return rn_seterr(err, RN_EIO, "%s: write failed: %s", dir, strerror(errno));
    return RN_OK;
}

static an_pq_opts writer_opts(int threads)
{
    an_pq_opts po = { 0 };
    po.threads = threads > 0 ? threads : 1;
    po.group_rows = po.page_rows = PAGE_ROWS;
    return po;
}

/* The token pieces of a run by position (toks[pos].pos == pos). */
static int load_pieces(const run_src *s, tr_token **toks, int64_t *n, rn_error *err)
{
    int rc = tr_load_tokens(s->r->db, s->r->run.run_id, toks, n, err);
    if (rc) return rc;
    for (int64_t i = 0; i < *n; i++)
        if ((*toks)[i].pos != i) {
            free(*toks);
            *toks = NULL;
            return rn_seterr(err, RN_EINPUT, "%s: run %lld: tokens are not positions 0..%lld (corrupt trace)",
                             s->trace, (long long)s->r->run.run_id, (long long)*n - 1);
        }
    return RN_OK;
}

/* Write run s's layer `layer` as part-0.parquet of dir, reading through
 * the calling thread's worker k (its connection, batch and writer); the
 * events written are added to *exported. */
static int write_layer(ctx *x, run_src *s, worker *k, int layer, const an_pq_str *piece, int64_t ntok,
                       const char *dir, int64_t *exported, rn_error *err)
{
    batch *b = k->b;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/part-0.parquet", dir) >= (int)sizeof path)
        return rn_seterr(err, RN_EINPUT, "%s: path too long", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return rn_seterr(err, errno == ENOSPC ? RN_EIO : RN_EINPUT, "%s: cannot create: %s", path, strerror(errno));
    an_pq_opts po = writer_opts(x->col_threads);
    tr_iter *it = NULL;
    an_pq_column cols[N_EVCOLS];
    memcpy(cols, event_cols, sizeof cols);
    cols[C_WEIGHT].enc = s->r->run.weight_format == TR_WEIGHTS_F16 ? AN_PQ_DICT : AN_PQ_PLAIN;
    int rc = an_pq_reopen(&k->w, f, cols, N_EVCOLS, &po, err);
    an_pq_writer *w = k->w;
    tr_filter flt = tr_filter_all();
    flt.layer = layer;
    flt.head = x->o->head;
    flt.ops = x->o->ops;
    if (!rc) rc = tr_iter_open(k->db, s->r->run.run_id, &flt, &it, err);
    const void *vals[N_EVCOLS] = { b->head, b->pos, b->op, b->rank, b->slot, b->addr, b->weight, b->token };
    const tr_columns tc = { NULL, b->head, b->pos, b->op, b->rank, b->slot, b->addr, b->weight };
    while (!rc) {
        size_t nb = 0;
        if ((rc = tr_iter_read(it, &tc, BATCH, &nb, err)) || nb == 0) break;
        for (size_t i = 0; i < nb; i++) {
            int32_t p = b->pos[i];
            if (p < 0 || p >= ntok) {
                rc = rn_seterr(err, RN_EINPUT, "%s: run %lld: event at position %d has no token (corrupt trace)",
                               s->trace, (long long)s->r->run.run_id, (int)p);
                break;
            }
            b->token[i] = piece[p];
        }
        if (rc || (rc = an_pq_append(w, nb, vals, err))) break;
        *exported += (int64_t)nb;
        if (x->stop && *x->stop) rc = rn_seterr(err, RN_EINTR, "interrupted");
        else if (x->failed) rc = RN_EINTR; /* another file failed; its error is reported */
    }
    if (it) tr_iter_close(it);
    if (!rc) rc = an_pq_finish(w, err);
    uint64_t bytes = rc ? 0 : an_pq_bytes(w);
    if (w) an_pq_abandon(w);  /* (a group in the background writes to f) */
    if (rc == RN_EIO) rn_preferr(err, "%s", path);
    int crc = close_file(f, path, rc ? NULL : err);
    if (!rc) rc = crc;
    #pragma omp critical(an_pq_export_result)
    {
        x->res->bytes += bytes;
        x->res->files++;
    }
    return rc;
}

/* Worker k ready to read path: its batch, and a connection to path (the
 * one it holds when that is path's already). */
static int worker_ready(worker *k, const char *path, rn_error *err)
{
    if (!k->b && !(k->b = malloc(sizeof *k->b))) return rn_seterr(err, RN_ENOMEM, "out of memory");
    if (k->db && !strcmp(k->db_path, path)) return RN_OK;
    if (k->db) tr_close(k->db);
    k->db = NULL;
    int rc = tr_open_read(path, &k->db, err);
    if (!rc) k->db_path = path;
    return rc;
}

static void workers_free(worker *wk, int n)
{
    for (int i = 0; wk && i < n; i++) {
        an_pq_free(wk[i].w);
        free(wk[i].b);
        if (wk[i].db) tr_close(wk[i].db);
    }
    free(wk);
}

/* Write the events of run s as dataset run number k under events/: its
 * layer directories made first, then the layer files x->par at a time
 * (OpenMP), each thread reading through a connection of its own and
 * filling a batch of its own, so each file's bytes are those of a
 * one-thread export. */
static int write_run(ctx *x, run_src *s, int64_t k, const char *events, rn_error *err)
{
    char rdir[PATH_MAX];
    if (snprintf(rdir, sizeof rdir, "%s/run=%lld", events, (long long)k) >= (int)sizeof rdir)
        return rn_seterr(err, RN_EINPUT, "%s: path too long", events);
    int rc = make_dir(rdir, err);
    if (rc) return rc;
    tr_token *toks = NULL;
    int64_t ntok = 0;
    if ((rc = load_pieces(s, &toks, &ntok, err))) return rc;
    an_pq_str *piece = malloc((size_t)(ntok ? ntok : 1) * sizeof *piece);
    int *layers = malloc((size_t)(s->r->n_heads ? s->r->n_heads : 1) * sizeof *layers);
    if (!piece || !layers) { free(toks); free(piece); free(layers); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    for (int64_t i = 0; i < ntok; i++) piece[i] = (an_pq_str){ toks[i].piece, (uint32_t)strlen(toks[i].piece) };
    /* the layers with a selected head, each a directory */
    int nl = 0, last = -1;
    for (int i = 0; i < s->r->n_heads && !rc; i++) {
        const tr_head_info *h = &s->r->heads[i];
        if (h->layer == last) continue;
        if ((x->o->layer >= 0 && h->layer != x->o->layer)) continue;
        int any = 0;
        for (int j = i; j < s->r->n_heads && s->r->heads[j].layer == h->layer; j++)
            any |= x->o->head < 0 || s->r->heads[j].head == x->o->head;
        last = h->layer;
        if (!any) continue;
        char ldir[PATH_MAX];
        snprintf(ldir, sizeof ldir, "%s/layer=%d", rdir, h->layer);
        if (!(rc = make_dir(ldir, err))) layers[nl++] = h->layer;
    }
    int *lrc = calloc((size_t)nl + 1, sizeof *lrc);
    rn_error *lerr = calloc((size_t)nl + 1, sizeof *lerr);
    if (!rc && (!lrc || !lerr)) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    int64_t exported = 0;
    int nt = x->par < nl ? x->par : nl;
    if (nt < 1) nt = 1;
    /* the threads no layer file takes encode each file's columns (with one
     * file at a time the outer region is inactive, so the writer's is not) */
    x->col_threads = x->par / nt > 1 ? x->par / nt : 1;
    /* a run of fewer events than two row groups is written by this thread
     * alone: a team per run of a few thousand events cost more than the
     * run, its idle threads spinning between runs (303 runs of 1,500
     * events: 16 s at -j 2, 2.7 s at -j 1) */
    if (s->r->run.n_events < 2 * (int64_t)PAGE_ROWS) nt = x->col_threads = 1;
    x->failed = 0;
    if (!rc) {
        #pragma omp parallel num_threads(nt) reduction(+ : exported)
        {
            worker *k = &x->wk[omp_get_thread_num()];
            rn_error oerr = { 0 };
            int orc = worker_ready(k, s->r->path, &oerr);
            #pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < nl; i++) {
                if (x->failed) continue;
                char ldir[PATH_MAX];
                snprintf(ldir, sizeof ldir, "%s/layer=%d", rdir, layers[i]);
                if (orc) { lrc[i] = orc; lerr[i] = oerr; }
                else lrc[i] = write_layer(x, s, k, layers[i], piece, ntok, ldir, &exported, &lerr[i]);
                if (lrc[i]) x->failed = 1;
            }
        }
        /* the first failure in layer order with a message of its own (the
         * others stopped because of it, with none) */
        for (int i = 0; i < nl && !rc; i++)
            if (lrc[i] && lerr[i].msg[0]) { rc = lrc[i]; *err = lerr[i]; }
        for (int i = 0; i < nl && !rc; i++)
            if (lrc[i]) rc = rn_seterr(err, lrc[i], "interrupted");
    }
    s->exported = exported;
    free(lrc); free(lerr); free(layers);
    free(piece);
    free(toks);
    x->res->events += s->exported;
    return rc;
}

enum { R_RUN, R_TRACE, R_RUN_ID, R_NAME, R_STATUS, R_HASH, R_LAYERS, R_HEADS, R_SLOTS, R_TOPK, R_DV,
       R_TOKENS, R_EVENTS, R_WFMT, N_RUNCOLS };

/* DIR/runs/runs.parquet: one row per exported run. */
static int write_runs(ctx *x, run_src *src, int n, const char *path, rn_error *err)
{
    static const an_pq_column cols[N_RUNCOLS] = {
        { "run", AN_PQ_INT64, 0, 0 }, { "trace", AN_PQ_STRING, 0, 0 }, { "run_id", AN_PQ_INT64, 0, 0 },
        { "name", AN_PQ_STRING, 0, 0 }, { "status", AN_PQ_STRING, 0, 0 }, { "model_hash", AN_PQ_STRING, 0, 0 },
        { "n_layers", AN_PQ_INT32, 0, 0 }, { "n_heads", AN_PQ_INT32, 0, 0 }, { "n_slots", AN_PQ_INT64, 0, 0 },
        { "top_k", AN_PQ_INT32, 0, 0 }, { "d_v", AN_PQ_INT32, 0, 0 }, { "n_tokens", AN_PQ_INT64, 0, 0 },
        { "n_events", AN_PQ_INT64, 0, 0 }, { "weight_format", AN_PQ_STRING, 0, 0 },
    };
    FILE *f = fopen(path, "wb");
    if (!f) return rn_seterr(err, errno == ENOSPC ? RN_EIO : RN_EINPUT, "%s: cannot create: %s", path, strerror(errno));
    an_pq_opts po = writer_opts(1);
    po.group_rows = 4096;
    an_pq_writer *w = NULL;
    int rc = an_pq_open(&w, f, cols, N_RUNCOLS, &po, err);
    for (int i = 0; i < n && !rc; i++) {
        const tr_run_info *ri = &src[i].r->run;
        const rn_config *c = &ri->cfg;
        int64_t run = i + 1, run_id = ri->run_id, slots = src[i].r->M, ntok = ri->n_tokens, nev = src[i].exported;
        int32_t L = c->n_layers, H = c->n_heads, K = c->top_k, dv = c->d_v;
        const char *wf = tr_weights_name(ri->weight_format);
        an_pq_str trace = { src[i].trace, (uint32_t)strlen(src[i].trace) };
        an_pq_str name = { ri->name, (uint32_t)strlen(ri->name) };
        an_pq_str status = { ri->status, (uint32_t)strlen(ri->status) };
        an_pq_str hash = { ri->model_hash, (uint32_t)strlen(ri->model_hash) };
        an_pq_str wfs = { wf, (uint32_t)strlen(wf) };
        const void *row[N_RUNCOLS] = { &run, &trace, &run_id, &name, &status, &hash, &L, &H, &slots, &K, &dv,
                                       &ntok, &nev, &wfs };
        rc = an_pq_append(w, 1, row, err);
    }
    if (!rc) rc = an_pq_finish(w, err);
    if (!rc) x->res->bytes += an_pq_bytes(w);
    an_pq_free(w);
    if (rc == RN_EIO) rn_preferr(err, "%s", path);
    int crc = close_file(f, path, rc ? NULL : err);
    x->res->files++;
    return rc ? rc : crc;
}

/* Messages name the dataset's paths, not the temporary directory's, and
 * say that the dataset was not written. */
static void name_output(rn_error *err, const char *tmp, const char *dir)
{
    char msg[RN_ERRMSG_LEN], *at = strstr(err->msg, tmp);
    if (at) {
        snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - err->msg), err->msg, dir, at + strlen(tmp));
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, "; %s not written", dir);
}

/* Open and check every run to export (all before anything is written):
 * run o->run of each trace, or every run, of one model (an_runset.h). */
static int open_runs(const char *const *traces, int ntraces, const an_pq_export_opts *o, an_runset *rs,
                     run_src **out, rn_error *err)
{
    an_runsel sel = { o->run, o->run == 0 };
    int rc = an_runset_open(traces, ntraces, sel, 1, rs, err);
    if (!rc) rc = an_runset_check_head(rs, o->layer, o->head, err);
    if (!rc && !(*out = calloc((size_t)rs->n, sizeof **out))) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    if (rc) { an_runset_close(rs); return rc; }
    for (int i = 0; i < rs->n; i++) (*out)[i] = (run_src){ rs->r[i].path, &rs->r[i], 0 };
    return RN_OK;
}

int an_pq_export(const char *const *traces, int ntraces, const char *dir, const an_pq_export_opts *o,
                 const volatile int *stop, an_pq_export_result *res, rn_error *err)
{
    memset(res, 0, sizeof *res);
    struct stat st;
    if (lstat(dir, &st) == 0)
        return rn_seterr(err, RN_EINPUT, "%s: exists; --format parquet writes a new dataset directory", dir);
    char tmp[PATH_MAX], sub[PATH_MAX];
    int rc = RN_OK;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid()) >= (int)sizeof tmp - 32)
        return rn_seterr(err, RN_EINPUT, "%s: path too long", dir);
    run_src *src = NULL;
    an_runset rs;
    if ((rc = open_runs(traces, ntraces, o, &rs, &src, err))) return rc;
    int n = rs.n;
    /* -j N: up to N layer files at once, the threads left over encoding
     * each file's columns */
    int T = o->threads > 0 ? o->threads : 1;
    ctx x = { o, stop, res, T, 1, 0, calloc((size_t)T, sizeof(worker)) };
    rc = x.wk ? make_dir(tmp, err) : rn_seterr(err, RN_ENOMEM, "out of memory");
    int dfd = -1; /* the dataset directory, for dataset_sync */
    if (!rc && (dfd = open(tmp, O_RDONLY | O_DIRECTORY)) < 0) {
        rc = rn_seterr(err, RN_EIO, "%s: cannot open the new directory: %s", tmp, strerror(errno));
        remove_tree(tmp);
    }
    if (rc) {
        an_runset_close(&rs);
        free(src);
        free(x.wk);
        if (rc == RN_EINPUT || rc == RN_EIO) rn_preferr(err, "%s", dir);
        return rc;
    }
    snprintf(sub, sizeof sub, "%s/events", tmp);
    rc = make_dir(sub, err);
    for (int i = 0; i < n && !rc; i++) rc = write_run(&x, &src[i], i + 1, sub, err);
    workers_free(x.wk, T);
    snprintf(sub, sizeof sub, "%s/runs", tmp);
    if (!rc) rc = make_dir(sub, err);
    snprintf(sub, sizeof sub, "%s/runs/runs.parquet", tmp);
    if (!rc) rc = write_runs(&x, src, n, sub, err);
    res->runs = n;
    if (!rc) rc = dataset_sync(dfd, tmp, err);
    close(dfd);
    if (!rc && rename(tmp, dir) != 0)
        rc = rn_seterr(err, RN_EIO, "%s: cannot rename the finished dataset into place: %s", dir, strerror(errno));
    if (rc) {
        remove_tree(tmp);
        if (rc != RN_EINTR) name_output(err, tmp, dir);
    }
    an_runset_close(&rs);
    free(src);
    return rc;
}
