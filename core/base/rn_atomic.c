/* rn_atomic.c — temp-file-then-rename output files and the registry of open
 * temp files that a signal handler removes; see rn_atomic.h. */
#include "rn_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The registry of open temp files, so that a signal handler can remove them.
 *
 * This is the one piece of mutable file-scope state in core/, on purpose: a
 * signal handler can only reach process-global state.  It is safe to use
 * from several threads and from a handler: a slot is claimed with a
 * compare-exchange on its state (FREE -> CLAIMED), its path written, and
 * only then published (READY).  Cleanup takes READY slots (READY ->
 * REMOVING) so a path is never read while it is being written, and never
 * unlinked twice.  Lock-free atomics are async-signal-safe. */
#define MAX_TMP 16
enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_READY, SLOT_REMOVING };
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the temp-file registry needs lock-free atomics (signal safety)");
static char g_tmp[MAX_TMP][4096];
static atomic_int g_state[MAX_TMP];

int rn_atomic_register(const char *tmp)
{
    for (int i = 0; i < MAX_TMP; i++) {
        int want = SLOT_FREE;
        if (atomic_compare_exchange_strong(&g_state[i], &want, SLOT_CLAIMED)) {
            snprintf(g_tmp[i], sizeof g_tmp[i], "%s", tmp);
            atomic_store(&g_state[i], SLOT_READY);
            return i;
        }
    }
    return -1;
}

void rn_atomic_unregister(int slot)
{
    /* A slot that cleanup is removing stays its until cleanup frees it. */
    int want = SLOT_READY;
    if (slot >= 0 && slot < MAX_TMP) atomic_compare_exchange_strong(&g_state[slot], &want, SLOT_FREE);
}

void rn_atomic_cleanup_all(void)
{
    for (int i = 0; i < MAX_TMP; i++) {
        int want = SLOT_READY;
        if (atomic_compare_exchange_strong(&g_state[i], &want, SLOT_REMOVING)) {
            unlink(g_tmp[i]);
            atomic_store(&g_state[i], SLOT_FREE);
        }
    }
}

int rn_atomic_tmpname(const char *path, char *tmp, size_t cap, rn_error *err)
{
    int n = snprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= cap) return rn_seterr(err, RN_EINPUT, "%s: path too long", path);
    return RN_OK;
}

int rn_atomic_check_not_input(const char *in, const char *out, rn_error *err)
{
    struct stat a, b;
    if (in && out && stat(in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return rn_seterr(err, RN_EINPUT, "%s: output would replace the input file %s", out, in);
    return RN_OK;
}

/* The descriptor a path names when it is one of the process's own:
 * /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N; else -1.  Writing
 * goes to that descriptor itself (a dup), so a pipe, a terminal, or a file
 * the shell opened for appending get the output as they would from a
 * program's own stdout, and nothing is renamed over what it points to. */
static int own_descriptor(const char *p)
{
    if (!strcmp(p, "/dev/stdout")) return 1;
    if (!strcmp(p, "/dev/stderr")) return 2;
    const char *n = !strncmp(p, "/dev/fd/", 8) ? p + 8 : !strncmp(p, "/proc/self/fd/", 14) ? p + 14 : NULL;
    if (!n || !*n) return -1;
    long v = 0;
    for (; *n; n++) {
        if (*n < '0' || *n > '9' || v > 1000000) return -1;
        v = v * 10 + (*n - '0');
    }
    return (int)v;
}

/* Follow the chain of symbolic links from path to the file it finally
 * names (which need not exist yet) into out; a relative link is taken
 * relative to the directory of the link.  *fd is set when the chain
 * reaches one of the process's own descriptors (own_descriptor), else -1. */
static int resolve_links(const char *path, char *out, size_t cap, int *fd, rn_error *err)
{
    char cur[4096], link[4096];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return rn_seterr(err, RN_EINPUT, "%s: path too long", path);
    *fd = -1;
    for (int hops = 0;; hops++) {
        if ((*fd = own_descriptor(cur)) >= 0) break;
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        if (hops == 40) return rn_seterr(err, RN_EINPUT, "%s: too many levels of symbolic links", path);
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot read link: %s", path, strerror(errno));
        link[n] = 0;
        char next[4096];
        const char *slash = strrchr(cur, '/');
        int w = link[0] == '/' || !slash ? snprintf(next, sizeof next, "%s", link)
                                         : snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, link);
        if (w < 0 || (size_t)w >= sizeof next) return rn_seterr(err, RN_EINPUT, "%s: path too long", path);
        memcpy(cur, next, (size_t)w + 1);
    }
    if (strlen(cur) >= cap) return rn_seterr(err, RN_EINPUT, "%s: path too long", path);
    strcpy(out, cur);
    return RN_OK;
}

/* Write straight into descriptor fd (owned by af from here on). */
static int open_direct(rn_atomic_file *af, int fd, const char *path, rn_error *err)
{
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        return rn_seterr(err, RN_ENOMEM, "%s: cannot open stream", path);
    }
    af->direct = 1;
    return RN_OK;
}

