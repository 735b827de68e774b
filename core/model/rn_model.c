/* rn_model.c — creation and release of rn_model. */
#include "rn_model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rn_memlimit.h"

int rn_model_create_zero(rn_model *m, const rn_config *c, rn_error *err)
{
    memset(m, 0, sizeof *m);
    int rc = rn_config_validate(c, err);
    if (rc) return rc;
    m->cfg = *c;
    m->n_block = rn_params_layout(c, NULL);
    rc = rn_memlimit_check("the parameter block", (double)m->n_block * sizeof(rn_real), err);
    if (rc) return rc;
    m->owned = aligned_alloc(64, ((size_t)m->n_block * sizeof(rn_real) + 63) / 64 * 64);
    if (!m->owned)
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating %lld parameters", (long long)m->n_block);
    memset(m->owned, 0, (size_t)m->n_block * sizeof(rn_real));
    m->params = m->owned;
    rn_weights_carve(&m->cfg, m->params, &m->w);
    return RN_OK;
}

int rn_model_create_random(rn_model *m, const rn_config *c, uint64_t seed, rn_error *err)
{
    int rc = rn_model_create_zero(m, c, err);
    if (rc) return rc;
    rn_params_init(&m->cfg, m->params, seed);
    return RN_OK;
}

void rn_model_free(rn_model *m)
{
    if (!m) return;
    free(m->owned);
    if (m->map) munmap(m->map, m->map_len);
    memset(m, 0, sizeof *m);
}
