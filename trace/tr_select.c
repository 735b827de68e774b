/* tr_select.c — which (layer, head, op) events a run records or a reader
 * wants (tr_select.h): parsing the --layers/--heads/--ops option forms and
 * printing them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_select.h"

void tr_select_all(tr_select *s)
{
    memset(s, 0xff, sizeof s->layers);
    s->heads = ~0ULL;
    s->ops = RN_OPS_BOTH;
}

/* Parse "all" or "A,B-C,..." into bits of out[] over [0, n); opt names the
 * option in messages. */
static int parse_list(const char *opt, const char *text, int n, uint64_t *out, rn_error *err)
{
    int words = (n + 63) / 64;
    memset(out, 0, sizeof(uint64_t) * words);
    if (!strcmp(text, "all")) {
        for (int i = 0; i < n; i++) out[i >> 6] |= 1ULL << (i & 63);
        return RN_OK;
    }
    const char *p = text;
    if (!*p) return rn_seterr(err, RN_EINPUT, "%s: empty list", opt);
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list like 0-3,7", opt, text);
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list like 0-3,7", opt, text);
            b = strtol(p, &end, 10);
            p = end;
        }
        if (*p == ',') {
            p++;
            if (!*p) return rn_seterr(err, RN_EINPUT, "%s: '%s' ends with a comma", opt, text);
        } else if (*p)
            return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a list like 0-3,7", opt, text);
        if (b < a) return rn_seterr(err, RN_EINPUT, "%s: range %ld-%ld is empty", opt, a, b);
        if (b >= n)
            return rn_seterr(err, RN_EINPUT, "%s: %ld is outside [0, %d)", opt, b, n);
        for (long i = a; i <= b; i++) out[i >> 6] |= 1ULL << (i & 63);
    }
    return RN_OK;
}

int tr_select_parse(tr_select *s, const char *layers, const char *heads, const char *ops,
                    const rn_config *cfg, rn_error *err)
{
    tr_select_all(s);
    memset(s->layers, 0, sizeof s->layers);
    int rc = parse_list("--layers", layers ? layers : "all", cfg->n_layers, s->layers, err);
    if (rc) return rc;
    rc = parse_list("--heads", heads ? heads : "all", cfg->n_heads, &s->heads, err);
    if (rc) return rc;
    return ops ? rn_ops_parse(ops, &s->ops, err) : RN_OK;
}

/* Print the set bits of bits[] over [0, n) as "all" or "0-3,7". */
static void format_list(const uint64_t *bits, int n, char *buf, size_t cap)
{
    int all = 1;
    for (int i = 0; i < n; i++)
        if (!((bits[i >> 6] >> (i & 63)) & 1)) all = 0;
    if (all) { snprintf(buf, cap, "all"); return; }
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n;) {
        if (!((bits[i >> 6] >> (i & 63)) & 1)) { i++; continue; }
        int j = i;
        while (j + 1 < n && ((bits[(j + 1) >> 6] >> ((j + 1) & 63)) & 1)) j++;
        if (len < cap) {
            if (j > i) len += snprintf(buf + len, cap - len, "%s%d-%d", len ? "," : "", i, j);
            else len += snprintf(buf + len, cap - len, "%s%d", len ? "," : "", i);
        }
        i = j + 1;
    }
    if (!len) snprintf(buf, cap, "none");
}

void tr_select_format(const tr_select *s, const rn_config *cfg, char *buf, size_t cap)
{
    char l[512], h[256];
    format_list(s->layers, cfg->n_layers, l, sizeof l);
    format_list(&s->heads, cfg->n_heads, h, sizeof h);
    snprintf(buf, cap, "layers=%s heads=%s ops=%s", l, h, rn_ops_name(s->ops));
}
