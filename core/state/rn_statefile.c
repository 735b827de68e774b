/* rn_statefile.c — the tiered state file's header (rn_statefile.h). */
#include "rn_statefile.h"

#include "rn_checksum.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char magic[8] = { 'R', 'N', 'S', 'T', 'A', 'T', 'E', 0 };

/* The header's bytes: magic, version, then the fields, then a checksum of
 * everything before it. */
typedef struct {
    char magic[8];
    uint32_t version, state;
    uint64_t generation, shape, row_bytes, n_keys, data_off, dir_off, dir_count, dir_check, position;
    uint64_t check;
} hdr;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}

uint64_t rn_statefile_shape(const rn_config *c)
{
    int64_t v[4] = { c->n_layers, c->n_heads, rn_config_slots(c), c->d_v };
    return fnv(v, sizeof v, 14695981039346656037ull);
}

void rn_statefile_encode(const rn_statefile_info *info, void *buf)
{
    hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, magic, sizeof magic);
    h.version = RN_STATEFILE_VERSION;
    h.state = info->state;
    h.generation = info->generation;
    h.shape = info->shape;
    h.row_bytes = info->row_bytes;
    h.n_keys = info->n_keys;
    h.data_off = RN_STATEFILE_DATA;
    h.dir_off = info->dir_off;
    h.dir_count = info->dir_count;
    h.dir_check = info->dir_check;
    h.position = info->position;
    h.check = fnv(&h, offsetof(hdr, check), 14695981039346656037ull);
    memset(buf, 0, RN_STATEFILE_DATA);
    memcpy(buf, &h, sizeof h);
}

int rn_statefile_decode(const void *buf, rn_statefile_info *info, const char **why)
{
    hdr h;
    memcpy(&h, buf, sizeof h);
    const char *w = memcmp(h.magic, magic, sizeof magic) ? "not a ramtrace state file"
                  : h.version != RN_STATEFILE_VERSION ? "another format version"
                  : h.check != fnv(&h, offsetof(hdr, check), 14695981039346656037ull) ? "its header fails its checksum"
                  : h.data_off != RN_STATEFILE_DATA || h.state < RN_STATEFILE_DIRTY || h.state > RN_STATEFILE_CLOSED
                  ? "its header is malformed" : NULL;
    if (why) *why = w;
    if (w) return 0;
    info->state = h.state;
    info->generation = h.generation;
    info->shape = h.shape;
    info->row_bytes = h.row_bytes;
    info->n_keys = h.n_keys;
    info->dir_off = h.dir_off;
    info->dir_count = h.dir_count;
    info->dir_check = h.dir_check;
    info->position = h.position;
    return 1;
}

/* Bytes of a directory of n keys on disk: whole 4096-byte blocks (n below
 * 2^32: no overflow). */
static uint64_t dir_bytes(uint64_t n) { return (n * 4 + 4095) / 4096 * 4096; }

const char *rn_statefile_invalid(const rn_statefile_info *info, uint64_t file_size)
{
    /* each bound first, so that no product below overflows */
    if (info->row_bytes < 12 || info->row_bytes > RN_STATEFILE_ROW_MAX || info->row_bytes % 4)
        return "its header's row size is impossible";
    if (info->n_keys < 1 || info->n_keys >= UINT32_MAX) return "its header's slot count is impossible";
    if (info->position > RN_STATEFILE_POS_MAX) return "its header's sequence position is out of range";
    if (info->state != RN_STATEFILE_CLEAN)
        return info->dir_off || info->dir_count || info->dir_check ? "its header names a row directory it cannot have"
                                                                   : NULL;
    if (info->dir_count > info->n_keys) return "its row directory has more rows than the model has slots";
    /* the rows in whole blocks, as they are written (the last one whole
     * too: a resumed run reads it back whole) */
    const uint64_t rpb = info->row_bytes < RN_STATEFILE_BLOCK ? RN_STATEFILE_BLOCK / info->row_bytes : 1;
    const uint64_t data = (info->dir_count + rpb - 1) / rpb * rpb * info->row_bytes;
    if (info->dir_off % RN_STATEFILE_DATA || info->dir_off < RN_STATEFILE_DATA + data)
        return "its row directory is not after its rows";
    if (info->dir_off > file_size || file_size - info->dir_off < dir_bytes(info->dir_count))
        return "its row directory lies past the end of the file";
    return NULL;
}

