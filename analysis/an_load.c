/* an_load.c — shared opening and checking of trace runs (an_load.h). */
#include "an_load.h"

#include <stdlib.h>
#include <string.h>

#include "an_stream.h"

int an_run_open(const char *path, int64_t run_id, an_run *r, rn_error *err)
{
    tr_db *db;
    int rc = tr_open_read(path, &db, err);
    if (rc) { memset(r, 0, sizeof *r); return rc; }
    if ((rc = an_run_open_on(db, path, run_id, r, err))) tr_close(db);
    return rc;
}

int an_run_open_on(tr_db *db, const char *path, int64_t run_id, an_run *r, rn_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->db = db;
    int rc = tr_run_get(r->db, run_id, &r->run, err);
    if (rc) goto fail;
    if (!strcmp(r->run.status, "running")) {
        rc = rn_seterr(err, RN_EINPUT, "%s: run %lld is still running (or its writer died); "
                       "analyse it once it is complete or interrupted, or, if no process is writing "
                       "it, run `ramtrace repair %s --run %lld`", path, (long long)r->run.run_id, path,
                       (long long)r->run.run_id);
        goto fail;
    }
    /* a finished run whose rows disagree with its counts (a lost block) */
    if ((rc = tr_check_run(r->db, &r->run, err))) goto fail;
    r->M = rn_config_slots(&r->run.cfg);
    if ((rc = tr_list_heads(r->db, r->run.run_id, &r->heads, &r->n_heads, err))) goto fail;
    return RN_OK;
fail:
    r->db = NULL;  /* the caller's */
    an_run_close(r);
    return rc;
}

void an_run_close(an_run *r)
{
    if (r->db) tr_close(r->db);
    free(r->heads);
    r->db = NULL;
    r->heads = NULL;
}

int an_run_check_head(const an_run *r, int layer, int head, rn_error *err)
{
    const rn_config *c = &r->run.cfg;
    if (layer >= 0 && layer >= c->n_layers)
        return rn_seterr(err, RN_EINPUT, "--layer: %d does not exist (the model has %d layers)", layer,
                         c->n_layers);
    if (head >= 0 && head >= c->n_heads)
        return rn_seterr(err, RN_EINPUT, "--head: %d does not exist (the model has %d heads)", head,
                         c->n_heads);
    for (int i = 0; i < r->n_heads; i++)
        if ((layer < 0 || r->heads[i].layer == layer) && (head < 0 || r->heads[i].head == head))
            return RN_OK;
    return rn_seterr(err, RN_EINPUT, "%s: run %lld traced no head matching layer %d, head %d", r->path,
                     (long long)r->run.run_id, layer, head);
}

int an_run_load(const an_run *r, int layer, int head, int ops, tr_event **ev, size_t *n, rn_error *err)
{
    return an_run_load_range(r, layer, head, ops, 0, -1, ev, n, err);
}

int an_run_load_range(const an_run *r, int layer, int head, int ops, int64_t lo, int64_t hi, tr_event **ev,
                      size_t *n, rn_error *err)
{
    tr_filter f = tr_filter_all();
    f.layer = layer;
    f.head = head;
    f.ops = ops;
    f.pos_lo = lo;
    f.pos_hi = hi;
    return tr_load_events(r->db, r->run.run_id, &f, ev, n, err);
}
