/* rn_shard.c — reading, writing and loading shard files (rn_shard.h). */
#include "rn_shard.h"
#include "rn_atomic.h"
#include "rn_checksum.h"
#include "rn_file.h"
#include "rn_spm.h"
#include "rn_tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

int rn_shard_is(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) return 1;
    if (!S_ISREG(st.st_mode)) return 0; /* a pipe or a device: reading the magic would consume the text */
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char m[8];
    int is = fread(m, 1, 8, f) == 8 && !memcmp(m, RN_SHARD_MAGIC, 8);
    fclose(f);
    return is ? 2 : 0;
}

int rn_shard_write(const char *path, const rn_shard_info *h, const uint16_t *ids, int level, rn_error *err)
{
    if (h->n_tokens < 1 || h->n_tokens > RN_SHARD_MAX_TOKENS)
        return rn_seterr(err, RN_EINPUT, "%s: a shard holds 1..%llu tokens", path, (unsigned long long)RN_SHARD_MAX_TOKENS);
    size_t raw = (size_t)h->n_tokens * 2;
    size_t cap = RN_SHARD_HEADER + ZSTD_compressBound(raw);
    uint8_t *buf = malloc(cap), *le = malloc(raw);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    int rc = RN_OK;
    if (!buf || !le || !cc) { rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory for a shard", path); goto out; }
    for (uint64_t i = 0; i < h->n_tokens; i++) { le[2 * i] = (uint8_t)ids[i]; le[2 * i + 1] = (uint8_t)(ids[i] >> 8); }
    memcpy(buf, RN_SHARD_MAGIC, 8);
    put32(buf + 8, 1);
    put32(buf + 12, RN_SHARD_HEADER);
    put32(buf + 16, h->vocab);
    put32(buf + 20, h->doc_sep);
    put64(buf + 24, h->tok_checksum);
    put64(buf + 32, h->n_tokens);
    put64(buf + 40, h->n_bytes);
    put32(buf + 48, h->index);
    put32(buf + 52, h->last ? 1 : 0);
    put64(buf + 56, rn_checksum64(buf, 56));
    size_t z;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1)) ||
        ZSTD_isError(z = ZSTD_compress2(cc, buf + RN_SHARD_HEADER, cap - RN_SHARD_HEADER, le, raw))) {
        rc = rn_seterr(err, RN_EINTERNAL, "%s: zstd could not compress the shard", path);
        goto out;
    }
    rc = rn_atomic_write(path, buf, RN_SHARD_HEADER + z, err);
out:
    ZSTD_freeCCtx(cc);
    free(le);
    free(buf);
    return rc;
}

/* The header's checks (rn_shard_read), on the first RN_SHARD_HEADER bytes. */
static int parse_header(const char *path, const uint8_t *p, size_t size, rn_shard_info *h, rn_error *err)
{
    if (size < 8 || memcmp(p, RN_SHARD_MAGIC, 8)) return rn_seterr(err, RN_EINPUT, "%s: not a shard file (bad magic)", path);
    if (size < RN_SHARD_HEADER)
        return rn_seterr(err, RN_EINPUT, "%s: truncated: %zu bytes, shorter than the %d-byte header", path, size, RN_SHARD_HEADER);
    if (get32(p + 8) != 1) return rn_seterr(err, RN_EINPUT, "%s: unknown shard version %u", path, get32(p + 8));
    if (get32(p + 12) != RN_SHARD_HEADER)
        return rn_seterr(err, RN_EINPUT, "%s: header size %u, expected %d", path, get32(p + 12), RN_SHARD_HEADER);
    if (get64(p + 56) != rn_checksum64(p, 56)) return rn_seterr(err, RN_EINPUT, "%s: header checksum mismatch: the file is corrupt", path);
    h->vocab = get32(p + 16);
    h->doc_sep = get32(p + 20);
    h->tok_checksum = get64(p + 24);
    h->n_tokens = get64(p + 32);
    h->n_bytes = get64(p + 40);
    h->index = get32(p + 48);
    uint32_t flags = get32(p + 52);
    h->last = flags & 1;
    if (h->vocab < 2 || h->vocab > 65536) return rn_seterr(err, RN_EINPUT, "%s: vocabulary %u outside 2..65536", path, h->vocab);
    if (h->doc_sep > 255 && h->doc_sep != RN_SHARD_NO_SEP)
        return rn_seterr(err, RN_EINPUT, "%s: document separator %u is not a byte", path, h->doc_sep);
    if (h->n_tokens < 1 || h->n_tokens > RN_SHARD_MAX_TOKENS)
        return rn_seterr(err, RN_EINPUT, "%s: %llu tokens outside 1..%llu", path, (unsigned long long)h->n_tokens,
                         (unsigned long long)RN_SHARD_MAX_TOKENS);
    if (flags & ~1u) return rn_seterr(err, RN_EINPUT, "%s: unknown flags 0x%x", path, flags);
    return RN_OK;
}

