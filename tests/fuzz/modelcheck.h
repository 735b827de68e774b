/* modelcheck.h — the part shared by the model.bin and safetensors fuzz
 * targets: load a file, and when it loads, check the model and that it
 * converts losslessly to the other format and back. */
#ifndef FUZZ_MODELCHECK_H
#define FUZZ_MODELCHECK_H

/* Load path with rn_model_load; on success save the model as other (the
 * other format, by extension), load that and compare config and every
 * parameter bit for bit.  Aborts on a broken promise. */
void fuzz_model_file(const char *path, const char *other);

#endif
