/* rn_cuda.cu — the CUDA backend: inference (prefill over chunks of rows and
 * the one-token step) with weights and memory state resident on the GPU.
 * Same math and conventions as the CPU path (core/infer/rn_runtime.c and the
 * layers it calls); docs/cuda.md gives the design and the precision notes.
 *
 * Per layer, for n rows: RMSNorm, the q/k/v products, address decoding of
 * reads and writes in one launch (a warp per (row, head): the exact beam
 * top-K of rn_cuda_topk.h's arithmetic, CAPE), the PDMA scan (chunks of >=
 * RN_CUDA_SEG_MIN rows: the slot-parallel scan of rn_cuda_scan.h; shorter
 * ones: one block per head, one thread per value column plus one for z,
 * sequential over rows), the output product added to the residual,
 * RMSNorm, SwiGLU MLP.  With a probe attached, each layer's accesses come
 * back in one copy and are reported as the CPU reports them.  Products of
 * several rows are cuBLAS's (rn_cuda_gemm.h): FP32, TF32 only when asked
 * for.  Products of one row (the step, and the head after a prefill) are
 * our GEMV (rn_cuda_gemv.cuh) with RMSNorm fused into the q/k/v, gate/up
 * and head products and SwiGLU into the down product, so a step's layer is
 * six launches.  Everything runs on the runtime's own stream; the
 * one-token step is captured once as a CUDA graph and replayed.
 *
 * Precision (rn_cuda_rt_set_precision): fp32, or bf16 — the weight
 * matrices and the embedding held on the device in bf16 only (half the
 * bytes), the step's GEMV reading them with FP32 activations and
 * arithmetic (the CPU's --precision bf16 computes the same thing), the
 * prefill's products on the bf16 tensor cores over the activations rounded
 * to bf16 (rn_cu_k_to_bf16), FP32 accumulation.  Norm gains, α, the
 * decoder, the scan and the logits stay FP32 either way.
 *
 * The kernels of the layers it shares with the GPU trainer are in one
 * header per layer, included by both (rn_cuda_embed.cuh, _rmsnorm.cuh,
 * _swiglu.cuh, _pdma.cuh, _addrwarp.cuh; the decoder's arithmetic in
 * rn_cuda_topk.h), so
 * inference and training run the same kernel code.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" { /* the C library's headers */
#include "rn_cuda.h"
#include "rn_cuda_gemm.h"
#include "rn_bf16.h"
#include "rn_config.h"
#include "rn_params.h"
#include "rn_precision.h"
}
#include "rn_cuda_addrwarp.cuh"
#include "rn_cuda_bf16.cuh"
#include "rn_cuda_embed.cuh"
#include "rn_cuda_gemv.cuh"
#include "rn_cuda_pdma.cuh"
#include "rn_cuda_rmsnorm.cuh"
#include "rn_cuda_swiglu.cuh"
#include "rn_cuda_topk.h"

/* Fail the calling function with the CUDA error's text. */
#define CU_TRY(call) do { \
        cudaError_t e_ = (call); \
        if (e_ != cudaSuccess) \
            return rn_seterr(err, RN_EINTERNAL, "CUDA: %s: %s", #call, cudaGetErrorString(e_)); \
    } while (0)

/* The weight matrices of one layer on the device: float or uint16_t (bf16)
 * arrays by the runtime's precision. */
typedef struct { const void *wq, *wk, *wv, *wo, *gate, *up, *down; } cu_mats;

struct rn_cuda_rt {
    rn_config c;
    int64_t M;
    int chunk;
    int bf16;                  /* the matrices in bf16 (rn_cuda_rt_set_precision) */
    float *params;             /* fp32: the model's parameter block; bf16: its FP32
                                * tensors only (gains, α), packed */
    uint16_t *w16;             /* bf16: the matrices and embedding, packed (else NULL) */
    uint16_t *a16;             /* bf16: a prefill product's input rounded to bf16 */
    rn_weights w;              /* device addresses of the FP32 tensors (gains, α) */
    const void *embed, *lm_head; /* device addresses of the matrices, in the */
    cu_mats mat[RN_MAX_LAYERS];  /* runtime's precision */
    float *S, *z;              /* [L,H,M,dv], [L,H,M] */
    float *x, *hb, *q, *k, *v, *o, *g, *u, *logits;
    float *qkv1, *gu1;         /* one row's [q|k|v] and [gate|up] (the step's fused products) */
    uint32_t *acc;             /* the accesses of a chunk, 6 arrays of C·H·K (below) */
    uint32_t *host_acc;        /* pinned host copy of them, for a probe */
    /* slot-parallel scan (chunks of >= RN_CUDA_SEG_MIN rows): H·C·K events */
    uint32_t *sk, *sk2, *sv, *sv2; /* sort keys (slot) and values (event), in and out */
    float *sst;                    /* [H·C·K, d_v+1] state after each sorted write */
    void *cub_tmp;
    size_t cub_bytes;
    int *tok;
    int64_t *pos;              /* the first row's position (device), read by the decoder */
    cudaStream_t st;           /* every operation of the runtime runs on this stream */
    cudaGraphExec_t step;      /* the one-token forward, captured at the first step */
    int step_state;            /* 0 not captured yet, 1 captured, -1 capture failed: no graph */
    int broken;                /* a precision switch failed: no weights on the device until one succeeds */
    void *block;               /* one device allocation for the activations */
    /* RN_CUDA_PHASES=1: wall time per phase of the forward (synchronising
     * at each phase change), printed to stderr when the runtime is freed */
    int prof, prof_cur;
    double prof_t, prof_ms[7];
};

enum { PH_NORM, PH_GEMM, PH_ADDRESS, PH_SCAN, PH_PROBE, PH_ACT, PH_HEAD, PH_N };
static const char *const PH_NAME[PH_N] = { "embed+norm", "gemm", "address", "scan", "probe copy",
                                           "swiglu", "head copy" };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Close the current phase (when profiling) and start phase k. */
static void phase(rn_cuda_rt *g, int k)
{
    if (!g->prof) return;
    cudaDeviceSynchronize();
    double t = now_ms();
    if (g->prof_cur >= 0) g->prof_ms[g->prof_cur] += t - g->prof_t;
    g->prof_t = t;
    g->prof_cur = k;
}

