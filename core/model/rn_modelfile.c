/* rn_modelfile.c — model.bin reading (mmap, full validation) and writing,
 * plus the format dispatch of rn_model_load / rn_model_save.
 *
 * model.bin byte layout (all little-endian; docs/model-format.md):
 *     0  8  magic "RAMNETMB"
 *     8  4  u32 format version (1)
 *    12  4  u32 header bytes = offset of the parameter block (2176)
 *    16  8  u64 file bytes (header + parameter block)
 *    24  8  u64 n_block: elements in the block, padding included
 *    32  8  u64 checksum of the block as stored (rn_checksum64)
 *    40  4  u32 dtype (1 = float32, 2 = bf16, 3 = fp16; rn_storage.h)
 *    44  4  u32 number of tensors
 *    48 40  i32 vocab_size, d_model, n_layers, n_heads, d_p, order, d_k,
 *               d_v, top_k, d_ff
 *    88 16  f32 gamma, tau, eps, norm_eps
 *   104  4  u32 tie_embeddings (0/1)
 *   108  4  u32 tokenizer (0 bytes, 1 ids, 2 SentencePiece)
 *   112  8  u64 version 2: checksum of the tokenizer's .model; else zero
 *   120  8  reserved, zero
 *   128 2048 u64 cape mask of layers 0..255 (zero past n_layers)
 *  2176 ..  version 1: the parameter block exactly as rn_params_layout lays it out
 *  2176 256 version 2 (tokenizer 2 only): the .model's file name, NUL-padded
 *  2432 ..  version 2: the parameter block
 */
#include "rn_modelfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_atomic.h"
#include "rn_checksum.h"
#include "rn_safetensors.h"
#include "rn_storage.h"
#include "rn_tokfile.h"

#ifndef RN_DOUBLE
_Static_assert(sizeof(rn_real) == 4, "model files store float32 parameters");
#endif

#define MB_MAGIC "RAMNETMB"
#define MB_VERSION 1u
#define MB_HEADER 2176u
#define MB_VERSION_SPM 2u   /* a SentencePiece model: its tokenizer's name follows */
#define MB_HEADER_SPM 2432u
#define MB_DTYPE_F32 1u /* dtype = storage + 1 (rn_storage.h) */
#define MB_DTYPE_LAST 3u
#define MB_MASKS_AT 128u

