/* test_statefile.c — the tiered state file refuses what it cannot trust
 * (core/state/rn_statefile.h): header fields checked against each other, the
 * file's size and the model before anything is allocated by them; the
 * header's checksum on the replacing and the resuming path; rows carrying
 * checksums verified on every read path; older format versions refused.
 * Also the I/O layer's own promises: a short AIO write is an error
 * (core/state/rn_aio.h), and the "read ahead" count excludes rows a miss read
 * itself (core/state/rn_rowio_threads.c). */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_aio.h"
#include "rn_model.h"
#include "rn_params.h"
#include "rn_runtime.h"
#include "rn_state.h"
#include "rn_statefile.h"
#include "th.h"

static void sf_config(rn_config *c, int d_v)
{
    rn_config_default(c);
    c->vocab_size = 300;
    c->d_model = 32;
    c->n_layers = 2;
    c->n_heads = 3;
    c->d_p = 3;
    c->order = 3; /* M = 27: L·H·M = 162 keys */
    c->d_v = d_v;
    c->top_k = 4;
    c->d_ff = 40;
    c->gamma = 0.9f;
    c->eps = 1e-4f;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 1;
}

/* Address weights scaled up so that addresses differ across tokens (as
 * tests/test_tiered.c). */
static void sf_model(rn_model *m, const rn_config *c, uint64_t seed)
{
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, c, seed, &err), RN_OK);
    rn_tensor_desc d[64];
    int n = rn_params_count_tensors(c);
    rn_params_layout(c, d);
    for (int i = 0; i < n; i++)
        if (strstr(d[i].name, "q_proj") || strstr(d[i].name, "k_proj") || strstr(d[i].name, "embed"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] *= 40.0f;
}

enum { SF_PRE = 23, SF_GEN = 9 };

static int sf_tok(int i, int vocab) { return (i * 37 + 11) % vocab; }

/* A file holding the header of info (its checksum computed) and zeros up
 * to size bytes. */
static void write_header_file(const char *path, const rn_statefile_info *info, size_t size)
{
    char *b = calloc(1, size < RN_STATEFILE_DATA ? RN_STATEFILE_DATA : size);
    CU_ASSERT_FATAL(b != NULL);
    rn_statefile_encode(info, b);
    CU_ASSERT_EQUAL_FATAL(th_write_file(path, b, size < RN_STATEFILE_DATA ? RN_STATEFILE_DATA : size), 0);
    free(b);
}

/* rn_statefile_check on path: its code, the message in err. */
static int check_file(const char *path, rn_error *err)
{
    int fd = open(path, O_RDWR);
    if (fd < 0) return -1;
    static char buf[RN_STATEFILE_DATA] __attribute__((aligned(4096)));
    int rc = rn_statefile_check(fd, path, 0, buf, err);
    close(fd);
    return rc;
}

