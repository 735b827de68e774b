/* rn_tokenizer.h — the tokenizers of DESIGN.md §2, and SentencePiece.
 *
 *   bytes: each byte of the text is a token 0..255; BOS = 256 is put first.
 *          vocab_size >= 257.
 *   ids:   the text is whitespace-separated decimal token ids, each in
 *          [0, vocab_size) (for synthetic tasks such as MQAR); no BOS.
 *   spm:F: the SentencePiece model in file F (rn_spm.h); the model's BOS id
 *          (when it has one) is put first.  vocab_size >= its pieces.
 *
 * Continuations are printed the same way: raw bytes (BOS and ids >= 256 are
 * not printed), ids separated by spaces, or each SentencePiece token's
 * bytes (rn_spm_token_bytes).
 */
#ifndef RN_TOKENIZER_H
#define RN_TOKENIZER_H

#include <stddef.h>
#include <stdio.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_file.h" /* rn_read_file */

#define RN_BOS 256

/* For a spm config: load its .model (once per process) and check that
 * vocab_size covers its pieces; RN_OK for the other tokenizers. */
int rn_tokenizer_check(const rn_config *cfg, rn_error *err);

/* The number of bytes of text token id stands for: 1 for a byte, 0 for
 * BOS, the decoded length of a SentencePiece token; 0 for the ids
 * tokenizer (its tokens are not text).  For bits per byte. */
size_t rn_token_nbytes(const rn_config *cfg, int id);

/* Tokenize text[0..len) for cfg's tokenizer into a malloc'd array.  origin
 * names the source in errors ("prompt.txt: token 3 ('x1') is not an
 * integer", "... id 9000 is outside the vocabulary [0, 8192)", "... is
 * empty").  An empty (or, for ids, all-whitespace) input is RN_EINPUT. */
int rn_tokenize(const rn_config *cfg, const char *text, size_t len, const char *origin,
                int **ids, int *n, rn_error *err);

/* Read a whole file and tokenize it (origin = path). */
int rn_tokenize_file(const rn_config *cfg, const char *path, int **ids, int *n, rn_error *err);


/* Print one generated token to f as the tokenizer prints continuations
 * (first: no leading separator for ids). */
void rn_token_print(const rn_config *cfg, int id, int first, FILE *f);

/* A short printable piece for token id (for traces and labels): bytes are
 * shown as the character, or \n, \t, \xNN escapes, BOS as <bos>; ids as the
 * decimal number; SentencePiece tokens as their decoded bytes escaped the
 * same way (control pieces by their name, e.g. <s>).  Writes at most cap bytes including the NUL. */
void rn_token_piece(const rn_config *cfg, int id, char *buf, size_t cap);

#endif
