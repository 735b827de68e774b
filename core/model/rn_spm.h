/* rn_spm.h — SentencePiece tokenizers behind a C interface.
 *
 * SentencePiece (Debian's libsentencepiece) is C++; this module is the only
 * C++ in the library (rn_spm.cc) and hands C callers opaque handles.  A
 * loaded model is immutable and shared: rn_spm_get loads each .model file
 * once per process and keeps it for the life of the process (the cache is
 * guarded by a mutex), so the tokenizer functions of rn_tokenizer.h can find
 * it from a config's file name on any thread without owning it.
 *
 * Token bytes: every id has the bytes it stands for in a decoded text,
 * computed once at load: a byte-fallback piece <0xNN> is that byte, a
 * control piece (<s>, </s>) nothing, the unknown piece " \xe2\x81\x87 " as
 * SentencePiece decodes it, any other piece its text with U+2581 (the
 * word boundary mark) as a space.  Concatenated, they are the decoded text
 * (SentencePiece's own decoder also drops the one space the model's
 * `add_dummy_prefix` puts before the text).
 */
#ifndef RN_SPM_H
#define RN_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "rn_error.h"

typedef struct rn_spm rn_spm;

/* The model of the .model file at path, loaded on first use (RN_EINPUT
 * naming path when it cannot be read or is not a SentencePiece model). */
int rn_spm_get(const char *path, const rn_spm **spm, rn_error *err);

int rn_spm_vocab(const rn_spm *s);      /* number of pieces */
int rn_spm_bos(const rn_spm *s);        /* the BOS id, or -1 when the model has none */
uint64_t rn_spm_checksum(const rn_spm *s); /* rn_checksum64 of the .model file's bytes */
const char *rn_spm_path(const rn_spm *s);  /* the path it was loaded from */
int rn_spm_by_line(const rn_spm *s);       /* 1: rn_spm_encode goes line by line (below) */

/* Encode text[0..len) into a malloc'd id array (no BOS).  *n may be 0.
 * A model that keeps every byte and has no piece spanning a newline (one
 * trained by `ramtrace tokenizer train`) encodes the text line by line: the
 * ids of each line, then those of "\n" alone, so memory and time grow with
 * the longest line, not the text, and a text cut after any newline encodes
 * to the concatenation of its parts' ids (what shards rely on).  Since no
 * piece spans a newline, these are the ids of SentencePiece's Encode of the
 * whole text too, but for ties between equally scored segmentations.  Any
 * other model (one that normalises, or puts a space before the text, as
 * Llama 2's) encodes the whole text in one call. */
int rn_spm_encode(const rn_spm *s, const char *text, size_t len, int **ids, int *n, rn_error *err);

/* The bytes id stands for (see above); *len receives their count.  An id
 * outside the vocabulary has none. */
const char *rn_spm_token_bytes(const rn_spm *s, int id, size_t *len);

/* The piece of id as the model spells it (U+2581 and <0xNN> included). */
const char *rn_spm_piece(const rn_spm *s, int id);

/* Train a model with n of SentencePiece's trainer options (spm_train's
 * flags without the dashes: keys[i] = "vocab_size", vals[i] = "8000"; no
 * model_prefix) and return the serialized .model in a malloc'd buffer. */
int rn_spm_train(const char *const *keys, const char *const *vals, int n, char **model, size_t *len,
                 rn_error *err);

#ifdef __cplusplus
}
#endif

#endif
