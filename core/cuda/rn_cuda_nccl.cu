/* rn_cuda_nccl.cu — NCCL collectives over the GPU trainer's blocks for
 * data-parallel training (see rn_cuda_nccl.h).  Compiled with NCCL where
 * mk/cuda.mk found nccl.h (RN_HAVE_NCCL); else the entry points say the
 * build has none, as rn_cuda_nccl_stub.c does in builds without CUDA. */
extern "C" {
#include "rn_adamw.h"
#include "rn_error.h"
}
#include "rn_cuda_nccl.h"

#include <stdlib.h>
#include <string.h>

#ifdef RN_HAVE_NCCL
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

/* libnccl is opened at the first use, not linked: a binary without it on
 * the machine runs everything else (and the GPU machine's own NCCL, over
 * 200 MB, is not carried in scripts/gpu-bundle's bundle). */
static struct {
    void *h;
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    const char *(*GetErrorString)(ncclResult_t);
} nc;

static int nccl_load(rn_error *err)
{
    if (nc.h) return RN_OK;
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) return rn_seterr(err, RN_EINPUT, "NCCL: cannot load libnccl.so.2 (%s): put the CUDA toolkit's NCCL "
                                             "on the library path", dlerror());
#define SYM(f) (*(void **)&nc.f = dlsym(h, "nccl" #f))
    if (!SYM(GetUniqueId) || !SYM(CommInitRank) || !SYM(CommDestroy) || !SYM(ReduceScatter) || !SYM(AllGather) ||
        !SYM(GetErrorString)) {
        dlclose(h);
        return rn_seterr(err, RN_EINPUT, "NCCL: libnccl.so.2 lacks a function this build needs (NCCL 2.x)");
    }
#undef SYM
    nc.h = h;
    return RN_OK;
}

#define CU_TRY(call) do { \
        cudaError_t e_ = (call); \
        if (e_ != cudaSuccess) \
            return rn_seterr(err, RN_EINTERNAL, "CUDA: %s: %s", #call, cudaGetErrorString(e_)); \
    } while (0)
#define NC_TRY(call) do { \
        ncclResult_t r_ = (call); \
        if (r_ != ncclSuccess) \
            return rn_seterr(err, RN_EIO, "NCCL: %s: %s (did a rank die?)", #call, nc.GetErrorString(r_)); \
    } while (0)

struct rn_nccl {
    ncclComm_t comm;
    int rank, size;
    rn_cuda_trainer *tr;
    int64_t n, cs, lo, hi;   /* block length, shard length (padded), this rank's [lo, hi) */
    float *buf;              /* [size · cs] on the device */
};

extern "C" int rn_nccl_available(void) { return 1; }

extern "C" int rn_nccl_select_device(int local_rank, rn_error *err)
{
    int n = 0;
    CU_TRY(cudaGetDeviceCount(&n));
    if (n < 1) return rn_seterr(err, RN_EINPUT, "--device cuda: no CUDA device");
    CU_TRY(cudaSetDevice(local_rank % n));
    return RN_OK;
}

extern "C" int rn_nccl_unique_id(unsigned char id[RN_NCCL_ID_BYTES], rn_error *err)
{
    static_assert(sizeof(ncclUniqueId) == RN_NCCL_ID_BYTES, "ncclUniqueId size");
    int rc = nccl_load(err);
    if (rc) return rc;
    ncclUniqueId u;
    NC_TRY(nc.GetUniqueId(&u));
    memcpy(id, &u, sizeof u);
    return RN_OK;
}

extern "C" int rn_nccl_open(rn_nccl **out, rn_cuda_trainer *tr, const unsigned char id[RN_NCCL_ID_BYTES],
                            int size, int rank, rn_error *err)
{
    *out = NULL;
    int rc = nccl_load(err);
    if (rc) return rc;
    rn_nccl *c = (rn_nccl *)calloc(1, sizeof *c);
    if (!c) return rn_seterr(err, RN_ENOMEM, "out of memory");
    float *p, *g, *m1, *m2;
    rn_cuda_trainer_block(tr, &p, &g, &m1, &m2, &c->n);
    c->tr = tr;
    c->rank = rank;
    c->size = size;
    c->cs = (c->n + size - 1) / size;
    c->lo = c->cs * rank < c->n ? c->cs * rank : c->n;
    c->hi = c->lo + c->cs < c->n ? c->lo + c->cs : c->n;
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclResult_t r = nc.CommInitRank(&c->comm, size, u, rank);
    if (r != ncclSuccess) {
        free(c);
        return rn_seterr(err, RN_EIO, "NCCL: ncclCommInitRank (rank %d of %d): %s", rank, size, nc.GetErrorString(r));
    }
    cudaError_t e = cudaMalloc((void **)&c->buf, sizeof(float) * (size_t)(c->cs * size));
    if (e != cudaSuccess) {
        rn_nccl_close(c);
        return rn_seterr(err, RN_ENOMEM, "CUDA: %zu bytes for the NCCL buffer: %s",
                         sizeof(float) * (size_t)(c->cs * size), cudaGetErrorString(e));
    }
    *out = c;
    return RN_OK;
}

