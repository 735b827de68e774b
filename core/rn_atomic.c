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

int rn_atomic_open(rn_atomic_file *af, const char *path, rn_error *err)
{
    memset(af, 0, sizeof *af);
    af->slot = -1;
    if (!path || !*path) return rn_seterr(err, RN_EINPUT, "output path is empty");
    if (strlen(path) >= sizeof af->path) return rn_seterr(err, RN_EINPUT, "%s: path too long", path);
    strcpy(af->path, path);
    int rc = rn_atomic_tmpname(path, af->tmp, sizeof af->tmp, err);
    if (rc) return rc;
    int fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return rn_seterr(err, errno == ENOSPC ? RN_EIO : RN_EINPUT, "%s: cannot write: %s", path, strerror(errno));
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        return rn_seterr(err, RN_ENOMEM, "%s: cannot open stream", path);
    }
    af->slot = rn_atomic_register(af->tmp);
    return RN_OK;
}

int rn_atomic_commit(rn_atomic_file *af, rn_error *err)
{
    int ok = af->f && fflush(af->f) == 0 && !ferror(af->f);
    int e = errno;
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
    if (af->tmp[0]) unlink(af->tmp);
    rn_atomic_unregister(af->slot);
    af->slot = -1;
}
