/* an_results.c — MQAR sweep results and baseline anchors (an_results.h). */
#include "an_results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int an_csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    for (;;) {
        char *out = p, *start = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') { *out++ = '"'; p += 2; continue; }
                if (*p == '"') { p++; break; }
                *out++ = *p++;
            }
            while (*p && *p != ',') *out++ = *p++; /* text after the closing quote */
        } else {
            while (*p && *p != ',') *out++ = *p++;
        }
        const int last = *p != ',';
        if (!last) p++;
        *out = 0;
        if (n < max) fields[n] = start;
        n++;
        if (last) break;
    }
    return n < max ? n : max;
}

static int num(const char *s, double *out)
{
    char *end;
    if (!*s) { *out = NAN; return 0; }
    errno = 0;
    *out = strtod(s, &end);
    return errno || *end ? -1 : 0;
}

/* Column index of name in the header fields, -1 if absent. */
static int col(char **h, int nh, const char *name)
{
    for (int i = 0; i < nh; i++)
        if (!strcmp(h[i], name)) return i;
    return -1;
}

#define MAXF 64

int an_results_load(const char *path, an_result **rows, int *n, rn_error *err)
{
    *rows = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
    char hline[4096], line[8192], *h[MAXF], *v[MAXF];
    if (!fgets(hline, sizeof hline, f)) {
        fclose(f);
        return rn_seterr(err, RN_EINPUT, "%s: empty file", path);
    }
    int nh = an_csv_split(hline, h, MAXF);
    static const char *const need[] = { "figure", "state_bytes", "active_state_bytes", "mean7", "mean_l64" };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (col(h, nh, need[i]) < 0) {
            fclose(f);
            return rn_seterr(err, RN_EINPUT, "%s: no column '%s' in the header", path, need[i]);
        }
    static const char *const numk[] = { "U", "d_p", "M", "K", "d_v", "heads", "layers", "lr", "seed",
                                        "state_bytes", "active_state_bytes", "mean7", "mean_l64" };
    static const char *const accn[AN_LADDER] = { "acc_64_4", "acc_64_8", "acc_64_16", "acc_128_32",
                                                 "acc_256_64", "acc_512_128", "acc_1024_256" };
    int ci[13], ca[AN_LADDER], cname = col(h, nh, "name"), cfig = col(h, nh, "figure");
    for (int i = 0; i < 13; i++) ci[i] = col(h, nh, numk[i]);
    for (int i = 0; i < AN_LADDER; i++) ca[i] = col(h, nh, accn[i]);
    int cap = 0, rc = RN_OK, lineno = 1;
    an_result *r = NULL;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\r' || !line[0]) continue;
        int nv = an_csv_split(line, v, MAXF);
        if (nv < nh) { rc = rn_seterr(err, RN_EINPUT, "%s:%d: %d fields, the header has %d", path, lineno, nv < 0 ? 0 : nv, nh); break; }
        if (*n == cap) {
            cap = cap ? 2 * cap : 32;
            an_result *t = realloc(r, sizeof *r * (size_t)cap);
            if (!t) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            r = t;
        }
        an_result *x = &r[*n];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", cname >= 0 ? v[cname] : "");
        snprintf(x->figure, sizeof x->figure, "%s", v[cfig]);
        double *dst[13] = { &x->U, &x->d_p, &x->M, &x->K, &x->d_v, &x->heads, &x->layers, &x->lr, &x->seed,
                            &x->state_bytes, &x->active_bytes, &x->mean7, &x->mean_l64 };
        for (int i = 0; i < 13 && !rc; i++) {
            if (ci[i] < 0) *dst[i] = NAN;
            else if (num(v[ci[i]], dst[i]))
                rc = rn_seterr(err, RN_EINPUT, "%s:%d: %s: '%s' is not a number", path, lineno, numk[i], v[ci[i]]);
        }
        for (int i = 0; i < AN_LADDER && !rc; i++) {
            if (ca[i] < 0) x->acc[i] = NAN;
            else if (num(v[ca[i]], &x->acc[i]))
                rc = rn_seterr(err, RN_EINPUT, "%s:%d: %s: '%s' is not a number", path, lineno, accn[i], v[ca[i]]);
        }
        if (rc) break;
        (*n)++;
    }
    fclose(f);
    if (rc) { free(r); *n = 0; return rc; }
    *rows = r;
    return RN_OK;
}