/* Little-endian field access on a header buffer. */
static void put32(unsigned char *b, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[at + i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *b, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[at + i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *b, size_t at)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)b[at + i] << (8 * i);
    return v;
}
static uint64_t get64(const unsigned char *b, size_t at)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)b[at + i] << (8 * i);
    return v;
}
static void putf(unsigned char *b, size_t at, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(b, at, u);
}
static float getf(const unsigned char *b, size_t at)
{
    uint32_t u = get32(b, at);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int rn_path_is_safetensors(const char *path)
{
    static const char ext[] = ".safetensors";
    size_t n = strlen(path), e = sizeof ext - 1;
    return n >= e && !strcasecmp(path + n - e, ext);
}

uint64_t rn_model_checksum(const rn_model *m)
{
    return rn_checksum64(m->params, (size_t)m->n_block * sizeof(rn_real));
}

/* Serialise the header of m for its storage, with the stored block's
 * checksum sum: version 1, or version 2 with the tokenizer's name and
 * checksum tok_sum for a SentencePiece model. */
static void encode_header(const rn_model *m, uint64_t tok_sum, uint64_t sum, unsigned char *h)
{
    const rn_config *c = &m->cfg;
    int spm = c->tokenizer == RN_TOK_SPM;
    uint32_t hdr = spm ? MB_HEADER_SPM : MB_HEADER;
    memset(h, 0, hdr);
    memcpy(h, MB_MAGIC, 8);
    put32(h, 8, spm ? MB_VERSION_SPM : MB_VERSION);
    put32(h, 12, hdr);
    put64(h, 16, hdr + (uint64_t)m->n_block * rn_storage_bytes(m->storage));
    put64(h, 24, (uint64_t)m->n_block);
    put64(h, 32, sum);
    put32(h, 40, MB_DTYPE_F32 + (uint32_t)m->storage);
    put32(h, 44, (uint32_t)rn_params_count_tensors(c));
    const int dims[10] = { c->vocab_size, c->d_model, c->n_layers, c->n_heads, c->d_p,
                           c->order, rn_config_dk(c), c->d_v, c->top_k, c->d_ff };
    for (int i = 0; i < 10; i++) put32(h, 48 + 4 * (size_t)i, (uint32_t)dims[i]);
    putf(h, 88, c->gamma);
    putf(h, 92, c->tau);
    putf(h, 96, c->eps);
    putf(h, 100, c->norm_eps);
    put32(h, 104, (uint32_t)c->tie_embeddings);
    put32(h, 108, (uint32_t)c->tokenizer);
    for (int l = 0; l < RN_MAX_LAYERS; l++) put64(h, MB_MASKS_AT + 8 * (size_t)l, c->cape_mask[l]);
    if (spm) {
        put64(h, 112, tok_sum);
        const char *name = rn_tokfile_base(c->tok_file);
        memcpy(h + MB_HEADER, name, strlen(name)); /* < 256: a part of tok_file */
    }
}

/* m's block narrowed to its 16-bit storage (malloc'd); RN_EINPUT naming
 * the tensor when a weight does not fit (fp16 past 65504). */
static int narrow_block(const rn_model *m, const char *path, uint16_t **out, rn_error *err)
{
    uint16_t *b = malloc((size_t)m->n_block * 2);
    if (!b) return rn_seterr(err, RN_ENOMEM, "%s: out of memory for the %s block", path, rn_storage_name(m->storage));
    int rc = rn_storage_narrow_params(m->storage, &m->cfg, m->params, 0, m->n_block, b, path, err);
    if (rc) {
        free(b);
        return rc;
    }
    *out = b;
    return RN_OK;
}

static int save_bin(const rn_model *m, const char *path, rn_error *err)
{
    unsigned char h[MB_HEADER_SPM];
    uint64_t tok_sum = 0;
    uint16_t *narrow = NULL;
    int rc = m->storage != RN_STORE_F32 ? narrow_block(m, path, &narrow, err) : RN_OK;
    if (!rc && m->cfg.tokenizer == RN_TOK_SPM) rc = rn_tokfile_place(&m->cfg, path, &tok_sum, err);
    if (rc) { free(narrow); return rc; }
    const void *block = narrow ? (const void *)narrow : (const void *)m->params;
    size_t es = rn_storage_bytes(m->storage);
    encode_header(m, tok_sum, rn_checksum64(block, (size_t)m->n_block * es), h);
    size_t hdr = m->cfg.tokenizer == RN_TOK_SPM ? MB_HEADER_SPM : MB_HEADER;
    rn_atomic_file af;
    rc = rn_atomic_open(&af, path, err);
    if (rc) { free(narrow); return rc; }
    if (fwrite(h, 1, hdr, af.f) != hdr || fwrite(block, es, (size_t)m->n_block, af.f) != (size_t)m->n_block) {
        int e = errno;
        free(narrow);
        rn_atomic_abort(&af);
        return rn_seterr(err, RN_EIO, "%s: write failed: %s (nothing written)", path, strerror(e));
    }
    free(narrow);
    return rn_atomic_commit(&af, err);
}

/* Decode and check the header of hdr bytes (the version's size, checked
 * by the caller): everything except the checksums and the padding, which
 * need the parameter block and the tokenizer.  fsize is the real file size;
 * *tok_sum receives the tokenizer's recorded checksum (version 2), *storage
 * the block's storage. */
static int check_header(const unsigned char *h, uint32_t hdr, uint64_t fsize, const char *path,
                        rn_config *c, int64_t *n_block, uint64_t *sum, uint64_t *tok_sum, int *storage, rn_error *err)
{
    if (memcmp(h, MB_MAGIC, 8))
        return rn_seterr(err, RN_EINPUT, "%s: bad magic: not a ramtrace model.bin file", path);
    uint32_t ver = get32(h, 8);
    if (get32(h, 12) != hdr)
        return rn_seterr(err, RN_EINPUT, "%s: header size %" PRIu32 " is not %u", path, get32(h, 12), hdr);
    if (get32(h, 40) < MB_DTYPE_F32 || get32(h, 40) > MB_DTYPE_LAST)
        return rn_seterr(err, RN_EINPUT, "%s: unknown parameter dtype %" PRIu32 " (expected 1 = float32, 2 = bf16, 3 = fp16)",
                         path, get32(h, 40));
    *storage = (int)(get32(h, 40) - MB_DTYPE_F32);
    const uint64_t es = rn_storage_bytes(*storage);
    for (size_t i = ver == MB_VERSION_SPM ? 120 : 112; i < MB_MASKS_AT; i++)
        if (h[i]) return rn_seterr(err, RN_EINPUT, "%s: reserved header bytes are not zero", path);
    memset(c, 0, sizeof *c);
    int *dims[10] = { &c->vocab_size, &c->d_model, &c->n_layers, &c->n_heads, &c->d_p,
                      &c->order, NULL, &c->d_v, &c->top_k, &c->d_ff };
    for (int i = 0; i < 10; i++)
        if (dims[i]) *dims[i] = (int32_t)get32(h, 48 + 4 * (size_t)i);
    int32_t dk = (int32_t)get32(h, 72);
    c->gamma = getf(h, 88);
    c->tau = getf(h, 92);
    c->eps = getf(h, 96);
    c->norm_eps = getf(h, 100);
    uint32_t tie = get32(h, 104), tok = get32(h, 108);
    c->tie_embeddings = tie > 1 ? 2 : (int)tie; /* 2: rejected by validate */
    c->tokenizer = tok > 2 ? 3 : (int)tok; /* 3: rejected by validate */
    if ((ver == MB_VERSION_SPM) != (c->tokenizer == RN_TOK_SPM))
        return rn_seterr(err, RN_EINPUT, "%s: tokenizer %" PRIu32 " in a version %" PRIu32
                         " file (SentencePiece models are version 2, the others version 1)", path, tok, ver);
    *tok_sum = 0;
    if (ver == MB_VERSION_SPM) {
        const unsigned char *name = h + MB_HEADER;
        size_t nl = strnlen((const char *)name, MB_HEADER_SPM - MB_HEADER);
        if (nl == 0 || nl >= MB_HEADER_SPM - MB_HEADER)
            return rn_seterr(err, RN_EINPUT, "%s: the tokenizer's file name is missing or not NUL-terminated", path);
        for (size_t i = nl; i < MB_HEADER_SPM - MB_HEADER; i++)
            if (name[i]) return rn_seterr(err, RN_EINPUT, "%s: bytes after the tokenizer's file name are not zero", path);
        memcpy(c->tok_file, name, nl + 1);
        *tok_sum = get64(h, 112);
    }
    for (int l = 0; l < RN_MAX_LAYERS; l++) c->cape_mask[l] = get64(h, MB_MASKS_AT + 8 * (size_t)l);
    if (dk <= 0)
        return rn_seterr(err, RN_EINPUT, "%s: config: d_k must be > 0 (got %" PRId32 ")", path, dk);
    int rc = rn_config_validate(c, err);
    if (rc) return rn_preferr(err, "%s", path);
    if (dk != rn_config_dk(c))
        return rn_seterr(err, RN_EINPUT, "%s: config: d_k = %" PRId32 " but order x d_p = %d x %d = %d",
                         path, dk, c->order, c->d_p, rn_config_dk(c));
    int64_t want = rn_params_layout(c, NULL);
    if (get64(h, 24) != (uint64_t)want)
        return rn_seterr(err, RN_EINPUT, "%s: parameter block holds %" PRIu64 " floats but the config needs %" PRId64,
                         path, get64(h, 24), want);
    if (get32(h, 44) != (uint32_t)rn_params_count_tensors(c))
        return rn_seterr(err, RN_EINPUT, "%s: header says %" PRIu32 " tensors but the config has %d",
                         path, get32(h, 44), rn_params_count_tensors(c));
    uint64_t promised = get64(h, 16);
    if (promised != hdr + (uint64_t)want * es)
        return rn_seterr(err, RN_EINPUT, "%s: header's file size %" PRIu64 " disagrees with its parameter count (%" PRIu64 ")",
                         path, promised, hdr + (uint64_t)want * es);
    if (fsize < promised)
        return rn_seterr(err, RN_EINPUT, "%s: truncated: %" PRIu64 " bytes but the header promises %" PRIu64,
                         path, fsize, promised);
    if (fsize > promised)
        return rn_seterr(err, RN_EINPUT, "%s: %" PRIu64 " trailing bytes after the %" PRIu64 " the header promises",
                         path, fsize - promised, promised);
    *n_block = want;
    *sum = get64(h, 32);
    return RN_OK;
}

/* The padding between tensors must be zero (so conversions are lossless):
 * the gap before each tensor belongs to the one before it, the gap after the
 * last tensor runs to the end of the block (of elements of es bytes). */
static int check_padding(const rn_config *c, const unsigned char *block, size_t es, int64_t n_block,
                         const char *path, rn_error *err)
{
    int n = rn_params_count_tensors(c);
    int64_t from = 0;
    for (int i = 0; i <= n; i++) {
        rn_tensor_desc t;
        int64_t to = n_block;
        if (i < n) {
            rn_params_tensor(c, i, &t);
            to = t.offset;
        }
        for (size_t j = (size_t)from * es; j < (size_t)to * es; j++) {
            if (block[j]) {
                rn_params_tensor(c, i - 1, &t);
                return rn_seterr(err, RN_EINPUT, "%s: padding after tensor %s is not zero", path, t.name);
            }
        }
        if (i < n) from = t.offset + t.numel;
    }
    return RN_OK;
}

static int load_bin(rn_model *m, const char *path, rn_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return rn_seterr(err, RN_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: not a regular file", path);
    }
    uint64_t fsize = (uint64_t)st.st_size;
    if (fsize == 0) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: empty file", path);
    }
    unsigned char h[MB_HEADER_SPM];
    size_t want = fsize < MB_HEADER_SPM ? (size_t)fsize : MB_HEADER_SPM;
    ssize_t got = pread(fd, h, want, 0);
    if (got != (ssize_t)want) {
        close(fd);
        return rn_seterr(err, RN_EIO, "%s: read error", path);
    }
    if (fsize < 8 || memcmp(h, MB_MAGIC, 8)) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: bad magic: not a ramtrace model.bin file", path);
    }
    uint32_t ver = fsize >= 12 ? get32(h, 8) : 0;
    if (ver != MB_VERSION && ver != MB_VERSION_SPM) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: unsupported format version %" PRIu32 " (this build reads versions %u and %u)",
                         path, ver, MB_VERSION, MB_VERSION_SPM);
    }
    uint32_t hdr = ver == MB_VERSION_SPM ? MB_HEADER_SPM : MB_HEADER;
    if (fsize < hdr) {
        close(fd);
        return rn_seterr(err, RN_EINPUT, "%s: truncated header (%" PRIu64 " bytes, the header alone is %u)",
                         path, fsize, hdr);
    }
    rn_config c;
    int64_t n_block = 0;
    uint64_t sum = 0, tok_sum = 0;
    int storage = RN_STORE_F32;
    int rc = check_header(h, hdr, fsize, path, &c, &n_block, &sum, &tok_sum, &storage, err);
    if (rc) {
        close(fd);
        return rc;
    }
    void *map = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return rn_seterr(err, RN_EIO, "%s: cannot map: %s", path, strerror(e));
    const unsigned char *block = (const unsigned char *)map + hdr;
    const size_t es = rn_storage_bytes(storage);
    uint64_t have = rn_checksum64(block, (size_t)n_block * es);
    if (have != sum) {
        munmap(map, (size_t)fsize);
        return rn_seterr(err, RN_EINPUT, "%s: checksum mismatch (header %016" PRIx64 ", data %016" PRIx64 "): the file is corrupt",
                         path, sum, have);
    }
    rc = check_padding(&c, block, es, n_block, path, err);
    if (!rc && c.tokenizer == RN_TOK_SPM) rc = rn_tokfile_resolve(&c, path, tok_sum, err);
    if (rc) {
        munmap(map, (size_t)fsize);
        return rc;
    }
    if (storage != RN_STORE_F32) {
        /* a 16-bit block is widened into an owned float32 one (exact) */
        rc = rn_model_create_zero(m, &c, err);
        if (!rc) rn_storage_widen(storage, (const uint16_t *)(const void *)block, m->params, n_block);
        munmap(map, (size_t)fsize);
        if (rc) return rn_preferr(err, "%s", path);
        m->storage = storage;
        return RN_OK;
    }
    memset(m, 0, sizeof *m);
    m->cfg = c;
    m->params = (rn_real *)(void *)block;
    m->n_block = n_block;
    m->map = map;
    m->map_len = (size_t)fsize;
    rn_weights_carve(&m->cfg, m->params, &m->w);
    return RN_OK;
}

