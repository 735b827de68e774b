/* an_export.c — oracleGeneral and CSV export of a run (an_export.h); the
 * CSV goes through the row writer (core/base/rn_rows.h). */
#include "an_export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "an_spill.h"
#include "rn_rows.h"

int an_export_format_parse(const char *s, int *fmt, rn_error *err)
{
    if (!strcmp(s, "oraclegeneral") || !strcmp(s, "oracleGeneral")) *fmt = AN_EXPORT_ORACLEGENERAL;
    else if (!strcmp(s, "csv")) *fmt = AN_EXPORT_CSV;
    else if (!strcmp(s, "parquet")) *fmt = AN_EXPORT_PARQUET;
    else return rn_seterr(err, RN_EINPUT, "--format: unknown export format '%s' (oraclegeneral, csv or parquet)", s);
    return RN_OK;
}

static inline void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void an_og_decode(const unsigned char *buf, size_t i, an_og_record *r)
{
    const unsigned char *p = buf + i * AN_OG_RECORD;
    r->time = (uint32_t)get_le(p, 4);
    r->obj_id = get_le(p + 4, 8);
    r->size = (uint32_t)get_le(p + 12, 4);
    r->next = (int64_t)get_le(p + 16, 8);
}

/* Whether the caller's stop flag (NULL: none) is up. */
static int stopped(const volatile int *stop) { return stop && *stop; }

/* The CSV rows of stream s (NULL: the header only) through the row writer;
 * nxt[i] is the index of the next access to the same key (AN_NONE: none). */
static int export_csv(FILE *f, const an_stream *s, const uint32_t *nxt, const an_export_part *pt,
                      const volatile int *stop, rn_error *err)
{
    static const char *const cols[8] = { "index", "time", "layer", "head", "slot", "op", "obj_id", "next" };
    rn_rows w;
    rn_rows_opts o = { 0 };
    o.csv_no_header = !pt->header;
    int rc = rn_rows_begin(&w, f, RN_FMT_CSV, 8, cols, &o, err);
    if (rc) return rc;
    for (size_t i = 0; s && i < s->n; i++) {
        uint64_t id = s->id[s->key[i]];
        int64_t next = nxt[i] == AN_NONE ? -1 : (int64_t)(pt->index0 + nxt[i]) + 1;
        const rn_cell c[8] = { rn_cell_uint(pt->index0 + i + 1), rn_cell_int(pt->time0 + s->pos[i]),
                               rn_cell_int(an_id_layer(id)),
                               rn_cell_int(an_id_head(id)), rn_cell_uint(an_id_slot(id)),
                               rn_cell_text(s->op[i] ? "r" : "w"), rn_cell_uint(id | pt->seq << 48),
                               rn_cell_int(next) };
        rn_rows_add(&w, c);
        if (ferror(f)) break;
        if ((i & 0xffff) == 0xffff && stopped(stop)) {
            rn_rows_end(&w, err);
            return rn_seterr(err, RN_EINTR, "interrupted");
        }
    }
    int e = errno;
    rc = rn_rows_end(&w, err);
    return rc == RN_EIO ? rn_seterr(err, RN_EIO, "write failed: %s", strerror(e ? e : EIO)) : rc;
}

int an_export_write(FILE *f, int fmt, const tr_event *ev, size_t n, const rn_config *cfg, int ops,
                    const volatile int *stop, rn_error *err)
{
    const an_export_part whole = { 0, 0, 0, 1 };
    return an_export_write_part(f, fmt, ev, n, cfg, ops, &whole, stop, err);
}

int an_export_write_part(FILE *f, int fmt, const tr_event *ev, size_t n, const rn_config *cfg, int ops,
                         const an_export_part *pt, const volatile int *stop, rn_error *err)
{
    if (fmt == AN_EXPORT_PARQUET)
        return rn_seterr(err, RN_EINPUT, "parquet is a dataset directory: an_pq_export writes it");
    an_streams ss;
    int rc = an_streams_build(ev, n, cfg, RN_CACHE_SCOPE_MODEL, ops, &ss, err);
    if (rc) return rc;
    if (stopped(stop)) {
        an_streams_free(&ss);
        return rn_seterr(err, RN_EINTR, "interrupted");
    }
    if (ss.n == 0) {
        an_streams_free(&ss);
        if (fmt == AN_EXPORT_CSV) return export_csv(f, NULL, NULL, pt, stop, err);
        return RN_OK;
    }
    const an_stream *s = &ss.s[0];
    /* next uses: the stream held resident, through the spill's pass */
    an_spill sp;
    if ((rc = an_spill_resident(&ss, 0, &sp, err)) || (rc = an_spill_next_use(&sp, err))) {
        an_spill_free(&sp); an_streams_free(&ss);
        return rc == RN_ENOMEM ? rn_seterr(err, RN_ENOMEM, "out of memory exporting %zu accesses", s->n) : rc;
    }
    const uint32_t *nxt = sp.next;
    if (fmt == AN_EXPORT_CSV) {
        rc = stopped(stop) ? rn_seterr(err, RN_EINTR, "interrupted") : export_csv(f, s, nxt, pt, stop, err);
        an_spill_free(&sp);
        an_streams_free(&ss);
        return rc;
    }
    uint32_t size = (uint32_t)(cfg->d_v + 1) * 4;
    unsigned char buf[AN_OG_RECORD * 1024];
    size_t nb = 0;
    int ioerr = 0, intr = stopped(stop);
    for (size_t i = 0; i < s->n && !ioerr && !intr; i++) {
        if ((i & 0xffff) == 0xffff) intr = stopped(stop);
        uint64_t id = s->id[s->key[i]];
        int64_t next = nxt[i] == AN_NONE ? -1 : (int64_t)(pt->index0 + nxt[i]) + 1;
        unsigned char *p = buf + nb * AN_OG_RECORD;
        put_le(p, (uint32_t)(pt->time0 + s->pos[i]), 4);
        put_le(p + 4, id | pt->seq << 48, 8);
        put_le(p + 12, size, 4);
        put_le(p + 16, (uint64_t)next, 8);
        if (++nb == 1024) {
            ioerr |= fwrite(buf, AN_OG_RECORD, nb, f) != nb;
            nb = 0;
        }
    }
    if (nb && !ioerr) ioerr |= fwrite(buf, AN_OG_RECORD, nb, f) != nb;
    int e = errno;
    an_spill_free(&sp);
    an_streams_free(&ss);
    if (ioerr) return rn_seterr(err, RN_EIO, "write failed: %s", strerror(e ? e : EIO));
    if (intr) return rn_seterr(err, RN_EINTR, "interrupted");
    return RN_OK;
}
