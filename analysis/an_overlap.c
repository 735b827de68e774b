/* an_overlap.c — slot usage and write/read overlap of position pairs
 * (an_overlap.h). */
#include "an_overlap.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_rows.h"

/* Running sums per (layer, head): per op (0 writes, 1 reads) positions,
 * address entropy, rank-0 weight and top-K mass; then the pair sums. */
enum {
    S_POS, S_AENT = 2, S_TOP1 = 4, S_MASS = 6,
    S_SPREAD = 8, S_SPREAD_N, S_NP, S_OV, S_HIT, S_SH, S_NO, S_OOV, S_OHIT, S_OSH, S_N
};

int an_overlap_init(an_overlap *a, int L, int H, int64_t M, rn_error *err)
{
    memset(a, 0, sizeof *a);
    if (L < 1 || H < 1 || M < 1) return rn_seterr(err, RN_EINPUT, "overlap: bad model shape");
    a->L = L;
    a->H = H;
    a->M = M;
    a->slot_mass = calloc((size_t)L * H * 2 * (size_t)M, sizeof *a->slot_mass);
    a->touched = calloc((size_t)L * H * 2 * (size_t)M, 1);
    a->sum = calloc((size_t)L * H * S_N, sizeof *a->sum);
    a->mark = calloc((size_t)M, 1);
    if (!a->slot_mass || !a->touched || !a->sum || !a->mark) {
        an_overlap_free(a);
        return rn_seterr(err, RN_ENOMEM, "overlap: out of memory");
    }
    return RN_OK;
}

void an_overlap_free(an_overlap *a)
{
    free(a->slot_mass);
    free(a->touched);
    free(a->sum);
    free(a->idx);
    free(a->cnt);
    free(a->mark);
    memset(a, 0, sizeof *a);
}

/* The events of (layer, head, pos, op) as [*first, *first + count), or 0
 * when there are none. */
static int group(const an_overlap *a, int64_t T, int lh, int64_t pos, int op, int64_t *first)
{
    if (pos < 0 || pos >= T) return 0;
    size_t key = (((size_t)lh * (size_t)T) + (size_t)pos) * 2 + (size_t)op;
    *first = a->idx[key];
    return *first < 0 ? 0 : a->cnt[key];
}

/* |W ∩ R| and the share of R's weight on W's slots. */
static int meet(an_overlap *a, const tr_event *w, int nw, const tr_event *r, int nr, double *share)
{
    for (int k = 0; k < nw; k++) a->mark[w[k].slot] = 1;
    int ov = 0;
    double on = 0, all = 0;
    for (int k = 0; k < nr; k++) {
        all += r[k].weight;
        if (a->mark[r[k].slot]) { ov++; on += r[k].weight; }
    }
    for (int k = 0; k < nw; k++) a->mark[w[k].slot] = 0;
    *share = all > 0 ? on / all : 0;
    return ov;
}

