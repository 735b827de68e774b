/* rn_scope.c — cache scopes by name, and the caches and keys of each
 * (rn_scope.h). */
#include "rn_scope.h"

#include <string.h>

static const char *const names[] = { "head", "layer", "model" };

int rn_scope_find(const char *name)
{
    for (int s = RN_CACHE_SCOPE_HEAD; s <= RN_CACHE_SCOPE_MODEL; s++)
        if (!strcmp(name, names[s])) return s;
    return -1;
}

int rn_scope_parse(const char *opt, const char *s, int *scope, rn_error *err)
{
    int v = rn_scope_find(s);
    if (v < 0) return rn_seterr(err, RN_EINPUT, "%s: unknown scope '%s' (head, layer or model)", opt, s);
    *scope = v;
    return RN_OK;
}

const char *rn_scope_name(int scope)
{
    return scope == RN_CACHE_SCOPE_HEAD || scope == RN_CACHE_SCOPE_LAYER ? names[scope] : names[RN_CACHE_SCOPE_MODEL];
}

uint64_t rn_scope_caches(int scope, int64_t L, int64_t H)
{
    return scope == RN_CACHE_SCOPE_HEAD ? (uint64_t)L * (uint64_t)H : scope == RN_CACHE_SCOPE_LAYER ? (uint64_t)L : 1;
}

uint64_t rn_scope_universe(int scope, int64_t L, int64_t H, int64_t M)
{
    return (uint64_t)M * (scope == RN_CACHE_SCOPE_HEAD ? 1 : scope == RN_CACHE_SCOPE_LAYER ? (uint64_t)H : (uint64_t)H * (uint64_t)L);
}
