/* rn_cache.c — the cache-policy registry (rn_cache.h) and the link arrays of
 * the list-based policies (rn_list.h). */
#include "rn_cache.h"

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
