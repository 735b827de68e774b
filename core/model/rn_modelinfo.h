/* rn_modelinfo.h — a description of a model (`ramtrace info`), as text or rows:
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

/* The same facts as rows section,key,value in fmt (RN_FMT_*,
 * core/base/rn_rows.h): section file (path, format, size_bytes, checksum),
 * config (every key; integers and reals as numbers), derived (d_k, slots,
 * parameters, parameters_noembed, total_state_floats/_bytes,
 * active_state_floats/_bytes per token) and cape_heads (key layerN, value
 * the CAPE heads' indices, comma-separated).  RN_EIO when writing fails. */
int rn_model_info_rows(FILE *f, int fmt, const rn_model *m, const char *path, rn_error *err);

#endif
