/* rn_probe.c — the text forms of memory-op sets (rn_probe.h), shared by
 * every command that takes --ops. */
#include "rn_probe.h"

#include <string.h>

int rn_ops_parse(const char *s, int *ops, rn_error *err)
{
    if (!s) return rn_seterr(err, RN_EINPUT, "--ops: missing value (r, w or rw)");
    if (!strcmp(s, "rw") || !strcmp(s, "wr") || !strcmp(s, "all")) *ops = RN_OPS_BOTH;
    else if (!strcmp(s, "r")) *ops = RN_OPS_READ;
    else if (!strcmp(s, "w")) *ops = RN_OPS_WRITE;
    else return rn_seterr(err, RN_EINPUT, "--ops: '%s' is not r, w or rw", s);
    return RN_OK;
}

const char *rn_ops_name(int ops)
{
    switch (ops & RN_OPS_BOTH) {
    case RN_OPS_BOTH: return "rw";
    case RN_OPS_READ: return "r";
    case RN_OPS_WRITE: return "w";
    default: return "none";
    }
}
