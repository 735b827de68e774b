/* rn_cuda_stub.c — the CUDA backend's interface in a build without CUDA
 * (plain `make`): every entry point reports that the binary has no CUDA, so
 * the CPU build links and `--device cuda` fails with a clear message. */
#include "rn_cuda.h"

int rn_cuda_built(void) { return 0; }

int rn_cuda_device_count(void) { return -1; }

static int no_cuda(rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "this ramtrace was built without CUDA (rebuild with make CUDA=1)");
}

int rn_cuda_supported(const rn_config *c, rn_error *err)
{
    (void)c;
    return no_cuda(err);
}

int rn_cuda_rt_create(const rn_model *m, int max_chunk, rn_cuda_rt **out, rn_error *err)
{
    (void)m; (void)max_chunk;
    *out = NULL;
    return no_cuda(err);
}

void rn_cuda_rt_free(rn_cuda_rt *g) { (void)g; }

int rn_cuda_rt_set_precision(rn_cuda_rt *g, const rn_model *m, rn_precision p, rn_error *err)
{
    (void)g; (void)m; (void)p;
    return no_cuda(err);
}

int rn_cuda_rt_reset(rn_cuda_rt *g, rn_error *err)
{
    (void)g;
    return no_cuda(err);
}

int rn_cuda_decode(const float *a, const float *alpha, const rn_config *c, uint64_t cape_mask,
                   int n, int64_t pos0, uint32_t *addr, uint32_t *slot, float *w, rn_error *err)
{
    (void)a; (void)alpha; (void)c; (void)cape_mask; (void)n; (void)pos0; (void)addr; (void)slot;
    (void)w;
    return no_cuda(err);
}

int rn_cuda_forward(rn_cuda_rt *g, const int *tokens, int n, int64_t pos, float *logits,
                    int all_rows, const rn_probe *probe, rn_error *err)
{
    (void)g; (void)tokens; (void)n; (void)pos; (void)logits; (void)all_rows; (void)probe;
    return no_cuda(err);
}
