/* rn_cuda_train.cu — training on the GPU (rn_cuda_train.h): the training
 * forward with saved activations, the cross-entropy, the backward pass and
 * AdamW, with parameters, gradients and moments resident on the device.
 *
 * It mirrors core/train/rn_train.c op for op, and each kernel pair mirrors a
 * layer file: rn_rmsnorm.c, rn_swiglu.c, rn_address.c (the training
 * decoder with unquantised weights exp(Σ log p) and the α scale), rn_pdma.c
 * (rn_pdma_train_forward/backward with the proxy gradient ε_g) and
 * rn_adamw.c.  The layers the inference runtime (rn_cuda.cu) has too keep
 * their kernels in one header per layer that both include:
 * rn_cuda_embed.cuh, rn_cuda_rmsnorm.cuh, rn_cuda_swiglu.cuh and
 * rn_cuda_pdma.cuh (the decay, a write, a read); the decoder's arithmetic
 * is rn_cuda_topk.h's.  The PDMA scan runs parallel over (sequence, head,
 * slot) segments (rn_cuda_segtrain.cuh).  Every matrix
 * product goes through rn_cuda_gemm.h.  Where the CPU reduces serially
 * (the embedding gradient, the scan's sums) the GPU does the same sum in
 * the same order; where the CPU reduces in double (RMSNorm's sums,
 * dα, the gradient norm) the GPU reduces in double in a fixed tree order.
 * All buffers are carved from one cudaMalloc at create; nothing allocates
 * per step.
 *
 * Precision (rn_cuda_trainer_create): fp32; tf32 (the same products with
 * cuBLAS's TF32 math mode); bf16, where prod_fwd / prod_bwd run every
 * product on bf16 operands — the parameter block's bf16 copy (refreshed by
 * k_adamw, or by precision_prepare after other writes) and the rounded
 * product inputs and output gradients — into FP32 outputs and the FP32
 * gradient block; every other kernel is the fp32 path's (docs/cuda.md,
 * "bf16 and TF32 training").
 *
 * make test also compiles this file as host C++ and runs its kernels on
 * the CPU (tests/cuda/emu/): mk/cuda.mk rewrites each `k<<<g, b>>>(`, so a
 * launch must keep that much on one line.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "rn_config.h"
#include "rn_precision.h"
#include "rn_params.h"
#include "rn_labels.h"
}
#include "rn_cuda_addrwarp.cuh"
#include "rn_cuda_bf16.cuh"
#include "rn_cuda_embed.cuh"
#include "rn_cuda_gemm.h"
#include "rn_cuda_pdma.cuh"
#include "rn_cuda_rmsnorm.cuh"
#include "rn_cuda_segtrain.cuh"
#include "rn_cuda_swiglu.cuh"
#include "rn_cuda_topk.h"
#include "rn_cuda_train.h"

/* Fail the calling function with the CUDA error's text. */
#define CU_TRY(call) do { \
        cudaError_t e_ = (call); \
        if (e_ != cudaSuccess) \
            return rn_seterr(err, RN_EINTERNAL, "CUDA: %s: %s", #call, cudaGetErrorString(e_)); \
    } while (0)

/* The same for a product of rn_cuda_gemm.h. */
#define GEMM_TRY(call) do { \
        int s_ = (call); \
        if (s_) return rn_seterr(err, RN_EINTERNAL, "CUDA GEMM: %s: %s", #call, rn_cu_gemm_error(s_)); \
    } while (0)

/* Saved activations of one layer on the device (rn_train.c's layer_acts);
 * n = rows, K/Kr the room for writes/reads. */
typedef struct {
    float *x;              /* [n,D] layer input */
    float *h1, *rstd1;     /* [n,D], [n] */
    float *q, *k;          /* [n,H·dk] raw (before α) */
    float *v, *o;          /* [n,H·dv] */
    uint32_t *raddr, *rslot, *waddr, *wslot; /* [n,H,Kr], [n,H,K] */
    float *rw, *ww;        /* [n,H,Kr], [n,H,K] */
    uint32_t *skey, *sval, *ssee; /* the scan's saves (seg_saved): [B·H·T·K] ×2, [n,H,Kr] */
    float *sst;            /* [B·H·T·K, dv+1] */
    float *xm;             /* [n,D] after the attention residual */
    float *h2, *rstd2;     /* [n,D], [n] */
    float *g, *u, *a;      /* [n,F] */
    /* --precision bf16 only: the product inputs rounded to bf16, kept for
     * the weight gradients (then h1, o, h2 and a are one scratch shared by
     * the layers: nothing else reads them after the rounding) */
    uint16_t *h1b, *ob, *h2b, *ab; /* [n,D], [n,H·dv], [n,D], [n,F] */
} layer_acts;

struct rn_cuda_trainer {
    rn_config c;             /* the model's config; c.top_k is the writes' current K */
    int64_t M, n_block;
    int max_rows, max_lab;
    int kw_max, kr_max;      /* room for the writes' and the reads' K */
    int Kr;                  /* the reads' current K */
    double eps_g;
    int prec;                /* rn_precision: RN_PREC_FP32, _TF32 or _BF16 */
    int pbf_stale;           /* bf16: pbf no longer the rounding of params */
    int B, T, n_lab;
    double loss_sum;
    float *params, *grad, *m1, *m2; /* [n_block] each */
    rn_weights w, gw;        /* carved over params and grad (device addresses) */
    layer_acts la[RN_MAX_LAYERS];
    float *xf, *hf, *rstdf;  /* [n,D], [n,D], [n] */
    float *hsel, *logits, *lse; /* [max_lab,D], [max_lab,V], [max_lab] */
    int *lab_rows, *lab_tgt, *tokens;
    double *nll;             /* [max_lab] −log p(target) */
    uint8_t *correct;        /* [max_lab] */
    float *dres, *dh, *dq, *dk, *dv, *dout, *dg, *du, *da, *dww, *drw, *dhsel;
    uint32_t *sk2, *sv2, *srk, *srv, *sinv; /* the scan's scratch (seg_scratch) */
    float *sgs, *sq;
    double *red;             /* [RED_BLOCKS] partial sums */
    double *alse;            /* [n,H,U] the decoder's chunk log-sum-exps */
    int64_t *pos0;           /* 0: the warp decoder's first position (CAPE is applied after it) */
    /* --precision bf16 only (NULL otherwise): the parameter block rounded to
     * bf16 (the products' weights; offsets as params), the rounded head
     * input, and one output gradient rounded for its two products */
    uint16_t *pbf, *hselb, *gb; /* [n_block], [max_lab,D], [max(n·max(D,F,H·dk,H·dv), max_lab·V)] */
    void *mem;
    size_t bytes;
    /* host side */
    int *h_rows, *h_tgt;
    double *h_nll;
    uint8_t *h_correct;
};

/* Threads per block of the row and reduction kernels (a power of two);
 * the host emulation of tests/cuda/emu builds with fewer. */
#ifndef RN_CUDA_TRAIN_NT
#define RN_CUDA_TRAIN_NT 256
#endif
#define NT RN_CUDA_TRAIN_NT
#define RED_BLOCKS 256

static unsigned blocks(int64_t n, int per) { return (unsigned)((n + per - 1) / per); }

/* ---- small device helpers ---- */

/* Digit u of an address (chunk 0 most significant), as rn_address.c. */
__device__ static inline int t_digit(uint32_t addr, int u, int U, int dp)
{
    for (int i = U - 1; i > u; i--) addr /= (uint32_t)dp;
    return (int)(addr % (uint32_t)dp);
}