int an_overlap_add(an_overlap *a, const tr_event *ev, size_t n, const an_pair *pairs, size_t np,
                   rn_error *err)
{
    const int LH = a->L * a->H;
    int64_t T = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].layer >= a->L || ev[i].head >= a->H || (int64_t)ev[i].slot >= a->M || ev[i].pos < 0 ||
            ev[i].op > 1)
            return rn_seterr(err, RN_EINPUT, "overlap: an event outside the model's shape (layer %d head %d slot %u)",
                             ev[i].layer, ev[i].head, ev[i].slot);
        if (ev[i].pos + 1 > T) T = ev[i].pos + 1;
    }
    size_t need = (size_t)LH * (size_t)T * 2;
    if (need > a->idx_cap) {
        int64_t *ni = realloc(a->idx, need * sizeof *ni);
        if (ni) a->idx = ni;
        int32_t *nc = realloc(a->cnt, need * sizeof *nc);
        if (nc) a->cnt = nc;
        if (!ni || !nc) return rn_seterr(err, RN_ENOMEM, "overlap: out of memory");
        a->idx_cap = need;
    }
    for (size_t k = 0; k < need; k++) a->idx[k] = -1;
    for (size_t i = 0; i < n; i++) {
        const tr_event *e = &ev[i];
        int lh = e->layer * a->H + e->head;
        size_t key = (((size_t)lh * (size_t)T) + (size_t)e->pos) * 2 + e->op;
        if (a->idx[key] < 0) { a->idx[key] = (int64_t)i; a->cnt[key] = 0; }
        a->cnt[key]++;
        size_t at = ((size_t)lh * 2 + e->op) * (size_t)a->M + e->slot;
        a->slot_mass[at] += e->weight;
        a->touched[at] = 1;
    }
    /* per position: entropy of the normalised top-K, rank 0, top-K sum */
    for (size_t key = 0; key < need; key++) {
        if (a->idx[key] < 0) continue;
        const tr_event *g = ev + a->idx[key];
        int c = a->cnt[key], op = (int)(key % 2);
        double *s = a->sum + (key / 2 / (size_t)T) * S_N;
        double tot = 0, top = 0, h = 0;
        for (int k = 0; k < c; k++) {
            tot += g[k].weight;
            if (g[k].rank == 0) top = g[k].weight;
        }
        for (int k = 0; k < c && tot > 0; k++) {
            double p = g[k].weight / tot;
            if (p > 0) h -= p * log2(p);
        }
        s[S_POS + op] += 1;
        s[S_AENT + op] += h;
        s[S_TOP1 + op] += top;
        s[S_MASS + op] += tot;
    }
    /* pairs */
    for (int lh = 0; lh < LH; lh++) {
        double *s = a->sum + (size_t)lh * S_N;
        int64_t union_n = 0, sizes = 0, present = 0;
        for (size_t i = 0; i < np; i++) {
            int64_t w0;
            int nw = group(a, T, lh, pairs[i].wpos, 0, &w0);
            if (!nw) continue;
            present++;
            sizes += nw;
            for (int k = 0; k < nw; k++)
                if (!a->mark[ev[w0 + k].slot]) { a->mark[ev[w0 + k].slot] = 1; union_n++; }
        }
        for (size_t i = 0; i < np; i++) { /* clear the marks */
            int64_t w0;
            int nw = group(a, T, lh, pairs[i].wpos, 0, &w0);
            for (int k = 0; k < nw; k++) a->mark[ev[w0 + k].slot] = 0;
        }
        if (present >= 2) {
            s[S_SPREAD] += (double)union_n / (double)sizes;
            s[S_SPREAD_N] += 1;
        }
        for (size_t i = 0; i < np; i++) {
            int64_t r0, w0;
            int nr = group(a, T, lh, pairs[i].rpos, 1, &r0);
            if (!nr) continue;
            for (size_t j = 0; j < np; j++) {
                int nw = group(a, T, lh, pairs[j].wpos, 0, &w0);
                if (!nw) continue;
                double sh;
                int ov = meet(a, ev + w0, nw, ev + r0, nr, &sh);
                int o = i == j ? 0 : S_NO - S_NP;
                s[S_NP + o] += 1;
                s[S_OV + o] += ov;
                s[S_HIT + o] += ov > 0;
                s[S_SH + o] += sh;
            }
        }
    }
    return RN_OK;
}

void an_overlap_rows(const an_overlap *a, an_overlap_row *rows)
{
    for (int lh = 0; lh < a->L * a->H; lh++) {
        const double *s = a->sum + (size_t)lh * S_N;
        an_overlap_row *r = &rows[lh];
        memset(r, 0, sizeof *r);
        r->layer = lh / a->H;
        r->head = lh % a->H;
        for (int op = 0; op < 2; op++) {
            const double *m = a->slot_mass + ((size_t)lh * 2 + op) * (size_t)a->M;
            const uint8_t *t = a->touched + ((size_t)lh * 2 + op) * (size_t)a->M;
            double tot = 0, h = 0;
            for (int64_t k = 0; k < a->M; k++) { tot += m[k]; r->distinct[op] += t[k]; }
            for (int64_t k = 0; k < a->M && tot > 0; k++)
                if (m[k] > 0) h -= m[k] / tot * log2(m[k] / tot);
            double np = s[S_POS + op];
            r->positions[op] = (int64_t)np;
            r->usage_entropy[op] = h;
            r->addr_entropy[op] = np > 0 ? s[S_AENT + op] / np : NAN;
            r->top1[op] = np > 0 ? s[S_TOP1 + op] / np : NAN;
            r->mass[op] = np > 0 ? s[S_MASS + op] / np : NAN;
        }
        r->spread = s[S_SPREAD_N] > 0 ? s[S_SPREAD] / s[S_SPREAD_N] : NAN;
        r->n_pairs = (int64_t)s[S_NP];
        r->n_other = (int64_t)s[S_NO];
        double n1 = s[S_NP], n2 = s[S_NO];
        r->overlap = n1 > 0 ? s[S_OV] / n1 : NAN;
        r->hit = n1 > 0 ? s[S_HIT] / n1 : NAN;
        r->share = n1 > 0 ? s[S_SH] / n1 : NAN;
        r->other_overlap = n2 > 0 ? s[S_OOV] / n2 : NAN;
        r->other_hit = n2 > 0 ? s[S_OHIT] / n2 : NAN;
        r->other_share = n2 > 0 ? s[S_OSH] / n2 : NAN;
    }
}

