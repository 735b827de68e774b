/* rn_config.h — the RAM-Net model configuration (DESIGN.md §2).
 *
 * A config is a plain struct of dimensions and hyper-parameters.  It is read
 * from `key = value` files (samples/configs/NAME.cfg, docs/config.md), from
 * command-line flags that override keys, from model.bin headers and from
 * safetensors metadata, and always checked by rn_config_validate before use.
 * Derived sizes (d_k = U·d_p, M = d_p^U) are computed, never stored apart.
 */
#ifndef RN_CONFIG_H
#define RN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"

#define RN_MAX_LAYERS 256      /* per-layer CAPE masks are stored inline */
#define RN_MAX_HEADS 64        /* a CAPE mask is one 64-bit word per layer */
#define RN_MAX_SLOTS (1LL << 31) /* M must be <= 2^31 (slots fit in uint32) */
#define RN_MAX_TOPK 1024

enum { RN_TOK_BYTES = 0, RN_TOK_IDS = 1, RN_TOK_SPM = 2 };
#define RN_TOK_FILE_MAX 256    /* a SentencePiece .model's path, NUL included */

typedef struct {
    int vocab_size;     /* V */
    int d_model;        /* D */
    int n_layers;       /* L */
    int n_heads;        /* H */
    int d_p;            /* address chunk size */
    int order;          /* U: number of chunks */
    int d_v;            /* value width per head */
    int top_k;          /* K */
    int d_ff;           /* F: MLP width */
    float gamma;        /* PDMA power, >= 0 */
    float tau;          /* softmax temperature, > 0 */
    float eps;          /* normaliser epsilon, >= 0 */
    float norm_eps;     /* RMSNorm epsilon, > 0 */
    int tie_embeddings; /* 1: lm_head is embed */
    int tokenizer;      /* RN_TOK_BYTES, RN_TOK_IDS or RN_TOK_SPM */
    char tok_file[RN_TOK_FILE_MAX]; /* RN_TOK_SPM: the .model file (`tokenizer =
                         * spm:FILE`), as this process opens it: a path as given
                         * in a config or option, or, in a loaded model, the file
                         * beside the model file (rn_modelfile.h) */
    uint64_t cape_mask[RN_MAX_LAYERS]; /* bit n set: head n of that layer uses CAPE */
} rn_config;

/* A small, valid default (the bytes tokenizer, 2 layers). */
void rn_config_default(rn_config *c);

/* Derived sizes.  Valid only on a validated config. */
static inline int rn_config_dk(const rn_config *c) { return c->order * c->d_p; }
int64_t rn_config_slots(const rn_config *c); /* M = d_p^U, or -1 on overflow */
static inline int rn_config_cape(const rn_config *c, int layer, int head)
{
    return (int)((c->cape_mask[layer] >> head) & 1u);
}

/* Check every field (dimensions > 0, products that do not overflow, M <= 2^31,
 * K <= M, masks within n_heads, ...).  Returns RN_OK or RN_EINPUT with a
 * message naming the offending key. */
int rn_config_validate(const rn_config *c, rn_error *err);

/* Set one key from its text value (the names of docs/config.md, which are the
 * safetensors metadata names without the `ramnet.` prefix: vocab_size,
 * d_model, n_layers, n_heads, d_p, order, d_v, top_k, d_ff, gamma, tau, eps,
 * norm_eps, tie_embeddings, cape_masks, tokenizer: bytes, ids or spm:FILE).  Also accepts `cape`, a
 * shorthand: `all`, `none`, or `first:N` (all heads of the first N layers).
 * Returns RN_OK, RN_EINPUT on a bad value, or -1 when the key is unknown
 * (so callers such as the trainer can try their own keys). */
int rn_config_set(rn_config *c, const char *key, const char *value, rn_error *err);

/* Callback for keys rn_config_set does not know; return RN_OK or an error. */
typedef int (*rn_config_extra_fn)(void *user, const char *key, const char *value,
                                  rn_error *err);

/* Parse `key = value` lines ('#' comments, blank lines) from text / a file.
 * Unknown keys go to extra (or are an error when extra is NULL).  `origin`
 * names the source in messages ("file.cfg:12: ..."). */
int rn_config_parse_text(rn_config *c, const char *text, const char *origin,
                         rn_config_extra_fn extra, void *user, rn_error *err);
int rn_config_load_file(rn_config *c, const char *path, rn_config_extra_fn extra,
                        void *user, rn_error *err);

/* Clear CAPE bits of heads >= n_heads and masks of layers >= n_layers: used
 * when a command-line override shrinks a config that a file (or the
 * defaults) described, so stale masks do not make it invalid. */
void rn_config_clip_masks(rn_config *c);

/* Write the config as `key = value` lines (parseable by the above) into buf.
 * Returns the length it needed (like snprintf). */
size_t rn_config_format(const rn_config *c, char *buf, size_t cap);

/* The tokenizer value: bytes, ids or spm:FILE (cap >= RN_TOK_FILE_MAX + 8
 * holds every one).  Returns buf. */
const char *rn_config_tokenizer_name(const rn_config *c, char *buf, size_t cap);

/* The cape_masks value: per-layer decimal masks, comma separated. */
size_t rn_config_format_masks(const rn_config *c, char *buf, size_t cap);

/* The paper's Table 3 state sizes in floats (the parameter count,
 * rn_config_param_count, is rn_params.h's: it sums the parameter table), counting each slot's d_v values and its
 * normaliser z: total = Σ_layers,heads M·(d_v+1) (28.8M for the paper's
 * 340M model, as in its Table 3); active per token = Σ_layers,heads
 * 2·K·(d_v+1) (K slots written and K read: 0.4M for that model). */
int64_t rn_config_total_state(const rn_config *c);
int64_t rn_config_active_state(const rn_config *c);

#endif
