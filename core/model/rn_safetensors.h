/* rn_safetensors.h — reading and writing models as safetensors files.
 *
 * The standard layout: an 8-byte little-endian header length N, N bytes of
 * JSON (padded with spaces to a multiple of 8), then the tensor data.
 * Tensors carry DESIGN.md §2's names, dtype "F32" and PyTorch shapes
 * [out, in]; `__metadata__` holds every `ramnet.*` config key as a string.
 * The reader parses the JSON header with a small strict parser of its own
 * and refuses anything that lies (offsets, shapes, dtypes, missing or extra
 * tensors).  rn_model_load/rn_model_save (rn_modelfile.h) call these for
 * paths ending in `.safetensors`.
 */
#ifndef RN_SAFETENSORS_H
#define RN_SAFETENSORS_H

#include "rn_model.h"

/* Read path into m (owned block).  RN_EINPUT with a one-line message naming
 * the file on any malformed input. */
int rn_safetensors_load(rn_model *m, const char *path, rn_error *err);

/* Write m to path atomically. */
int rn_safetensors_save(const rn_model *m, const char *path, rn_error *err);

#endif
