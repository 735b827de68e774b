/* an_runset.c — opening the runs of several trace files as one study
 * (an_runset.h). */
#include "an_runset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void an_runset_close(an_runset *rs)
{
    for (int i = 0; i < rs->n; i++) {
        rs->r[i].db = NULL;  /* its file's, closed below */
        an_run_close(&rs->r[i]);
    }
    for (int f = 0; f < rs->files; f++)
        if (rs->db[f]) tr_close(rs->db[f]);
    free(rs->r);
    free(rs->db);
    memset(rs, 0, sizeof *rs);
}

/* Whether runs a and b trace one model: the model file's checksum and the
 * config's shape (what every analysis indexes by). */
static int same_model(const an_run *a, const an_run *b)
{
    const rn_config *x = &a->run.cfg, *y = &b->run.cfg;
    if (strcmp(a->run.model_hash, b->run.model_hash) || x->n_layers != y->n_layers || x->n_heads != y->n_heads ||
        a->M != b->M || x->top_k != y->top_k || x->d_v != y->d_v)
        return 0;
    for (int l = 0; l < x->n_layers; l++)
        if (x->cape_mask[l] != y->cape_mask[l]) return 0;
    return 1;
}

/* The run ids of path (open as db) to open under sel, into *ids (malloc'd). */
static int select_ids(tr_db *db, const char *path, an_runsel sel, int64_t **ids, int *n, rn_error *err)
{
    *ids = NULL;
    *n = 0;
    if (!sel.all) {
        if (!(*ids = malloc(sizeof **ids))) return rn_seterr(err, RN_ENOMEM, "out of memory");
        (*ids)[0] = sel.run_id; /* 0: the latest, resolved by an_run_open */
        *n = 1;
        return RN_OK;
    }
    tr_run_info *runs = NULL;
    int nr = 0, rc = tr_list_runs(db, &runs, &nr, err);
    if (rc) return rc;
    if (nr == 0) { free(runs); return rn_seterr(err, RN_EINPUT, "%s: holds no run", path); }
    if (!(*ids = malloc((size_t)nr * sizeof **ids))) { free(runs); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    for (int i = 0; i < nr; i++) (*ids)[i] = runs[i].run_id;
    *n = nr;
    free(runs);
    return RN_OK;
}

int an_runset_open(const char *const *paths, int npaths, an_runsel sel, int check_model, an_runset *rs,
                   rn_error *err)
{
    memset(rs, 0, sizeof *rs);
    int cap = 0, rc = RN_OK;
    if (!(rs->db = calloc((size_t)npaths, sizeof *rs->db))) return rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int f = 0; f < npaths && !rc; f++) {
        int64_t *ids;
        int nids;
        rs->files++;
        if ((rc = tr_open_read(paths[f], &rs->db[f], err))) break;
        if ((rc = select_ids(rs->db[f], paths[f], sel, &ids, &nids, err))) break;
        for (int i = 0; i < nids && !rc; i++) {
            if (rs->n == AN_RUNSET_MAX) {
                rc = rn_seterr(err, RN_EINPUT, "%s: more than %d runs in one analysis", paths[f], AN_RUNSET_MAX);
                break;
            }
            if (rs->n == cap) {
                cap = cap ? 2 * cap : 8;
                an_run *t = realloc(rs->r, (size_t)cap * sizeof *t);
                if (!t) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
                rs->r = t;
            }
            if ((rc = an_run_open_on(rs->db[f], paths[f], ids[i], &rs->r[rs->n], err))) break;
            const an_run *a = &rs->r[0], *b = &rs->r[rs->n];
            rs->n++;
            if (check_model && !same_model(a, b))
                rc = rn_seterr(err, RN_EINPUT, "%s: run %lld traces another model (%s, %d layers x %d heads, "
                               "M %lld) than %s run %lld (%s, %d x %d, M %lld); traces are analysed together "
                               "only when they trace one model", b->path, (long long)b->run.run_id,
                               b->run.model_hash, b->run.cfg.n_layers, b->run.cfg.n_heads, (long long)b->M,
                               a->path, (long long)a->run.run_id, a->run.model_hash, a->run.cfg.n_layers,
                               a->run.cfg.n_heads, (long long)a->M);
        }
        free(ids);
    }
    if (rc) an_runset_close(rs);
    return rc;
}

int an_runset_check_head(const an_runset *rs, int layer, int head, rn_error *err)
{
    for (int i = 0; i < rs->n; i++) {
        int rc = an_run_check_head(&rs->r[i], layer, head, err);
        if (rc) return rc;
    }
    return RN_OK;
}

const char *an_runset_describe(const an_runset *rs, char *buf, size_t len)
{
    if (rs->n == 1) snprintf(buf, len, "run %lld", (long long)rs->r[0].run.run_id);
    else snprintf(buf, len, "%d runs of %d trace%s", rs->n, rs->files, rs->files == 1 ? "" : "s");
    return buf;
}
