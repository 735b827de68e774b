/* fuzz_statefile.c — fuzz target: tiered state files (core/state/rn_statefile.h).
 *
 * Input: byte 0 is a flag byte, the rest the file.  Flags (so mutations get
 * past each checksum and reach what it guards): bit 0 recomputes the
 * header's checksum; bit 1 the row directory's (over the keys the header
 * says it has, when they lie in the file); bit 2 each named row's (when it
 * lies in the file); bit 3 runs the store with threads and read-ahead
 * instead of synchronous reads.  The state shape is a fixed tiny model's
 * (1 layer, 2 heads, M = 4, d_v = 2: 8 keys of 16-byte rows), the one
 * tests/fuzz/make-corpus saves its seed files from.
 *
 * What runs: rn_statefile_check (the path of a run that would replace the
 * file), a resume of the file followed by a few steps, and a replacing
 * run.  Checks, besides the sanitizers: failures are RN_EINPUT with one
 * line; a refused file is left as it was; a file the check accepts as
 * clean has a directory that lies in the file, after its rows, names
 * keys of its model and passes its checksum (read here independently of
 * the library, from the header's raw bytes); a resumed run's position is
 * the header's, at most 2^31 - 1; when every row the directory names
 * passes its checksum, the resumed steps do not fail, and when a step
 * fails, some named row fails its checksum. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "rn_checksum.h"
#include "rn_model.h"
#include "rn_runtime.h"
#include "rn_statefile.h"

static rn_model g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 16;
    c.tokenizer = RN_TOK_IDS;
    c.d_model = 8;
    c.n_layers = 1;
    c.n_heads = 2;
    c.d_p = 2;
    c.order = 2;
    c.d_v = 2;
    c.top_k = 2;
    c.d_ff = 8;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    c.cape_mask[0] = 1; /* head 0 CAPE: positions matter */
    rn_error err = { 0 };
    fuzz_check(rn_model_create_random(&g_model, &c, 5, &err) == RN_OK, "model: %s", err.msg);
    return 0;
}

static uint64_t fnv(const uint8_t *b, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}

static uint64_t get64(const uint8_t *b, size_t at) { uint64_t v; memcpy(&v, b + at, 8); return v; }
static uint32_t get32(const uint8_t *b, size_t at) { uint32_t v; memcpy(&v, b + at, 4); return v; }
static void put64(uint8_t *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }

/* The header's raw fields (core/state/rn_statefile.c's layout: magic 0, version
 * 8, state 12, generation 16, shape 24, row_bytes 32, n_keys 40, data_off
 * 48, dir_off 56, dir_count 64, dir_check 72, position 80, check 88). */
enum { H_ROWB = 32, H_NKEYS = 40, H_DIROFF = 56, H_DIRN = 64, H_DIRCK = 72, H_POS = 80, H_CHECK = 88, H_END = 96 };

/* Does the directory the header claims lie in a file of n bytes? */
static int dir_in_file(const uint8_t *f, size_t n)
{
    uint64_t off = get64(f, H_DIROFF), cnt = get64(f, H_DIRN);
    return cnt < (1ull << 40) && off <= n && n - off >= cnt * 4;
}

/* Row p's bytes [row_bytes] at 4096 + p * row_bytes inside the file? */
static int row_in_file(const uint8_t *f, size_t n, uint64_t p)
{
    uint64_t rb = get64(f, H_ROWB);
    return rb >= 8 && rb <= 4096 && p < (1ull << 30) && 4096 + (p + 1) * rb <= n;
}

/* Every row the directory names passes its checksum (a directory in the
 * file; rows of the model's 16 bytes). */
static int rows_pass(const uint8_t *f, size_t n)
{
    uint64_t off = get64(f, H_DIROFF), cnt = get64(f, H_DIRN), rb = get64(f, H_ROWB);
    for (uint64_t p = 0; p < cnt; p++) {
        if (!row_in_file(f, n, p)) return 0;
        const uint8_t *r = f + 4096 + p * rb;
        if (get32(r, 12) != rn_statefile_row_check(get32(f, (size_t)(off + 4 * p)), r, 12)) return 0;
    }
    return 1;
}

static void restore(const char *path, const uint8_t *f, size_t n) { fuzz_write_file(path, f, n); }

