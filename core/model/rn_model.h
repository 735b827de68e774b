/* rn_model.h — a loaded RAM-Net model: config + one parameter block carved
 * into named weights.  The block is either owned (malloc'd, e.g. a fresh
 * random model or a model being trained) or mapped read-only from a model.bin
 * file (see rn_modelfile.h). */
#ifndef RN_MODEL_H
#define RN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_params.h"

typedef struct {
    rn_config cfg;
    rn_weights w;
    rn_real *params;      /* the parameter block (rn_params_layout elements) */
    int64_t n_block;      /* elements in the block, padding included */
    /* ownership: exactly one of these is set */
    rn_real *owned;       /* malloc'd block */
    void *map;            /* mmapped file */
    size_t map_len;
    int storage;          /* how its file stores the parameters (rn_storage.h; 0 = float32):
                             kept by loading and used by saving */
} rn_model;

/* Allocate a model for a validated config with seeded random init. */
int rn_model_create_random(rn_model *m, const rn_config *c, uint64_t seed, rn_error *err);

/* Allocate a zeroed model (block owned) for a validated config. */
int rn_model_create_zero(rn_model *m, const rn_config *c, rn_error *err);

void rn_model_free(rn_model *m);

#endif