extern "C" void rn_nccl_close(rn_nccl *c)
{
    if (!c) return;
    if (c->comm) nc.CommDestroy(c->comm);
    cudaFree(c->buf);
    free(c);
}

/* The shards of the device block x gathered back into x on every rank
 * (each rank's [lo, hi) of x into buf, ncclAllGather in place, back). */
static int gather_block(rn_nccl *c, float *x, rn_error *err)
{
    float *mine = c->buf + c->rank * c->cs;
    CU_TRY(cudaMemcpy(mine, x + c->lo, sizeof(float) * (size_t)(c->hi - c->lo), cudaMemcpyDeviceToDevice));
    NC_TRY(nc.AllGather(mine, c->buf, (size_t)c->cs, ncclFloat, c->comm, 0));
    CU_TRY(cudaMemcpy(x, c->buf, sizeof(float) * (size_t)c->n, cudaMemcpyDeviceToDevice));
    CU_TRY(cudaStreamSynchronize(0));
    return RN_OK;
}

extern "C" int rn_nccl_reduce_grads(rn_nccl *c, double *sumsq, rn_error *err)
{
    float *p, *g, *m1, *m2;
    int64_t n;
    rn_cuda_trainer_block(c->tr, &p, &g, &m1, &m2, &n);
    const size_t pad = (size_t)(c->cs * c->size - c->n);
    CU_TRY(cudaMemcpy(c->buf, g, sizeof(float) * (size_t)c->n, cudaMemcpyDeviceToDevice));
    if (pad) CU_TRY(cudaMemset(c->buf + c->n, 0, sizeof(float) * pad));
    /* in place: rank r's sums land at buf + r·cs */
    NC_TRY(nc.ReduceScatter(c->buf, c->buf + c->rank * c->cs, (size_t)c->cs, ncclFloat, ncclSum, c->comm, 0));
    CU_TRY(cudaStreamSynchronize(0));
    return rn_cuda_trainer_sumsq(c->tr, c->buf + c->rank * c->cs, c->hi - c->lo, sumsq, err);
}

extern "C" int rn_nccl_adamw(rn_nccl *c, const rn_adamw_opts *o, int64_t step, double lr, double gscale,
                             rn_error *err)
{
    int rc = rn_cuda_trainer_adamw_range(c->tr, c->buf + c->rank * c->cs, o, step, lr, gscale, c->lo, c->hi, err);
    if (rc) return rc;
    float *p, *g, *m1, *m2;
    int64_t n;
    rn_cuda_trainer_block(c->tr, &p, &g, &m1, &m2, &n);
    return gather_block(c, p, err);
}

extern "C" int rn_nccl_gather_moments(rn_nccl *c, rn_error *err)
{
    float *p, *g, *m1, *m2;
    int64_t n;
    rn_cuda_trainer_block(c->tr, &p, &g, &m1, &m2, &n);
    int rc = gather_block(c, m1, err);
    return rc ? rc : gather_block(c, m2, err);
}

#else /* no NCCL in this CUDA toolkit */

static int no_nccl(rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "--dist with --device cuda needs NCCL: this build's CUDA toolkit has no nccl.h");
}

extern "C" int rn_nccl_available(void) { return 0; }
extern "C" int rn_nccl_select_device(int, rn_error *err) { return no_nccl(err); }
extern "C" int rn_nccl_unique_id(unsigned char *, rn_error *err) { return no_nccl(err); }
extern "C" int rn_nccl_open(rn_nccl **out, rn_cuda_trainer *, const unsigned char *, int, int, rn_error *err)
{
    *out = NULL;
    return no_nccl(err);
}
extern "C" void rn_nccl_close(rn_nccl *) {}
extern "C" int rn_nccl_reduce_grads(rn_nccl *, double *sumsq, rn_error *err)
{
    *sumsq = 0;
    return no_nccl(err);
}
extern "C" int rn_nccl_adamw(rn_nccl *, const rn_adamw_opts *, int64_t, double, double, rn_error *err)
{
    return no_nccl(err);
}
extern "C" int rn_nccl_gather_moments(rn_nccl *, rn_error *err) { return no_nccl(err); }

#endif
