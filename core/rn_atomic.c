/* rn_atomic.c — temp-file-then-rename output files; see rn_atomic.h. */
#include "rn_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TMP 16
static char g_tmp[MAX_TMP][4096];
static volatile sig_atomic_t g_used[MAX_TMP];

int rn_atomic_register(const char *tmp)
{
    for (int i = 0; i < MAX_TMP; i++)
        if (!g_used[i]) {
            snprintf(g_tmp[i], sizeof g_tmp[i], "%s", tmp);
            g_used[i] = 1;
            return i;
        }
    return -1;
}

void rn_atomic_unregister(int slot)
{
    if (slot >= 0 && slot < MAX_TMP) g_used[slot] = 0;
}

void rn_atomic_cleanup_all(void)
{
    for (int i = 0; i < MAX_TMP; i++)
        if (g_used[i]) {
            unlink(g_tmp[i]);
            g_used[i] = 0;
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
