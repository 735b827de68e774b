/* an_replay.c — merging per-head readers into replay order (an_replay.h). */
#include "an_replay.h"

#include <stdlib.h>

struct an_replay {
    int n;             /* heads of the group */
    tr_iter **it;      /* [n] one reader per head, in (layer, head) order */
    tr_event *peek;    /* [n] each reader's next event */
    uint8_t *live;     /* [n] peek holds an event */
    int g;             /* the head being emitted */
    int64_t pos;       /* the unit being emitted: positions [pos, end) */
    int64_t end, unit; /* unit: the chunk's first position (pos outside chunks) */
    int started;
    const tr_chunk *chunk; /* [n_chunks] by pos0 (an_replay_set_chunks) */
    int n_chunks, ci;  /* ci: the first chunk that may hold a later unit */
};

void an_replay_close(an_replay *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) tr_iter_close(r->it[i]);
    free(r->it); free(r->peek); free(r->live); free(r);
}

/* Fetch reader i's next event into peek[i]. */
static int advance(an_replay *r, int i, rn_error *err)
{
    int rc = tr_iter_next(r->it[i], &r->peek[i], err);
    if (rc < 0 || rc > 1) return rc;
    r->live[i] = (uint8_t)rc;
    return RN_OK;
}

int an_replay_open(tr_db *db, int64_t run_id, int l0, int l1, int h0, int h1, int ops, an_replay **out,
                   rn_error *err)
{
    *out = NULL;
    an_replay *r = calloc(1, sizeof *r);
    int n = (l1 - l0) * (h1 - h0);
    if (!r || n <= 0) { free(r); return n <= 0 ? rn_seterr(err, RN_EINTERNAL, "empty replay group")
                                               : rn_seterr(err, RN_ENOMEM, "out of memory"); }
    r->it = calloc((size_t)n, sizeof *r->it);
    r->peek = calloc((size_t)n, sizeof *r->peek);
    r->live = calloc((size_t)n, 1);
    if (!r->it || !r->peek || !r->live) { an_replay_close(r); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    r->n = n;
    int rc = RN_OK;
    for (int l = l0, i = 0; l < l1 && !rc; l++)
        for (int h = h0; h < h1 && !rc; h++, i++) {
            tr_filter f = tr_filter_all();
            f.layer = l;
            f.head = h;
            f.ops = ops;
            rc = tr_iter_open(db, run_id, &f, &r->it[i], err);
            if (!rc) rc = advance(r, i, err);
        }
    if (rc) { an_replay_close(r); return rc; }
    *out = r;
    return RN_OK;
}

void an_replay_set_chunks(an_replay *r, const tr_chunk *chunks, int n)
{
    r->chunk = chunks;
    r->n_chunks = n;
    r->ci = 0;
}

int64_t an_replay_unit(const an_replay *r) { return r->unit; }

int an_replay_next(an_replay *r, tr_event *ev, rn_error *err)
{
    for (;;) {
        if (r->started && r->g < r->n && r->live[r->g] && r->peek[r->g].pos < r->end) {
            *ev = r->peek[r->g];
            int rc = advance(r, r->g, err);
            return rc ? rc : 1;
        }
        if (r->started && ++r->g < r->n) continue;
        /* every head is past pos: the next position is the smallest peeked */
        int64_t next = INT64_MAX;
        for (int i = 0; i < r->n; i++)
            if (r->live[i] && r->peek[i].pos < next) next = r->peek[i].pos;
        if (next == INT64_MAX) return 0;
        /* units start in increasing order: the chunks before one are done */
        while (r->ci < r->n_chunks && r->chunk[r->ci].pos0 + r->chunk[r->ci].n <= next) r->ci++;
        int in = r->ci < r->n_chunks && r->chunk[r->ci].pos0 <= next;
        r->unit = in ? r->chunk[r->ci].pos0 : next;
        r->end = in ? r->chunk[r->ci].pos0 + r->chunk[r->ci].n : next + 1;
        r->pos = next;
        r->g = 0;
        r->started = 1;
    }
}