/* Tree sum of part[0..NT) in shared memory; the result in part[0]. */
template <typename T> __device__ static void block_sum(T *part)
{
    __syncthreads();
    for (int w = NT / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
}

/* ---- address decoding (training) ----
 * forward:  a[n,H·dk] → addr, slot, w [n,H,K]: the exact top-K of
 *           rn_cuda_topk.h — by the warp decoder (rn_cuda_addrwarp.cuh,
 *           one warp per (row, head)) within its limits, else one thread
 *           per (row, head) — then each weight recomputed unquantised as
 *           exp(Σ_u log p_u[i_u]) (rn_address_train_forward; keys wider
 *           than 1024 keep the decoder's weights, as the CPU); CAPE at
 *           position r mod T.
 * backward: dw[n,H,K] → da[n,H·dk] (set): one thread per (row, head,
 *           element), da_u[j] = scale·(Σ_{k: i_u^k = j} G_k − p_u[j]·ΣG),
 *           G_k = dw_k·w_k; then dα[H] += Σ da·a, one block per head. */
__global__ void k_address_train_forward(uint32_t *addr_out, uint32_t *slot, float *w, const float *a,
                                        const float *alpha, int n, int T, int H, int U, int dp, int K,
                                        float tau, uint64_t cape_mask, int64_t M)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * H) return;
    const int r = i / H, h = i % H, dk = U * dp;
    const double scale = exp((double)alpha[h]) / (double)tau;
    const float *ah = a + (int64_t)r * H * dk + (int64_t)h * dk;
    uint32_t addr[RN_CUDA_MAX_K];
    float *wo = w + (int64_t)i * K;
    rn_cu_topk(ah, U, dp, K, scale, addr, wo);
    if (dk <= 1024) { /* RN_ADDR_LP_STACK in rn_address.c */
        double s[RN_CUDA_MAX_K];
        for (int j = 0; j < K; j++) s[j] = 0;
        for (int u = 0; u < U; u++) { /* Σ over chunks in chunk order, as the CPU */
            const float *cu = ah + (int64_t)u * dp;
            const double lse = rn_cu_chunk_lse(cu, dp, scale);
            for (int j = 0; j < K; j++) s[j] += scale * (double)cu[t_digit(addr[j], u, U, dp)] - lse;
        }
        for (int j = 0; j < K; j++) wo[j] = (float)exp(s[j]);
    }
    const int64_t t = r % T;
    const int cape = (int)((cape_mask >> h) & 1u);
    for (int j = 0; j < K; j++) {
        addr_out[(int64_t)i * K + j] = addr[j];
        slot[(int64_t)i * K + j] = cape ? rn_cu_cape(addr[j], t, M) : addr[j];
    }
}

/* The warp decoder's path (rn_cuda_addrwarp.cuh gives the addresses):
 * each chunk's log-sum-exp, one thread per (row, head, chunk), then one
 * thread per (row, head, rank) recomputes that address's weight
 * unquantised, exp(Σ_u (scale·a_u[i_u] − lse_u)) in chunk order, and its
 * slot (CAPE at position r mod T) — k_address_train_forward's arithmetic,
 * spread over the ranks. */
__global__ void k_address_lse(double *lse, const float *a, const float *alpha, int n, int H, int U, int dp,
                              float tau)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * H * U) return;
    const int h = (int)(i / U % H);
    const double scale = exp((double)alpha[h]) / (double)tau;
    lse[i] = rn_cu_chunk_lse(a + i * dp, dp, scale); /* a + ((r·H + h)·U + u)·dp */
}

__global__ void k_address_train_weights(uint32_t *slot, float *w, const uint32_t *addr, const float *a,
                                        const double *lse, const float *alpha, int n, int T, int H, int U,
                                        int dp, int K, float tau, uint64_t cape_mask, int64_t M)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * H * K) return;
    const int64_t rh = i / K, r = rh / H;
    const int h = (int)(rh % H), dk = U * dp;
    const double scale = exp((double)alpha[h]) / (double)tau;
    const float *ah = a + rh * dk;
    const uint32_t ad = addr[i];
    double s = 0;
    for (int u = 0; u < U; u++) s += scale * (double)ah[(int64_t)u * dp + t_digit(ad, u, U, dp)] - lse[rh * U + u];
    w[i] = (float)exp(s);
    slot[i] = (cape_mask >> h) & 1u ? rn_cu_cape(ad, r % T, M) : ad;
}

__global__ void k_address_backward(float *da, const float *dw, const float *a, const uint32_t *addr,
                                   const float *w, const float *alpha, int n, int H, int U, int dp,
                                   int K, float tau)
{
    const int dk = U * dp;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * H * dk) return;
    const int e = (int)(i % dk), h = (int)((i / dk) % H), u = e / dp, j = e % dp;
    const int64_t rh = i / dk; /* r·H + h */
    const double scale = exp((double)alpha[h]) / (double)tau;
    const float *cu = a + rh * dk + (int64_t)u * dp;
    const float *dwo = dw + rh * K, *wo = w + rh * K;
    const uint32_t *ad = addr + rh * K;
    double Gsum = 0;
    for (int k = 0; k < K; k++) Gsum += (double)dwo[k] * wo[k];
    double lp = scale * (double)cu[j] - rn_cu_chunk_lse(cu, dp, scale);
    double p = -exp(lp) * Gsum;
    for (int k = 0; k < K; k++)
        if (t_digit(ad[k], u, U, dp) == j) p += (double)dwo[k] * wo[k];
    da[i] = (float)(scale * p);
}

__global__ void k_alpha_backward(float *dalpha, const float *da, const float *a, int n, int H, int dk)
{
    __shared__ double part[NT];
    const int h = blockIdx.x;
    double s = 0;
    for (int64_t q = threadIdx.x; q < (int64_t)n * dk; q += NT) {
        int64_t r = q / dk, e = q % dk, at = (r * H + h) * dk + e;
        s += (double)da[at] * a[at];
    }
    part[threadIdx.x] = s;
    block_sum(part);
    if (threadIdx.x == 0) dalpha[h] += (float)part[0];
}

/* ---- PDMA (training): the segment-parallel scan ----
 * Kernels in rn_cuda_segtrain.cuh (the algorithm, and why it gives the
 * CPU's floats); here the launches.  Per layer the forward saves, for
 * the backward, the writes sorted by slot within each (sequence, head)
 * (key = slot, val = event t·Kw + j), the state after each write in that
 * order (st) and which state each read saw (see).
 * forward:  v[n,H·dv], writes wslot/ww [n,H,Kw], reads rslot/rw [n,H,Kr]
 *           → o[n,H·dv] and the saves;
 * backward: dout [n,H·dv] → dv [n,H·dv], dww [n,H,Kw], drw [n,H,Kr] (set),
 *           as rn_pdma_train_backward.
 * Each step is one launch over all B·H runs; the sorts take
 * ⌈log2 T⌉ merge passes after a per-row sort. */

/* What the forward keeps of one layer's scan (layer_acts). */
typedef struct {
    uint32_t *key, *val; /* [B·H·T·Kw] sorted writes: slot, event */
    uint32_t *see;       /* [n,H,Kr] 1 + the sorted position each read saw, 0: the reset state */
    float *st;           /* [B·H·T·Kw, dv+1] the slot's row [S, z] after each sorted write */
} seg_saved;

/* Scratch of the sorts and the backward, shared by the layers. */
typedef struct {
    uint32_t *k2, *v2;   /* [n·H·max(Kw, Kr)] the sorts' other buffers */
    uint32_t *rk, *rv;   /* [n·H·Kr] the reads sorted by the state they saw */
    uint32_t *inv;       /* [n·H·Kw] sorted position of each write event */
    float *gs;           /* [n·H·Kw, dv+1] gradient after each sorted write */
    float *q;            /* [n·H·Kr] what each read takes from dz */
} seg_scratch;

/* A scan's sizes and constants. */
typedef struct { int B, T, H, Kw, Kr, dv; float z0, gamma, eps, eps_g; } seg_dims;

/* Sorts each (sequence, head) run of T rows × K keys (src in the [B·T,
 * H, K] layout) stably by key into key/val (val: the event t·K + j), with
 * k2/v2 as the other buffer of the merge passes. */