int rn_model_load(rn_model *m, const char *path, rn_error *err)
{
    memset(m, 0, sizeof *m);
    if (!path || !*path) return rn_seterr(err, RN_EINPUT, "model path is empty");
    if (!rn_path_is_safetensors(path)) return load_bin(m, path, err);
    int rc = rn_safetensors_load(m, path, err);
    if (!rc && m->cfg.tokenizer == RN_TOK_SPM && (rc = rn_tokfile_resolve(&m->cfg, path, 0, err)))
        rn_model_free(m);
    return rc;
}

int rn_model_save(const rn_model *m, const char *path, rn_error *err)
{
    if (!path || !*path) return rn_seterr(err, RN_EINPUT, "output path is empty");
    if (!rn_path_is_safetensors(path)) return save_bin(m, path, err);
    uint64_t tok_sum;
    int rc = m->cfg.tokenizer == RN_TOK_SPM ? rn_tokfile_place(&m->cfg, path, &tok_sum, err) : RN_OK;
    return rc ? rc : rn_safetensors_save(m, path, err);
}

int rn_model_convert(const char *in, const char *out, rn_error *err)
{
    return rn_model_convert_as(in, out, -1, err);
}

int rn_model_convert_as(const char *in, const char *out, int storage, rn_error *err)
{
    rn_model m;
    int rc = rn_model_load(&m, in, err);
    if (rc) return rc;
    if (storage >= 0) m.storage = storage;
    rc = rn_model_save(&m, out, err);
    rn_model_free(&m);
    return rc;
}
