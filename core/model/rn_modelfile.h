/* rn_modelfile.h — loading and saving models: the project's own model.bin
 * (versioned, checksummed, 64-byte-aligned tensors, loaded with mmap; see
 * docs/model-format.md) and safetensors with DESIGN.md §2's tensor names and
 * `ramnet.*` metadata.  The format is chosen by extension: `.safetensors`
 * is safetensors, anything else is model.bin.  Saving is atomic (temp file,
 * fsync, rename).  Every malformed file is RN_EINPUT with a one-line
 * message naming the file and the problem.
 */
#ifndef RN_MODELFILE_H
#define RN_MODELFILE_H

#include <stdint.h>

#include "rn_model.h"

/* Load path into m (model.bin: mmapped read-only after full validation,
 * checksum included; safetensors: copied into an owned block). */
int rn_model_load(rn_model *m, const char *path, rn_error *err);

/* Save m to path (format by extension), atomically. */
int rn_model_save(const rn_model *m, const char *path, rn_error *err);

/* 64-bit checksum of the float32 parameter block (as a float32 model.bin
 * stores it; a 16-bit file's header holds the checksum of its 16-bit
 * block instead); the model's identity in traces (16 hex digits). */
uint64_t rn_model_checksum(const rn_model *m);

/* Load in and save it as out (formats by extension); lossless both ways. */
int rn_model_convert(const char *in, const char *out, rn_error *err);

/* The same with out in the given storage (rn_storage.h), or, for -1, in
 * in's.  Narrowing to bf16/fp16 rounds each weight to nearest even
 * (RN_EINPUT naming the tensor when one does not fit fp16). */
int rn_model_convert_as(const char *in, const char *out, int storage, rn_error *err);

/* 1 when path names a safetensors file (by extension). */
int rn_path_is_safetensors(const char *path);

#endif