extern "C" int rn_cuda_built(void) { return 1; }

extern "C" int rn_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device"/"no driver" error */
        return 0;
    }
    return n;
}

extern "C" int rn_cuda_supported(const rn_config *c, rn_error *err)
{
    if (c->top_k > RN_CUDA_MAX_K)
        return rn_seterr(err, RN_EINPUT, "--device cuda: top_k %d exceeds the GPU decoder's limit of %d",
                         c->top_k, RN_CUDA_MAX_K);
    if ((double)c->n_heads * (double)rn_config_slots(c) > 4294967295.0) /* the scan's 32-bit sort key */
        return rn_seterr(err, RN_EINPUT, "--device cuda: heads x slots (%d x %lld) exceeds 2^32",
                         c->n_heads, (long long)rn_config_slots(c));
    return RN_OK;
}

/* Chunks of at least this many rows use the slot-parallel scan; shorter ones
 * (the step among them) the sequential kernel. */
#define RN_CUDA_SEG_MIN 64

/* ---- kernels ---- */

/* One thread per (row, head): exact top-K, weights, CAPE slots (the
 * general path; k_address_warp, rn_cuda_addrwarp.cuh, is the fast one for
 * small d_p, K).
 * blockIdx.y picks the job (reads and writes in one launch). */
__global__ void k_address(addr_job j0, addr_job j1, int n, int H, int U, int dp, int K, float tau,
                          uint64_t cape_mask, const int64_t *pos, int64_t M)
{
    const int64_t pos0 = *pos;
    const addr_job jb = blockIdx.y ? j1 : j0;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * H) return;
    int r = i / H, h = i % H, dk = U * dp;
    double scale = exp((double)jb.alpha[h]) / (double)tau;
    uint32_t addr[RN_CUDA_MAX_K];
    rn_cu_topk(jb.a + (int64_t)r * H * dk + (int64_t)h * dk, U, dp, K, scale, addr, jb.w + (int64_t)i * K);
    int cape = (int)((cape_mask >> h) & 1u);
    for (int j = 0; j < K; j++) {
        jb.addr[(int64_t)i * K + j] = addr[j];
        jb.slot[(int64_t)i * K + j] = cape ? rn_cu_cape(addr[j], pos0 + r, M) : addr[j];
    }
}

/* Decode the jobs (one or two: j1 may equal j0 with jobs = 1) of n rows,
 * the first at position *pos (device memory, so a captured graph reads the
 * current one), on stream st: the warp decoder where its limits allow,
 * else one thread per key. */
static void address_launch(addr_job j0, addr_job j1, int jobs, int n, const rn_config *c,
                           uint64_t cape_mask, const int64_t *pos, int64_t M, cudaStream_t st)
{
    const int H = c->n_heads, K = c->top_k, dp = c->d_p, kc = K < dp ? K : dp;
    if (c->order * dp <= AW_MAXUD && K * kc <= AW_MAXC) {
        dim3 grid((unsigned)(((int64_t)n * H + AW_WARPS - 1) / AW_WARPS), (unsigned)jobs);
        k_address_warp<<<grid, 32 * AW_WARPS, 0, st>>>(j0, j1, n, H, c->order, dp, K, c->tau, cape_mask, pos, M);
    } else {
        dim3 grid((unsigned)(((int64_t)n * H + 63) / 64), (unsigned)jobs);
        k_address<<<grid, 64, 0, st>>>(j0, j1, n, H, c->order, dp, K, c->tau, cape_mask, pos, M);
    }
}

/* The PDMA scan of one layer: block h is head h; thread c < dv owns value
 * column c of every slot, thread dv owns z.  Rows in order: the K writes,
 * then the K reads (top-K slots of one row are distinct, so the writes of a
 * row touch disjoint rows of S).  A row's slots and weights are staged in
 * shared memory; the writes and reads are rn_cuda_pdma.cuh's (the GPU
 * trainer's too), which load the state rows RN_CUDA_PS at a time before
 * any is used, so the loads overlap instead of queueing one behind the
 * other (this kernel is the step's, where latency is all). */
__global__ void k_pdma_scan(float *o, float *S, float *z, const float *v, const uint32_t *wslot,
                            const float *ww, const uint32_t *rslot, const float *rw, int n, int H,
                            int K, int dv, int64_t M, float gamma, float eps)
{
    __shared__ uint32_t s_ws[RN_CUDA_MAX_K], s_rs[RN_CUDA_MAX_K];
    __shared__ float s_ww[RN_CUDA_MAX_K], s_rw[RN_CUDA_MAX_K];
    const int h = blockIdx.x, c = threadIdx.x;
    float *Sh = S + (int64_t)h * M * dv, *zh = z + (int64_t)h * M;
    for (int t = 0; t < n; t++) {
        int64_t a = ((int64_t)t * H + h) * K, vv = (int64_t)t * H * dv + (int64_t)h * dv;
        for (int j = c; j < K; j += blockDim.x) {
            s_ws[j] = wslot[a + j]; s_ww[j] = ww[a + j];
            s_rs[j] = rslot[a + j]; s_rw[j] = rw[a + j];
        }
        __syncthreads();
        rn_cu_pdma_write(Sh, zh, s_ws, s_ww, K, c, dv, c < dv ? v[vv + c] : 1.0f, gamma, NULL);
        __syncthreads();
        if (c < dv) o[vv + c] = rn_cu_pdma_read(Sh, zh, s_rs, s_rw, K, c, dv, eps, NULL);
        __syncthreads();
    }
}

/* x[n, D] = the tokens' rows of the bf16 embedding, widened (exact). */
__global__ void k_embed_bf16(float *x, const uint16_t *embed, const int *tok, int n, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    x[i] = rn_cu_w(embed[(int64_t)tok[i / D] * D + i % D]);
}

__global__ void k_reset(float *S, float *z, int64_t nS, int64_t nz, float inv)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nS) S[i] = 0;
    if (i < nz) z[i] = inv;
}

