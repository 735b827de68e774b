/* rn_modelinfo.h — a human-readable description of a model (`ramtrace info`):
 * its config, derived sizes (d_k, M, parameters with and without
 * embeddings, the paper's Table 3 total and active state), CAPE heads per
 * layer, checksum and file size. */
#ifndef RN_MODELINFO_H
#define RN_MODELINFO_H

#include <stdio.h>

#include "rn_model.h"

/* Parameters excluding the word embedding and an untied lm_head (the
 * paper's Table 3 footnote 2). */
int64_t rn_config_param_count_noembed(const rn_config *c);

/* Write the description of m, loaded from path, to f. */
void rn_model_describe(FILE *f, const rn_model *m, const char *path);

#endif
