/* modelcheck.c — modelcheck.h: what the model.bin and safetensors
 * targets check once a file has been written. */
#include "modelcheck.h"

#include <string.h>

#include "fuzz.h"
#include "rn_modelfile.h"
#include "rn_params.h"

void fuzz_model_file(const char *path, const char *other)
{
    rn_model m, back;
    rn_error err = { 0 };
    int rc = rn_model_load(&m, path, &err);
    if (rc) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_model_load");
        return;
    }
    fuzz_check(rn_config_validate(&m.cfg, &err) == RN_OK, "loaded an invalid config: %s", err.msg);
    int64_t want = rn_params_layout(&m.cfg, NULL);
    fuzz_check(m.n_block == want, "block of %lld floats, the config needs %lld", (long long)m.n_block,
               (long long)want);
    /* touch every parameter (ASan: the block is as long as it claims) */
    uint32_t x = 0;
    for (int64_t i = 0; i < m.n_block; i++) {
        uint32_t u;
        memcpy(&u, &m.params[i], 4);
        x ^= u;
    }
    (void)x;
    uint64_t sum = rn_model_checksum(&m);
    rc = rn_model_save(&m, other, &err);
    fuzz_check(rc == RN_OK, "a loaded model does not save as %s: %s", other, err.msg);
    rc = rn_model_load(&back, other, &err);
    fuzz_check(rc == RN_OK, "a saved model does not load back: %s", err.msg);
    fuzz_check(back.n_block == m.n_block, "%s", "conversion changed the block size");
    fuzz_check(!memcmp(back.params, m.params, (size_t)m.n_block * sizeof *m.params), "%s",
               "conversion changed a parameter");
    fuzz_check(rn_model_checksum(&back) == sum, "%s", "conversion changed the checksum");
    char a[16384], b[16384];
    rn_config_format(&m.cfg, a, sizeof a);
    rn_config_format(&back.cfg, b, sizeof b);
    fuzz_check(!strcmp(a, b), "conversion changed the config:\n%s\n---\n%s", a, b);
    rn_model_free(&back);
    rn_model_free(&m);
}
