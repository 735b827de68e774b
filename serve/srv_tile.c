/* srv_tile.c — tiles of the trace plot (srv_tile.h). */
#include "srv_tile.h"

#include <stdlib.h>
#include <string.h>


/* Slots per row: the smallest power of two putting M slots in at most
 * SRV_TILE_ROWS rows. */
static int64_t slot_bin(int64_t M)
{
    int64_t s = 1;
    while ((M + s - 1) / s > SRV_TILE_ROWS) s *= 2;
    return s;
}

/* Decimal digits of v at the end of buf[0..24); returns the first. */
static char *put_uint(char *end, uint64_t v)
{
    do { *--end = (char)('0' + v % 10); v /= 10; } while (v);
    return end;
}

/* Every event of [p0, p1), in canonical order.  Formatted by hand into one
 * line buffer per event (fprintf per field was most of a tile's time);
 * weights as %.9g, which reads back as the same float. */
static int write_raw(tr_iter *it, int64_t p0, int64_t p1, FILE *out, rn_error *err)
{
    char line[160], num[24];
    int64_t n = 0;
    tr_event e;
    int rc;
    fprintf(out, "{\"z\":0,\"p0\":%lld,\"p1\":%lld,\"ev\":[", (long long)p0, (long long)p1);
    while ((rc = tr_iter_next(it, &e, err)) == 1) {
        size_t k = 0;
        if (n++) line[k++] = ',';
        const uint64_t f[5] = { (uint64_t)e.pos, e.slot, e.op, e.rank, e.addr };
        for (int i = 0; i < 5; i++) {
            char *s = put_uint(num + sizeof num, f[i]);
            size_t len = (size_t)(num + sizeof num - s);
            memcpy(line + k, s, len);
            k += len;
            line[k++] = ',';
        }
        k += (size_t)snprintf(line + k, sizeof line - k, "%.9g", (double)e.weight);
        fwrite(line, 1, k, out);
    }
    if (rc) return rc;
    fprintf(out, "],\"n\":%lld}", (long long)n);
    return RN_OK;
}

/* base64 (RFC 4648, padded) of n bytes to out. */
static void put_base64(FILE *out, const uint8_t *b, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        q[0] = A[v >> 18 & 63];
        q[1] = A[v >> 12 & 63];
        q[2] = i + 1 < n ? A[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? A[v & 63] : '=';
        fwrite(q, 1, 4, out);
    }
}

/* The byte of a cell whose strongest event is (op, w) (srv_tile.h). */
static uint8_t cell_code(int op, float w)
{
    float c = w < 0 ? 0 : w > 1 ? 1 : w;
    return (uint8_t)((op == RN_OP_READ ? 128 : 0) + 1 + (int)(c * 126.0f + 0.5f));
}

/* The events of [p0, p1) binned into columns of 2^z positions and rows of
 * sbin slots, each cell keeping its strongest event. */
static int write_binned(tr_iter *it, int z, int64_t p0, int64_t p1, int64_t M, FILE *out, rn_error *err)
{
    int64_t bin = (int64_t)1 << z, sbin = slot_bin(M), rows = (M + sbin - 1) / sbin;
    size_t cells = (size_t)SRV_TILE_COLS * (size_t)rows;
    float *wmax = malloc(cells * sizeof *wmax);
    uint8_t *code = calloc(cells, 1);
    if (!wmax || !code) {
        free(wmax); free(code);
        return rn_seterr(err, RN_ENOMEM, "out of memory binning a tile");
    }
    tr_event e;
    int rc;
    int64_t n = 0;
    while ((rc = tr_iter_next(it, &e, err)) == 1) {
        if (e.slot >= (uint64_t)M) continue;
        size_t i = (size_t)((e.pos - p0) / bin) * (size_t)rows + e.slot / (size_t)sbin;
        if (!code[i] || e.weight > wmax[i]) { wmax[i] = e.weight; code[i] = cell_code(e.op, e.weight); }
        n++;
    }
    if (rc == 0) {
        fprintf(out, "{\"z\":%d,\"p0\":%lld,\"p1\":%lld,\"bin\":%lld,\"sbin\":%lld,\"rows\":%lld,\"n\":%lld,\"grid\":\"",
                z, (long long)p0, (long long)p1, (long long)bin, (long long)sbin, (long long)rows, (long long)n);
        put_base64(out, code, cells);
        fputs("\"}", out);
    }
    free(wmax); free(code);
    return rc;
}

int srv_tile_write(tr_db *db, const tr_run_info *run, int layer, int head, int z, int64_t t, FILE *out,
                   rn_error *err)
{
    if (z < 0 || z > SRV_TILE_MAX_Z || t < 0)
        return rn_seterr(err, RN_EINPUT, "tile: z must be in [0, %d] and t >= 0", SRV_TILE_MAX_Z);
    int64_t span = (int64_t)SRV_TILE_COLS << z;
    if (t > (INT64_MAX / 2) / span || t * span >= (run->n_tokens > 0 ? run->n_tokens : 1))
        return rn_seterr(err, RN_EINPUT, "tile: tile %lld of level %d starts past the run's %lld positions",
                         (long long)t, z, (long long)run->n_tokens);
    int64_t p0 = t * span, p1 = p0 + span;
    tr_filter f = tr_filter_all();
    f.layer = layer;
    f.head = head;
    f.pos_lo = p0;
    f.pos_hi = p1;
    tr_iter *it;
    int rc = tr_iter_open(db, run->run_id, &f, &it, err);
    if (rc) return rc;
    int64_t M = rn_config_slots(&run->cfg);
    rc = z == 0 ? write_raw(it, p0, p1, out, err) : write_binned(it, z, p0, p1, M, out, err);
    tr_iter_close(it);
    return rc;
}
