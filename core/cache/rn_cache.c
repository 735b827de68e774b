/* rn_cache.c — the cache-policy registry (rn_cache.h): lookup, names and
 * --policy lists; and the link arrays of the list-based policies
 * (rn_list.h). */
#include "rn_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_error.h"
#include "rn_list.h"
#include "rn_policies.h" /* generated: rn_policies[] */

int rn_policy_count(void) { return (int)(sizeof rn_policies / sizeof rn_policies[0]); }

const rn_policy *rn_policy_at(int i) { return rn_policies[i]; }

const rn_policy *rn_policy_find(const char *name)
{
    for (int i = 0; i < rn_policy_count(); i++)
        if (!strcmp(rn_policies[i]->name, name)) return rn_policies[i];
    return NULL;
}

void rn_policy_names(char *buf, size_t cap, int online_only)
{
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < rn_policy_count() && n < cap; i++) {
        const rn_policy *p = rn_policy_at(i);
        if (!online_only || !p->needs_next) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", p->name);
    }
}

int rn_policy_parse_list(const char *list, const rn_policy **out, int cap, int *n, rn_error *err)
{
    *n = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; i < rn_policy_count() && *n < cap; i++) out[(*n)++] = rn_policy_at(i);
        return RN_OK;
    }
    const char *p = list;
    while (1) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof name)
            return rn_seterr(err, RN_EINPUT, "--policy: bad policy list '%s'", list);
        memcpy(name, p, len);
        name[len] = 0;
        const rn_policy *pol = rn_policy_find(name);
        if (!pol) {
            char known[256];
            rn_policy_names(known, sizeof known, 0);
            return rn_seterr(err, RN_EINPUT, "--policy: unknown policy '%s' (known: %s)", name, known);
        }
        int dup = 0;
        for (int i = 0; i < *n; i++) dup |= out[i] == pol;
        if (!dup) {
            if (*n >= cap) return rn_seterr(err, RN_EINPUT, "--policy: too many policies");
            out[(*n)++] = pol;
        }
        if (!e) break;
        p = e + 1;
    }
    return RN_OK;
}

uint64_t rn_policy_ids(const rn_policy *p, uint64_t capacity, uint64_t n_keys)
{
    if (!p->remembers) return n_keys;
    uint64_t r = p->remembers(capacity);
    return r < n_keys ? r + 1 : n_keys;
}

int rn_links_alloc(rn_links *ln, uint32_t n)
{
    ln->prev = malloc((n ? n : 1) * sizeof *ln->prev);
    ln->next = malloc((n ? n : 1) * sizeof *ln->next);
    if (!ln->prev || !ln->next) { rn_links_free(ln); return RN_ENOMEM; }
    return RN_OK;
}

void rn_links_free(rn_links *ln)
{
    free(ln->prev); free(ln->next);
    ln->prev = ln->next = NULL;
}
