/* rn_cuda_nccl.h — the GPU side of data-parallel training (`ramtrace
 * train --device cuda --dist …`): one GPU per rank, the GPU trainer's
 * gradients reduce-scattered and its parameters all-gathered with NCCL
 * (ZeRO-1 as on the CPU, rn_dist.h), the scalars (labelled rows, loss,
 * the norm's partial sums) over MPI by the caller.
 *
 * NCCL's shards are equal: the block of n elements is padded to N·⌈n/N⌉
 * and rank r owns [r·⌈n/N⌉, (r+1)·⌈n/N⌉) ∩ [0, n).  Built from
 * rn_cuda_nccl.cu where the CUDA toolkit has nccl.h (mk/cuda.mk defines
 * RN_HAVE_NCCL); otherwise every entry point reports that the build has
 * no NCCL (rn_cuda_nccl_stub.c in builds without CUDA).
 */
#ifndef RN_CUDA_NCCL_H
#define RN_CUDA_NCCL_H

#include <stdint.h>

#include "rn_adamw.h"
#include "rn_cuda_train.h"
#include "rn_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's unique id (ncclUniqueId) travels between ranks as these bytes. */
enum { RN_NCCL_ID_BYTES = 128 };

typedef struct rn_nccl rn_nccl;

/* 1 when this build has NCCL. */
int rn_nccl_available(void);

/* This rank's GPU: device local_rank mod the devices present (ranks on
 * one node take one GPU each).  Before the GPU trainer is made. */
int rn_nccl_select_device(int local_rank, rn_error *err);

/* A new unique id (rank 0; the others receive it from the rendezvous). */
int rn_nccl_unique_id(unsigned char id[RN_NCCL_ID_BYTES], rn_error *err);

/* Join the communicator of `size` ranks named by id as `rank`, for tr's
 * blocks (one padded device buffer, allocated here once). */
int rn_nccl_open(rn_nccl **out, rn_cuda_trainer *tr, const unsigned char id[RN_NCCL_ID_BYTES], int size,
                 int rank, rn_error *err);
void rn_nccl_close(rn_nccl *c);

/* Sum the ranks' gradients into this rank's shard (ncclReduceScatter);
 * *sumsq = Σ g² over the shard (for the global norm). */
int rn_nccl_reduce_grads(rn_nccl *c, double *sumsq, rn_error *err);

/* AdamW on this rank's shard of the summed gradients (the arithmetic of
 * rn_adamw_update), then every rank's parameters from the shards
 * (ncclAllGather). */
int rn_nccl_adamw(rn_nccl *c, const rn_adamw_opts *o, int64_t step, double lr, double gscale, rn_error *err);

/* Every rank's moments whole from the shards (before they are downloaded
 * for a checkpoint). */
int rn_nccl_gather_moments(rn_nccl *c, rn_error *err);

#ifdef __cplusplus
}
#endif

#endif
