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

#define RAMNET_API_VERSION 100 /* major * 100 + minor */
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

#endif