uint32_t rn_statefile_version(const void *buf)
{
    hdr h;
    memcpy(&h, buf, sizeof h);
    return memcmp(h.magic, magic, sizeof magic) ? 0 : h.version;
}

uint64_t rn_statefile_dir_check(const uint32_t *keys, uint64_t n)
{
    return fnv(keys, (size_t)n * sizeof *keys, 14695981039346656037ull);
}

uint32_t rn_statefile_row_check(uint32_t key, const void *row, size_t bytes)
{
    uint64_t h = rn_checksum64(row, bytes);
    return (uint32_t)(h ^ h >> 32) ^ key * 0x9E3779B1u; /* an odd multiplier: a bijection of the key */
}

int rn_statefile_read_dir(int fd, const char *path, const rn_statefile_info *info, uint32_t *keys, rn_error *err)
{
    struct stat sb;
    if (fstat(fd, &sb)) return rn_seterr(err, RN_EIO, "--state-file: %s: %s", path, strerror(errno));
    const char *bad = rn_statefile_invalid(info, (uint64_t)sb.st_size);
    if (bad || info->state != RN_STATEFILE_CLEAN)
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: %s (%llu rows at offset %llu): the file is damaged; "
                         "--state-discard replaces it", path, bad ? bad : "it holds no row directory",
                         (unsigned long long)info->dir_count, (unsigned long long)info->dir_off);
    /* whole 4096-byte blocks (O_DIRECT), as the flush wrote them, inside
     * the file (rn_statefile_invalid) */
    size_t len = (size_t)dir_bytes(info->dir_count), done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (char *)keys + done, len - done, (off_t)(info->dir_off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return rn_seterr(err, RN_EIO, "--state-file: %s: reading the row directory: %s", path, strerror(errno));
        if (r == 0) break;
        done += (size_t)r;
    }
    int ok = done >= info->dir_count * sizeof *keys && rn_statefile_dir_check(keys, info->dir_count) == info->dir_check;
    for (uint64_t i = 0; i < info->dir_count && ok; i++) ok = keys[i] < info->n_keys;
    if (!ok)
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: its row directory fails its checksum (%llu rows at offset "
                         "%llu): the file is damaged; --state-discard replaces it", path,
                         (unsigned long long)info->dir_count, (unsigned long long)info->dir_off);
    return RN_OK;
}

int rn_statefile_check(int fd, const char *path, int discard, void *buf, rn_error *err)
{
    struct stat sb;
    if (fstat(fd, &sb)) return rn_seterr(err, RN_EINPUT, "--state-file: %s: %s", path, strerror(errno));
    if (sb.st_size == 0 || discard) return RN_OK;
    ssize_t r;
    do r = pread(fd, buf, RN_STATEFILE_DATA, 0); while (r < 0 && errno == EINTR);
    if (r < 0) return rn_seterr(err, RN_EINPUT, "--state-file: %s: %s", path, strerror(errno));
    if (r < (ssize_t)RN_STATEFILE_DATA) memset((char *)buf + r, 0, RN_STATEFILE_DATA - (size_t)r);
    rn_statefile_info info;
    uint32_t v = rn_statefile_version(buf);
    if (v && v != RN_STATEFILE_VERSION)
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: a ramtrace state file of format version %u, which this "
                         "build does not read (it writes version %u: checksummed rows through a row directory); not "
                         "replacing it (--state-discard replaces it)", path, v, RN_STATEFILE_VERSION);
    const char *why = NULL;
    if (!rn_statefile_decode(buf, &info, &why)) {
        if (!v)
            return rn_seterr(err, RN_EINPUT, "--state-file: %s: not a ramtrace state file; not replacing it "
                             "(--state-discard replaces it)", path);
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: %s: the file is damaged; --state-discard replaces it",
                         path, why);
    }
    /* the header's fields against the file before anything sized by them */
    if ((why = rn_statefile_invalid(&info, (uint64_t)sb.st_size)))
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: %s: the file is damaged; --state-discard replaces it",
                         path, why);
    if (info.state == RN_STATEFILE_DIRTY)
        return rn_seterr(err, RN_EINPUT, "--state-file: %s: left dirty by a run that did not finish (killed or "
                         "crashed after %llu flushes): its rows are not a consistent state; --state-discard "
                         "replaces it", path, (unsigned long long)info.generation);
    if (info.state == RN_STATEFILE_CLEAN && info.dir_count) {
        /* at most the file's size (rn_statefile_invalid) */
        uint32_t *keys = aligned_alloc(4096, (size_t)dir_bytes(info.dir_count));
        if (!keys) return rn_seterr(err, RN_ENOMEM, "out of memory reading the row directory of %s", path);
        int rc = rn_statefile_read_dir(fd, path, &info, keys, err);
        free(keys);
        if (rc) return rc;
    }
    return RN_OK;
}

