/* rn_probe.h — the callback interface through which the model reports every
 * memory access.  core/ knows nothing of SQLite: trace/ implements a probe
 * that streams these events into a database, tests implement one that
 * records them.
 *
 * For every (layer, head, position) the model calls `access` twice: first
 * with the K writes of that token's key (op = RN_OP_WRITE), then with the K
 * reads of its query (op = RN_OP_READ).  Entry i of the arrays is rank i of
 * the top-K list (descending weight): slot is the physical slot after CAPE,
 * addr the address before CAPE, weight the (unrenormalised) product-softmax
 * weight.  pos is the 0-based position in the sequence (the CAPE shift t).
 *
 * Calls are serial (never concurrent) and, within one (layer, head), in
 * consecutive increasing positions, each with both ops (the trace writer
 * stores whole positions; a position missing an op is not stored).  Prefill reports a whole layer after its memory scan
 * (head-major), the one-token step reports as it goes.  With no probe
 * attached the hot path pays one predictable branch per layer.
 *
 * Before the accesses of each forward call the runtime calls `chunk` (when
 * set) with the positions that call computes together: pos0 .. pos0 + n - 1
 * (a prefill chunk of n rows, or a step with n = 1).  The order of the
 * accesses that follow depends on it (layer by layer, head by head, then
 * position by position), and the trace writer records it (table
 * prefill_chunks) so that a replay can follow the same order.
 */
#ifndef RN_PROBE_H
#define RN_PROBE_H

#include <stdint.h>

#include "rn_error.h"

/* The one vocabulary of memory operations, used by every module: an event's
 * op is RN_OP_WRITE or RN_OP_READ (stored as 0 / 1 in traces); a set of ops
 * (what to record, load, count or draw) is a bit mask of 1 << op. */
enum { RN_OP_WRITE = 0, RN_OP_READ = 1 };
enum {
    RN_OPS_WRITE = 1 << RN_OP_WRITE,
    RN_OPS_READ = 1 << RN_OP_READ,
    RN_OPS_BOTH = RN_OPS_WRITE | RN_OPS_READ
};

/* Does the set ops contain op? */
static inline int rn_ops_has(int ops, int op) { return op >= 0 && op < 2 && ((ops >> op) & 1); }

/* Parse the option text "r", "w", "rw" (also "wr", "all") into an RN_OPS_*
 * set; RN_EINPUT naming --ops otherwise. */
int rn_ops_parse(const char *s, int *ops, rn_error *err);

/* "rw", "r", "w" or "none". */
const char *rn_ops_name(int ops);

typedef struct {
    void *user;
    void (*access)(void *user, int layer, int head, int pos, int op, int k,
                   const uint32_t *slot, const uint32_t *addr, const float *weight);
    void (*chunk)(void *user, int64_t pos0, int n); /* NULL: not told */
} rn_probe;

#endif