int an_anchors_load(const char *path, an_anchor **rows, int *n, rn_error *err)
{
    *rows = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
    char line[4096], *v[MAXF];
    int cm = -1, cs = -1, ca = -1, header = 0, cap = 0, rc = RN_OK, lineno = 0;
    an_anchor *r = NULL;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n' || line[0] == '\r') continue;
        int nv = an_csv_split(line, v, MAXF);
        if (!header) {
            cm = col(v, nv, "model"); cs = col(v, nv, "state_bytes"); ca = col(v, nv, "accuracy");
            if (cm < 0 || cs < 0 || ca < 0) {
                rc = rn_seterr(err, RN_EINPUT, "%s:%d: the header must name model, state_bytes and accuracy", path, lineno);
                break;
            }
            header = 1;
            continue;
        }
        int mx = cm > cs ? (cm > ca ? cm : ca) : (cs > ca ? cs : ca);
        if (nv <= mx) { rc = rn_seterr(err, RN_EINPUT, "%s:%d: too few fields", path, lineno); break; }
        if (*n == cap) {
            cap = cap ? 2 * cap : 32;
            an_anchor *t = realloc(r, sizeof *r * (size_t)cap);
            if (!t) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            r = t;
        }
        an_anchor *x = &r[*n];
        snprintf(x->model, sizeof x->model, "%s", v[cm]);
        if (num(v[cs], &x->state_bytes) || num(v[ca], &x->accuracy) || !isfinite(x->state_bytes) ||
            !isfinite(x->accuracy)) {
            rc = rn_seterr(err, RN_EINPUT, "%s:%d: state_bytes and accuracy must be numbers", path, lineno);
            break;
        }
        (*n)++;
    }
    fclose(f);
    if (!rc && !header) rc = rn_seterr(err, RN_EINPUT, "%s: no header line", path);
    if (rc) { free(r); *n = 0; return rc; }
    *rows = r;
    return RN_OK;
}

int an_result_tagged(const an_result *r, const char *tag)
{
    size_t t = strlen(tag);
    for (const char *p = r->figure; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == t && !strncmp(p, tag, t)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int same_shape(const an_result *a, const an_result *b)
{
    return a->U == b->U && a->d_p == b->d_p && a->d_v == b->d_v && a->K == b->K && a->heads == b->heads &&
           a->layers == b->layers;
}

int an_results_best(const an_result *rows, int n, const char *tag, int *best, int max)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!an_result_tagged(&rows[i], tag) || !isfinite(rows[i].mean7)) continue;
        int j = 0;
        while (j < m && !same_shape(&rows[best[j]], &rows[i])) j++;
        if (j < m) {
            if (rows[i].mean7 > rows[best[j]].mean7) best[j] = i;
        } else if (m < max) {
            best[m++] = i;
        }
    }
    for (int i = 1; i < m; i++) /* insertion sort by state */
        for (int j = i; j > 0 && rows[best[j]].state_bytes < rows[best[j - 1]].state_bytes; j--) {
            int t = best[j]; best[j] = best[j - 1]; best[j - 1] = t;
        }
    return m;
}

int an_results_by(const an_result *rows, int n, const char *tag, const char *key, const char *metric,
                  double *x, int *count, double *mean, double *lo, double *hi, int max)
{
    const int k = !strcmp(key, "U") ? 0 : !strcmp(key, "M") ? 1 : -1;
    const int mt = !strcmp(metric, "mean7") ? 0 : !strcmp(metric, "mean_l64") ? 1 : -1;
    if (k < 0 || mt < 0) return -1;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const an_result *r = &rows[i];
        const double kv = k ? r->M : r->U, v = mt ? r->mean_l64 : r->mean7;
        if (!an_result_tagged(r, tag) || !isfinite(v) || !isfinite(kv)) continue;
        int j = 0;
        while (j < m && x[j] != kv) j++;
        if (j == m) {
            if (m == max) continue;
            x[m] = kv; count[m] = 0; mean[m] = 0; lo[m] = INFINITY; hi[m] = -INFINITY;
            m++;
        }
        count[j]++;
        mean[j] += v;
        if (v < lo[j]) lo[j] = v;
        if (v > hi[j]) hi[j] = v;
    }
    for (int j = 0; j < m; j++) mean[j] /= count[j];
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
            double t;
            int c;
            t = x[j]; x[j] = x[j - 1]; x[j - 1] = t;
            c = count[j]; count[j] = count[j - 1]; count[j - 1] = c;
            t = mean[j]; mean[j] = mean[j - 1]; mean[j - 1] = t;
            t = lo[j]; lo[j] = lo[j - 1]; lo[j - 1] = t;
            t = hi[j]; hi[j] = hi[j - 1]; hi[j - 1] = t;
        }
    return m;
}
