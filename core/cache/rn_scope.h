/* rn_scope.h — the scope of a cache: which accesses share one cache.
 *
 * One definition for every user: `simulate --scope` and the analysis
 * streams (an_stream.h), the tiered state's `--state-scope` (rn_state.h)
 * and the state row a trace records (tr_writer.h).  RN_CACHE_SCOPE_HEAD: one
 * cache per (layer, head); RN_CACHE_SCOPE_LAYER: one per layer, shared by its
 * heads; RN_CACHE_SCOPE_MODEL: one cache for every layer and head.  The values
 * run from the narrowest scope to the widest, so a loop from RN_CACHE_SCOPE_HEAD
 * to RN_CACHE_SCOPE_MODEL visits every scope.
 */
#ifndef RN_SCOPE_H
#define RN_SCOPE_H

#include <stdint.h>

#include "rn_error.h"

enum rn_scope { RN_CACHE_SCOPE_HEAD = 0, RN_CACHE_SCOPE_LAYER = 1, RN_CACHE_SCOPE_MODEL = 2 };

/* The scope named "head", "layer" or "model"; -1 for any other name. */
int rn_scope_find(const char *name);

/* rn_scope_find into *scope, or RN_EINPUT "OPT: unknown scope 'S' (head,
 * layer or model)". */
int rn_scope_parse(const char *opt, const char *s, int *scope, rn_error *err);

/* "head", "layer" or "model"; "model" for a value outside the enum. */
const char *rn_scope_name(int scope);

/* The caches of the scope over L layers of H heads: L·H, L or 1. */
uint64_t rn_scope_caches(int scope, int64_t L, int64_t H);

/* The keys one cache of the scope can hold over M slots a head: M, H·M or
 * L·H·M. */
uint64_t rn_scope_universe(int scope, int64_t L, int64_t H, int64_t M);

#endif
