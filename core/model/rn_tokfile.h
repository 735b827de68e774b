/* rn_tokfile.h — a model file's SentencePiece tokenizer lives beside it.
 *
 * A model with `tokenizer = spm:FILE` records only the .model's file name
 * (no directory) and, in model.bin, the checksum of its bytes; the .model is
 * the file of that name in the model file's directory.  Saving a model puts
 * a copy of its tokenizer there when none is (an identical file already
 * there is left alone; a different one of the same name is an error), and
 * loading one points the config at that file, from any working directory
 * (docs/model-format.md).
 */
#ifndef RN_TOKFILE_H
#define RN_TOKFILE_H

#include <stdint.h>

#include "rn_config.h"

/* Before c is saved to model_path: make sure its .model is beside
 * model_path (copying it, atomically, when needed); *sum receives the
 * checksum of its bytes (rn_spm_checksum).  c must be RN_TOK_SPM. */
int rn_tokfile_place(const rn_config *c, const char *model_path, uint64_t *sum, rn_error *err);

/* After c was read from model_path, where c->tok_file holds the recorded
 * name: replace it by the path of that name beside model_path, load it, and
 * check it (a SentencePiece model, vocab_size large enough, and when
 * want_sum != 0 the recorded checksum).  Errors name model_path. */
int rn_tokfile_resolve(rn_config *c, const char *model_path, uint64_t want_sum, rn_error *err);

/* The file-name part of a path (after the last '/'). */
const char *rn_tokfile_base(const char *path);

#endif
