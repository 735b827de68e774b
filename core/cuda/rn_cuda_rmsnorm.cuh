/* rn_cuda_rmsnorm.cuh — RMSNorm's kernels (rn_rmsnorm.c on the GPU), one
 * source for the CUDA inference runtime (rn_cuda.cu) and the GPU trainer
 * (rn_cuda_train.cu).
 *
 * forward:  out[n,D] = x[n,D]·rstd[n] ⊙ g[D], rstd = 1/sqrt(mean(x²) + eps)
 * backward: dx[n,D] += s·g·dy − s³/D·x·Σ(dy·g·x);  dg[D] += Σ_r dy·x·s
 *
 * The row sums are in double, as on the CPU, one block per row reduced by
 * rn_cu_block_sum (warp shuffles, then one warp over the warps' sums):
 * a fixed order, so deterministic, though not the CPU's serial one.  The
 * gain's gradient sums in float over the rows in a fixed order.  Blocks of
 * these kernels are a multiple of 32 threads, at most 1024.
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_RMSNORM_CUH
#define RN_CUDA_RMSNORM_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

/* The sum of every thread's v, returned to all threads of the block: each
 * warp adds its lanes by shuffles (lane i takes lane i + 16, then i + 8, …),
 * then warp 0 adds the warps' sums the same way.  Ends with a barrier, so
 * a following call may reuse the shared scratch. */
template <typename T> __device__ static inline T rn_cu_block_sum(T v)
{
    __shared__ T part[32];
    __shared__ T total;
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = (blockDim.x + 31) / 32;
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) part[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < nw ? part[lane] : (T)0;
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

/* One block per row; rstd may be NULL (inference keeps no activations). */
static __global__ void k_rmsnorm_forward(float *out, float *rstd, const float *x, const float *g, int D, float eps)
{
    const float *xr = x + (int64_t)blockIdx.x * D;
    float *o = out + (int64_t)blockIdx.x * D;
    double s = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) s += (double)xr[i] * xr[i];
    s = rn_cu_block_sum(s);
    const float rs = (float)(1.0 / sqrt(s / D + (double)eps));
    if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
    for (int i = threadIdx.x; i < D; i += blockDim.x) o[i] = xr[i] * rs * g[i];
}

/* dx of one row per block (added to dx). */
static __global__ void k_rmsnorm_backward_dx(float *dx, const float *dout, const float *x, const float *g,
                                             const float *rstd, int D)
{
    const int64_t r0 = (int64_t)blockIdx.x * D;
    const float *xr = x + r0, *dy = dout + r0;
    float *dxr = dx + r0;
    double dot = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) dot += (double)dy[i] * g[i] * xr[i];
    dot = rn_cu_block_sum(dot);
    double s = rstd[blockIdx.x], c = s * s * s * dot / D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) dxr[i] += (float)(s * g[i] * dy[i] - c * xr[i]);
}

/* The gain's gradient: block b owns columns 32b..32b+31 (launch
 * ceil(D / RN_CUDA_DG_COLS) blocks); its threads are blockDim/32 row lanes
 * of 32 columns (lane y sums rows y, y + blockDim/32, ... in order,
 * coalesced across the columns), then lane 0 adds the lanes' sums in lane
 * order: fixed order, so deterministic; spread over the rows so that D/32
 * blocks share the work instead of D threads each walking all n rows. */
#define RN_CUDA_DG_COLS 32
static __global__ void k_rmsnorm_backward_dg(float *dg, const float *dout, const float *x, const float *rstd,
                                             int n, int D)
{
    __shared__ float part[1024];
    const int cx = threadIdx.x % RN_CUDA_DG_COLS, ry = threadIdx.x / RN_CUDA_DG_COLS,
              ny = blockDim.x / RN_CUDA_DG_COLS;
    const int i = blockIdx.x * RN_CUDA_DG_COLS + cx;
    float acc = 0;
    if (i < D)
        for (int r = ry; r < n; r += ny) acc += dout[(int64_t)r * D + i] * x[(int64_t)r * D + i] * rstd[r];
    part[threadIdx.x] = acc;
    __syncthreads();
    if (ry == 0 && i < D) {
        float sum = dg[i];
        for (int y = 0; y < ny; y++) sum += part[y * RN_CUDA_DG_COLS + cx];
        dg[i] = sum;
    }
}

#endif