int rn_statefile_write(int fd, const char *path, const rn_statefile_info *info, void *buf, rn_error *err)
{
    rn_statefile_encode(info, buf);
    size_t done = 0;
    while (done < RN_STATEFILE_DATA) {
        ssize_t w = pwrite(fd, (char *)buf + done, RN_STATEFILE_DATA - done, (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return rn_seterr(err, RN_EIO, "--state-file: %s: writing the header: %s", path,
                             w < 0 ? strerror(errno) : "short write");
        done += (size_t)w;
    }
    if (fdatasync(fd)) return rn_seterr(err, RN_EIO, "--state-file: %s: fdatasync: %s", path, strerror(errno));
    return RN_OK;
}

/* A power of two in [512, 4096]? */
static int good_align(uint64_t a) { return a >= 512 && a <= 4096 && !(a & (a - 1)); }

uint32_t rn_statefile_dio_align(int fd)
{
#ifdef SYS_statx
    /* the kernel's struct statx (256 bytes): stx_mask at 0, stx_dev_major
     * and _minor at 136 and 140, stx_dio_mem_align and _offset_align at
     * 152 and 156 (read raw: libc headers may predate the fields) */
    uint32_t sx[64] = { 0 };
    if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, 0x2000u /* STATX_DIOALIGN */, sx) == 0 && (sx[0] & 0x2000u)) {
        uint32_t mem = sx[152 / 4], off = sx[156 / 4];
        if (off) {
            uint32_t a = off > mem ? off : mem;
            return good_align(a) ? a : 4096;
        }
    }
#endif
    struct stat sb;
    if (fstat(fd, &sb)) return 4096;
    char path[96];
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/queue/logical_block_size", major(sb.st_dev), minor(sb.st_dev));
    FILE *f = fopen(path, "r");
    if (!f) { /* a partition: the disk's queue is one level up */
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/../queue/logical_block_size", major(sb.st_dev),
                 minor(sb.st_dev));
        f = fopen(path, "r");
    }
    unsigned long v = 0;
    if (f) {
        if (fscanf(f, "%lu", &v) != 1) v = 0;
        fclose(f);
    }
    return good_align(v) ? (uint32_t)v : 4096;
}

uint32_t rn_statefile_dio_align_path(const char *path)
{
    if (!path || !*path) return 4096;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* not there yet: its directory is on the same device */
        size_t n = strlen(path);
        char *dir = malloc(n + 2);
        if (!dir) return 4096;
        memcpy(dir, path, n + 1);
        char *slash = strrchr(dir, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == dir) dir[1] = '\0';
        else *slash = '\0';
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(dir);
    }
    if (fd < 0) return 4096;
    uint32_t a = rn_statefile_dio_align(fd);
    close(fd);
    return a;
}