static int same_file(const char *path, const uint8_t *f, size_t n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    uint8_t *b = malloc(n + 1);
    fuzz_check(b != NULL, "%s", "out of memory");
    ssize_t r = pread(fd, b, n + 1, 0);
    close(fd);
    int same = r == (ssize_t)n && !memcmp(b, f, n);
    free(b);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20)) return 0;
    const uint8_t flags = data[0];
    const size_t n = size - 1;
    uint8_t *f = calloc(1, n > H_END ? n : H_END); /* the header's fields readable even when short */
    fuzz_check(f != NULL, "%s", "out of memory");
    memcpy(f, data + 1, n);
    const size_t have = n; /* the file's real size */
    if ((flags & 2) && n >= H_END && dir_in_file(f, have))
        put64(f, H_DIRCK, fnv(f + get64(f, H_DIROFF), (size_t)get64(f, H_DIRN) * 4));
    if ((flags & 4) && n >= H_END && dir_in_file(f, have)) {
        uint64_t off = get64(f, H_DIROFF), cnt = get64(f, H_DIRN), rb = get64(f, H_ROWB);
        for (uint64_t p = 0; p < cnt && row_in_file(f, have, p) && rb >= 16; p++) {
            uint8_t *r = f + 4096 + p * rb;
            uint32_t ck = rn_statefile_row_check(get32(f, (size_t)(off + 4 * p)), r, 12);
            memcpy(r + 12, &ck, 4);
        }
    }
    if ((flags & 1) && n >= H_END) put64(f, H_CHECK, fnv(f, H_CHECK));
    char path[512];
    fuzz_path(path, sizeof path, "fuzz.state");
    restore(path, f, have);

    /* 1. the check a replacing run makes */
    static char buf[RN_STATEFILE_DATA] __attribute__((aligned(4096)));
    rn_error err = { 0 };
    int fd = open(path, O_RDWR);
    fuzz_check(fd >= 0, "cannot open %s", path);
    int rc = rn_statefile_check(fd, path, 0, buf, &err);
    close(fd);
    if (rc) fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_statefile_check");
    fuzz_check(same_file(path, f, have), "%s", "rn_statefile_check changed the file");
    rn_statefile_info info;
    const int clean = !rc && have >= 4096 && rn_statefile_decode(f, &info, NULL) && info.state == RN_STATEFILE_CLEAN;
    if (clean) {
        /* accepted: the directory is where it can be, independently read */
        uint64_t off = get64(f, H_DIROFF), cnt = get64(f, H_DIRN), nk = get64(f, H_NKEYS), rb = get64(f, H_ROWB);
        fuzz_check(cnt <= nk && nk < UINT32_MAX && rb >= 12 && rb <= (1u << 24), "accepted: %llu rows of %llu keys",
                   (unsigned long long)cnt, (unsigned long long)nk);
        fuzz_check(off % 4096 == 0 && off >= 4096 + cnt * rb && dir_in_file(f, have), "accepted: directory at %llu",
                   (unsigned long long)off);
        fuzz_check(fnv(f + off, (size_t)cnt * 4) == get64(f, H_DIRCK), "%s", "accepted: directory checksum");
        for (uint64_t p = 0; p < cnt; p++)
            fuzz_check(get32(f, (size_t)(off + 4 * p)) < nk, "accepted: key at position %llu", (unsigned long long)p);
        fuzz_check(get64(f, H_POS) <= 2147483647u, "%s", "accepted: position");
    }

    /* 2. resume it and step */
    rn_state_opts so = { 2 * 12, path, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, !(flags & 8), flags & 8 ? RN_STATE_IO_THREADS : RN_STATE_IO_SYNC, 1 };
    rn_runtime *rt = NULL;
    rc = rn_runtime_create_state(&g_model, 2, &so, &rt, &err);
    if (rc) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "resume");
        fuzz_check(rt == NULL, "%s", "a refused resume returned a runtime");
        fuzz_check(same_file(path, f, have), "%s", "a refused resume changed the file");
    } else {
        fuzz_check(clean, "%s", "resumed a file the check does not accept as clean");
        int64_t pos = rn_runtime_pos(rt);
        fuzz_check(pos >= 0 && pos <= 2147483647 && (uint64_t)pos == get64(f, H_POS), "resumed at %lld",
                   (long long)pos);
        const int all_pass = rows_pass(f, have);
        int failed = 0;
        for (int t = 0; t < 4 && !failed && pos + t < 2147483647; t++) {
            if ((rc = rn_step(rt, (t * 5 + 3) % 16, NULL, &err))) {
                fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "resumed step");
                fuzz_check(!all_pass, "a step failed though every row passes its checksum: %s", err.msg);
                failed = 1;
            }
        }
        rn_runtime_free(rt);
    }

    /* 3. a run replacing it: refused (the file left as it was) or done */
    restore(path, f, have);
    so.resume = 0;
    rt = NULL;
    rc = rn_runtime_create_state(&g_model, 2, &so, &rt, &err);
    if (rc) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "replace");
        fuzz_check(same_file(path, f, have), "%s", "a refused run changed the file");
    } else {
        rc = rn_step(rt, 3, NULL, &err);
        fuzz_check(rc == RN_OK, "a step on a replaced file: %s", err.msg);
        rn_runtime_free(rt);
    }
    free(f);
    return 0;
}