TH_TEST(test_statefile_header_fields, "header fields (row directory size and place, slot count, row size, position) are checked against each other and the file's size before anything is allocated or read; refused with one line, exit 2")
{
    char sf[512];
    snprintf(sf, sizeof sf, "%s", th_path("fields.state"));
    rn_config c;
    sf_config(&c, 6);
    const uint64_t shape = rn_statefile_shape(&c), rb = 32, nk = 162;
    const uint64_t fnv0 = 14695981039346656037ull; /* rn_statefile_dir_check of no keys */
    struct {
        rn_statefile_info info;
        size_t size;
        const char *why;
    } cases[] = {
        /* the fuzzer's: dir_count · 4 overflows to 0 */
        { { RN_STATEFILE_CLEAN, 1, shape, rb, UINT64_MAX, 8192, 1ull << 62, fnv0, 0 }, 12288, "slot count" },
        /* 16 GiB of directory claimed by a 12 KiB file */
        { { RN_STATEFILE_CLEAN, 1, shape, rb, (1ull << 32) + 5, 8192, 1ull << 32, 0, 0 }, 12288, "slot count" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 1ull << 40, 1u << 20, 0, 0 }, 12288, "more rows than" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 8192, 150, 0, 0 }, 65536, "not after its rows" },
        /* after 5 rows of 1368 bytes but inside their blocks of 2 (a
         * resumed run reads the last block whole, into the directory) */
        { { RN_STATEFILE_CLEAN, 1, shape, 1368, nk, 12288, 5, 0, 0 }, 16384, "not after its rows" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096 + 4096 * 3, 10, 0, 0 }, 12288, "past the end" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, UINT64_MAX - 4095, 10, 0, 0 }, 12288, "past the end" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, 1ull << 63 }, 8192, "sequence position" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, UINT64_MAX }, 8192, "sequence position" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, 1ull << 31 }, 8192, "sequence position" },
        { { RN_STATEFILE_CLEAN, 1, shape, 0, nk, 4096, 0, fnv0, 0 }, 8192, "row size" },
        { { RN_STATEFILE_CLEAN, 1, shape, 1ull << 40, nk, 4096, 0, fnv0, 0 }, 8192, "row size" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, 0, 4096, 0, fnv0, 0 }, 8192, "slot count" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, UINT32_MAX, 4096, 0, fnv0, 0 }, 8192, "slot count" },
        { { RN_STATEFILE_CLEAN, 1, shape, 30, nk, 4096, 0, fnv0, 0 }, 8192, "row size" },
        { { RN_STATEFILE_CLEAN, 1, shape, 8, nk, 4096, 0, fnv0, 0 }, 8192, "row size" },
        { { 4, 1, shape, rb, nk, 4096, 0, fnv0, 0 }, 8192, "malformed" },
        { { RN_STATEFILE_CLEAN, 1, shape, rb, 4, 8192, 5, 0, 0 }, 12288, "more rows than" },
        { { RN_STATEFILE_CLOSED, 1, shape, rb, nk, 8192, 5, 0, 0 }, 12288, "cannot have" },
        { { RN_STATEFILE_DIRTY, 1, shape, rb, UINT64_MAX, 0, 0, 0, 0 }, 8192, "slot count" },
    };
    static uint32_t keys[1024] __attribute__((aligned(4096)));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_header_file(sf, &cases[i].info, cases[i].size);
        rn_error err = { 0 };
        CU_ASSERT_EQUAL(check_file(sf, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, sf));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].why));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "damaged"));
        CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
        if (!strstr(err.msg, cases[i].why)) fprintf(stderr, "case %zu: %s\n", i, err.msg);
        /* read_dir alone refuses it before reading (its keys hold 1024) */
        if (cases[i].info.state == RN_STATEFILE_CLEAN) {
            int fd = open(sf, O_RDONLY);
            CU_ASSERT_FATAL(fd >= 0);
            CU_ASSERT_EQUAL(rn_statefile_read_dir(fd, sf, &cases[i].info, keys, &err), RN_EINPUT);
            CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].why));
            close(fd);
        }
        /* left as it was */
        size_t len = 0;
        char *b = th_read_file(sf, &len);
        static char want[RN_STATEFILE_DATA];
        rn_statefile_encode(&cases[i].info, want);
        CU_ASSERT(b && len == cases[i].size && !memcmp(b, want, sizeof want));
        free(b);
    }
    /* at the bounds: a directory of every key, ending where the file ends */
    {
        uint32_t all[4] = { 2, 0, 3, 1 };
        rn_statefile_info info = { RN_STATEFILE_CLEAN, 1, shape, rb, 4, 8192, 4, rn_statefile_dir_check(all, 4), 7 };
        char *b = calloc(1, 12288);
        rn_statefile_encode(&info, b);
        memcpy(b + 8192, all, sizeof all);
        CU_ASSERT_EQUAL_FATAL(th_write_file(sf, b, 12288), 0);
        rn_error err = { 0 };
        CU_ASSERT_EQUAL(check_file(sf, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(th_write_file(sf, b, 12287), 0); /* one byte short */
        CU_ASSERT_EQUAL(check_file(sf, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "past the end"));
        free(b);
    }
    /* resuming: the position is refused, not taken up as a negative or
     * huge int64_t (rn_cape_slot's overflow) */
    rn_model m;
    sf_model(&m, &c, 7);
    rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_SYNC, 1 };
    const uint64_t bad_pos[] = { 1ull << 63, UINT64_MAX, (1ull << 31) };
    for (int i = 0; i < 3; i++) {
        rn_statefile_info info = { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, bad_pos[i] };
        write_header_file(sf, &info, 8192);
        rn_runtime *rt = NULL;
        rn_error err = { 0 };
        CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_EINPUT);
        CU_ASSERT_PTR_NULL(rt);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "sequence position"));
        if (rt) rn_runtime_free(rt);
    }
    /* the largest position a sequence reaches is taken up */
    rn_statefile_info ok = { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, RN_STATEFILE_POS_MAX };
    write_header_file(sf, &ok, 8192);
    rn_runtime *rt = NULL;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create_state(&m, 4, &so, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_pos(rt), (int64_t)RN_STATEFILE_POS_MAX);
    rn_runtime_free(rt);
    rn_model_free(&m);
    /* the command: replacing or resuming such a file exits 2 with one line */
    rn_statefile_info huge = cases[0].info;
    write_header_file(sf, &huge, 12288);
    CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 --state-budget 4K --state-file %s",
                           th_bin(), sf), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), sf));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    rn_statefile_info pos = { RN_STATEFILE_CLEAN, 1, shape, rb, nk, 4096, 0, fnv0, 1ull << 63 };
    write_header_file(sf, &pos, 8192);
    CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 --state-budget 4K --state-file %s "
                           "--state-resume", th_bin(), sf), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "sequence position"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    unlink(sf);
}

