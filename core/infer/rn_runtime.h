/* rn_runtime.h — inference over one sequence: the per-head PDMA memory state
 * plus scratch, and the two execution paths that must agree:
 *
 *   rn_prefill: a whole chunk of T tokens — matrix products over all T rows,
 *               then each head's sequential memory scan (OpenMP over heads);
 *   rn_step:    one token (GEMV), for generation; its cost and memory do not
 *               grow with context.
 *
 * Both continue from the runtime's current position, so a prompt can be
 * prefilled and then extended token by token.  All memory is allocated by
 * rn_runtime_create; nothing allocates per token.  The memory state is dense,
 * L·H·M·(d_v+1) floats (rn_config_total_state), or tiered: a budget of slot
 * rows in memory and the rest in a file (rn_state.h, docs/tiered-state.md).
 */
#ifndef RN_RUNTIME_H
#define RN_RUNTIME_H

#include "rn_device.h"
#include "rn_intervene.h"
#include "rn_model.h"
#include "rn_precision.h"
#include "rn_probe.h"
#include "rn_state.h"

typedef struct rn_runtime rn_runtime;

/* max_chunk: the most rows one prefill call processes at once (longer inputs
 * are processed in chunks of this size; memory ∝ max_chunk). */
int rn_runtime_create(const rn_model *m, int max_chunk, rn_runtime **out, rn_error *err);
/* The same on a chosen device: RN_DEVICE_CUDA keeps weights and memory
 * state on the GPU (core/cuda/); prefill and step then run there and only
 * logits (and, with a probe, each layer's accesses in one batch) come back. */
int rn_runtime_create_on(const rn_model *m, int max_chunk, rn_device dev, rn_runtime **out,
                         rn_error *err);
/* The same (CPU) with the memory state store of opts (rn_state.h; NULL or
 * budget 0: dense).  A tiered runtime scans heads serially and refuses
 * interventions and rn_runtime_head_state. */
int rn_runtime_create_state(const rn_model *m, int max_chunk, const rn_state_opts *opts,
                            rn_runtime **out, rn_error *err);
void rn_runtime_free(rn_runtime *rt);

/* The tiered store's counters since the last reset into *out (zeros for a
 * dense one); returns 1 when the runtime's state is tiered, else 0. */
int rn_runtime_state_counters(const rn_runtime *rt, rn_state_counters *out);

/* Tiered: write every dirty slot row back to the state file (rn_state_flush). */
int rn_runtime_flush_state(rn_runtime *rt, rn_error *err);

/* Forget the sequence: S = 0, z = 1/M, position 0. */
void rn_runtime_reset(rn_runtime *rt);

/* Attach (or with NULL detach) a probe that sees every memory access. */
void rn_runtime_set_probe(rn_runtime *rt, const rn_probe *probe);

/* Position of the next token (number of tokens consumed so far). */
int64_t rn_runtime_pos(const rn_runtime *rt);

/* Feed T tokens.  logits: NULL, or [V] for the last row, or [T,V] when
 * all_rows.  Token ids must be in [0, V) (checked: RN_EINPUT). */
int rn_prefill(rn_runtime *rt, const int *tokens, int T, float *logits, int all_rows,
               rn_error *err);

/* Feed one token; logits[V] out (may be NULL).  Token must be in [0, V). */
int rn_step(rn_runtime *rt, int token, float *logits, rn_error *err);

/* Apply the interventions of set (rn_intervene.h; prepared, and kept alive
 * by the caller while attached) to every later prefill and step, or with
 * NULL stop.  CPU runtimes only: RN_EINPUT on a GPU runtime. */
int rn_runtime_set_interventions(rn_runtime *rt, const rn_iv_set *set, rn_error *err);

/* The memory state of head (layer, head) after the tokens consumed so far:
 * *S [M, d_v] and *z [M], valid until the next prefill, step or reset.
 * CPU runtimes only (RN_EINPUT on a GPU runtime or an unknown head). */
int rn_runtime_head_state(const rn_runtime *rt, int layer, int head, const rn_real **S,
                          const rn_real **z, rn_error *err);

/* Compute from now on in precision p (rn_precision.h): fp32 (the default)
 * or bf16 (the weight matrices in bf16, FP32 arithmetic: rn_wbf16.h).
 * RN_EINPUT naming --precision for tf32.  On the CPU allocates the bf16
 * copies once; a GPU runtime uploads its weights again in p
 * (rn_cuda_rt_set_precision). */