/* ---- the slot-parallel PDMA scan (docs/cuda.md; the same algorithm as
 * portable C in rn_cuda_scan.h).  Per layer, for n rows: the n·K writes of
 * each head sorted stably by (head, slot) (one CUB radix sort), so each
 * slot's writes are a contiguous run in row order; one
 * thread per (run, column) applies them in order, keeping the state after
 * each; reads look that state up; the runs' last states are written back. */

/* Keys (h·M + slot: the row of S within the layer) and values (event
 * e = t·K + j) of every head's writes.  One stable sort of these keys
 * groups the events by head, then by slot, in row order; head h's events
 * end up at [h·nK, (h+1)·nK), as each head has nK. */
__global__ void k_seg_keys(uint32_t *key, uint32_t *val, const uint32_t *wslot, int n, int H, int K,
                           int64_t M)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nK = (int64_t)n * K;
    if (i >= H * nK) return;
    int h = (int)(i / nK);
    int64_t e = i % nK, t = e / K, j = e % K;
    key[i] = (uint32_t)(h * M + wslot[(t * H + h) * K + j]);
    val[i] = (uint32_t)e;
}

/* Walk: one thread per (sorted event p, column c); the thread whose p
 * starts its slot's run applies the run's writes in row order to column c
 * of the slot's row [S, z] (c == dv: z) — S ← d·S + w·v, z ← d·z + w, the
 * CPU's arithmetic — and keeps the value after each write in st[p·C + c]. */
__global__ void k_seg_walk(float *st, const float *S, const float *z, const uint32_t *key,
                           const uint32_t *val, const float *ww, const float *v, int n, int H,
                           int K, int dv, int64_t M, float gamma)
{
    const int C = dv + 1;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nK = (int64_t)n * K;
    if (i >= H * nK * C) return;
    int64_t p = i / C;
    int c = (int)(i % C), h = (int)(p / nK);
    const int64_t end = (int64_t)(h + 1) * nK;
    const uint32_t s = key[p];
    if (p % nK != 0 && key[p - 1] == s) return; /* not the first write of its run */
    float x = c < dv ? S[(int64_t)s * dv + c] : z[s];
    for (int64_t q = p; q < end && key[q] == s; q++) {
        int64_t e = val[q], t = e / K, a = (t * H + h) * K + e % K;
        x = rn_cu_pdma_update(x, ww[a], c < dv ? v[t * H * dv + (int64_t)h * dv + c] : 1.0f, gamma);
        st[q * C + c] = x;
    }
}

/* First index q in [0, len) whose (key[q], row of val[q]) > (s, t). */
__device__ static int64_t seg_upper(const uint32_t *key, const uint32_t *val, int K, int64_t len,
                                    uint32_t s, int t)
{
    int64_t lo = 0, hi = len;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (key[mid] < s || (key[mid] == s && (int)(val[mid] / K) <= t)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Reads: one thread per (row, head, column): o = Σ_j r_j·S/(z + ε) with
 * the slot's state after its last write in rows <= t, or the chunk-start
 * state. */
__global__ void k_seg_read(float *o, const float *S, const float *z, const uint32_t *key,
                           const uint32_t *val, const float *st, const uint32_t *rslot,
                           const float *rw, int n, int H, int K, int dv, int64_t M, float eps)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nK = (int64_t)n * K;
    if (i >= (int64_t)n * H * dv) return;
    int c = (int)(i % dv);
    int64_t th = i / dv;
    int h = (int)(th % H), t = (int)(th / H);
    const int C = dv + 1;
    const uint32_t *kh = key + (int64_t)h * nK, *vh = val + (int64_t)h * nK;
    float acc = 0;
    for (int j = 0; j < K; j++) {
        int64_t a = ((int64_t)t * H + h) * K + j;
        uint32_t s = (uint32_t)(h * M + rslot[a]);
        int64_t p = seg_upper(kh, vh, K, nK, s, t) - 1;
        float zz, x;
        if (p >= 0 && kh[p] == s) {
            const float *row = st + ((int64_t)h * nK + p) * C;
            zz = row[dv];
            x = row[c];
        } else {
            zz = z[s];
            x = S[(int64_t)s * dv + c];
        }
        acc = rn_cu_pdma_read_add(acc, rw[a], zz, x, eps);
    }
    o[(int64_t)t * H * dv + (int64_t)h * dv + c] = acc;
}

/* Write-back of each run's last state: one thread per (event, column). */
__global__ void k_seg_writeback(float *S, float *z, const uint32_t *key, const float *st, int n,
                                int H, int K, int dv)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, nK = (int64_t)n * K;
    const int C = dv + 1;
    if (i >= H * nK * C) return;
    int64_t p = i / C;
    int c = (int)(i % C);
    if ((p + 1) % nK != 0 && key[p + 1] == key[p]) return; /* not the run's last write */
    uint32_t s = key[p];
    if (c < dv) S[(int64_t)s * dv + c] = st[p * C + c];
    else z[s] = st[p * C + dv];
}

/* ---- host side ---- */

static unsigned blocks(int64_t n, int per) { return (unsigned)((n + per - 1) / per); }

/* Fail the calling function when a cuBLAS product failed. */
#define BLAS_TRY(call) do { \
        int s_ = (call); \
        if (s_) return rn_seterr(err, RN_EINTERNAL, "cuBLAS: %s: %s", #call, rn_cu_gemm_error(s_)); \
    } while (0)

extern "C" int rn_cuda_rt_reset(rn_cuda_rt *g, rn_error *err)
{
    const int64_t heads = (int64_t)g->c.n_layers * g->c.n_heads;
    const int64_t nS = heads * g->M * g->c.d_v, nz = heads * g->M;
    k_reset<<<blocks(nS > nz ? nS : nz, 256), 256, 0, g->st>>>(g->S, g->z, nS, nz, (float)(1.0 / (double)g->M));
    CU_TRY(cudaGetLastError());
    CU_TRY(cudaStreamSynchronize(g->st));
    return RN_OK;
}

/* Where the tensors go on the device.  fp32: the model's block as it is.
 * bf16: the bf16 tensors (rn_precision_bf16_tensor: matrices, embedding) in
 * g->w16 and the others in g->params, each packed in the model's tensor
 * order, every tensor starting on 16 bytes (8 bf16, 4 floats) so the
 * GEMV's vector loads apply; tensors whose sizes are multiples of that
 * stay back to back (q, k, v; gate, up), as the step's fused products
 * need.  *n16, *n32: elements of each block; *big: the largest bf16 tensor.
 * With off >= 0, returns the device address of host element off instead
 * (NULL when no tensor holds it). */
