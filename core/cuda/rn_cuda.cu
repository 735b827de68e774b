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
 * back in one copy and are reported as the CPU reports them.  Products are
 * cuBLAS's (rn_cuda_gemm.h): FP32, TF32 only when asked for.  Everything
 * runs on the runtime's own stream; the one-token step is captured once as
 * a CUDA graph and replayed.
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
#include "rn_config.h"
#include "rn_params.h"
}
#include "rn_cuda_addrwarp.cuh"
#include "rn_cuda_embed.cuh"
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

struct rn_cuda_rt {
    rn_config c;
    int64_t M;
    int chunk;
    float *params;             /* the model's parameter block, uploaded once */
    rn_weights w;              /* pointers into params (device addresses) */
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

/* Device pointer of host pointer p inside the model's block. */
static float *dev_of(const rn_model *m, float *dev_block, const float *p)
{
    return p ? dev_block + (p - m->params) : NULL;
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
    if (e == cudaSuccess) e = cudaMalloc(&g->params, sizeof(float) * m->n_block);
    if (e == cudaSuccess) e = cudaMemcpy(g->params, m->params, sizeof(float) * m->n_block, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMalloc(&g->block, total);
    if (e == cudaSuccess) e = cudaMallocHost(&g->host_acc, sizeof(uint32_t) * 6 * C * H * K);
    if (e != cudaSuccess) {
        rc = rn_seterr(err, RN_ENOMEM, "CUDA: %s (weights %lld floats, runtime %zu bytes)",
                       cudaGetErrorString(e), (long long)m->n_block, total);
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
    const rn_weights *hw = &m->w;
    g->w.embed = dev_of(m, g->params, hw->embed);
    g->w.norm = dev_of(m, g->params, hw->norm);
    g->w.lm_head = dev_of(m, g->params, hw->lm_head);
    for (int l = 0; l < c->n_layers; l++) {
        const rn_layer_weights *a = &hw->layer[l];
        rn_layer_weights *b = &g->w.layer[l];
        *b = *a;
        b->attn_norm = dev_of(m, g->params, a->attn_norm);
        b->wq = dev_of(m, g->params, a->wq); b->wk = dev_of(m, g->params, a->wk);
        b->wv = dev_of(m, g->params, a->wv); b->wo = dev_of(m, g->params, a->wo);
        b->q_alpha = dev_of(m, g->params, a->q_alpha); b->k_alpha = dev_of(m, g->params, a->k_alpha);
        b->mlp_norm = dev_of(m, g->params, a->mlp_norm);
        b->w_gate = dev_of(m, g->params, a->w_gate); b->w_up = dev_of(m, g->params, a->w_up);
        b->w_down = dev_of(m, g->params, a->w_down);
    }
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
    free(g);
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

/* The forward of n rows whose tokens and first position are already in
 * g->tok and g->pos: every operation on g->st, nothing synchronous except
 * the probe's copies (so without a probe it can be captured as a graph).
 * Leaves the final-normed rows [first, first + rows) in g->hb and their
 * logits in g->logits when rows > 0. */
static int forward_body(rn_cuda_rt *g, int n, int64_t pos, int first, int rows, const rn_probe *probe,
                        rn_error *err)
{
    const rn_config *c = &g->c;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, K = c->top_k, dv = c->d_v;
    const int hdk = H * rn_config_dk(c), hdv = H * dv, V = c->vocab_size;
    const int64_t nhk = (int64_t)n * H * K;
    accesses d = carve_acc(g->acc, nhk), h = carve_acc(g->host_acc, nhk);
    cudaStream_t st = g->st;
    phase(g, PH_NORM);
    k_embed_forward<<<blocks((int64_t)n * D, 256), 256, 0, st>>>(g->x, g->w.embed, g->tok, n, D);
    for (int l = 0; l < c->n_layers; l++) {
        const rn_layer_weights *lw = &g->w.layer[l];
        phase(g, PH_NORM);
        k_rmsnorm_forward<<<n, 256, 0, st>>>(g->hb, NULL, g->x, lw->attn_norm, D, c->norm_eps);
        phase(g, PH_GEMM);
        /* One row whose q, k, v (gate, up) weights lie back to back in the
         * parameter block (rn_params.c's order): one matrix-vector product
         * for the three (two), into one buffer. */
        float *q = g->q, *k = g->k, *v = g->v, *gt = g->g, *up = g->u;
        const int fuse_qkv = n == 1 && lw->wk == lw->wq + (int64_t)hdk * D && lw->wv == lw->wk + (int64_t)hdk * D;
        const int fuse_gu = n == 1 && lw->w_up == lw->w_gate + (int64_t)F * D;
        if (fuse_qkv) {
            q = g->qkv1; k = q + hdk; v = k + hdk;
            BLAS_TRY(rn_cu_matmul(q, g->hb, lw->wq, 1, D, 2 * hdk + hdv, 0));
        } else {
            BLAS_TRY(rn_cu_matmul(q, g->hb, lw->wq, n, D, hdk, 0));
            BLAS_TRY(rn_cu_matmul(k, g->hb, lw->wk, n, D, hdk, 0));
            BLAS_TRY(rn_cu_matmul(v, g->hb, lw->wv, n, D, hdv, 0));
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
        BLAS_TRY(rn_cu_matmul(g->x, g->o, lw->wo, n, hdv, D, 1));
        phase(g, PH_NORM);
        k_rmsnorm_forward<<<n, 256, 0, st>>>(g->hb, NULL, g->x, lw->mlp_norm, D, c->norm_eps);
        phase(g, PH_GEMM);
        if (fuse_gu) {
            gt = g->gu1; up = gt + F;
            BLAS_TRY(rn_cu_matmul(gt, g->hb, lw->w_gate, 1, D, 2 * F, 0));
        } else {
            BLAS_TRY(rn_cu_matmul(gt, g->hb, lw->w_gate, n, D, F, 0));
            BLAS_TRY(rn_cu_matmul(up, g->hb, lw->w_up, n, D, F, 0));
        }
        phase(g, PH_ACT);
        k_swiglu_forward<<<blocks((int64_t)n * F, 256), 256, 0, st>>>(gt, gt, up, (int64_t)n * F);
        phase(g, PH_GEMM);
        BLAS_TRY(rn_cu_matmul(g->x, gt, lw->w_down, n, F, D, 1));
    }
    phase(g, PH_HEAD);
    if (rows > 0) {
        k_rmsnorm_forward<<<rows, 256, 0, st>>>(g->hb, NULL, g->x + (int64_t)first * D, g->w.norm, D, c->norm_eps);
        BLAS_TRY(rn_cu_matmul(g->logits, g->hb, g->w.lm_head, rows, D, V, 0));
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
    int first = all_rows ? 0 : n - 1, rows = logits ? (all_rows ? n : 1) : 0;
    BLAS_TRY(rn_cu_gemm_stream(g->st));
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