static void seg_sort(uint32_t *key, uint32_t *val, uint32_t *k2, uint32_t *v2, const uint32_t *src,
                     const seg_dims *d, int K)
{
    const int64_t L = (int64_t)d->T * K, runs = (int64_t)d->B * d->H;
    int passes = 0;
    for (int64_t w = K; w < L; w *= 2) passes++;
    uint32_t *ka = passes % 2 ? k2 : key, *va = passes % 2 ? v2 : val; /* so the last pass ends in key */
    uint32_t *kb = passes % 2 ? key : k2, *vb = passes % 2 ? val : v2;
    k_sg_row_sort<<<blocks(runs * d->T, NT), NT>>>(ka, va, src, d->B, d->T, d->H, K);
    for (int64_t w = K; w < L; w *= 2) {
        k_sg_merge<<<blocks(runs * L, NT), NT>>>(kb, vb, ka, va, runs, L, w);
        uint32_t *t = ka; ka = kb; kb = t;
        t = va; va = vb; vb = t;
    }
}

static void seg_forward(const seg_dims *d, const seg_saved *s, const seg_scratch *x, float *o,
                        const float *v, const uint32_t *wslot, const float *ww, const uint32_t *rslot,
                        const float *rw)
{
    const int64_t nw = (int64_t)d->B * d->T * d->H * d->Kw, nr = (int64_t)d->B * d->T * d->H * d->Kr;
    seg_sort(s->key, s->val, x->k2, x->v2, wslot, d, d->Kw);
    k_sg_walk<<<blocks(nw * (d->dv + 1), NT), NT>>>(s->st, s->key, s->val, ww, v, d->B, d->T, d->H, d->Kw, d->dv, d->z0, d->gamma);
    k_sg_find<<<blocks(nr, NT), NT>>>(s->see, s->key, s->val, rslot, d->B, d->T, d->H, d->Kw, d->Kr);
    k_sg_read<<<blocks((int64_t)d->B * d->T * d->H * d->dv, NT), NT>>>(o, s->st, s->see, rw, d->B, d->T, d->H, d->Kw, d->Kr, d->dv, d->z0, d->eps);
}

static void seg_backward(const seg_dims *d, const seg_saved *s, const seg_scratch *x, float *dv_out,
                         float *dww, float *drw, const float *dout, const float *v, const float *ww,
                         const float *rw)
{
    const int64_t nw = (int64_t)d->B * d->T * d->H * d->Kw, nr = (int64_t)d->B * d->T * d->H * d->Kr;
    k_sg_read_grad<<<blocks(nr, NT), NT>>>(drw, x->q, s->st, s->see, rw, dout, d->B, d->T, d->H, d->Kw, d->Kr, d->dv, d->z0, d->eps);
    seg_sort(x->rk, x->rv, x->k2, x->v2, s->see, d, d->Kr);
    k_sg_back_walk<<<blocks(nw * (d->dv + 1), NT), NT>>>(x->gs, s->key, s->val, x->rk, x->rv, s->st, ww, rw, x->q, dout, d->B, d->T, d->H, d->Kw, d->Kr, d->dv, d->gamma, d->eps);
    k_sg_write_grad<<<blocks(nw, NT), NT>>>(dww, x->inv, x->gs, s->st, s->key, s->val, ww, v, d->B, d->T, d->H, d->Kw, d->dv, d->z0, d->gamma, d->eps_g);
    k_sg_dv<<<blocks((int64_t)d->B * d->T * d->H * d->dv, NT), NT>>>(dv_out, x->gs, x->inv, ww, d->B, d->T, d->H, d->Kw, d->dv);
}

/* ---- head and cross-entropy ----
 * gather:   hsel[nl,D] = hf[rows[i]];  scatter: dh[rows[i]] = dhsel[i]
 * forward:  logits[nl,V] → lse[nl], nll[nl] = lse − logit[target],
 *           correct[nl] (argmax, first of equal maxima == target); one block
 *           per labelled row, Σ exp in float as the CPU (tree order).
 * backward: logits ← (softmax − onehot)·k in place, k = scale/nl. */
__global__ void k_gather_rows(float *dst, const float *src, const int *rows, int nl, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)nl * D) return;
    dst[i] = src[(int64_t)rows[i / D] * D + i % D];
}

__global__ void k_scatter_rows(float *dst, const float *src, const int *rows, int nl, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)nl * D) return;
    dst[(int64_t)rows[i / D] * D + i % D] = src[i];
}

__global__ void k_xent_forward(float *lse, double *nll, uint8_t *correct, const float *logits,
                               const int *tgt, int V)
{
    __shared__ float pm[NT], ps[NT];
    __shared__ int pi[NT];
    const float *lg = logits + (int64_t)blockIdx.x * V;
    float mx = -INFINITY;
    int best = V;
    for (int j = threadIdx.x; j < V; j += NT)
        if (best == V || lg[j] > mx) { mx = lg[j]; best = j; }
    pm[threadIdx.x] = mx;
    pi[threadIdx.x] = best;
    __syncthreads();
    for (int w = NT / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) {
            float om = pm[threadIdx.x + w];
            int oi = pi[threadIdx.x + w];
            if (oi < V && (pi[threadIdx.x] == V || om > pm[threadIdx.x] ||
                           (om == pm[threadIdx.x] && oi < pi[threadIdx.x]))) {
                pm[threadIdx.x] = om;
                pi[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    const float m = pm[0];
    float s = 0;
    for (int j = threadIdx.x; j < V; j += NT) s += expf(lg[j] - m);
    ps[threadIdx.x] = s;
    block_sum(ps);
    if (threadIdx.x == 0) {
        float l = m + (float)log((double)ps[0]);
        int t = tgt[blockIdx.x];
        lse[blockIdx.x] = l;
        nll[blockIdx.x] = (double)l - (double)lg[t];
        correct[blockIdx.x] = pi[0] == t;
    }
}

__global__ void k_xent_backward(float *logits, const float *lse, const int *tgt, int nl, int V, float k)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)nl * V) return;
    const int r = (int)(i / V), j = (int)(i % V);
    float x = expf(logits[i] - lse[r]) * k;
    if (j == tgt[r]) x -= k;
    logits[i] = x;
}

/* ---- optimiser ----
 * sumsq: partial Σ g² in double per block (RED_BLOCKS blocks, grid-stride).
 * adamw: one tensor [off, off+n): rn_adamw_update's arithmetic, in double;
 * element j's gradient at grad[j − goff] (goff: where grad starts); with
 * pbf (--precision bf16) the updated parameter's bf16 rounding too. */
__global__ void k_sumsq(double *part_out, const float *g, int64_t n)
{
    __shared__ double part[NT];
    double s = 0;
    for (int64_t i = (int64_t)blockIdx.x * NT + threadIdx.x; i < n; i += (int64_t)gridDim.x * NT)
        s += (double)g[i] * g[i];
    part[threadIdx.x] = s;
    block_sum(part);
    if (threadIdx.x == 0) part_out[blockIdx.x] = part[0];
}

__global__ void k_adamw(float *params, const float *grad, int64_t goff, float *m1, float *m2, int64_t off,
                        int64_t n, double beta1, double beta2, double eps, double bc1, double bc2, double lr,
                        double wd, double gscale, uint16_t *pbf)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    j += off;
    double g = (double)grad[j - goff] * gscale; /* element j's gradient */
    double a = beta1 * m1[j] + (1 - beta1) * g;
    double b = beta2 * m2[j] + (1 - beta2) * g * g;
    m1[j] = (float)a;
    m2[j] = (float)b;
    double upd = (a / bc1) / (sqrt(b / bc2) + eps);
    const float p = (float)((double)params[j] - lr * (upd + wd * (double)params[j]));
    params[j] = p;
    if (pbf) pbf[j] = rn_cu_bf16(p);
}

/* ---- --precision bf16 ----
 * The embedding lookup of the bf16 weights: x[n,D] = widen(Eb[tok[r]]) (the
 * CPU's bf16 model rounds the embedding too: rn_precision_bf16_tensor). */