static const void *bf16_layout(const rn_cuda_rt *g, const rn_config *c, int64_t off, int64_t *n16,
                               int64_t *n32, int64_t *big)
{
    int64_t o16 = 0, o32 = 0, mx = 0;
    rn_tensor_desc t;
    for (int i = 0; rn_params_tensor(c, i, &t) == 0; i++) {
        const int is16 = rn_precision_bf16_tensor(&t);
        if (off >= t.offset && off < t.offset + t.numel)
            return is16 ? (const void *)(g->w16 + o16 + (off - t.offset))
                        : (const void *)(g->params + o32 + (off - t.offset));
        if (is16) o16 += (t.numel + 7) / 8 * 8, mx = t.numel > mx ? t.numel : mx;
        else o32 += (t.numel + 3) / 4 * 4;
    }
    if (n16) *n16 = o16;
    if (n32) *n32 = o32;
    if (big) *big = mx;
    return NULL;
}

/* Device address of host tensor data p (inside m->params), in the
 * runtime's layout; NULL for NULL. */
static const void *dev_ptr(const rn_cuda_rt *g, const rn_model *m, const float *p)
{
    if (!p) return NULL;
    if (!g->bf16) return g->params + (p - m->params);
    return bf16_layout(g, &m->cfg, p - m->params, NULL, NULL, NULL);
}

/* Upload m's weights in the runtime's precision (g->bf16), replacing any
 * uploaded before, and point g->w (FP32 tensors) and the matrices at them.
 * bf16 rounds on the host with rn_bf16_round, the CPU's bf16 weights. */
static int upload_weights(rn_cuda_rt *g, const rn_model *m, rn_error *err)
{
    cudaFree(g->params);
    cudaFree(g->w16);
    g->params = NULL;
    g->w16 = NULL;
    const rn_config *c = &m->cfg;
    cudaError_t e;
    if (!g->bf16) {
        e = cudaMalloc(&g->params, sizeof(float) * m->n_block);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->params, m->params, sizeof(float) * m->n_block, cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            return rn_seterr(err, RN_ENOMEM, "CUDA: %s (weights, %lld floats)", cudaGetErrorString(e),
                             (long long)m->n_block);
    } else {
        int64_t n16 = 0, n32 = 0, big = 0;
        bf16_layout(g, c, -1, &n16, &n32, &big);
        uint16_t *stage = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(big > 0 ? big : 1));
        if (!stage) return rn_seterr(err, RN_ENOMEM, "out of memory staging the bf16 weights");
        e = cudaMalloc(&g->w16, sizeof(uint16_t) * (size_t)(n16 > 0 ? n16 : 1));
        if (e == cudaSuccess) e = cudaMalloc(&g->params, sizeof(float) * (size_t)(n32 > 0 ? n32 : 1));
        rn_tensor_desc t;
        for (int i = 0; e == cudaSuccess && rn_params_tensor(c, i, &t) == 0; i++) {
            void *dst = (void *)bf16_layout(g, c, t.offset, NULL, NULL, NULL);
            if (rn_precision_bf16_tensor(&t)) {
                rn_bf16_round(stage, m->params + t.offset, (size_t)t.numel);
                e = cudaMemcpy(dst, stage, sizeof(uint16_t) * t.numel, cudaMemcpyHostToDevice);
            } else
                e = cudaMemcpy(dst, m->params + t.offset, sizeof(float) * t.numel, cudaMemcpyHostToDevice);
        }
        free(stage);
        if (e != cudaSuccess)
            return rn_seterr(err, RN_ENOMEM, "CUDA: %s (bf16 weights, %lld + FP32 %lld elements)",
                             cudaGetErrorString(e), (long long)n16, (long long)n32);
    }
    const rn_weights *hw = &m->w;
    g->embed = dev_ptr(g, m, hw->embed);
    g->lm_head = dev_ptr(g, m, hw->lm_head);
    g->w.norm = (float *)dev_ptr(g, m, hw->norm);
    for (int l = 0; l < c->n_layers; l++) {
        const rn_layer_weights *a = &hw->layer[l];
        rn_layer_weights *b = &g->w.layer[l];
        memset(b, 0, sizeof *b); /* the matrices are in g->mat */
        b->attn_norm = (float *)dev_ptr(g, m, a->attn_norm);
        b->q_alpha = (float *)dev_ptr(g, m, a->q_alpha);
        b->k_alpha = (float *)dev_ptr(g, m, a->k_alpha);
        b->mlp_norm = (float *)dev_ptr(g, m, a->mlp_norm);
        cu_mats *x = &g->mat[l];
        x->wq = dev_ptr(g, m, a->wq); x->wk = dev_ptr(g, m, a->wk); x->wv = dev_ptr(g, m, a->wv);
        x->wo = dev_ptr(g, m, a->wo); x->gate = dev_ptr(g, m, a->w_gate); x->up = dev_ptr(g, m, a->w_up);
        x->down = dev_ptr(g, m, a->w_down);
    }
    return RN_OK;
}

