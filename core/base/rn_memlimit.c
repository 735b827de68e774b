/* rn_memlimit.c — the per-model memory limit (see rn_memlimit.h). */
#include "rn_memlimit.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *rn_memlimit_fmt(double bytes, char *buf, size_t cap)
{
    static const char *unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, cap, "%.0f bytes", bytes);
        return buf;
    }
    int u = 0;
    double v = bytes / 1024;
    while (v >= 1024 && u < 5) { v /= 1024; u++; }
    snprintf(buf, cap, "%.1f %s", v, unit[u]);
    return buf;
}

/* "4G", "512M", "1.5G", "1073741824": a positive size in bytes. */
static int parse_size(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v <= 0) return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': mul = 0x1p10; end++; break;
    case 'M': mul = 0x1p20; end++; break;
    case 'G': mul = 0x1p30; end++; break;
    case 'T': mul = 0x1p40; end++; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return -1;
    *out = v * mul;
    return 0;
}

int rn_memlimit_get(rn_memlimit *lim, rn_error *err)
{
    char p[32];
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    lim->phys = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
    const char *env = getenv("RAMTRACE_MEM_LIMIT");
    if (env && *env) {
        double v;
        if (parse_size(env, &v))
            return rn_seterr(err, RN_EINPUT, "RAMTRACE_MEM_LIMIT: '%s' is not a size (bytes, or e.g. 512M, 4G)", env);
        if (lim->phys > 0 && v > lim->phys) {
            lim->bytes = lim->phys;
            snprintf(lim->why, sizeof lim->why, "the physical memory; RAMTRACE_MEM_LIMIT=%s is more", env);
        } else {
            lim->bytes = v;
            snprintf(lim->why, sizeof lim->why, "RAMTRACE_MEM_LIMIT=%s", env);
        }
        return RN_OK;
    }
    if (lim->phys > 0) {
        lim->bytes = lim->phys / 2;
        snprintf(lim->why, sizeof lim->why, "half of %s physical memory; set RAMTRACE_MEM_LIMIT to change it",
                 rn_memlimit_fmt(lim->phys, p, sizeof p));
    } else {
        lim->bytes = 0x1p33; /* physical memory unknown: 8 GiB */
        snprintf(lim->why, sizeof lim->why, "physical memory unknown; set RAMTRACE_MEM_LIMIT to change it");
    }
    return RN_OK;
}

int rn_memlimit_check(const char *what, double bytes, rn_error *err)
{
    rn_memlimit lim;
    int rc = rn_memlimit_get(&lim, err);
    if (rc) return rc;
    if (!(bytes <= lim.bytes)) {
        char a[32], b[32];
        return rn_seterr(err, RN_EINPUT, "%s needs %s but the memory limit is %s (%s)", what,
                         rn_memlimit_fmt(bytes, a, sizeof a), rn_memlimit_fmt(lim.bytes, b, sizeof b), lim.why);
    }
    return RN_OK;
}