__global__ void k_embed_forward_bf16(float *x, const uint16_t *Eb, const int *tok, int n, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    x[i] = __uint_as_float((uint32_t)Eb[(int64_t)tok[i / D] * D + i % D] << 16);
}

/* ---- host side ---- */

/* Carving helper: with base == NULL only counts bytes (256-byte aligned). */
typedef struct { char *base; size_t off; } carver;

template <typename T> static T *take(carver *cv, size_t count)
{
    T *p = cv->base ? (T *)(cv->base + cv->off) : NULL;
    cv->off += (sizeof(T) * count + 255) & ~(size_t)255;
    return p;
}

static void carve_all(rn_cuda_trainer *tr, carver *cv)
{
    const rn_config *c = &tr->c;
    const size_t n = (size_t)tr->max_rows, D = c->d_model, H = c->n_heads, F = c->d_ff;
    const size_t K = tr->kw_max, Kr = tr->kr_max, dv = c->d_v, hdk = H * rn_config_dk(c), hdv = H * dv;
    const size_t NL = (size_t)tr->max_lab, V = c->vocab_size, nb = (size_t)tr->n_block;
    const int bf = tr->prec == RN_PREC_BF16;
    tr->params = take<float>(cv, nb); tr->grad = take<float>(cv, nb);
    tr->m1 = take<float>(cv, nb); tr->m2 = take<float>(cv, nb);
    for (int l = 0; l < c->n_layers; l++) {
        layer_acts *a = &tr->la[l];
        const layer_acts *a0 = &tr->la[0];
        a->x = take<float>(cv, n * D); a->rstd1 = take<float>(cv, n);
        a->q = take<float>(cv, n * hdk); a->k = take<float>(cv, n * hdk); a->v = take<float>(cv, n * hdv);
        if (bf && l > 0) { /* bf16: the FP32 product inputs are a scratch of layer 0's */
            a->h1 = a0->h1; a->o = a0->o; a->h2 = a0->h2; a->a = a0->a;
        } else {
            a->h1 = take<float>(cv, n * D); a->o = take<float>(cv, n * hdv);
            a->h2 = take<float>(cv, n * D); a->a = take<float>(cv, n * F);
        }
        if (bf) {
            a->h1b = take<uint16_t>(cv, n * D); a->ob = take<uint16_t>(cv, n * hdv);
            a->h2b = take<uint16_t>(cv, n * D); a->ab = take<uint16_t>(cv, n * F);
        }
        a->raddr = take<uint32_t>(cv, n * H * Kr); a->rslot = take<uint32_t>(cv, n * H * Kr);
        a->waddr = take<uint32_t>(cv, n * H * K); a->wslot = take<uint32_t>(cv, n * H * K);
        a->rw = take<float>(cv, n * H * Kr); a->ww = take<float>(cv, n * H * K);
        a->skey = take<uint32_t>(cv, n * H * K); a->sval = take<uint32_t>(cv, n * H * K);
        a->ssee = take<uint32_t>(cv, n * H * Kr); a->sst = take<float>(cv, n * H * K * (dv + 1));
        a->xm = take<float>(cv, n * D); a->rstd2 = take<float>(cv, n);
        a->g = take<float>(cv, n * F); a->u = take<float>(cv, n * F);
    }
    tr->xf = take<float>(cv, n * D); tr->hf = take<float>(cv, n * D); tr->rstdf = take<float>(cv, n);
    tr->hsel = take<float>(cv, NL * D); tr->logits = take<float>(cv, NL * V); tr->lse = take<float>(cv, NL);
    tr->lab_rows = take<int>(cv, NL); tr->lab_tgt = take<int>(cv, NL); tr->tokens = take<int>(cv, n);
    tr->nll = take<double>(cv, NL); tr->correct = take<uint8_t>(cv, NL);
    tr->dres = take<float>(cv, n * D); tr->dh = take<float>(cv, n * D);
    tr->dq = take<float>(cv, n * hdk); tr->dk = take<float>(cv, n * hdk);
    tr->dv = take<float>(cv, n * hdv); tr->dout = take<float>(cv, n * hdv);
    tr->dg = take<float>(cv, n * F); tr->du = take<float>(cv, n * F); tr->da = take<float>(cv, n * F);
    tr->dww = take<float>(cv, n * H * K); tr->drw = take<float>(cv, n * H * Kr);
    tr->dhsel = take<float>(cv, NL * D);
    const size_t KK = K > Kr ? K : Kr;
    tr->sk2 = take<uint32_t>(cv, n * H * KK); tr->sv2 = take<uint32_t>(cv, n * H * KK);
    tr->srk = take<uint32_t>(cv, n * H * Kr); tr->srv = take<uint32_t>(cv, n * H * Kr);
    tr->sinv = take<uint32_t>(cv, n * H * K); tr->sgs = take<float>(cv, n * H * K * (dv + 1));
    tr->sq = take<float>(cv, n * H * Kr);
    tr->red = take<double>(cv, RED_BLOCKS);
    tr->alse = take<double>(cv, n * H * c->order);
    tr->pos0 = take<int64_t>(cv, 1);
    if (bf) {
        size_t wmax = D > F ? D : F;
        if (hdk > wmax) wmax = hdk;
        if (hdv > wmax) wmax = hdv;
        tr->pbf = take<uint16_t>(cv, nb);
        tr->hselb = take<uint16_t>(cv, NL * D);
        tr->gb = take<uint16_t>(cv, n * wmax > NL * V ? n * wmax : NL * V);
    }
}

