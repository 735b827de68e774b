/* rn_checkpoint.c — atomic, checksummed training checkpoints. */
#include "rn_checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_atomic.h"

#define CK_MAGIC "RNCKPT01"
#define CK_VERSION 2u

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}

typedef struct { FILE *f; uint64_t h; int bad; } ckw;
static void put(ckw *w, const void *p, size_t n)
{
    if (fwrite(p, 1, n, w->f) != n) w->bad = 1;
    w->h = fnv(w->h, p, n);
}

int rn_checkpoint_save(const char *path, const rn_config *c, const char *recipe, int64_t step, uint64_t seed,
                       const rn_real *params, const rn_real *m1, const rn_real *m2,
                       int64_t n_block, rn_error *err)
{
    char cfg[8192];
    size_t cl = rn_config_format(c, cfg, sizeof cfg);
    if (cl >= sizeof cfg) return rn_seterr(err, RN_EINTERNAL, "%s: config text too long", path);
    rn_atomic_file af;
    int rc = rn_atomic_open(&af, path, err);
    if (rc) return rc;
    ckw w = { af.f, 1469598103934665603ull, 0 };
    uint32_t ver = CK_VERSION, len = (uint32_t)cl, rlen = (uint32_t)strlen(recipe);
    put(&w, CK_MAGIC, 8);
    put(&w, &ver, 4);
    put(&w, &len, 4);
    put(&w, cfg, cl);
    put(&w, &rlen, 4);
    put(&w, recipe, rlen);
    put(&w, &step, 8);
    put(&w, &n_block, 8);
    put(&w, &seed, 8);
    put(&w, params, sizeof(rn_real) * (size_t)n_block);
    put(&w, m1, sizeof(rn_real) * (size_t)n_block);
    put(&w, m2, sizeof(rn_real) * (size_t)n_block);
    uint64_t h = w.h;
    if (fwrite(&h, 8, 1, af.f) != 1) w.bad = 1;
    if (w.bad) {
        rn_atomic_abort(&af);
        return rn_seterr(err, RN_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    return rn_atomic_commit(&af, err);
}

void rn_checkpoint_diff_lines(const char *a, const char *b, char *out, size_t n)
{
    for (;;) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la)) {
            if (!la) snprintf(out, n, "no '%.*s'", (int)(lb > 200 ? 200 : lb), b);
            else if (!lb) snprintf(out, n, "'%.*s', this run has no such key", (int)(la > 200 ? 200 : la), a);
            else snprintf(out, n, "'%.*s', this run has '%.*s'", (int)(la > 200 ? 200 : la), a,
                          (int)(lb > 200 ? 200 : lb), b);
            return;
        }
        if (!a[la]) break;
        a += la + 1;
        b += lb + 1;
    }
    snprintf(out, n, "other training keys");
}

