/* rn_checkpoint.h — training checkpoints: the model's config, the step
 * reached, the parameters and both AdamW moment buffers, so a run resumes
 * exactly where it stopped.  One file, written atomically (rn_atomic.h),
 * checksummed; float builds only.
 *
 * Layout (little-endian): "RNCKPT01", u32 version (2), u32 config text
 * length, the config text (rn_config_format), u32 recipe length, the recipe
 * (the training keys that shape the run, as `key = value` lines; see
 * rn_train_recipe), i64 step, i64 block elements, u64 seed, params[n],
 * m1[n], m2[n] (float32), u64 FNV-1a of all before. */
#ifndef RN_CHECKPOINT_H
#define RN_CHECKPOINT_H

#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_model.h"
#include "rn_real.h"

int rn_checkpoint_save(const char *path, const rn_config *c, const char *recipe, int64_t step, uint64_t seed,
                       const rn_real *params, const rn_real *m1, const rn_real *m2,
                       int64_t n_block, rn_error *err);

/* Load a checkpoint written for config c and recipe (RN_EINPUT naming the
 * file when it is missing, corrupt, truncated, for a different config, or
 * for a different recipe: the message quotes the first line that differs).
 * Fills params/m1/m2 (n_block elements each), *step and *seed. */
int rn_checkpoint_load(const char *path, const rn_config *c, const char *recipe, int64_t *step, uint64_t *seed,
                       rn_real *params, rn_real *m1, rn_real *m2, int64_t n_block,
                       rn_error *err);

/* The model a checkpoint holds, without knowing its config beforehand
 * (`ramtrace convert CKPT MODEL`): reads the header's config, then loads and
 * verifies the whole file as rn_checkpoint_load does (checksum included)
 * into a new model m (rn_model_free releases it) and *step.  RN_EINPUT
 * naming the file when it is not a checkpoint or is damaged. */
int rn_checkpoint_read_model(const char *path, rn_model *m, int64_t *step, rn_error *err);

/* The header of a checkpoint without its parameters: the recipe (*recipe,
 * malloc'd, NUL-terminated; the caller frees it) and the step reached.
 * The config is parsed and validated but the checksum is not verified
 * here: rn_checkpoint_load does that.  RN_EINPUT naming the file when it
 * is missing, not a checkpoint or its header is damaged. */
int rn_checkpoint_peek(const char *path, char **recipe, int64_t *step, rn_error *err);

/* The first line where the `key = value` texts a (stored) and b (this
 * run) differ, for a message: "'steps = 6500', this run has 'steps =
 * 8500'" (or "no '...'" / "'...', this run has no such key"). */
void rn_checkpoint_diff_lines(const char *a, const char *b, char *out, size_t n);

#endif