extern "C" int rn_cuda_trainer_create(rn_cuda_trainer **out, const rn_model *m, int max_rows, int max_lab,
                                      double eps_g, int kw_max, int kr_max, int precision, rn_error *err)
{
    *out = NULL;
    const rn_config *c = &m->cfg;
    const int64_t M = rn_config_slots(c);
    if (!kw_max) kw_max = c->top_k;
    if (!kr_max) kr_max = c->top_k;
    if (kw_max < c->top_k || kw_max > M || kr_max < 1 || kr_max > M)
        return rn_seterr(err, RN_EINPUT, "GPU trainer: top-K room %d (writes) / %d (reads) outside [%d, %lld] / [1, %lld]",
                         kw_max, kr_max, c->top_k, (long long)M, (long long)M);
    if (kw_max > RN_CUDA_MAX_K || kr_max > RN_CUDA_MAX_K)
        return rn_seterr(err, RN_EINPUT, "--device cuda: top-K %d exceeds the GPU decoder's limit of %d",
                         kw_max > kr_max ? kw_max : kr_max, RN_CUDA_MAX_K);
    if (max_rows < 1 || max_lab < 1)
        return rn_seterr(err, RN_EINPUT, "trainer: batch must have at least one row and one label");
    if (!(eps_g >= 0 && eps_g < 1))
        return rn_seterr(err, RN_EINPUT, "eps_g must be in [0, 1) (got %g)", eps_g);
    if (precision != RN_PREC_FP32 && precision != RN_PREC_TF32 && precision != RN_PREC_BF16)
        return rn_seterr(err, RN_EINPUT, "GPU trainer: unknown precision %d", precision);
    int st = rn_cu_gemm_init();
    if (st) return rn_seterr(err, RN_EINTERNAL, "CUDA GEMM init: %s", rn_cu_gemm_error(st));
    rn_cuda_trainer *tr = (rn_cuda_trainer *)calloc(1, sizeof *tr);
    if (!tr) return rn_seterr(err, RN_ENOMEM, "out of memory");
    tr->c = *c;
    tr->M = M;
    tr->n_block = m->n_block;
    tr->max_rows = max_rows;
    tr->max_lab = max_lab < max_rows ? max_lab : max_rows;
    tr->kw_max = kw_max;
    tr->kr_max = kr_max;
    tr->Kr = c->top_k < kr_max ? c->top_k : kr_max;
    tr->eps_g = eps_g;
    tr->prec = precision;
    tr->pbf_stale = 1;
    carver cv = { NULL, 0 };
    carve_all(tr, &cv);
    tr->bytes = cv.off;
    tr->h_rows = (int *)malloc(sizeof(int) * (size_t)tr->max_lab);
    tr->h_tgt = (int *)malloc(sizeof(int) * (size_t)tr->max_lab);
    tr->h_nll = (double *)malloc(sizeof(double) * (size_t)tr->max_lab);
    tr->h_correct = (uint8_t *)malloc((size_t)tr->max_lab);
    if (!tr->h_rows || !tr->h_tgt || !tr->h_nll || !tr->h_correct) {
        rn_cuda_trainer_free(tr);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    cudaError_t e = cudaMalloc(&tr->mem, cv.off);
    if (e != cudaSuccess) {
        int rc = rn_seterr(err, RN_ENOMEM, "CUDA: %s allocating %zu bytes of training state on the GPU",
                           cudaGetErrorString(e), cv.off);
        tr->mem = NULL;
        rn_cuda_trainer_free(tr);
        return rc;
    }
    cv.base = (char *)tr->mem;
    cv.off = 0;
    carve_all(tr, &cv);
    rn_weights_carve(&tr->c, tr->params, &tr->w);
    rn_weights_carve(&tr->c, tr->grad, &tr->gw);
    const size_t nbb = sizeof(float) * (size_t)tr->n_block;
    e = cudaMemcpy(tr->params, m->params, nbb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(tr->grad, 0, nbb);
    if (e == cudaSuccess) e = cudaMemset(tr->m1, 0, nbb);
    if (e == cudaSuccess) e = cudaMemset(tr->m2, 0, nbb);
    if (e == cudaSuccess) e = cudaMemset(tr->pos0, 0, sizeof(int64_t));
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        int rc = rn_seterr(err, RN_EINTERNAL, "CUDA: %s setting up the GPU trainer", cudaGetErrorString(e));
        rn_cuda_trainer_free(tr);
        return rc;
    }
    *out = tr;
    return RN_OK;
}

extern "C" void rn_cuda_trainer_free(rn_cuda_trainer *tr)
{
    if (!tr) return;
    if (tr->mem) cudaFree(tr->mem);
    free(tr->h_rows);
    free(tr->h_tgt);
    free(tr->h_nll);
    free(tr->h_correct);
    free(tr);
}

extern "C" size_t rn_cuda_trainer_bytes(const rn_cuda_trainer *tr) { return tr->bytes; }

extern "C" int rn_cuda_trainer_set_topk(rn_cuda_trainer *tr, int kw, int kr, rn_error *err)
{
    if (kw < 1 || kw > tr->kw_max || kr < 1 || kr > tr->kr_max)
        return rn_seterr(err, RN_EINPUT, "GPU trainer: top-K %d/%d outside its room %d/%d", kw, kr,
                         tr->kw_max, tr->kr_max);
    tr->c.top_k = kw;
    tr->Kr = kr;
    return RN_OK;
}

extern "C" int rn_cuda_trainer_n_labelled(const rn_cuda_trainer *tr) { return tr->n_lab; }
extern "C" double rn_cuda_trainer_loss_sum(const rn_cuda_trainer *tr) { return tr->loss_sum; }
extern "C" const uint8_t *rn_cuda_trainer_correct(const rn_cuda_trainer *tr) { return tr->h_correct; }
extern "C" const int *rn_cuda_trainer_label_rows(const rn_cuda_trainer *tr) { return tr->h_rows; }

/* The scan's sizes, saves and scratch for a batch of B × T with Kw/Kr. */
static seg_dims scan_dims(const rn_cuda_trainer *tr, int B, int T, int Kw, int Kr)
{
    const rn_config *c = &tr->c;
    return seg_dims{ B, T, c->n_heads, Kw, Kr, c->d_v, (float)(1.0 / (double)tr->M), c->gamma, c->eps,
                     (float)tr->eps_g };
}

static seg_saved scan_saved(const layer_acts *a) { return seg_saved{ a->skey, a->sval, a->ssee, a->sst }; }

static seg_scratch scan_scratch(const rn_cuda_trainer *tr)
{
    return seg_scratch{ tr->sk2, tr->sv2, tr->srk, tr->srv, tr->sinv, tr->sgs, tr->sq };
}

static void rmsnorm_forward(float *out, float *rstd, const float *x, const float *g, int n, int D, float eps)
{
    k_rmsnorm_forward<<<n, NT>>>(out, rstd, x, g, D, eps);
}

static void rmsnorm_backward(float *dx, float *dg, const float *dout, const float *x, const float *g,
                             const float *rstd, int n, int D)
{
    k_rmsnorm_backward_dx<<<n, NT>>>(dx, dout, x, g, rstd, D);
    k_rmsnorm_backward_dg<<<blocks(D, RN_CUDA_DG_COLS), NT>>>(dg, dout, x, rstd, n, D);
}

/* Training decoder of n rows (K addresses per head) into addr/slot/w: the
 * warp decoder (one warp per (row, head)) where its limits allow, then
 * the weights and slots per rank; else one thread per (row, head). */
static void address_forward(const rn_cuda_trainer *tr, uint32_t *addr, uint32_t *slot, float *w,
                            const float *a, const float *alpha, int K, uint64_t cape_mask, int n)
{
    const rn_config *c = &tr->c;
    const int H = c->n_heads, U = c->order, dp = c->d_p, kc = K < dp ? K : dp;
    if (U * dp <= AW_MAXUD && K * kc <= AW_MAXC) {
        const addr_job j = { addr, slot, w, a, alpha }; /* slots without CAPE: set below */
        const dim3 grid(blocks((int64_t)n * H, AW_WARPS), 1);
        k_address_warp<<<grid, 32 * AW_WARPS>>>(j, j, n, H, U, dp, K, c->tau, 0, tr->pos0, tr->M);
        k_address_lse<<<blocks((int64_t)n * H * U, NT), NT>>>(tr->alse, a, alpha, n, H, U, dp, c->tau);
        k_address_train_weights<<<blocks((int64_t)n * H * K, NT), NT>>>(slot, w, addr, a, tr->alse, alpha, n, tr->T, H, U, dp, K, c->tau, cape_mask, tr->M);
    } else {
        k_address_train_forward<<<blocks((int64_t)n * H, 64), 64>>>(
            addr, slot, w, a, alpha, n, tr->T, H, U, dp, K, c->tau, cape_mask, tr->M);
    }
}

static void address_backward(const rn_cuda_trainer *tr, float *da, float *dalpha, const float *dw,
                             const float *a, const uint32_t *addr, const float *w, const float *alpha,
                             int K, int n)
{
    const rn_config *c = &tr->c;
    const int dk = rn_config_dk(c);
    k_address_backward<<<blocks((int64_t)n * c->n_heads * dk, NT), NT>>>(
        da, dw, a, addr, w, alpha, n, c->n_heads, c->order, c->d_p, K, c->tau);
    k_alpha_backward<<<c->n_heads, NT>>>(dalpha, da, a, n, c->n_heads, dk);
}

/* Under bf16, make pbf the rounding of params again if they changed
 * outside the fused AdamW (create, set_state, a shard's update, the block
 * handed out to the collectives); then the math mode of the fp32 products
 * (TF32 tensor cores under tf32).  Run before each forward and backward. */
static int precision_prepare(rn_cuda_trainer *tr, rn_error *err)
{
    if (tr->prec == RN_PREC_BF16 && tr->pbf_stale) {
        rn_cu_k_to_bf16<<<blocks(tr->n_block, NT), NT>>>(tr->pbf, tr->params, tr->n_block);
        CU_TRY(cudaGetLastError());
        tr->pbf_stale = 0;
    }
    GEMM_TRY(rn_cu_gemm_set_tf32(tr->prec == RN_PREC_TF32));
    return RN_OK;
}

/* dst[0..n) = bf16(src) (stream-ordered before the products that read it). */
static void to_bf16(uint16_t *dst, const float *src, int64_t n)
{
    rn_cu_k_to_bf16<<<blocks(n, NT), NT>>>(dst, src, n);
}

/* W's bf16 copy: the same offset in pbf as W in params. */
static const uint16_t *wbf(const rn_cuda_trainer *tr, const float *W)
{
    return tr->pbf + (W - tr->params);
}

/* out[n,O] (+= when acc) in[n,I]·W[O,I]ᵀ: FP32 (or TF32) from in, or under
 * bf16 from inb, in's rounding (the caller rounds it once for the products
 * that share it), and W's bf16 copy, accumulated in FP32. */
static int prod_fwd(const rn_cuda_trainer *tr, float *out, const float *in, const uint16_t *inb, const float *W,
                    int n, int I, int O, int acc)
{
    if (tr->prec != RN_PREC_BF16) return rn_cu_matmul(out, in, W, n, I, O, acc);
    return rn_cu_matmul_bf16(out, inb, wbf(tr, W), n, I, O, acc);
}

/* The two products of a forward's backward: din[n,I] (+= when acc)
 * dout[n,O]·W and dW += doutᵀ·in.  Under bf16 dout is rounded into gb,
 * which both read, with W's bf16 copy and inb (the forward's rounded
 * input); dW accumulates in the FP32 gradient block. */
static int prod_bwd(rn_cuda_trainer *tr, float *din, float *dW, const float *dout, const float *W, const float *in,
                    const uint16_t *inb, int n, int I, int O, int acc)
{
    int s;
    if (tr->prec != RN_PREC_BF16) {
        if ((s = rn_cu_matmul_din(din, dout, W, n, I, O, acc))) return s;
        return rn_cu_matmul_dw(dW, dout, in, n, I, O);
    }
    to_bf16(tr->gb, dout, (int64_t)n * O);
    if ((s = rn_cu_matmul_din_bf16(din, tr->gb, wbf(tr, W), n, I, O, acc))) return s;
    return rn_cu_matmul_dw_bf16(dW, tr->gb, inb, n, I, O);
}

extern "C" int rn_cuda_trainer_forward(rn_cuda_trainer *tr, const int *tokens, const int *targets, int B,
                                       int T, double *loss, rn_error *err)
{
    const rn_config *c = &tr->c;
    const rn_weights *w = &tr->w;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, V = c->vocab_size, dv = c->d_v;
    const int hdk = H * rn_config_dk(c), hdv = H * dv, K = c->top_k, Kr = tr->Kr;
    if (B < 1 || T < 1 || (int64_t)B * T > tr->max_rows)
        return rn_seterr(err, RN_EINPUT, "trainer: batch %d x %d exceeds the room for %d rows", B, T, tr->max_rows);
    const int n = B * T;
    int nl = 0;
    int lrc = rn_train_label_rows(tokens, targets, n, V, tr->max_lab, tr->h_rows, tr->h_tgt, &nl, err);
    if (lrc) return lrc;
    tr->B = B; tr->T = T; tr->n_lab = nl;
    const int bf = tr->prec == RN_PREC_BF16;
    if ((lrc = precision_prepare(tr, err))) return lrc;
    CU_TRY(cudaMemcpy(tr->tokens, tokens, sizeof(int) * n, cudaMemcpyHostToDevice));
    if (nl) {
        CU_TRY(cudaMemcpy(tr->lab_rows, tr->h_rows, sizeof(int) * nl, cudaMemcpyHostToDevice));
        CU_TRY(cudaMemcpy(tr->lab_tgt, tr->h_tgt, sizeof(int) * nl, cudaMemcpyHostToDevice));
    }
    if (bf) k_embed_forward_bf16<<<blocks((int64_t)n * D, NT), NT>>>(tr->la[0].x, wbf(tr, w->embed), tr->tokens, n, D);
    else k_embed_forward<<<blocks((int64_t)n * D, NT), NT>>>(tr->la[0].x, w->embed, tr->tokens, n, D);
    const seg_dims sd = scan_dims(tr, B, T, K, Kr);
    const seg_scratch sx = scan_scratch(tr);
    for (int l = 0; l < c->n_layers; l++) {
        layer_acts *a = &tr->la[l];
        const rn_layer_weights *lw = &w->layer[l];
        rmsnorm_forward(a->h1, a->rstd1, a->x, lw->attn_norm, n, D, c->norm_eps);
        if (bf) to_bf16(a->h1b, a->h1, (int64_t)n * D);
        GEMM_TRY(prod_fwd(tr, a->q, a->h1, a->h1b, lw->wq, n, D, hdk, 0));
        GEMM_TRY(prod_fwd(tr, a->k, a->h1, a->h1b, lw->wk, n, D, hdk, 0));
        GEMM_TRY(prod_fwd(tr, a->v, a->h1, a->h1b, lw->wv, n, D, hdv, 0));
        address_forward(tr, a->raddr, a->rslot, a->rw, a->q, lw->q_alpha, Kr, c->cape_mask[l], n);
        address_forward(tr, a->waddr, a->wslot, a->ww, a->k, lw->k_alpha, K, c->cape_mask[l], n);
        const seg_saved ss = scan_saved(a);
        seg_forward(&sd, &ss, &sx, a->o, a->v, a->wslot, a->ww, a->rslot, a->rw);
        CU_TRY(cudaMemcpyAsync(a->xm, a->x, sizeof(float) * (size_t)n * D, cudaMemcpyDeviceToDevice));
        if (bf) to_bf16(a->ob, a->o, (int64_t)n * hdv);
        GEMM_TRY(prod_fwd(tr, a->xm, a->o, a->ob, lw->wo, n, hdv, D, 1));
        rmsnorm_forward(a->h2, a->rstd2, a->xm, lw->mlp_norm, n, D, c->norm_eps);
        if (bf) to_bf16(a->h2b, a->h2, (int64_t)n * D);
        GEMM_TRY(prod_fwd(tr, a->g, a->h2, a->h2b, lw->w_gate, n, D, F, 0));
        GEMM_TRY(prod_fwd(tr, a->u, a->h2, a->h2b, lw->w_up, n, D, F, 0));
        k_swiglu_forward<<<blocks((int64_t)n * F, NT), NT>>>(a->a, a->g, a->u, (int64_t)n * F);
        float *xn = l + 1 < c->n_layers ? tr->la[l + 1].x : tr->xf;
        CU_TRY(cudaMemcpyAsync(xn, a->xm, sizeof(float) * (size_t)n * D, cudaMemcpyDeviceToDevice));
        if (bf) to_bf16(a->ab, a->a, (int64_t)n * F);
        GEMM_TRY(prod_fwd(tr, xn, a->a, a->ab, lw->w_down, n, F, D, 1));
    }
    rmsnorm_forward(tr->hf, tr->rstdf, tr->xf, w->norm, n, D, c->norm_eps);
    double total = 0;
    if (nl > 0) {
        k_gather_rows<<<blocks((int64_t)nl * D, NT), NT>>>(tr->hsel, tr->hf, tr->lab_rows, nl, D);
        if (bf) to_bf16(tr->hselb, tr->hsel, (int64_t)nl * D);
        GEMM_TRY(prod_fwd(tr, tr->logits, tr->hsel, tr->hselb, w->lm_head, nl, D, V, 0));
        k_xent_forward<<<nl, NT>>>(tr->lse, tr->nll, tr->correct, tr->logits, tr->lab_tgt, V);
        CU_TRY(cudaGetLastError());
        CU_TRY(cudaMemcpy(tr->h_nll, tr->nll, sizeof(double) * nl, cudaMemcpyDeviceToHost));
        CU_TRY(cudaMemcpy(tr->h_correct, tr->correct, (size_t)nl, cudaMemcpyDeviceToHost));
        for (int i = 0; i < nl; i++) total += tr->h_nll[i];
    } else {
        CU_TRY(cudaGetLastError());
        CU_TRY(cudaDeviceSynchronize());
    }
    tr->loss_sum = total;
    *loss = nl ? total / nl : 0;
    return RN_OK;
}

extern "C" int rn_cuda_trainer_backward(rn_cuda_trainer *tr, double scale, rn_error *err)
{
    const rn_config *c = &tr->c;
    const rn_weights *w = &tr->w;
    rn_weights *gw = &tr->gw;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, V = c->vocab_size, dv = c->d_v;
    const int hdk = H * rn_config_dk(c), hdv = H * dv, K = c->top_k, Kr = tr->Kr;
    const int B = tr->B, T = tr->T, n = B * T, nl = tr->n_lab;
    int prc = precision_prepare(tr, err);
    if (prc) return prc;
    CU_TRY(cudaMemsetAsync(tr->dres, 0, sizeof(float) * (size_t)n * D));
    if (nl > 0) {
        /* dlogits = (softmax − onehot)·scale/n_lab, in place */
        k_xent_backward<<<blocks((int64_t)nl * V, NT), NT>>>(tr->logits, tr->lse, tr->lab_tgt, nl, V,
                                                             (float)(scale / nl));
        GEMM_TRY(prod_bwd(tr, tr->dhsel, gw->lm_head, tr->logits, w->lm_head, tr->hsel, tr->hselb, nl, D, V, 0));
        CU_TRY(cudaMemsetAsync(tr->dh, 0, sizeof(float) * (size_t)n * D));
        k_scatter_rows<<<blocks((int64_t)nl * D, NT), NT>>>(tr->dh, tr->dhsel, tr->lab_rows, nl, D);
        rmsnorm_backward(tr->dres, gw->norm, tr->dh, tr->xf, w->norm, tr->rstdf, n, D);
    }
    const seg_dims sd = scan_dims(tr, B, T, K, Kr);
    const seg_scratch sx = scan_scratch(tr);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        layer_acts *a = &tr->la[l];
        const rn_layer_weights *lw = &w->layer[l];
        rn_layer_weights *gl = &gw->layer[l];
        /* MLP: x_out = xm + a·W_downᵀ */
        GEMM_TRY(prod_bwd(tr, tr->da, gl->w_down, tr->dres, lw->w_down, a->a, a->ab, n, F, D, 0));
        k_swiglu_backward<<<blocks((int64_t)n * F, NT), NT>>>(tr->dg, tr->du, tr->da, a->g, a->u, (int64_t)n * F);
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->w_gate, tr->dg, lw->w_gate, a->h2, a->h2b, n, D, F, 0));
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->w_up, tr->du, lw->w_up, a->h2, a->h2b, n, D, F, 1));
        rmsnorm_backward(tr->dres, gl->mlp_norm, tr->dh, a->xm, lw->mlp_norm, a->rstd2, n, D);
        /* attention: xm = x + o·W_oᵀ */
        GEMM_TRY(prod_bwd(tr, tr->dout, gl->wo, tr->dres, lw->wo, a->o, a->ob, n, hdv, D, 0));
        const seg_saved ss = scan_saved(a);
        seg_backward(&sd, &ss, &sx, tr->dv, tr->dww, tr->drw, tr->dout, a->v, a->ww, a->rw);
        address_backward(tr, tr->dq, gl->q_alpha, tr->drw, a->q, a->raddr, a->rw, lw->q_alpha, Kr, n);
        address_backward(tr, tr->dk, gl->k_alpha, tr->dww, a->k, a->waddr, a->ww, lw->k_alpha, K, n);
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wq, tr->dq, lw->wq, a->h1, a->h1b, n, D, hdk, 0));
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wk, tr->dk, lw->wk, a->h1, a->h1b, n, D, hdk, 1));
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wv, tr->dv, lw->wv, a->h1, a->h1b, n, D, hdv, 1));
        rmsnorm_backward(tr->dres, gl->attn_norm, tr->dh, a->x, lw->attn_norm, a->rstd1, n, D);
    }
    /* the embedding gradient: the rows sorted by token (the scan's scratch
     * is free by now), then one thread per (token, column) */
    const seg_dims rows = { 1, n, 1, 1, 1, 1, 0.f, 0.f, 0.f, 0.f };
    seg_sort(sx.rk, sx.rv, sx.k2, sx.v2, (const uint32_t *)tr->tokens, &rows, 1);
    k_embed_backward<<<blocks((int64_t)n * D, NT), NT>>>(gw->embed, tr->dres, sx.rk, sx.rv, n, D);
    CU_TRY(cudaGetLastError());
    return RN_OK;
}