int an_pairs_read(const char *path, char **buf, char ***names, an_pair **pairs, size_t *n, rn_error *err)
{
    *buf = NULL;
    *names = NULL;
    *pairs = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open pairs file: %s", path, strerror(errno));
    size_t cap = 0, len = 0, lines = 0;
    char *b = NULL;
    for (;;) { /* read it whole */
        if (len + 4096 + 1 > cap) {
            cap = (cap ? cap * 2 : 8192);
            char *nb = realloc(b, cap);
            if (!nb) { free(b); fclose(f); return rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); }
            b = nb;
        }
        size_t got = fread(b + len, 1, 4096, f);
        len += got;
        if (got < 4096) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(b); return rn_seterr(err, RN_EIO, "%s: read error", path); }
    b[len] = 0;
    for (size_t k = 0; k < len; k++) lines += b[k] == '\n';
    lines++;
    char **nm = malloc(lines * sizeof *nm);
    an_pair *pr = malloc(lines * sizeof *pr);
    if (!nm || !pr) { free(b); free(nm); free(pr); return rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); }
    size_t np = 0, lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(b, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || (*p == '#' && !isdigit((unsigned char)p[1]))) continue; /* blank, comment */
        char *name = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        if (*p) *p++ = 0;
        char *end;
        errno = 0;
        long w = strtol(p, &end, 10), r = -1;
        int ok = end != p && !errno && w >= 0 && w < INT32_MAX;
        if (ok) {
            p = end;
            r = strtol(p, &end, 10);
            ok = end != p && !errno && r >= 0 && r < INT32_MAX;
            while (ok && isspace((unsigned char)*end)) end++;
            ok = ok && !*end;
        }
        if (!ok) {
            free(b); free(nm); free(pr);
            return rn_seterr(err, RN_EINPUT, "%s: line %zu: expected 'RUN WPOS RPOS'", path, lineno);
        }
        nm[np] = name;
        pr[np].wpos = (int32_t)w;
        pr[np].rpos = (int32_t)r;
        np++;
    }
    *buf = b;
    *names = nm;
    *pairs = pr;
    *n = np;
    return RN_OK;
}

/* Whether pairs-file name nm (a name, or #ID) denotes run ri. */
static int names_run(const char *nm, const tr_run_info *ri)
{
    if (nm[0] == '#') return strtoll(nm + 1, NULL, 10) == ri->run_id;
    return !strcmp(nm, ri->name);
}