extern "C" int rn_cuda_rt_create(const rn_model *m, int max_chunk, rn_cuda_rt **out, rn_error *err)
{
    *out = NULL;
    rn_cuda_rt *g = (rn_cuda_rt *)calloc(1, sizeof *g);
    if (!g) return rn_seterr(err, RN_ENOMEM, "out of memory");
    const rn_config *c = &m->cfg;
    g->c = *c;
    g->M = rn_config_slots(c);
    g->chunk = max_chunk;
    const char *prof = getenv("RN_CUDA_PHASES");
    g->prof = prof && !strcmp(prof, "1");
    g->prof_cur = -1;
    const int64_t L = c->n_layers, H = c->n_heads, D = c->d_model, F = c->d_ff, K = c->top_k,
                  V = c->vocab_size, C = max_chunk;
    const int64_t hdk = H * rn_config_dk(c), hdv = H * c->d_v;
    size_t sz[] = {
        sizeof(float) * L * H * g->M * c->d_v, sizeof(float) * L * H * g->M,
        sizeof(float) * C * D, sizeof(float) * C * D, sizeof(float) * C * hdk,
        sizeof(float) * C * hdk, sizeof(float) * C * hdv, sizeof(float) * C * hdv,
        sizeof(float) * C * F, sizeof(float) * C * F, sizeof(float) * C * V,
        sizeof(uint32_t) * 6 * C * H * K, sizeof(int) * C,
        sizeof(uint32_t) * C * H * K, sizeof(uint32_t) * C * H * K, sizeof(uint32_t) * C * H * K,
        sizeof(uint32_t) * C * H * K, sizeof(float) * C * H * K * (c->d_v + 1),
        sizeof(float) * (2 * hdk + hdv), sizeof(float) * 2 * F, sizeof(int64_t),
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) total += (sz[i] + 255) & ~(size_t)255;
    int rc = RN_OK, bs = rn_cu_gemm_init();
    if (bs) {
        rc = rn_seterr(err, RN_EINTERNAL, "cuBLAS: cannot start: %s", rn_cu_gemm_error(bs));
        free(g);
        return rc;
    }
    cudaError_t e = cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&g->block, total);
    if (e == cudaSuccess) e = cudaMallocHost(&g->host_acc, sizeof(uint32_t) * 6 * C * H * K);
    if (e != cudaSuccess) {
        rc = rn_seterr(err, RN_ENOMEM, "CUDA: %s (runtime %zu bytes)", cudaGetErrorString(e), total);
        rn_cuda_rt_free(g);
        return rc;
    }
    if ((rc = upload_weights(g, m, err))) {
        rn_cuda_rt_free(g);
        return rc;
    }
    char *p = (char *)g->block;
    int i = 0;
#define CARVE(field, type) g->field = (type *)p; p += (sz[i++] + 255) & ~(size_t)255;
    CARVE(S, float); CARVE(z, float); CARVE(x, float); CARVE(hb, float); CARVE(q, float);
    CARVE(k, float); CARVE(v, float); CARVE(o, float); CARVE(g, float); CARVE(u, float);
    CARVE(logits, float); CARVE(acc, uint32_t); CARVE(tok, int);
    CARVE(sk, uint32_t); CARVE(sk2, uint32_t); CARVE(sv, uint32_t); CARVE(sv2, uint32_t);
    CARVE(sst, float); CARVE(qkv1, float); CARVE(gu1, float);
    CARVE(pos, int64_t);
#undef CARVE
    /* the sort's scratch, sized for the largest chunk */
    e = cub::DeviceRadixSort::SortPairs(NULL, g->cub_bytes, g->sk, g->sk2, g->sv, g->sv2, (int)(C * H * K));
    if (e == cudaSuccess) e = cudaMalloc(&g->cub_tmp, g->cub_bytes > 0 ? g->cub_bytes : 1);
    if (e != cudaSuccess) {
        rc = rn_seterr(err, RN_ENOMEM, "CUDA: %s (sort scratch)", cudaGetErrorString(e));
        rn_cuda_rt_free(g);
        return rc;
    }
    if ((rc = rn_cuda_rt_reset(g, err))) {
        rn_cuda_rt_free(g);
        return rc;
    }
    *out = g;
    return RN_OK;
}

extern "C" void rn_cuda_rt_free(rn_cuda_rt *g)
{
    if (!g) return;
    if (g->prof) {
        double tot = 0;
        for (int i = 0; i < PH_N; i++) tot += g->prof_ms[i];
        fprintf(stderr, "cuda phases (ms):");
        for (int i = 0; i < PH_N; i++)
            fprintf(stderr, " %s %.1f (%.0f%%)%s", PH_NAME[i], g->prof_ms[i],
                    tot > 0 ? 100 * g->prof_ms[i] / tot : 0.0, i + 1 < PH_N ? "," : "\n");
    }
    if (g->step_state == 1) cudaGraphExecDestroy(g->step);
    if (g->st) cudaStreamDestroy(g->st);
    cudaFree(g->block);
    cudaFreeHost(g->host_acc);
    cudaFree(g->cub_tmp);
    cudaFree(g->params);
    cudaFree(g->w16);
    cudaFree(g->a16);
    free(g);
}

extern "C" int rn_cuda_rt_set_precision(rn_cuda_rt *g, const rn_model *m, rn_precision p, rn_error *err)
{
    if (p != RN_PREC_FP32 && p != RN_PREC_BF16)
        return rn_seterr(err, RN_EINPUT, "--precision %s: GPU inference runs fp32 or bf16", rn_precision_name(p));
    const int bf16 = p == RN_PREC_BF16;
    if (bf16 == g->bf16 && !g->broken) return RN_OK;
    if (bf16 && !g->a16 && g->chunk > 1) { /* a prefill product's input in bf16, the widest of D, H·d_v, F */
        const rn_config *c = &g->c;
        int64_t wmax = c->d_model > c->d_ff ? c->d_model : c->d_ff;
        if ((int64_t)c->n_heads * c->d_v > wmax) wmax = (int64_t)c->n_heads * c->d_v;
        cudaError_t e = cudaMalloc(&g->a16, sizeof(uint16_t) * (size_t)g->chunk * (size_t)wmax);
        if (e != cudaSuccess)
            return rn_seterr(err, RN_ENOMEM, "CUDA: %s (bf16 activations)", cudaGetErrorString(e));
    }
    CU_TRY(cudaStreamSynchronize(g->st)); /* nothing in flight reads the old weights */
    if (g->step_state == 1) cudaGraphExecDestroy(g->step);
    g->step_state = 0; /* the step is captured again over the new weights */
    g->bf16 = bf16;
    int rc = upload_weights(g, m, err);
    g->broken = rc != RN_OK; /* the old weights are gone: refuse to run until a switch succeeds */
    return rc;
}

/* The accesses of n rows, six arrays of n·H·K one after another (so one
 * copy brings a layer's back): write slot, write addr, write weight, read
 * slot, read addr, read weight. */
typedef struct { uint32_t *wslot, *waddr, *rslot, *raddr; float *ww, *rw; } accesses;