/* Run SF_PRE tokens of prefill on a fresh file at path with opts so (not
 * resuming) and flush it clean. */
static int sf_flushed(const rn_model *m, rn_state_opts so, const char *path)
{
    rn_error err;
    rn_runtime *rt;
    so.resume = 0;
    so.file = path;
    unlink(path);
    int rc = rn_runtime_create_state(m, 5, &so, &rt, &err);
    if (rc) return rc;
    int tok[SF_PRE];
    for (int i = 0; i < SF_PRE; i++) tok[i] = sf_tok(i, m->cfg.vocab_size);
    rc = rn_prefill(rt, tok, SF_PRE, NULL, 0, &err);
    if (!rc) rc = rn_runtime_flush_state(rt, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    rn_runtime_free(rt);
    return rc;
}

/* The header of path, decoded (1 when valid). */
static int sf_header(const char *path, rn_statefile_info *info)
{
    char hb[RN_STATEFILE_DATA];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    int ok = pread(fd, hb, sizeof hb, 0) == (ssize_t)sizeof hb && rn_statefile_decode(hb, info, NULL);
    close(fd);
    return ok;
}

TH_TEST(test_statefile_header_checksum, "a header changed without its checksum is refused when replacing and when resuming (a field still in range: only the checksum tells); a version-2 file is refused as version 1 is")
{
    char sf[512];
    snprintf(sf, sizeof sf, "%s", th_path("sum.state"));
    rn_config c;
    sf_config(&c, 6);
    rn_model m;
    sf_model(&m, &c, 11);
    rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_SYNC, 0 };
    CU_ASSERT_EQUAL_FATAL(sf_flushed(&m, so, sf), RN_OK);
    rn_statefile_info info;
    CU_ASSERT_FATAL(sf_header(sf, &info));
    CU_ASSERT_EQUAL(info.position, SF_PRE);
    size_t len = 0;
    char *good = th_read_file(sf, &len);
    CU_ASSERT_FATAL(good && len > RN_STATEFILE_DATA);
    /* byte offsets in the header: generation at 16, position at 80 */
    const size_t at[] = { 16, 80 };
    for (int i = 0; i < 2; i++) {
        char *b = malloc(len);
        memcpy(b, good, len);
        b[at[i]] ^= 1; /* generation 0 or position 22: valid values */
        CU_ASSERT_EQUAL_FATAL(th_write_file(sf, b, len), 0);
        rn_error err = { 0 };
        CU_ASSERT_EQUAL(check_file(sf, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "its header fails its checksum"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, sf));
        rn_runtime *rt = NULL;
        so.resume = 1;
        CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 5, &so, &rt, &err), RN_EINPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fails its checksum"));
        if (rt) rn_runtime_free(rt);
        so.resume = 0;
        CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 5, &so, &rt, &err), RN_EINPUT);
        if (rt) rn_runtime_free(rt);
        size_t l2 = 0;
        char *now = th_read_file(sf, &l2);
        CU_ASSERT(now && l2 == len && !memcmp(now, b, len)); /* left alone */
        free(now);
        free(b);
    }
    /* the unchanged header is accepted */
    CU_ASSERT_EQUAL_FATAL(th_write_file(sf, good, len), 0);
    rn_error err = { 0 };
    CU_ASSERT_EQUAL(check_file(sf, &err), RN_OK);
    /* version 2 (rows without checksums): refused, named */
    char *b = malloc(len);
    memcpy(b, good, len);
    uint32_t v2 = 2;
    memcpy(b + 8, &v2, 4);
    CU_ASSERT_EQUAL_FATAL(th_write_file(sf, b, len), 0);
    CU_ASSERT_EQUAL(check_file(sf, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "format version 2"));
    CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin samples/prompts/kjv.txt -n 2 --state-budget 4K --state-file %s",
                           th_bin(), sf), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "format version 2"));
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    free(b);
    free(good);
    rn_model_free(&m);
    unlink(sf);
}