int rn_shard_read(const char *path, rn_shard_info *h, uint16_t **ids, rn_error *err)
{
    *ids = NULL;
    char *data;
    size_t size;
    int rc = rn_read_file_max(path, (size_t)RN_SHARD_HEADER + ZSTD_compressBound((size_t)RN_SHARD_MAX_TOKENS * 2), &data, &size, err);
    if (rc) return rc;
    const uint8_t *p = (const uint8_t *)data;
    uint8_t *le = NULL;
    if ((rc = parse_header(path, p, size, h, err))) goto out;
    const uint8_t *z = p + RN_SHARD_HEADER;
    size_t zn = size - RN_SHARD_HEADER, raw = (size_t)h->n_tokens * 2;
    unsigned long long content = ZSTD_getFrameContentSize(z, zn);
    size_t frame = ZSTD_findFrameCompressedSize(z, zn);
    if (content == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(frame)) {
        rc = rn_seterr(err, RN_EINPUT, "%s: truncated or corrupt: no complete zstd frame after the header", path);
        goto out;
    }
    if (content != raw) {
        rc = rn_seterr(err, RN_EINPUT, "%s: the header promises %llu tokens, the data holds %llu bytes", path,
                       (unsigned long long)h->n_tokens, content);
        goto out;
    }
    if (frame != zn) { rc = rn_seterr(err, RN_EINPUT, "%s: %zu trailing bytes after the data", path, zn - frame); goto out; }
    le = malloc(raw);
    uint16_t *v = malloc(raw);
    if (!le || !v) { free(v); rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory for %zu bytes", path, raw); goto out; }
    size_t got = ZSTD_decompress(le, raw, z, zn);
    if (ZSTD_isError(got) || got != raw) {
        free(v);
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt data (%s)", path, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
        goto out;
    }
    for (size_t i = 0; i < h->n_tokens; i++) {
        v[i] = (uint16_t)(le[2 * i] | le[2 * i + 1] << 8);
        if (v[i] >= h->vocab) {
            rc = rn_seterr(err, RN_EINPUT, "%s: token %zu is id %u, outside the vocabulary of %u", path, i, v[i], h->vocab);
            free(v);
            goto out;
        }
    }
    *ids = v;
out:
    free(le);
    free(data);
    return rc;
}

static int is_shard_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 4 && !strcmp(d->d_name + n - 4, ".rns");
}

/* Append shard path (position pos of its set) to *ids, checked against
 * the tokenizer s and the set's first shard *first. */
