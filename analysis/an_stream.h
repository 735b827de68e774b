/* an_stream.h — access streams: a trace's events put in replay order, split
 * by cache scope, with their keys renumbered densely.
 *
 * Every cache simulation, stack-distance pass and export works on streams.
 *
 * Replay order.  The model executes token by token: for position t, layer 0
 * then layer 1 ..., within a layer head 0, head 1 ..., within a head the K
 * writes of t's key then the K reads of its query, each by rank.  So the
 * replay order of all events of a run is (pos, layer, head, op, rank); a
 * scope's stream is the subsequence of its own events.
 *
 * Scope.  RN_CACHE_SCOPE_HEAD: one stream per (layer, head) (each head its own
 * cache); RN_CACHE_SCOPE_LAYER: one per layer (a cache shared by the layer's
 * heads); RN_CACHE_SCOPE_MODEL: one stream of every event (one cache for the whole
 * model, the GPU budget of the paper's Discussion).
 *
 * Keys.  An access touches the object (layer, head, slot), packed into a
 * 64-bit id by an_pack_id (layer << 40 | head << 32 | slot).  Within a
 * stream the distinct ids are renumbered 0..n_keys-1 in order of first
 * access, so policies index plain arrays (memory ∝ distinct keys).
 */
#ifndef AN_STREAM_H
#define AN_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_probe.h" /* RN_OP_*, RN_OPS_* */
#include "rn_scope.h"
#include "tr_reader.h"

#define AN_NONE UINT32_MAX /* "no key" / "never again" */

typedef struct {
    int layer, head;      /* the group: -1 where the scope spans it */
    size_t n;             /* accesses */
    uint32_t *key;        /* [n] dense key, 0..n_keys-1 */
    int32_t *pos;         /* [n] token position (may be NULL: no warm-up) */
    uint8_t *op;          /* [n] RN_OP_WRITE / RN_OP_READ (may be NULL) */
    uint32_t n_keys;      /* distinct keys */
    uint64_t *id;         /* [n_keys] packed (layer, head, slot) of each key (may be NULL) */
    uint64_t universe;    /* keys the scope could touch: M, H·M or L·H·M */
} an_stream;

typedef struct {
    int scope;            /* enum rn_scope (rn_scope.h) */
    int n;                /* streams (non-empty groups, in (layer, head) order) */
    an_stream *s;
} an_streams;

static inline uint64_t an_pack_id(int layer, int head, uint32_t slot)
{
    return ((uint64_t)(uint32_t)layer << 40) | ((uint64_t)(uint32_t)head << 32) | slot;
}
static inline int an_id_layer(uint64_t id) { return (int)((id >> 40) & 0xffffff); }
static inline int an_id_head(uint64_t id) { return (int)((id >> 32) & 0xff); }
static inline uint32_t an_id_slot(uint64_t id) { return (uint32_t)id; }

/* Map from 64-bit ids to dense indices (open addressing, grows at half
 * load): the renumbering of an_streams_build and an_spill_build. */
typedef struct {
    uint64_t *tab;   /* id + 1, 0 = empty */
    uint32_t *val;
    size_t cap;      /* power of two */
    size_t used;
} an_idmap;

/* Dense index of id into *out, inserting it as `next` when new (*isnew
 * set); RN_ENOMEM when the map cannot grow. */
int an_idmap_get(an_idmap *m, uint64_t id, uint32_t next, uint32_t *out, int *isnew);
void an_idmap_clear(an_idmap *m);
void an_idmap_free(an_idmap *m);

/* Build the streams of a scope from n events (any order; canonical order is
 * the fast path) of a run whose config is cfg, keeping the operations in
 * ops.  Events with a layer/head/slot outside cfg are RN_EINPUT.  Memory and
 * time O(n) for canonical input. */
int an_streams_build(const tr_event *ev, size_t n, const rn_config *cfg, int scope, int ops,
                     an_streams *out, rn_error *err);
void an_streams_free(an_streams *ss);

/* Total accesses and the largest n_keys over all streams. */
size_t an_streams_total(const an_streams *ss);
uint32_t an_streams_max_keys(const an_streams *ss);

/* The accesses of s at positions < warmup, which warm a cache uncounted:
 * a prefix of the stream (positions never decrease in replay order), its
 * length in *n_warm (0 without s->pos or warmup <= 0); RN_EINPUT when a
 * later access comes before warmup (a stream not in replay order). */
int an_stream_warm(const an_stream *s, int32_t warmup, size_t *n_warm, rn_error *err);

/* Next use: nxt[i] = index in the stream of the next access to key[i], or
 * AN_NONE.  One backward pass; last[] is scratch of n_keys entries. */
void an_next_use(const an_stream *s, uint32_t *nxt, uint32_t *last);

/* Wrap a plain key array as a stream (no copy; for tests and benchmarks).
 * n_keys is computed as 1 + the largest key. */
an_stream an_stream_from_keys(const uint32_t *key, size_t n, const int32_t *pos);

#endif