/* Resume path (opts so) and run the rest of the sequence (SF_GEN steps):
 * the first failure's code, its message in err. */
static int sf_continue(const rn_model *m, rn_state_opts so, const char *path, rn_error *err)
{
    rn_runtime *rt;
    so.resume = 1;
    so.file = path;
    int rc = rn_runtime_create_state(m, 5, &so, &rt, err);
    if (rc) return rc;
    for (int i = 0; i < SF_GEN && !rc; i++) rc = rn_step(rt, sf_tok(SF_PRE + i, m->cfg.vocab_size), NULL, err);
    rn_runtime_free(rt);
    return rc;
}

TH_TEST(test_statefile_rows, "rows carry checksums: a row changed in the file, zeroed or moved to another key's position is refused on every read path (synchronous, threads, read-ahead, AIO; page cache and O_DIRECT), never computed with")
{
    char sf[512];
    snprintf(sf, sizeof sf, "%s", th_path("rows.state"));
    rn_config c;
    sf_config(&c, 31); /* 132-byte rows: 31 to an append block through the page cache */
    rn_model m;
    sf_model(&m, &c, 13);
    struct { int direct, io, no_prefetch; } modes[] = {
        { 0, RN_STATE_IO_SYNC, 1 }, { 0, RN_STATE_IO_THREADS, 1 }, { 0, RN_STATE_IO_THREADS, 0 },
        { 1, RN_STATE_IO_AUTO, 0 }, { 1, RN_STATE_IO_AUTO, 1 }, { 1, RN_STATE_IO_THREADS, 0 },
        { 1, RN_STATE_IO_SYNC, 1 },
    };
    int ran = 0;
    for (size_t md = 0; md < sizeof modes / sizeof modes[0]; md++)
        for (int damage = 0; damage < 4; damage++) {
            rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", modes[md].direct, RN_CACHE_SCOPE_MODEL, 0, modes[md].no_prefetch,
                                 modes[md].io, 0 };
            int rc = sf_flushed(&m, so, sf);
            if (modes[md].direct && rc == RN_EINPUT) break; /* O_DIRECT refused here */
            CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
            rn_statefile_info info;
            CU_ASSERT_FATAL(sf_header(sf, &info));
            const uint64_t apb = info.row_bytes < 4096 ? 4096 / info.row_bytes : 1;
            const uint64_t full = info.dir_count / apb * apb; /* rows in blocks written whole */
            CU_ASSERT_FATAL(full >= 2 * apb);
            size_t len = 0;
            char *f = th_read_file(sf, &len);
            CU_ASSERT_FATAL(f != NULL);
            if (damage == 0) { /* intact: the sequence goes on */
                rn_error err = { 0 };
                CU_ASSERT_EQUAL(sf_continue(&m, so, sf, &err), RN_OK);
                free(f);
                continue;
            }
            char *rows = f + RN_STATEFILE_DATA;
            if (damage == 1) /* one bit of every row in the full blocks */
                for (uint64_t p = 0; p < full; p++) rows[p * info.row_bytes + (p % 7) * 4] ^= 0x10;
            else if (damage == 2) /* the full blocks zeroed */
                memset(rows, 0, full * info.row_bytes);
            else /* each pair of rows swapped: intact rows at another key's position */
                for (uint64_t p = 0; p + 1 < full; p += 2) {
                    char tmp[4096];
                    memcpy(tmp, rows + p * info.row_bytes, info.row_bytes);
                    memcpy(rows + p * info.row_bytes, rows + (p + 1) * info.row_bytes, info.row_bytes);
                    memcpy(rows + (p + 1) * info.row_bytes, tmp, info.row_bytes);
                }
            CU_ASSERT_EQUAL_FATAL(th_write_file(sf, f, len), 0);
            free(f);
            rn_error err = { 0 };
            CU_ASSERT_EQUAL(sf_continue(&m, so, sf, &err), RN_EINPUT);
            CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fails its checksum"));
            CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, sf));
            CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
            ran++;
        }
    CU_ASSERT(ran >= 9);
    /* a row of the open append block (read back at resume) */
    rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_SYNC, 0 };
    CU_ASSERT_EQUAL_FATAL(sf_flushed(&m, so, sf), RN_OK);
    rn_statefile_info info;
    CU_ASSERT_FATAL(sf_header(sf, &info));
    const uint64_t apb = 4096 / info.row_bytes, last = info.dir_count - 1;
    CU_ASSERT_FATAL(info.dir_count % apb != 0); /* an open block */
    int fd = open(sf, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char byte;
    off_t at = (off_t)(RN_STATEFILE_DATA + last * info.row_bytes + 4 * (uint64_t)c.d_v); /* its z */
    CU_ASSERT_EQUAL(pread(fd, &byte, 1, at), 1);
    byte ^= 0x10;
    CU_ASSERT_EQUAL(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    rn_runtime *rt = NULL;
    rn_error err = { 0 };
    so.resume = 1;
    size_t len0 = 0, len1 = 0;
    char *before = th_read_file(sf, &len0);
    CU_ASSERT_EQUAL(rn_runtime_create_state(&m, 5, &so, &rt, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fails its checksum"));
    if (rt) rn_runtime_free(rt);
    /* refused: the file is left as it was (still clean, not marked dirty) */
    char *after = th_read_file(sf, &len1);
    CU_ASSERT(before && after && len0 == len1 && !memcmp(before, after, len0));
    free(before);
    free(after);
    rn_model_free(&m);
    unlink(sf);
}

TH_TEST(test_statefile_row_never_used, "a row that fails its checksum is not computed with: its frame gets the initial row, so a scan reading a row of NaN bytes gives finite outputs while the store reports the damage")
{
    char sf[512];
    snprintf(sf, sizeof sf, "%s", th_path("nan.state"));
    rn_config c;
    sf_config(&c, 31);
    rn_model m;
    sf_model(&m, &c, 19);
    rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 1, RN_STATE_IO_SYNC, 0 };
    CU_ASSERT_EQUAL_FATAL(sf_flushed(&m, so, sf), RN_OK);
    rn_model_free(&m);
    rn_statefile_info info;
    CU_ASSERT_FATAL(sf_header(sf, &info));
    CU_ASSERT_FATAL(info.dir_count > 4096 / info.row_bytes); /* position 0 in a block written whole */
    int fd = open(sf, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    uint32_t key;
    CU_ASSERT_EQUAL(pread(fd, &key, 4, (off_t)info.dir_off), 4);
    char nan[4 * 32];
    memset(nan, 0xff, sizeof nan); /* d_v + 1 NaNs */
    CU_ASSERT_EQUAL(pwrite(fd, nan, sizeof nan, RN_STATEFILE_DATA), (ssize_t)sizeof nan);
    close(fd);
    so.resume = 1;
    rn_state *st = NULL;
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_state_create(&c, &so, &st, &err), RN_OK);
    int64_t pos = -1;
    CU_ASSERT_EQUAL_FATAL(rn_state_resume(st, &pos, &err), RN_OK);
    CU_ASSERT_EQUAL(pos, SF_PRE);
    enum { H = 3, K = 4, DV = 31 };
    const int64_t M = rn_config_slots(&c);
    const int l = (int)(key / (H * M)), h = (int)(key / M % H);
    const uint32_t slot = (uint32_t)(key % M);
    uint32_t ws[H * K], rs[H * K];
    rn_real ww[H * K], rw[H * K], v[H * DV], o[H * DV];
    for (int i = 0; i < H * K; i++) { ws[i] = rs[i] = slot; ww[i] = 0; rw[i] = 0.25f; }
    for (int i = 0; i < H * DV; i++) { v[i] = 0.5f; o[i] = 0; }
    rn_state_scan(st, l, h, o, v, ws, ww, rs, rw, 1);
    int finite = 1;
    for (int i = 0; i < DV; i++) finite &= isfinite(o[h * DV + i]) != 0;
    CU_ASSERT(finite);
    CU_ASSERT_EQUAL(rn_state_error(st, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fails its checksum"));
    rn_state_free(st);
    unlink(sf);
}

TH_TEST(test_statefile_cli_zeroed, "run --state-save, 64 KiB of its rows zeroed, run --state-resume: exit 2 with one line naming the file (page cache and O_DIRECT)")
{
    char sf[512], p1[512], p2[512];
    snprintf(sf, sizeof sf, "%s", th_path("zero.state"));
    snprintf(p1, sizeof p1, "%s", th_path("z1.txt"));
    snprintf(p2, sizeof p2, "%s", th_path("z2.txt"));
    size_t len = 0;
    char *text = th_read_file("samples/prompts/kjv.txt", &len);
    CU_ASSERT_FATAL(text && len > 100);
    CU_ASSERT_EQUAL_FATAL(th_write_file(p1, text, 60), 0);
    CU_ASSERT_EQUAL_FATAL(th_write_file(p2, text + 60, len - 60), 0);
    free(text);
    const char *modes[] = { "", "--state-direct" };
    for (int d = 0; d < 2; d++) {
        unlink(sf);
        CU_ASSERT_EQUAL_FATAL(th_run("%s run samples/kjv.bin %s -n 0 --state-budget 4K --state-file %s --state-save %s",
                                     th_bin(), p1, sf, modes[d]), 0);
        rn_statefile_info info;
        CU_ASSERT_FATAL(sf_header(sf, &info));
        uint64_t data = info.dir_count * info.row_bytes, n = data < 65536 ? data : 65536;
        CU_ASSERT(n >= 16384);
        char *f = th_read_file(sf, &len);
        CU_ASSERT_FATAL(f != NULL);
        memset(f + RN_STATEFILE_DATA, 0, n);
        CU_ASSERT_EQUAL_FATAL(th_write_file(sf, f, len), 0);
        free(f);
        CU_ASSERT_EQUAL(th_run("%s run samples/kjv.bin %s -n 20 --seed 5 --state-budget 4K --state-file %s "
                               "--state-resume %s", th_bin(), p2, sf, modes[d]), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), sf));
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "fails its checksum"));
        CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
        CU_ASSERT_STRING_EQUAL(th_out(), ""); /* nothing computed from it printed */
    }
    unlink(sf);
    unlink(p1);
    unlink(p2);
}