int an_overlap_file(const char *path, const char *pairs_path, an_overlap_row **rows, int *n_rows,
                    rn_error *err)
{
    *rows = NULL;
    *n_rows = 0;
    char *buf = NULL, **names = NULL;
    an_pair *pairs = NULL, *sel = NULL;
    size_t np = 0;
    tr_db *db = NULL;
    tr_run_info *runs = NULL;
    int nr = 0, rc, inited = 0;
    an_overlap a;
    uint8_t *used = NULL;
    if ((rc = an_pairs_read(pairs_path, &buf, &names, &pairs, &np, err))) return rc;
    if ((rc = tr_open_read(path, &db, err)) || (rc = tr_list_runs(db, &runs, &nr, err))) goto out;
    used = calloc(np + 1, 1);
    sel = malloc((np + 1) * sizeof *sel);
    if (!used || !sel) { rc = rn_seterr(err, RN_ENOMEM, "overlap: out of memory"); goto out; }
    for (int i = 0; i < nr; i++) {
        size_t ns = 0;
        for (size_t k = 0; k < np; k++)
            if (names_run(names[k], &runs[i])) { sel[ns++] = pairs[k]; used[k] = 1; }
        if (!ns) continue;
        if (strcmp(runs[i].status, "running") == 0) {
            rc = rn_seterr(err, RN_EINPUT, "%s: run %lld is still running", path, (long long)runs[i].run_id);
            goto out;
        }
        if ((rc = tr_check_run(db, &runs[i], err))) goto out;
        const rn_config *c = &runs[i].cfg;
        int64_t M = 1;
        for (int u = 0; u < c->order; u++) M *= c->d_p;
        if (!inited) {
            if ((rc = an_overlap_init(&a, c->n_layers, c->n_heads, M, err))) goto out;
            inited = 1;
        } else if (a.L != c->n_layers || a.H != c->n_heads || a.M != M) {
            rc = rn_seterr(err, RN_EINPUT, "%s: run %lld has another model shape than the first", path,
                           (long long)runs[i].run_id);
            goto out;
        }
        tr_filter f = tr_filter_all();
        tr_event *ev = NULL;
        size_t n = 0;
        if ((rc = tr_load_events(db, runs[i].run_id, &f, &ev, &n, err))) goto out;
        rc = an_overlap_add(&a, ev, n, sel, ns, err);
        free(ev);
        if (rc) goto out;
    }
    for (size_t k = 0; k < np; k++)
        if (!used[k]) {
            rc = rn_seterr(err, RN_EINPUT, "%s: no run named '%s' in %s", pairs_path, names[k], path);
            goto out;
        }
    if (!inited) { rc = rn_seterr(err, RN_EINPUT, "%s: no pairs", pairs_path); goto out; }
    *rows = malloc((size_t)a.L * a.H * sizeof **rows);
    if (!*rows) { rc = rn_seterr(err, RN_ENOMEM, "overlap: out of memory"); goto out; }
    an_overlap_rows(&a, *rows);
    *n_rows = a.L * a.H;
out:
    if (inited) an_overlap_free(&a);
    free(used);
    free(sel);
    free(runs);
    if (db) tr_close(db);
    free(buf);
    free(names);
    free(pairs);
    return rc;
}

int an_overlap_print(FILE *f, int fmt, const an_overlap_row *rows, int n, rn_error *err)
{
    static const char *const cols[] = {
        "layer", "head", "w_slots", "r_slots", "w_usage_H", "r_usage_H", "w_addr_H", "r_addr_H",
        "w_top1", "r_top1", "w_mass", "r_mass", "spread", "pairs", "overlap", "hit", "share",
        "other_overlap", "other_hit", "other_share" };
    enum { NC = sizeof cols / sizeof cols[0] };
    const char *g = fmt == RN_FMT_TABLE ? "%.4g" : NULL;
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, NC, cols, NULL, err);
    if (rc) return rc;
    for (int i = 0; i < n && !rc; i++) {
        const an_overlap_row *r = &rows[i];
        rn_cell c[NC] = {
            rn_cell_int(r->layer), rn_cell_int(r->head), rn_cell_int(r->distinct[0]),
            rn_cell_int(r->distinct[1]), rn_cell_real(r->usage_entropy[0], g),
            rn_cell_real(r->usage_entropy[1], g), rn_cell_real(r->addr_entropy[0], g),
            rn_cell_real(r->addr_entropy[1], g), rn_cell_real(r->top1[0], g), rn_cell_real(r->top1[1], g),
            rn_cell_real(r->mass[0], g), rn_cell_real(r->mass[1], g), rn_cell_real(r->spread, g),
            rn_cell_int(r->n_pairs), rn_cell_real(r->overlap, g), rn_cell_real(r->hit, g),
            rn_cell_real(r->share, g), rn_cell_real(r->other_overlap, g), rn_cell_real(r->other_hit, g),
            rn_cell_real(r->other_share, g) };
        rc = rn_rows_add(&w, c);
    }
    int rc2 = rn_rows_end(&w, err);
    return rc ? rc : rc2;
}