extern "C" int rn_cuda_trainer_zero_grads(rn_cuda_trainer *tr, rn_error *err)
{
    CU_TRY(cudaMemsetAsync(tr->grad, 0, sizeof(float) * (size_t)tr->n_block));
    return RN_OK;
}

extern "C" int rn_cuda_trainer_grads(rn_cuda_trainer *tr, float *out, rn_error *err)
{
    CU_TRY(cudaMemcpy(out, tr->grad, sizeof(float) * (size_t)tr->n_block, cudaMemcpyDeviceToHost));
    return RN_OK;
}

extern "C" int rn_cuda_trainer_sumsq(rn_cuda_trainer *tr, const float *g, int64_t n, double *sumsq, rn_error *err)
{
    double part[RED_BLOCKS];
    k_sumsq<<<RED_BLOCKS, NT>>>(tr->red, g, n);
    CU_TRY(cudaGetLastError());
    CU_TRY(cudaMemcpy(part, tr->red, sizeof part, cudaMemcpyDeviceToHost));
    double s = 0;
    for (int i = 0; i < RED_BLOCKS; i++) s += part[i];
    *sumsq = s;
    return RN_OK;
}

extern "C" int rn_cuda_trainer_grad_norm(rn_cuda_trainer *tr, double *norm, rn_error *err)
{
    double s;
    int rc = rn_cuda_trainer_sumsq(tr, tr->grad, tr->n_block, &s, err);
    if (rc) return rc;
    *norm = sqrt(s);
    return RN_OK;
}