static accesses carve_acc(uint32_t *base, int64_t nhk)
{
    accesses a;
    a.wslot = base; a.waddr = base + nhk; a.ww = (float *)(base + 2 * nhk);
    a.rslot = base + 3 * nhk; a.raddr = base + 4 * nhk; a.rw = (float *)(base + 5 * nhk);
    return a;
}

/* Report one layer's accesses of n rows (host copy) as the CPU's report()
 * does: head-major; per position the K writes, then the K reads. */
static void report(const rn_probe *probe, const accesses *a, int l, int n, int H, int K, int64_t pos)
{
    for (int h = 0; h < H; h++)
        for (int t = 0; t < n; t++) {
            size_t o = ((size_t)t * H + h) * K;
            probe->access(probe->user, l, h, (int)(pos + t), RN_OP_WRITE, K, a->wslot + o,
                          a->waddr + o, a->ww + o);
            probe->access(probe->user, l, h, (int)(pos + t), RN_OP_READ, K, a->rslot + o,
                          a->raddr + o, a->rw + o);
        }
}


/* One layer's memory scan of n rows by the slot-parallel scan (state S, z
 * of the layer's heads). */
static cudaError_t seg_scan(rn_cuda_rt *g, float *S, float *z, const accesses *a, int n)
{
    const rn_config *c = &g->c;
    const int H = c->n_heads, K = c->top_k, dv = c->d_v, C = dv + 1;
    const int64_t nK = (int64_t)n * K, total = H * nK;
    int end_bit = 1; /* bits of the largest key, H·M − 1 */
    while (end_bit < 32 && ((int64_t)1 << end_bit) < H * g->M) end_bit++;
    k_seg_keys<<<blocks(total, 256), 256, 0, g->st>>>(g->sk, g->sv, a->wslot, n, H, K, g->M);
    size_t bytes = g->cub_bytes;
    cudaError_t e = cub::DeviceRadixSort::SortPairs(g->cub_tmp, bytes, g->sk, g->sk2, g->sv, g->sv2,
                                                    (int)total, 0, end_bit, g->st);
    if (e != cudaSuccess) return e;
    k_seg_walk<<<blocks(total * C, 256), 256, 0, g->st>>>(g->sst, S, z, g->sk2, g->sv2, a->ww, g->v, n, H, K, dv,
                                               g->M, c->gamma);
    k_seg_read<<<blocks((int64_t)n * H * dv, 256), 256, 0, g->st>>>(g->o, S, z, g->sk2, g->sv2, g->sst, a->rslot,
                                                          a->rw, n, H, K, dv, g->M, c->eps);
    k_seg_writeback<<<blocks(total * C, 256), 256, 0, g->st>>>(S, z, g->sk2, g->sst, n, H, K, dv);
    return cudaGetLastError();
}

/* One-row product y[O] (=|+=) W[O,I]·p(x) by the step's GEMV over the
 * runtime's weights (FP32 or bf16), prologue p of mode (rn_cuda_gemv.cuh):
 * RMSNorm of x with gain, SwiGLU of gate x and up x2, or none. */
template <typename T, int MODE>
static void gemv_launch(rn_cuda_rt *g, float *y, const void *Wv, const float *x, const float *x2,
                        const float *gain, int O, int I, int acc)
{
    const T *W = (const T *)Wv;
    const unsigned nb = rn_cu_gemv_blocks(O);
    /* through a pointer: a launch names one identifier (the host emulation's rewrite) */
    void (*k)(float *, const T *, const float *, const float *, const float *, int, int, int, float) =
        rn_cu_gemv_vec(W, I, (int)sizeof(T)) ? rn_cu_k_gemv<T, MODE, true> : rn_cu_k_gemv<T, MODE, false>;
    k<<<nb, RN_CU_GEMV_NT, 0, g->st>>>(y, W, x, x2, gain, O, I, acc, g->c.norm_eps);
}

template <int MODE>
static void gemv_of(rn_cuda_rt *g, float *y, const void *W, const float *x, const float *x2, const float *gain,
                    int O, int I, int acc)
{
    if (g->bf16) gemv_launch<uint16_t, MODE>(g, y, W, x, x2, gain, O, I, acc);
    else gemv_launch<float, MODE>(g, y, W, x, x2, gain, O, I, acc);
}

/* The same, choosing the instance; an input wider than a prologue stages
 * (RN_CU_GEMV_MAXI) takes the separate kernel first: RMSNorm into g->hb,
 * SwiGLU into the gate x in place, as the prefill does. */
static void gemv(rn_cuda_rt *g, float *y, const void *W, int mode, const float *x, const float *x2,
                 const float *gain, int O, int I, int acc)
{
    if (mode == RN_CU_GEMV_RMSNORM && I > RN_CU_GEMV_MAXI) {
        k_rmsnorm_forward<<<1, 256, 0, g->st>>>(g->hb, (float *)NULL, x, gain, I, g->c.norm_eps);
        x = g->hb;
        mode = RN_CU_GEMV_PLAIN;
    } else if (mode == RN_CU_GEMV_SWIGLU && I > RN_CU_GEMV_MAXI) {
        k_swiglu_forward<<<blocks(I, 256), 256, 0, g->st>>>((float *)x, x, x2, I);
        mode = RN_CU_GEMV_PLAIN;
    }
    if (mode == RN_CU_GEMV_RMSNORM) gemv_of<RN_CU_GEMV_RMSNORM>(g, y, W, x, x2, gain, O, I, acc);
    else if (mode == RN_CU_GEMV_SWIGLU) gemv_of<RN_CU_GEMV_SWIGLU>(g, y, W, x, x2, gain, O, I, acc);
    else gemv_of<RN_CU_GEMV_PLAIN>(g, y, W, x, x2, gain, O, I, acc);
}

/* Ready in[count] as the input of the several-row products that follow: in
 * bf16, its copy rounded to bf16 in g->a16 (FP32 reads it where it is). */
static void prod_input(rn_cuda_rt *g, const float *in, int64_t count)
{
    if (g->bf16) rn_cu_k_to_bf16<<<blocks(count, 256), 256, 0, g->st>>>(g->a16, in, count);
}

/* out[n,O] (=|+=) in[n,I]·Wᵀ over several rows by cuBLAS: FP32, or bf16
 * tensor cores over g->a16 (prod_input) with FP32 accumulation. */