TH_TEST(test_statefile_readahead_count, "the read-ahead count excludes rows a miss read itself: with no read-ahead thread (RAMTRACE_PREFETCH_IDLE) every row is read by its miss and none counts, the outputs unchanged")
{
    char sf[512];
    snprintf(sf, sizeof sf, "%s", th_path("ra.state"));
    rn_config c;
    sf_config(&c, 6);
    rn_model m;
    sf_model(&m, &c, 17);
    const int V = c.vocab_size, T = SF_PRE + SF_GEN;
    float *ref = malloc(sizeof(float) * (size_t)T * V), *got = malloc(sizeof(float) * (size_t)T * V);
    int tok[SF_PRE + SF_GEN];
    for (int i = 0; i < T; i++) tok[i] = sf_tok(i, V);
    for (int idle = 0; idle < 2; idle++) {
        rn_state_opts so = { 3 * 4 * (c.d_v + 1), sf, "lru", 0, RN_CACHE_SCOPE_MODEL, 0, 0, RN_STATE_IO_THREADS, 0 };
        if (idle) setenv("RAMTRACE_PREFETCH_IDLE", "1", 1);
        rn_runtime *rt;
        rn_error err;
        unlink(sf);
        int rc = rn_runtime_create_state(&m, 1, &so, &rt, &err);
        unsetenv("RAMTRACE_PREFETCH_IDLE");
        CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
        float *out = idle ? got : ref;
        for (int i = 0; i < T && !rc; i++) rc = rn_step(rt, tok[i], out + (size_t)i * V, &err);
        CU_ASSERT_EQUAL(rc, RN_OK);
        rn_state_counters cnt;
        rn_runtime_state_counters(rt, &cnt);
        rn_runtime_free(rt);
        CU_ASSERT(cnt.bytes_read >= 20 * cnt.row_bytes); /* misses that read the file */
        if (idle) CU_ASSERT_EQUAL(cnt.prefetched, 0);
    }
    CU_ASSERT_EQUAL(memcmp(ref, got, sizeof(float) * (size_t)T * V), 0);
    free(ref); free(got);
    rn_model_free(&m);
    unlink(sf);
}