static int load_one(const char *path, uint32_t pos, const rn_spm *s, rn_shard_info *first, int **ids, int64_t *n,
                    int64_t *cap, rn_error *err)
{
    rn_shard_info h;
    uint16_t *v;
    int rc = rn_shard_read(path, &h, &v, err);
    if (rc) return rc;
    if (h.tok_checksum != rn_spm_checksum(s))
        rc = rn_seterr(err, RN_EINPUT, "%s: made with another tokenizer (checksum %016llx; the model's %s is %016llx)", path,
                       (unsigned long long)h.tok_checksum, rn_spm_path(s), (unsigned long long)rn_spm_checksum(s));
    else if (h.vocab != (uint32_t)rn_spm_vocab(s))
        rc = rn_seterr(err, RN_EINPUT, "%s: made for a vocabulary of %u, the tokenizer %s has %d pieces", path, h.vocab,
                       rn_spm_path(s), rn_spm_vocab(s));
    else if (h.index != pos)
        rc = rn_seterr(err, RN_EINPUT, "%s: shard %u of its set where shard %u belongs (one missing or from another set)", path,
                       h.index, pos);
    else if (pos > 0 && (first->doc_sep != h.doc_sep))
        rc = rn_seterr(err, RN_EINPUT, "%s: a document separator other than the first shard's: shards of different sets", path);
    else if (*n + (int64_t)h.n_tokens > INT32_MAX / 2)
        rc = rn_seterr(err, RN_EINPUT, "%s: more than %d tokens in the set", path, INT32_MAX / 2);
    if (rc) { free(v); return rc; }
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < h.n_tokens; i++) {
        size_t len;
        rn_spm_token_bytes(s, v[i], &len);
        bytes += len;
    }
    if (bytes != h.n_bytes) {
        free(v);
        return rn_seterr(err, RN_EINPUT, "%s: the header says %llu bytes of text, the tokens stand for %llu", path,
                         (unsigned long long)h.n_bytes, (unsigned long long)bytes);
    }
    if (*n + (int64_t)h.n_tokens > *cap) {
        int64_t nc = (*n + (int64_t)h.n_tokens) * 3 / 2;
        int *ni = realloc(*ids, (size_t)nc * sizeof *ni);
        if (!ni) { free(v); return rn_seterr(err, RN_ENOMEM, "%s: out of memory for %lld tokens", path, (long long)nc); }
        *ids = ni;
        *cap = nc;
    }
    for (uint64_t i = 0; i < h.n_tokens; i++) (*ids)[*n + (int64_t)i] = v[i];
    *n += (int64_t)h.n_tokens;
    free(v);
    if (pos == 0) *first = h;
    first->last = h.last;
    return RN_OK;
}

int rn_shards_load(const char *path, const rn_config *c, int **ids, int64_t *n, rn_error *err)
{
    *ids = NULL;
    *n = 0;
    if (c->tokenizer != RN_TOK_SPM)
        return rn_seterr(err, RN_EINPUT, "%s: shards hold SentencePiece ids; the model's tokenizer is not one (spm:FILE)", path);
    const rn_spm *s;
    int rc = rn_tokenizer_check(c, err);
    if (rc || (rc = rn_spm_get(c->tok_file, &s, err))) return rc;
    rn_shard_info first = { 0 };
    int64_t cap = 0;
    struct stat st;
    if (stat(path, &st) != 0) return rn_seterr(err, RN_EINPUT, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        rc = load_one(path, 0, s, &first, ids, n, &cap, err);
        if (rc) { free(*ids); *ids = NULL; *n = 0; }
        return rc;
    }
    struct dirent **names;
    int k = scandir(path, &names, is_shard_name, alphasort);
    if (k < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot read the shard directory: %s", path, strerror(errno));
    if (k == 0) rc = rn_seterr(err, RN_EINPUT, "%s: no shard files (*.rns) in the directory", path);
    for (int i = 0; i < k && !rc; i++) {
        char p[4096];
        if (snprintf(p, sizeof p, "%s/%s", path, names[i]->d_name) >= (int)sizeof p)
            rc = rn_seterr(err, RN_EINPUT, "%s: path too long", path);
        else if (!(rc = load_one(p, (uint32_t)i, s, &first, ids, n, &cap, err)) && first.last != (i == k - 1))
            rc = rn_seterr(err, RN_EINPUT, "%s: %s", p, first.last ? "marked the last shard but more follow"
                                                                    : "the set's last shard is missing");
    }
    for (int i = 0; i < k; i++) free(names[i]);
    free(names);
    if (rc) { free(*ids); *ids = NULL; *n = 0; }
    return rc;
}