static int product(rn_cuda_rt *g, float *out, const float *in, const void *W, int n, int I, int O, int acc)
{
    return g->bf16 ? rn_cu_matmul_bf16(out, g->a16, (const uint16_t *)W, n, I, O, acc)
                   : rn_cu_matmul(out, in, (const float *)W, n, I, O, acc);
}

/* Whether b starts right after a's count elements (of the runtime's size):
 * then one product covers both. */
static int adjacent(const rn_cuda_rt *g, const void *a, const void *b, int64_t count)
{
    return (const char *)b == (const char *)a + count * (g->bf16 ? 2 : 4);
}

/* The forward of n rows whose tokens and first position are already in
 * g->tok and g->pos: every operation on g->st, nothing synchronous except
 * the probe's copies (so without a probe it can be captured as a graph).
 * Leaves the logits of rows [first, first + rows) in g->logits when rows
 * > 0.  One row (the step) runs its products as GEMVs with the norms and
 * SwiGLU fused in; more rows run RMSNorm and SwiGLU on their own and the
 * products on cuBLAS. */
static int forward_body(rn_cuda_rt *g, int n, int64_t pos, int first, int rows, const rn_probe *probe,
                        rn_error *err)
{
    const rn_config *c = &g->c;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, K = c->top_k, dv = c->d_v;
    const int hdk = H * rn_config_dk(c), hdv = H * dv, V = c->vocab_size;
    const int64_t nhk = (int64_t)n * H * K;
    accesses d = carve_acc(g->acc, nhk), h = carve_acc(g->host_acc, nhk);
    cudaStream_t st = g->st;
    const int one = n == 1;
    phase(g, PH_NORM);
    if (g->bf16)
        k_embed_bf16<<<blocks((int64_t)n * D, 256), 256, 0, st>>>(g->x, (const uint16_t *)g->embed, g->tok, n, D);
    else
        k_embed_forward<<<blocks((int64_t)n * D, 256), 256, 0, st>>>(g->x, (const float *)g->embed, g->tok, n, D);
    for (int l = 0; l < c->n_layers; l++) {
        const rn_layer_weights *lw = &g->w.layer[l];
        const cu_mats *mw = &g->mat[l];
        if (!one) {
            phase(g, PH_NORM);
            k_rmsnorm_forward<<<n, 256, 0, st>>>(g->hb, (float *)NULL, g->x, lw->attn_norm, D, c->norm_eps);
            prod_input(g, g->hb, (int64_t)n * D);
        }
        phase(g, PH_GEMM);
        float *q = g->q, *k = g->k, *v = g->v, *gt = g->g, *up = g->u;
        if (one) {
            /* q, k, v weights back to back in the parameter block (rn_params.c's
             * order): one product for the three, into one buffer */
            if (adjacent(g, mw->wq, mw->wk, (int64_t)hdk * D) && adjacent(g, mw->wk, mw->wv, (int64_t)hdk * D)) {
                q = g->qkv1; k = q + hdk; v = k + hdk;
                gemv(g, q, mw->wq, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->attn_norm, 2 * hdk + hdv, D, 0);
            } else {
                gemv(g, q, mw->wq, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->attn_norm, hdk, D, 0);
                gemv(g, k, mw->wk, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->attn_norm, hdk, D, 0);
                gemv(g, v, mw->wv, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->attn_norm, hdv, D, 0);
            }
        } else {
            BLAS_TRY(product(g, q, g->hb, mw->wq, n, D, hdk, 0));
            BLAS_TRY(product(g, k, g->hb, mw->wk, n, D, hdk, 0));
            BLAS_TRY(product(g, v, g->hb, mw->wv, n, D, hdv, 0));
        }
        phase(g, PH_ADDRESS);
        address_launch(addr_job{ d.raddr, d.rslot, d.rw, q, lw->q_alpha },
                       addr_job{ d.waddr, d.wslot, d.ww, k, lw->k_alpha }, 2, n, c, c->cape_mask[l],
                       g->pos, g->M, st);
        const int64_t off = (int64_t)l * H * g->M;
        phase(g, PH_SCAN);
        if (n >= RN_CUDA_SEG_MIN)
            CU_TRY(seg_scan(g, g->S + off * dv, g->z + off, &d, n));
        else
            k_pdma_scan<<<H, dv + 1, 0, st>>>(g->o, g->S + off * dv, g->z + off, v, d.wslot, d.ww, d.rslot,
                                              d.rw, n, H, K, dv, g->M, c->gamma, c->eps);
        if (probe) {
            phase(g, PH_PROBE);
            CU_TRY(cudaGetLastError());
            CU_TRY(cudaMemcpyAsync(g->host_acc, g->acc, sizeof(uint32_t) * 6 * nhk, cudaMemcpyDeviceToHost, st));
            CU_TRY(cudaStreamSynchronize(st));
            report(probe, &h, l, n, H, K, pos);
        }
        phase(g, PH_GEMM);
        if (one) {
            gemv(g, g->x, mw->wo, RN_CU_GEMV_PLAIN, g->o, NULL, NULL, D, hdv, 1);
            if (adjacent(g, mw->gate, mw->up, (int64_t)F * D)) {
                gt = g->gu1; up = gt + F;
                gemv(g, gt, mw->gate, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->mlp_norm, 2 * F, D, 0);
            } else {
                gemv(g, gt, mw->gate, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->mlp_norm, F, D, 0);
                gemv(g, up, mw->up, RN_CU_GEMV_RMSNORM, g->x, NULL, lw->mlp_norm, F, D, 0);
            }
            gemv(g, g->x, mw->down, RN_CU_GEMV_SWIGLU, gt, up, NULL, D, F, 1);
            continue;
        }
        prod_input(g, g->o, (int64_t)n * hdv);
        BLAS_TRY(product(g, g->x, g->o, mw->wo, n, hdv, D, 1));
        phase(g, PH_NORM);
        k_rmsnorm_forward<<<n, 256, 0, st>>>(g->hb, (float *)NULL, g->x, lw->mlp_norm, D, c->norm_eps);
        prod_input(g, g->hb, (int64_t)n * D);
        phase(g, PH_GEMM);
        BLAS_TRY(product(g, gt, g->hb, mw->gate, n, D, F, 0));
        BLAS_TRY(product(g, up, g->hb, mw->up, n, D, F, 0));
        phase(g, PH_ACT);
        k_swiglu_forward<<<blocks((int64_t)n * F, 256), 256, 0, st>>>(gt, gt, up, (int64_t)n * F);
        prod_input(g, gt, (int64_t)n * F);
        phase(g, PH_GEMM);
        BLAS_TRY(product(g, g->x, gt, mw->down, n, F, D, 1));
    }
    phase(g, PH_HEAD);
    if (rows == 1) {
        gemv(g, g->logits, g->lm_head, RN_CU_GEMV_RMSNORM, g->x + (int64_t)first * D, NULL, g->w.norm, V, D, 0);
    } else if (rows > 1) {
        k_rmsnorm_forward<<<rows, 256, 0, st>>>(g->hb, (float *)NULL, g->x + (int64_t)first * D, g->w.norm, D, c->norm_eps);
        prod_input(g, g->hb, (int64_t)rows * D);
        BLAS_TRY(product(g, g->logits, g->hb, g->lm_head, rows, D, V, 0));
    }
    CU_TRY(cudaGetLastError());
    return RN_OK;
}