int rn_runtime_set_precision(rn_runtime *rt, rn_precision p, rn_error *err);

/* Hook points of the CPU forward (rn_runtime_set_hooks), in the order a
 * layer meets them.  data is the activation of the chunk's rows, row-major
 * [rows, width], and may be edited in place: the forward goes on from what
 * the hook leaves.
 *   RN_HOOK_RESID_PRE   x entering layer l                 [rows, D]
 *   RN_HOOK_Q, _K       the projections, before α and decoding [rows, H·d_k]
 *   RN_HOOK_ADDR_READ,  the decoded slots (slots, [rows, H, K], read-only)
 *   RN_HOOK_ADDR_WRITE  and their weights (data, [rows, H·K])
 *   RN_HOOK_V           the values                          [rows, H·d_v]
 *   RN_HOOK_HEAD_OUT    the heads' reads o, after any intervention [rows, H·d_v]
 *   RN_HOOK_RESID_MID   x after the attention's residual add [rows, D]
 *   RN_HOOK_MLP_OUT     the MLP's output before its residual add [rows, D]
 *   RN_HOOK_RESID_POST  x leaving layer l                   [rows, D]
 *   RN_HOOK_LN_FINAL    the final RMSNorm's output (layer = L; the rows
 *                       whose logits are computed)           [rows, D]
 *   RN_HOOK_SLOT_STATE  between V and HEAD_OUT, once per position (rows
 *                       = 1, pos0 the position): the memory state of the
 *                       K slots each head reads there, after the
 *                       position's writes and before its read — the S row
 *                       then z of slot slots[h·K + j] at
 *                       data[(h·K + j)·(d_v + 1) ..], [1, H·K·(d_v + 1)];
 *                       edits are stored into the state (they last, and
 *                       the read uses them; of a slot named twice the
 *                       later copy is stored).  The layer's scan then runs
 *                       position by position, heads in turn (no
 *                       threads); the dense state only.  With
 *                       rn_hooks.slot_rows: once per chunk and layer
 *                       instead, every row, read-only (for a cache).
 * (The numbers are stable: a point is only ever added at the end.) */
enum {
    RN_HOOK_RESID_PRE, RN_HOOK_Q, RN_HOOK_K, RN_HOOK_ADDR_READ, RN_HOOK_ADDR_WRITE, RN_HOOK_V,
    RN_HOOK_HEAD_OUT, RN_HOOK_RESID_MID, RN_HOOK_MLP_OUT, RN_HOOK_RESID_POST, RN_HOOK_LN_FINAL,
    RN_HOOK_SLOT_STATE, RN_HOOK_N
};

/* A hook: called at every point whose bit is set in `points`, for every
 * layer and chunk; pos0 is the chunk's first position.  A non-zero return
 * stops the forward (RN_EINTR, "stopped by a hook"). */
typedef struct {
    int (*at)(void *user, int point, int layer, float *data, const uint32_t *slots, int rows, int width,
              int64_t pos0);
    void *user;
    uint32_t points;          /* bit p: call at point p */
    int slot_rows;            /* non-zero: RN_HOOK_SLOT_STATE once per chunk and layer
                               * with every row, [rows, H·K·(d_v + 1)] and slots
                               * [rows, H·K], recorded by the usual scan (threads
                               * over heads); a copy, so edits change nothing */
    uint64_t slot_layers[(RN_MAX_LAYERS + 63) / 64];
                              /* the layers whose RN_HOOK_SLOT_STATE is called: bit
                               * l % 64 of word l / 64; all zero: every layer.  Only
                               * those scan its way (position by position, or
                               * recorded); the others as without the hook */
} rn_hooks;

/* Attach (or with NULL detach) hooks; the struct is copied.  CPU runtimes
 * only (RN_EINPUT on a GPU runtime, and for RN_HOOK_SLOT_STATE on a tiered
 * one); allocates the slot-state buffer once.  With RN_HOOK_MLP_OUT the MLP's output
 * is computed into a buffer and then added (without: accumulated into x by
 * the product itself), so the logits agree to rounding only. */
int rn_runtime_set_hooks(rn_runtime *rt, const rn_hooks *h, rn_error *err);

/* Optional flag polled between chunks/layers: when *stop becomes non-zero a
 * prefill returns RN_EINTR at the next chunk boundary. */
void rn_runtime_set_stop_flag(rn_runtime *rt, volatile int *stop);

#endif