extern "C" int rn_cuda_trainer_adamw(rn_cuda_trainer *tr, const rn_adamw_opts *o, int64_t step, double lr,
                                     double gscale, rn_error *err)
{
    return rn_cuda_trainer_adamw_range(tr, tr->grad, o, step, lr, gscale, 0, tr->n_block, err);
}

extern "C" int rn_cuda_trainer_adamw_range(rn_cuda_trainer *tr, const float *grad, const rn_adamw_opts *o,
                                           int64_t step, double lr, double gscale, int64_t lo, int64_t hi,
                                           rn_error *err)
{
    const int nt = rn_params_count_tensors(&tr->c);
    /* bf16: the whole block's update refreshes pbf in the same kernel; a
     * shard's leaves the rest to the collectives, so pbf is redone before
     * the next forward */
    const int whole = lo == 0 && hi == tr->n_block;
    uint16_t *pbf = tr->prec == RN_PREC_BF16 && whole ? tr->pbf : NULL;
    if (tr->prec == RN_PREC_BF16 && !whole) tr->pbf_stale = 1;
    const double bc1 = 1 - pow(o->beta1, (double)(step + 1)), bc2 = 1 - pow(o->beta2, (double)(step + 1));
    for (int i = 0; i < nt; i++) {
        rn_tensor_desc t;
        rn_params_tensor(&tr->c, i, &t);
        double wd = (t.kind == RN_T_MATRIX || t.kind == RN_T_EMBED) ? o->weight_decay : 0;
        /* the part of the tensor inside [lo, hi) */
        int64_t a0 = t.offset > lo ? t.offset : lo, a1 = t.offset + t.numel < hi ? t.offset + t.numel : hi;
        if (a0 >= a1) continue;
        k_adamw<<<blocks(a1 - a0, NT), NT>>>(tr->params, grad, lo, tr->m1, tr->m2, a0, a1 - a0, o->beta1,
                                             o->beta2, o->eps, bc1, bc2, lr, wd, gscale, pbf);
    }
    CU_TRY(cudaGetLastError());
    return RN_OK;
}

