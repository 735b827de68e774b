/* rn_cuda_nccl_stub.c — rn_cuda_nccl.h in a build without CUDA: every
 * entry point reports that the binary has no NCCL, so `train --device
 * cuda --dist` is refused with one line. */
#include "rn_cuda_nccl.h"

#include <stddef.h>

static int no_nccl(rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "--dist with --device cuda needs a CUDA build with NCCL (make CUDA=1 "
                                     "where the CUDA toolkit has nccl.h)");
}

int rn_nccl_available(void) { return 0; }

int rn_nccl_select_device(int local_rank, rn_error *err)
{
    (void)local_rank;
    return no_nccl(err);
}

int rn_nccl_unique_id(unsigned char id[RN_NCCL_ID_BYTES], rn_error *err)
{
    (void)id;
    return no_nccl(err);
}

int rn_nccl_open(rn_nccl **out, rn_cuda_trainer *tr, const unsigned char id[RN_NCCL_ID_BYTES], int size,
                 int rank, rn_error *err)
{
    (void)tr; (void)id; (void)size; (void)rank;
    *out = NULL;
    return no_nccl(err);
}

void rn_nccl_close(rn_nccl *c) { (void)c; }

int rn_nccl_reduce_grads(rn_nccl *c, double *sumsq, rn_error *err)
{
    (void)c;
    *sumsq = 0;
    return no_nccl(err);
}

int rn_nccl_adamw(rn_nccl *c, const rn_adamw_opts *o, int64_t step, double lr, double gscale, rn_error *err)
{
    (void)c; (void)o; (void)step; (void)lr; (void)gscale;
    return no_nccl(err);
}

int rn_nccl_gather_moments(rn_nccl *c, rn_error *err)
{
    (void)c;
    return no_nccl(err);
}