/* rn_atomic_open and rn_atomic_open_text: decide from what path names how
 * it is written (rn_atomic.h), and open it. */
static int open_any(rn_atomic_file *af, const char *path, int dash_is_stdout, rn_error *err)
{
    memset(af, 0, sizeof *af);
    af->slot = -1;
    if (!path || !*path) return rn_seterr(err, RN_EINPUT, "output path is empty");
    if (!strcmp(path, "-")) {
        if (!dash_is_stdout)
            return rn_seterr(err, RN_EINPUT, "-: this output cannot go to standard output; give a file name");
        snprintf(af->path, sizeof af->path, "(stdout)");
        fflush(stdout); /* what the program printed there comes first */
        int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) return rn_seterr(err, RN_EINPUT, "standard output is not open: %s", strerror(errno));
        return open_direct(af, fd, "-", err);
    }
    int own;
    int rc = resolve_links(path, af->path, sizeof af->path, &own, err);
    if (rc) return rc;
    if (own >= 0) {
        if (own <= 2) fflush(own == 2 ? stderr : stdout);
        int fd = fcntl(own, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) return rn_seterr(err, RN_EINPUT, "%s: descriptor %d is not open: %s", path, own, strerror(errno));
        return open_direct(af, fd, path, err);
    }
    struct stat st;
    if (stat(af->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) return rn_seterr(err, RN_EINPUT, "%s: is a directory", path);
        if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
            return rn_seterr(err, RN_EINPUT, "%s: not a regular file, character device or FIFO", path);
        /* a device or FIFO is written in place: there is nothing to rename */
        int fd = open(af->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return rn_seterr(err, RN_EINPUT, "%s: cannot write: %s", path, strerror(errno));
        return open_direct(af, fd, path, err);
    }
    rc = rn_atomic_tmpname(af->path, af->tmp, sizeof af->tmp, err);
    if (rc) return rc;
    int fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        af->tmp[0] = 0;
        return rn_seterr(err, errno == ENOSPC ? RN_EIO : RN_EINPUT, "%s: cannot write: %s", path, strerror(errno));
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        return rn_seterr(err, RN_ENOMEM, "%s: cannot open stream", path);
    }
    af->slot = rn_atomic_register(af->tmp);
    return RN_OK;
}

int rn_atomic_open(rn_atomic_file *af, const char *path, rn_error *err)
{
    return open_any(af, path, 0, err);
}

int rn_atomic_open_text(rn_atomic_file *af, const char *path, rn_error *err)
{
    return open_any(af, path, 1, err);
}

int rn_atomic_write(const char *path, const void *data, size_t len, rn_error *err)
{
    rn_atomic_file af;
    int rc = rn_atomic_open(&af, path, err);
    if (rc) return rc;
    if (fwrite(data, 1, len, af.f) != len) {
        int e = errno;
        rn_atomic_abort(&af);
        return rn_seterr(err, RN_EIO, "%s: write failed: %s (nothing written)", path, strerror(e));
    }
    return rn_atomic_commit(&af, err);
}

int rn_atomic_commit(rn_atomic_file *af, rn_error *err)
{
    int ok = af->f && fflush(af->f) == 0 && !ferror(af->f);
    int e = errno;
    if (af->direct) {
        /* no fsync: a pipe or terminal has nothing to sync (EINVAL) */
        if (af->f && fclose(af->f) != 0 && ok) { ok = 0; e = errno; }
        af->f = NULL;
        if (!ok) return rn_seterr(err, RN_EIO, "%s: write failed: %s", af->path, strerror(e));
        return RN_OK;
    }
    if (ok && fsync(fileno(af->f)) != 0) { ok = 0; e = errno; }
    if (af->f && fclose(af->f) != 0 && ok) { ok = 0; e = errno; }
    af->f = NULL;
    if (ok && rename(af->tmp, af->path) != 0) { ok = 0; e = errno; }
    if (!ok) {
        unlink(af->tmp);
        rn_atomic_unregister(af->slot);
        af->slot = -1;
        return rn_seterr(err, RN_EIO, "%s: write failed: %s (nothing written)", af->path, strerror(e));
    }
    rn_atomic_unregister(af->slot);
    af->slot = -1;
    return RN_OK;
}

void rn_atomic_abort(rn_atomic_file *af)
{
    if (af->f) fclose(af->f);
    af->f = NULL;
    if (!af->direct && af->tmp[0]) unlink(af->tmp);
    rn_atomic_unregister(af->slot);
    af->slot = -1;
}