extern "C" void rn_cuda_trainer_block(rn_cuda_trainer *tr, float **params, float **grad, float **m1, float **m2,
                                      int64_t *n)
{
    *params = tr->params;
    *grad = tr->grad;
    *m1 = tr->m1;
    *m2 = tr->m2;
    *n = tr->n_block;
    tr->pbf_stale = 1; /* the caller may write the parameters */
}

extern "C" int rn_cuda_trainer_get_state(rn_cuda_trainer *tr, float *params, float *m1, float *m2,
                                         rn_error *err)
{
    const size_t nb = sizeof(float) * (size_t)tr->n_block;
    if (params) CU_TRY(cudaMemcpy(params, tr->params, nb, cudaMemcpyDeviceToHost));
    if (m1) CU_TRY(cudaMemcpy(m1, tr->m1, nb, cudaMemcpyDeviceToHost));
    if (m2) CU_TRY(cudaMemcpy(m2, tr->m2, nb, cudaMemcpyDeviceToHost));
    return RN_OK;
}

extern "C" int rn_cuda_trainer_set_state(rn_cuda_trainer *tr, const float *params, const float *m1,
                                         const float *m2, rn_error *err)
{
    const size_t nb = sizeof(float) * (size_t)tr->n_block;
    tr->pbf_stale = 1;
    CU_TRY(cudaMemcpy(tr->params, params, nb, cudaMemcpyHostToDevice));
    CU_TRY(cudaMemcpy(tr->m1, m1, nb, cudaMemcpyHostToDevice));
    CU_TRY(cudaMemcpy(tr->m2, m2, nb, cudaMemcpyHostToDevice));
    return RN_OK;
}

/* rn_cuda_pdma_train_run's device buffers: the inputs and outputs, the
 * saves and the scratch, carved from one allocation like the trainer's. */
typedef struct {
    float *o, *dv, *dww, *drw, *v, *ww, *rw, *dout;
    uint32_t *wslot, *rslot;
    seg_saved s;
    seg_scratch x;
} scan_run_bufs;

static void scan_run_carve(scan_run_bufs *b, carver *cv, size_t n, int H, int Kw, int Kr, int dv)
{
    const size_t nw = n * H * Kw, nr = n * H * Kr, nv = n * H * dv, C = (size_t)dv + 1, nk = nw > nr ? nw : nr;
    b->o = take<float>(cv, nv); b->dv = take<float>(cv, nv); b->v = take<float>(cv, nv);
    b->dout = take<float>(cv, nv); b->dww = take<float>(cv, nw); b->ww = take<float>(cv, nw);
    b->drw = take<float>(cv, nr); b->rw = take<float>(cv, nr);
    b->wslot = take<uint32_t>(cv, nw); b->rslot = take<uint32_t>(cv, nr);
    b->s = seg_saved{ take<uint32_t>(cv, nw), take<uint32_t>(cv, nw), take<uint32_t>(cv, nr), take<float>(cv, nw * C) };
    b->x.k2 = take<uint32_t>(cv, nk); b->x.v2 = take<uint32_t>(cv, nk);
    b->x.rk = take<uint32_t>(cv, nr); b->x.rv = take<uint32_t>(cv, nr);
    b->x.inv = take<uint32_t>(cv, nw); b->x.gs = take<float>(cv, nw * C); b->x.q = take<float>(cv, nr);
}

extern "C" int rn_cuda_pdma_train_run(float *o, float *dv, float *dww, float *drw, const float *v,
                                      const uint32_t *wslot, const float *ww, const uint32_t *rslot,
                                      const float *rw, const float *dout, int B, int T, int H, int Kw,
                                      int Kr, int d_v, int64_t M, float gamma, float eps, float eps_g,
                                      rn_error *err)
{
    if (B < 1 || T < 1 || H < 1 || Kw < 1 || Kr < 1 || d_v < 1 || M < 1)
        return rn_seterr(err, RN_EINPUT, "GPU scan: a size below 1");
    const size_t n = (size_t)B * T, nw = n * H * Kw, nr = n * H * Kr, nv = n * H * d_v;
    const seg_dims d = { B, T, H, Kw, Kr, d_v, (float)(1.0 / (double)M), gamma, eps, eps_g };
    scan_run_bufs b;
    carver cv = { NULL, 0 };
    scan_run_carve(&b, &cv, n, H, Kw, Kr, d_v);
    void *mem = NULL;
    CU_TRY(cudaMalloc(&mem, cv.off));
    cv.base = (char *)mem;
    cv.off = 0;
    scan_run_carve(&b, &cv, n, H, Kw, Kr, d_v);
    cudaError_t e = cudaMemcpy(b.v, v, sizeof(float) * nv, cudaMemcpyHostToDevice);
    if (!e) e = cudaMemcpy(b.dout, dout, sizeof(float) * nv, cudaMemcpyHostToDevice);
    if (!e) e = cudaMemcpy(b.ww, ww, sizeof(float) * nw, cudaMemcpyHostToDevice);
    if (!e) e = cudaMemcpy(b.rw, rw, sizeof(float) * nr, cudaMemcpyHostToDevice);
    if (!e) e = cudaMemcpy(b.wslot, wslot, sizeof(uint32_t) * nw, cudaMemcpyHostToDevice);
    if (!e) e = cudaMemcpy(b.rslot, rslot, sizeof(uint32_t) * nr, cudaMemcpyHostToDevice);
    if (!e) {
        seg_forward(&d, &b.s, &b.x, b.o, b.v, b.wslot, b.ww, b.rslot, b.rw);
        seg_backward(&d, &b.s, &b.x, b.dv, b.dww, b.drw, b.dout, b.v, b.ww, b.rw);
        e = cudaGetLastError();
    }
    if (!e) e = cudaMemcpy(o, b.o, sizeof(float) * nv, cudaMemcpyDeviceToHost);
    if (!e) e = cudaMemcpy(dv, b.dv, sizeof(float) * nv, cudaMemcpyDeviceToHost);
    if (!e) e = cudaMemcpy(dww, b.dww, sizeof(float) * nw, cudaMemcpyDeviceToHost);
    if (!e) e = cudaMemcpy(drw, b.drw, sizeof(float) * nr, cudaMemcpyDeviceToHost);
    cudaFree(mem);
    if (e) return rn_seterr(err, RN_EINTERNAL, "CUDA: %s running the training scan", cudaGetErrorString(e));
    return RN_OK;
}

extern "C" int rn_cuda_trainer_weights_bf16(rn_cuda_trainer *tr, uint16_t *out, rn_error *err)
{
    if (tr->prec != RN_PREC_BF16) return rn_seterr(err, RN_EINPUT, "GPU trainer: no bf16 weights (precision fp32/tf32)");
    int rc = precision_prepare(tr, err);
    if (rc) return rc;
    CU_TRY(cudaMemcpy(out, tr->pbf, sizeof(uint16_t) * (size_t)tr->n_block, cudaMemcpyDeviceToHost));
    return RN_OK;
}

extern "C" int rn_cuda_trainer_topk(rn_cuda_trainer *tr, int l, int writes, uint32_t *addr, float *w, rn_error *err)
{
    if (l < 0 || l >= tr->c.n_layers) return rn_seterr(err, RN_EINPUT, "GPU trainer: no layer %d", l);
    const layer_acts *a = &tr->la[l];
    const size_t cnt = (size_t)tr->B * tr->T * tr->c.n_heads * (writes ? tr->c.top_k : tr->Kr);
    if (addr) CU_TRY(cudaMemcpy(addr, writes ? a->waddr : a->raddr, sizeof(uint32_t) * cnt, cudaMemcpyDeviceToHost));
    if (w) CU_TRY(cudaMemcpy(w, writes ? a->ww : a->rw, sizeof(float) * cnt, cudaMemcpyDeviceToHost));
    return RN_OK;
}