/* Capture the one-token forward (no probe, logits of the row) as a graph,
 * once; a failed capture leaves step_state = -1 and the plain path. */
static void capture_step(rn_cuda_rt *g)
{
    rn_error e2;
    memset(&e2, 0, sizeof e2);
    cudaGraph_t graph = NULL;
    g->step_state = -1;
    if (cudaStreamBeginCapture(g->st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    int rc = forward_body(g, 1, 0, 0, 1, NULL, &e2);
    cudaError_t e = cudaStreamEndCapture(g->st, &graph);
    if (!rc && e == cudaSuccess && cudaGraphInstantiate(&g->step, graph, 0) == cudaSuccess)
        g->step_state = 1;
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError(); /* a failed capture's error is not the caller's */
}

extern "C" int rn_cuda_forward(rn_cuda_rt *g, const int *tokens, int n, int64_t pos, float *logits,
                               int all_rows, const rn_probe *probe, rn_error *err)
{
    const int V = g->c.vocab_size;
    if (n < 1 || n > g->chunk) return rn_seterr(err, RN_EINPUT, "CUDA forward: %d rows (chunk %d)", n, g->chunk);
    if (g->broken)
        return rn_seterr(err, RN_EINPUT, "CUDA runtime: no weights on the device (a precision switch failed; "
                                         "set the precision again or free the runtime)");
    int first = all_rows ? 0 : n - 1, rows = logits ? (all_rows ? n : 1) : 0;
    BLAS_TRY(rn_cu_gemm_stream(g->st));
    /* the handle is shared: a tf32 trainer may have left TF32 on */
    BLAS_TRY(rn_cu_gemm_set_tf32(0));
    int rc = RN_OK;
    cudaError_t e = cudaMemcpyAsync(g->tok, tokens, sizeof(int) * n, cudaMemcpyHostToDevice, g->st);
    if (e == cudaSuccess) e = cudaMemcpyAsync(g->pos, &pos, sizeof pos, cudaMemcpyHostToDevice, g->st);
    /* &pos is pageable: the copy is staged before cudaMemcpyAsync returns */
    const int graphable = n == 1 && !probe && rows == 1 && !g->prof;
    if (e == cudaSuccess && graphable && g->step_state == 0) capture_step(g);
    if (e == cudaSuccess) {
        if (graphable && g->step_state == 1)
            e = cudaGraphLaunch(g->step, g->st);
        else
            rc = forward_body(g, n, pos, first, rows, probe, err);
    }
    if (e == cudaSuccess && !rc && rows > 0)
        e = cudaMemcpyAsync(logits, g->logits, sizeof(float) * rows * V, cudaMemcpyDeviceToHost, g->st);
    if (e == cudaSuccess && !rc) e = cudaStreamSynchronize(g->st);
    phase(g, -1);
    rn_cu_gemm_stream(NULL); /* back to the default stream for other users of the handle */
    if (!rc && e != cudaSuccess) rc = rn_seterr(err, RN_EINTERNAL, "CUDA forward: %s", cudaGetErrorString(e));
    return rc;
}

extern "C" int rn_cuda_decode(const float *a, const float *alpha, const rn_config *c,
                              uint64_t cape_mask, int n, int64_t pos0, uint32_t *addr,
                              uint32_t *slot, float *w, rn_error *err)
{
    const int H = c->n_heads, K = c->top_k, dk = rn_config_dk(c);
    const size_t na = sizeof(float) * n * H * dk, nk = (size_t)n * H * K;
    float *da = NULL, *dal = NULL, *dw = NULL;
    uint32_t *ds = NULL, *dad = NULL;
    int64_t *dpos = NULL;
    cudaError_t e = cudaMalloc(&da, na);
    if (e == cudaSuccess) e = cudaMalloc(&dad, sizeof(uint32_t) * nk);
    if (e == cudaSuccess) e = cudaMalloc(&dal, sizeof(float) * H);
    if (e == cudaSuccess) e = cudaMalloc(&dw, sizeof(float) * nk);
    if (e == cudaSuccess) e = cudaMalloc(&ds, sizeof(uint32_t) * nk);
    if (e == cudaSuccess) e = cudaMemcpy(da, a, na, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dal, alpha, sizeof(float) * H, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMalloc(&dpos, sizeof pos0);
    if (e == cudaSuccess) e = cudaMemcpy(dpos, &pos0, sizeof pos0, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        addr_job j = { dad, ds, dw, da, dal };
        address_launch(j, j, 1, n, c, cape_mask, dpos, rn_config_slots(c), 0);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(addr, dad, sizeof(uint32_t) * nk, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(slot, ds, sizeof(uint32_t) * nk, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(w, dw, sizeof(float) * nk, cudaMemcpyDeviceToHost);
    cudaFree(da); cudaFree(dal); cudaFree(dw); cudaFree(ds); cudaFree(dad); cudaFree(dpos);
    if (e != cudaSuccess) return rn_seterr(err, RN_EINTERNAL, "CUDA decode: %s", cudaGetErrorString(e));
    return RN_OK;
}
