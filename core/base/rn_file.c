/* rn_file.c — reading a whole input file (a prompt, a config, SQL text) with
 * the checks every input gets: it must exist, not be a directory, and fit a
 * size bound (rn_file.h).  The path "-" reads standard input. */
#include "rn_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rn_read_file_max(const char *path, size_t max, char **data, size_t *len, rn_error *err)
{
    *data = NULL;
    *len = 0;
    const int in = !strcmp(path, "-"); /* "-" is standard input */
    if (in) path = "standard input";
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", path, strerror(errno));
#define CLOSE(f) do { if (!in) fclose(f); } while (0)
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        CLOSE(f);
        return rn_seterr(err, RN_EINPUT, "%s: is a directory, not a file", path);
    }
    size_t cap = max < (1u << 16) ? max : 1u << 16, n = 0;
    char *b = malloc(cap + 1);
    if (!b) { CLOSE(f); return rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); }
    for (;;) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        if (cap >= max) {
            free(b);
            CLOSE(f);
            return rn_seterr(err, RN_EINPUT, "%s: file larger than %zu bytes", path, max);
        }
        cap *= 2;
        char *nb = realloc(b, cap + 1);
        if (!nb) { free(b); CLOSE(f); return rn_seterr(err, RN_ENOMEM, "%s: out of memory", path); }
        b = nb;
    }
    int bad = ferror(f);
    CLOSE(f);
    if (bad) { free(b); return rn_seterr(err, RN_EIO, "%s: read error", path); }
    b[n] = 0;
    *data = b;
    *len = n;
    return RN_OK;
#undef CLOSE
}

int rn_read_file(const char *path, char **data, size_t *len, rn_error *err)
{
    return rn_read_file_max(path, (size_t)1 << 30, data, len, err);
}
