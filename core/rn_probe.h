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
 * increasing position.  Prefill reports a whole layer after its memory scan
 * (head-major), the one-token step reports as it goes.  With no probe
 * attached the hot path pays one predictable branch per layer.
 */
#ifndef RN_PROBE_H
#define RN_PROBE_H

#include <stdint.h>

enum { RN_OP_WRITE = 0, RN_OP_READ = 1 };

typedef struct {
    void *user;
    void (*access)(void *user, int layer, int head, int pos, int op, int k,
                   const uint32_t *slot, const uint32_t *addr, const float *weight);
} rn_probe;

#endif
