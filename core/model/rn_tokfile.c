/* rn_tokfile.c — the tokenizer beside the model file (see rn_tokfile.h). */
#include "rn_tokfile.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rn_atomic.h"
#include "rn_checksum.h"
#include "rn_file.h"
#include "rn_spm.h"
#include "rn_tokenizer.h"

const char *rn_tokfile_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* dir(model_path) + "/" + name into out. */
static int beside(const char *model_path, const char *name, char *out, size_t cap, rn_error *err)
{
    const char *base = rn_tokfile_base(model_path);
    int dl = (int)(base - model_path);
    int n = snprintf(out, cap, "%.*s%s", dl, model_path, name);
    if (n < 0 || (size_t)n >= cap)
        return rn_seterr(err, RN_EINPUT, "%s: the tokenizer's path beside it is longer than %zu bytes", model_path,
                         cap - 1);
    return RN_OK;
}

/* A name a model file may record: a plain file name, printable, and no
 * character that needs quoting in safetensors' JSON metadata. */
static int name_ok(const char *name)
{
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 32 || *p == 127 || *p == '/' || *p == '"' || *p == '\\') return 0;
    return 1;
}

int rn_tokfile_place(const rn_config *c, const char *model_path, uint64_t *sum, rn_error *err)
{
    const rn_spm *s;
    int rc = rn_tokenizer_check(c, err);
    if (rc || (rc = rn_spm_get(c->tok_file, &s, err))) return rc;
    *sum = rn_spm_checksum(s);
    const char *name = rn_tokfile_base(c->tok_file);
    if (!name_ok(name))
        return rn_seterr(err, RN_EINPUT, "%s: the tokenizer's file name '%s' has characters a model file cannot record",
                         model_path, name);
    char dest[RN_TOK_FILE_MAX];
    if ((rc = beside(model_path, name, dest, sizeof dest, err))) return rc;
    char *have;
    size_t hl;
    struct stat st;
    if (stat(dest, &st) == 0) {
        rn_error e2;
        if (rn_read_file_max(dest, (size_t)1 << 30, &have, &hl, &e2) == RN_OK) {
            uint64_t hs = rn_checksum64(have, hl);
            free(have);
            if (hs == *sum) return RN_OK; /* the same tokenizer (or the very file) */
        }
        return rn_seterr(err, RN_EINPUT, "%s: another file is already there; the model's tokenizer %s cannot be put beside it",
                         dest, c->tok_file);
    }
    if ((rc = rn_read_file_max(c->tok_file, (size_t)1 << 30, &have, &hl, err))) return rc;
    if (rn_checksum64(have, hl) != *sum) {
        free(have);
        return rn_seterr(err, RN_EINPUT, "%s: the tokenizer changed on disk while in use", c->tok_file);
    }
    rc = rn_atomic_write(dest, have, hl, err);
    free(have);
    return rc;
}

int rn_tokfile_resolve(rn_config *c, const char *model_path, uint64_t want_sum, rn_error *err)
{
    if (!name_ok(c->tok_file))
        return rn_seterr(err, RN_EINPUT, "%s: tokenizer file name '%s' is not a plain file name", model_path, c->tok_file);
    char path[RN_TOK_FILE_MAX];
    int rc = beside(model_path, c->tok_file, path, sizeof path, err);
    if (rc) return rc;
    /* absolute, so what records this config (traces, checkpoints) names a
     * file that any working directory finds */
    char *abs = realpath(path, NULL);
    if (abs && strlen(abs) < sizeof c->tok_file) snprintf(c->tok_file, sizeof c->tok_file, "%s", abs);
    else memcpy(c->tok_file, path, sizeof path);
    free(abs);
    const rn_spm *s;
    if ((rc = rn_tokenizer_check(c, err)) || (rc = rn_spm_get(c->tok_file, &s, err)))
        return rn_preferr(err, "%s: its tokenizer", model_path);
    if (want_sum && rn_spm_checksum(s) != want_sum)
        return rn_seterr(err, RN_EINPUT, "%s: its tokenizer %s is not the one it was saved with (checksum %016" PRIx64
                         ", recorded %016" PRIx64 ")", model_path, c->tok_file, rn_spm_checksum(s), want_sum);
    return RN_OK;
}
