/* ramnet_api.h — the stable C API of libramnet.so: what a foreign-function
 * binding (Python's ctypes: python/ramtrace/) needs to load a model, read
 * its configuration and weights without copying, tokenize, and run the
 * forward pass.  Plain C types only; no struct of the library crosses it,
 * so its layout may change without breaking callers.
 *
 * Every function that can fail returns 0 (RAMNET_OK) or an rn_error code
 * (2 = bad input, ...) and leaves a one-line message for
 * ramnet_last_error() (per thread).  Handles are opaque; a freed handle
 * must not be used again.
 *
 * Versioned by RAMNET_API_VERSION: a caller checks ramnet_api_version()
 * before binding.  Additions raise the minor version; nothing is removed
 * or changed within a major version. */
#ifndef RAMNET_API_H
#define RAMNET_API_H

#include <stddef.h>
#include <stdint.h>

#define RAMNET_API_VERSION 103 /* major * 100 + minor */
#define RAMNET_OK 0

typedef struct ramnet_model ramnet_model;

int ramnet_api_version(void);
const char *ramnet_version(void);          /* the ramtrace release */
const char *ramnet_last_error(void);       /* this thread's last message ("" when none) */

/* Load a model file (model.bin or .safetensors).  *out receives the handle. */
int ramnet_load(const char *path, ramnet_model **out);
void ramnet_free(ramnet_model *m);

/* The configuration as "key = value" lines (the config file format,
 * docs/config.md) into buf (NUL-terminated, truncated to cap); *len gets
 * the full length. */
int ramnet_config_text(const ramnet_model *m, char *buf, size_t cap, size_t *len);

/* The parameter tensors, in block order: count, then tensor i's name
 * (exchange name, docs/model-format.md), shape ([out, in] or [n]) and a
 * pointer to its FP32 values inside the model (valid until ramnet_free;
 * read-only: the block may be a read-only mapping of the file). */
int ramnet_tensor_count(const ramnet_model *m);
int ramnet_tensor(const ramnet_model *m, int i, const char **name, int *ndim, int64_t shape[2],
                  const float **data);

/* Tokenize text[0..len) with the model's tokenizer into a malloc'd array
 * (*ids, *n; release with ramnet_free_buffer). */
int ramnet_tokenize(const ramnet_model *m, const char *text, size_t len, int **ids, int *n);
/* The text of tokens ids[0..n) as `ramtrace run` prints a continuation,
 * malloc'd and NUL-terminated (*text, *len; ramnet_free_buffer). */
int ramnet_detokenize(const ramnet_model *m, const int *ids, int n, char **text, size_t *len);
void ramnet_free_buffer(void *p);

/* The logits of every position of tokens[0..T) from a fresh memory state:
 * logits[T, vocab_size] (caller's buffer).  chunk: prefill rows per
 * forward call (0: the default, 256). */
int ramnet_forward(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk);

/* ---- Since 1.01: hooks and interventions ---- */

/* Hook points, in the order a layer meets them (values stable): */
enum {
    RAMNET_HOOK_RESID_PRE = 0,   /* x entering the layer           [rows, D] */
    RAMNET_HOOK_Q = 1,           /* q before alpha and decoding    [rows, H*d_k] */
    RAMNET_HOOK_K = 2,           /* k                              [rows, H*d_k] */
    RAMNET_HOOK_ADDR_READ = 3,   /* read weights [rows, H*K], slots read-only */
    RAMNET_HOOK_ADDR_WRITE = 4,  /* write weights [rows, H*K], slots read-only */
    RAMNET_HOOK_V = 5,           /* v                              [rows, H*d_v] */
    RAMNET_HOOK_HEAD_OUT = 6,    /* the heads' reads o             [rows, H*d_v] */
    RAMNET_HOOK_RESID_MID = 7,   /* x after the attention's add    [rows, D] */
    RAMNET_HOOK_MLP_OUT = 8,     /* the MLP's output               [rows, D] */
    RAMNET_HOOK_RESID_POST = 9,  /* x leaving the layer            [rows, D] */
    RAMNET_HOOK_LN_FINAL = 10,   /* the final RMSNorm's output (layer = L) [rows, D] */
    RAMNET_HOOK_SLOT_STATE = 11  /* since 1.02: once per position (rows = 1, pos0 = the
                                  * position), between V and HEAD_OUT: the state of
                                  * the K slots each head reads there, after the
                                  * position's writes, before its read: [1, H*K*(d_v+1)],
                                  * for slot slots[h*K + j] its S row then z; edits are
                                  * stored into the state (see rn_runtime.h) */
};

/* A flag of ramnet_run's points (since 1.02): the slot-state point once
 * per prefill chunk and layer — the chunk's rows, [rows, H*K*(d_v+1)] and
 * slots [rows, H*K], pos0 the chunk's first position, recorded by the
 * usual scan (threads over heads) — for a caller that only reads them (a
 * cache): edits of this copy change nothing. */
#define RAMNET_HOOK_SLOT_STATE_ROWS (1u << 31)

/* Called at each wanted point of each layer and prefill chunk with the
 * chunk's rows (the first at position pos0), row-major [rows, width]; data
 * may be edited in place.  Non-zero stops the run (the call returns 4,
 * RN_EINTR, "stopped by a hook ..."). */
typedef int (*ramnet_hook_fn)(void *user, int point, int layer, float *data, const uint32_t *slots, int rows,
                              int width, int64_t pos0);

/* ramnet_forward with interventions (specs as `--intervene` takes them,
 * docs/interventions.md; may be NULL with n_specs 0) and hooks (fn called
 * at the points whose bit is set in `points`; 0: none). */
int ramnet_run(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk,
               const char *const *specs, int n_specs, uint32_t points, ramnet_hook_fn fn, void *user);

/* Since 1.03: ramnet_run with the layers of the slot-state point chosen:
 * slot_layers NULL (every layer, as ramnet_run) or n_layers flags, non-zero
 * for a layer whose RAMNET_HOOK_SLOT_STATE is called.  Only those layers
 * scan position by position (or, with RAMNET_HOOK_SLOT_STATE_ROWS,
 * record their rows); the others scan as without the hook, heads at once,
 * with the same bits. */
int ramnet_run_layers(const ramnet_model *m, const int *tokens, int T, float *logits, int chunk,
                      const char *const *specs, int n_specs, uint32_t points, const unsigned char *slot_layers,
                      ramnet_hook_fn fn, void *user);

/* ---- Since 1.02: a head's memory, the patching figure ---- */

/* Run tokens[0..T) as ramnet_run does (interventions; no hooks, no logits)
 * and copy the memory state of head (layer, head) after the last token:
 * S[M, d_v] and z[M] (caller's buffers; M = d_p^order). */
int ramnet_head_state(const ramnet_model *m, const int *tokens, int T, int chunk, const char *const *specs,
                      int n_specs, int layer, int head, float *S, float *z);

/* Draw a patching sweep as `ramtrace patch --plot` does (.png, .svg or
 * .pdf, written atomically): n_rows rows of (layer, head, slot, recovered),
 * slot -1 for a whole head (the layers x heads matrix), else a restored
 * slot (a row beside it, in the order given); recovered is a fraction
 * (NaN drawn as 0).  metric: 0 logit-diff, 1 prob, 2 loss; answer: its
 * token (both for the title). */
int ramnet_plot_patching(const ramnet_model *m, int n_rows, const int *layer, const int *head, const int *slot,
                         const double *recovered, int metric, int answer, const char *path);

#endif
