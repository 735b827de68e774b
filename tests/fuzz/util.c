/* util.c — the helpers of fuzz.h shared by every fuzz target: failure
 * reporting, error-contract checks, a per-process scratch directory. */
#include "fuzz.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    fprintf(stderr, "\n%s:%d: fuzz check failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void fuzz_check_error(int rc, const rn_error *err, unsigned allowed, const char *what)
{
    fuzz_check(rc > 0 && rc < 32 && (allowed & FUZZ_CODE(rc)), "%s: unexpected code %d: %s", what, rc,
               err->msg);
    fuzz_check(err->code == rc, "%s: returned %d but err->code is %d", what, rc, err->code);
    fuzz_check(err->msg[0] != '\0', "%s: empty error message", what);
    fuzz_check(strpbrk(err->msg, "\r\n") == NULL, "%s: message is not one line: %s", what, err->msg);
}

static char g_dir[256];
static pid_t g_owner;

/* Remove the scratch directory and its files (flat), only in the process
 * that made it: replay's forked children share it and must leave it. */
static void remove_dir(void)
{
    if (!g_dir[0] || getpid() != g_owner) return;
    DIR *d = opendir(g_dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(g_dir);
}

const char *fuzz_dir(void)
{
    if (!g_dir[0]) {
        /* tmpfs when there is one: model saves fsync */
        struct stat st;
        const char *t = getenv("TMPDIR");
        if (!(t && *t) && stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
            t = "/dev/shm";
        snprintf(g_dir, sizeof g_dir, "%s/ramtrace-fuzz-XXXXXX", t && *t ? t : "/tmp");
        fuzz_check(mkdtemp(g_dir) != NULL, "cannot make a scratch directory under %s", t && *t ? t : "/tmp");
        g_owner = getpid();
        atexit(remove_dir);
    }
    return g_dir;
}

void fuzz_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", fuzz_dir(), name);
}

void fuzz_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    fuzz_check(f != NULL, "cannot write %s", path);
    fuzz_check(len == 0 || fwrite(data, 1, len, f) == len, "short write to %s", path);
    fuzz_check(fclose(f) == 0, "cannot close %s", path);
}

uint8_t fuzz_u8(fuzz_in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

uint16_t fuzz_u16(fuzz_in *in)
{
    uint16_t lo = fuzz_u8(in);
    return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

uint32_t fuzz_u32(fuzz_in *in)
{
    uint32_t lo = fuzz_u16(in);
    return lo | (uint32_t)fuzz_u16(in) << 16;
}