TH_TEST(test_statefile_aio_short_write, "native AIO: a write the kernel completes short (0 < res < bytes, here at RLIMIT_FSIZE) is an error naming the file, not a success")
{
    char f[512];
    snprintf(f, sizeof f, "%s", th_path("short.state"));
    int fd = open(f, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0) { fprintf(stderr, "(O_DIRECT refused here) "); return; }
    uint32_t al = rn_statefile_dio_align(fd);
    rn_aio *a = NULL;
    int se = 0;
    rn_error err = { 0 };
    if (rn_aio_create(fd, f, al, 4096, 4096, 8, 4, 4, &a, &se, &err)) {
        fprintf(stderr, "(no native AIO here: %s) ", err.msg);
        close(fd);
        return;
    }
    char *buf = aligned_alloc(4096, 4096);
    memset(buf, 7, 4096);
    /* whole: no error */
    rn_aio_write_block(a, 0, buf);
    CU_ASSERT_EQUAL(rn_aio_drain(a, &err), RN_OK);
    /* block 1 at 8192 with the file size limit one alignment unit into
     * it: the kernel writes that much and completes the request short */
    struct rlimit old, rl;
    CU_ASSERT_FATAL(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    rl.rlim_cur = 8192 + al;
    rl.rlim_max = old.rlim_max;
    int limited = setrlimit(RLIMIT_FSIZE, &rl) == 0;
    if (limited) {
        rn_aio_write_block(a, 1, buf);
        int rc = rn_aio_drain(a, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        struct stat sb;
        CU_ASSERT(fstat(fd, &sb) == 0 && sb.st_size == (off_t)(8192 + al)); /* it was short */
        CU_ASSERT_EQUAL(rc, RN_EIO);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, f));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "short write"));
    } else
        fprintf(stderr, "(setrlimit refused) ");
    signal(SIGXFSZ, oldsig);
    rn_aio_free(a);
    free(buf);
    close(fd);
    unlink(f);
}