int rn_checkpoint_load(const char *path, const rn_config *c, const char *recipe, int64_t *step, uint64_t *seed,
                       rn_real *params, rn_real *m1, rn_real *m2, int64_t n_block,
                       rn_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open checkpoint: %s", path, strerror(errno));
    char magic[8];
    uint32_t ver = 0, len = 0;
    uint64_t h = 1469598103934665603ull;
    int rc = RN_OK;
    char *cfg = NULL, *rec = NULL;
#define RD(p, n) do { if (fread((p), 1, (n), f) != (size_t)(n)) { rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint is truncated", path); goto out; } h = fnv(h, (p), (n)); } while (0)
    RD(magic, 8);
    if (memcmp(magic, CK_MAGIC, 8)) { rc = rn_seterr(err, RN_EINPUT, "%s: not a ramtrace checkpoint (bad magic)", path); goto out; }
    RD(&ver, 4);
    if (ver != CK_VERSION) { rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint version %u is not supported", path, ver); goto out; }
    RD(&len, 4);
    if (len > 65536) { rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (config length %u)", path, len); goto out; }
    cfg = calloc(1, (size_t)len + 1);
    if (!cfg) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto out; }
    RD(cfg, len);
    char want[8192];
    size_t wl = rn_config_format(c, want, sizeof want);
    if (wl != len || memcmp(want, cfg, len)) {
        rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint was written for a different model config", path);
        goto out;
    }
    uint32_t rlen = 0;
    RD(&rlen, 4);
    if (rlen > 65536) { rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (recipe length %u)", path, rlen); goto out; }
    rec = calloc(1, (size_t)rlen + 1);
    if (!rec) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto out; }
    RD(rec, rlen);
    if (strlen(rec) != rlen) { rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (recipe text)", path); goto out; }
    if (strcmp(rec, recipe)) {
        char why[600];
        rn_checkpoint_diff_lines(rec, recipe, why, sizeof why);
        rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint was written with %s (resume needs the same training keys)", path, why);
        goto out;
    }
    int64_t nb = 0;
    RD(step, 8);
    RD(&nb, 8);
    RD(seed, 8);
    if (nb != n_block || *step < 0) { rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (block size)", path); goto out; }
    RD(params, sizeof(rn_real) * (size_t)nb);
    RD(m1, sizeof(rn_real) * (size_t)nb);
    RD(m2, sizeof(rn_real) * (size_t)nb);
    uint64_t stored;
    if (fread(&stored, 8, 1, f) != 1) { rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint is truncated", path); goto out; }
    if (stored != h) { rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint checksum mismatch (corrupt file)", path); goto out; }
    if (fgetc(f) != EOF) { rc = rn_seterr(err, RN_EINPUT, "%s: trailing bytes after checkpoint", path); goto out; }
#undef RD
out:
    free(cfg);
    free(rec);
    fclose(f);
    return rc;
}

/* The header's config and recipe texts (the first fields of the layout),
 * and the step after them when step is not NULL. */
static int read_header(const char *path, rn_config *c, char **recipe, int64_t *step, rn_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open checkpoint: %s", path, strerror(errno));
    char magic[8], *cfg = NULL;
    uint32_t ver = 0, len = 0, rlen = 0;
    int rc = RN_OK;
    *recipe = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, CK_MAGIC, 8))
        rc = rn_seterr(err, RN_EINPUT, "%s: not a ramtrace checkpoint (bad magic)", path);
    else if (fread(&ver, 4, 1, f) != 1 || ver != CK_VERSION)
        rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint version %u is not supported", path, ver);
    else if (fread(&len, 4, 1, f) != 1 || len > 65536)
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (config length %u)", path, len);
    else if (!(cfg = calloc(1, (size_t)len + 1)))
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    else if (fread(cfg, 1, len, f) != len)
        rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint is truncated", path);
    else if (fread(&rlen, 4, 1, f) != 1 || rlen > 65536)
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (recipe length %u)", path, rlen);
    else if (!(*recipe = calloc(1, (size_t)rlen + 1)))
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    else if (fread(*recipe, 1, rlen, f) != rlen || (step && fread(step, 8, 1, f) != 1))
        rc = rn_seterr(err, RN_EINPUT, "%s: checkpoint is truncated", path);
    else if (strlen(*recipe) != rlen || (step && *step < 0))
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt checkpoint header (%s)", path, step && *step < 0 ? "step" : "recipe text");
    fclose(f);
    if (!rc) {
        rn_config_default(c);
        rc = rn_config_parse_text(c, cfg, path, NULL, NULL, err);
        if (!rc) rc = rn_config_validate(c, err);
    }
    free(cfg);
    if (rc) {
        free(*recipe);
        *recipe = NULL;
    }
    return rc;
}

int rn_checkpoint_read_model(const char *path, rn_model *m, int64_t *step, rn_error *err)
{
    rn_config c;
    char *recipe = NULL;
    int rc = read_header(path, &c, &recipe, NULL, err);
    if (rc) return rc;
    if ((rc = rn_model_create_random(m, &c, 1, err))) {
        free(recipe);
        return rc;
    }
    rn_real *mom = malloc(sizeof(rn_real) * 2 * (size_t)m->n_block);
    uint64_t seed;
    if (!mom) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    else rc = rn_checkpoint_load(path, &m->cfg, recipe, step, &seed, m->params, mom, mom + m->n_block,
                                 m->n_block, err);
    free(mom);
    free(recipe);
    if (rc) rn_model_free(m);
    return rc;
}

int rn_checkpoint_peek(const char *path, char **recipe, int64_t *step, rn_error *err)
{
    rn_config c;
    return read_header(path, &c, recipe, step, err);
}
