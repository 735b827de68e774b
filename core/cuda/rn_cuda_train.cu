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
 * rn_cuda_pdma.cuh (the decay, a write, a read, a step's writes and
 * reads); the decoder's arithmetic is rn_cuda_topk.h's.  Every matrix
 * product goes through rn_cuda_gemm.h.  Where the CPU reduces serially
 * (the embedding gradient) the GPU does the same sum in the same order,
 * one thread per column; where the CPU reduces in double (RMSNorm's sums,
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
#include "rn_cuda_bf16.cuh"
#include "rn_cuda_embed.cuh"
#include "rn_cuda_gemm.h"
#include "rn_cuda_pdma.cuh"
#include "rn_cuda_rmsnorm.cuh"
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
    float *wsave, *rsave;  /* [B,H,T,K,dv+1], [B,H,T,Kr,dv+1] */
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
    int n_par;               /* concurrent PDMA scans: dense states in Sz, dSz */
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
    float *Sz, *dSz;         /* [n_par, M·(dv+1)]: S then z per scan */
    double *red;             /* [RED_BLOCKS] partial sums */
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
 * forward:  a[n,H·dk] → addr, slot, w [n,H,K]: one thread per (row, head);
 *           the exact top-K of rn_cuda_topk.h, then each weight recomputed
 *           unquantised as exp(Σ_u log p_u[i_u]) (rn_address_train_forward;
 *           keys wider than 1024 keep the decoder's weights, as the CPU);
 *           CAPE at position r mod T.
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

/* ---- PDMA (training) ----
 * One block per (sequence b, head h), bh = b·H + h, strided over gridDim.x
 * blocks that each own one dense state (S[M,dv] then z[M]) in the scratch;
 * thread c < dv owns value column c, thread dv owns z; steps in order.
 * forward:  v[n,H·dv], writes wslot/ww [n,H,Kw], reads rslot/rw [n,H,Kr]
 *           → o[n,H·dv], wsave [B,H,T,Kw,dv+1] (pre-write row and z of each
 *           written slot), rsave [B,H,T,Kr,dv+1] (row and z of each read
 *           slot at read time).  The K slots of one step are distinct (top-K
 *           addresses are distinct; CAPE is a rotation), so a step's writes
 *           touch disjoint rows and each thread may apply them in rank order.
 * backward: dout [n,H·dv] → dv [n,H·dv] (set), dww [n,H,Kw], drw [n,H,Kr]
 *           (set), through dense gradient accumulators dS, dz (zero on entry,
 *           zeroed again on return), as rn_pdma_train_backward.
 * The forward's writes and reads are rn_cuda_pdma.cuh's, shared with the
 * inference scan: the CPU's rounding (no FMA contraction). */
__global__ void k_pdma_train_forward(float *o, float *wsave, float *rsave, float *Sz, const float *v,
                                     const uint32_t *wslot, const float *ww, const uint32_t *rslot,
                                     const float *rw, int B, int T, int H, int Kw, int Kr, int dv,
                                     int64_t M, float gamma, float eps)
{
    __shared__ uint32_t s_ws[RN_CUDA_MAX_K], s_rs[RN_CUDA_MAX_K];
    __shared__ float s_ww[RN_CUDA_MAX_K], s_rw[RN_CUDA_MAX_K];
    const int c = threadIdx.x;
    const size_t rs = (size_t)dv + 1, vstride = (size_t)H * dv, wstride = (size_t)H * Kw,
                 rstride = (size_t)H * Kr;
    float *S = Sz + (size_t)blockIdx.x * (size_t)M * rs, *z = S + (size_t)M * dv;
    const float z0 = (float)(1.0 / (double)M);
    for (int bh = blockIdx.x; bh < B * H; bh += gridDim.x) {
        const int b = bh / H, h = bh % H;
        const size_t r0 = (size_t)b * T;
        const float *vb = v + r0 * vstride + (size_t)h * dv;
        float *ob = o + r0 * vstride + (size_t)h * dv;
        const uint32_t *wsb = wslot + (r0 * H + h) * Kw, *rsb = rslot + (r0 * H + h) * Kr;
        const float *wwb = ww + (r0 * H + h) * Kw, *rwb = rw + (r0 * H + h) * Kr;
        float *wsv = wsave + ((size_t)b * H + h) * T * Kw * rs, *rsv = rsave + ((size_t)b * H + h) * T * Kr * rs;
        for (int t = 0; t < T; t++) {
            const uint32_t *ws = wsb + t * wstride, *rsl = rsb + t * rstride;
            const float *wt = wwb + t * wstride, *rt = rwb + t * rstride, *vt = vb + t * vstride;
            /* the step's slots and weights, staged once for every thread */
            for (int j = c; j < Kw; j += blockDim.x) { s_ws[j] = ws[j]; s_ww[j] = wt[j]; }
            for (int j = c; j < Kr; j += blockDim.x) { s_rs[j] = rsl[j]; s_rw[j] = rt[j]; }
            __syncthreads();
            /* the writes (rn_cuda_pdma.cuh), saving each pre-write row */
            rn_cu_pdma_write(S, z, s_ws, s_ww, Kw, c, dv, c < dv ? vt[c] : 0.0f, gamma, wsv + (size_t)t * Kw * rs);
            __syncthreads(); /* z of the written slots, for the read */
            const float acc = rn_cu_pdma_read(S, z, s_rs, s_rw, Kr, c, dv, eps, rsv + (size_t)t * Kr * rs);
            if (c < dv) ob[t * vstride + c] = acc;
            __syncthreads(); /* the reads of z (and the staged slots) before the next step's writes */
        }
        /* back to the reset state: only the written slots changed */
        for (int t = 0; t < T; t++)
            for (int j = 0; j < Kw; j++) {
                const uint32_t s = wsb[t * wstride + j];
                if (c < dv) S[(size_t)s * dv + c] = 0;
                else z[s] = z0;
            }
        __syncthreads();
    }
}

__global__ void k_pdma_train_backward(float *dv_out, float *dww, float *drw, float *dSz,
                                      const float *dout, const float *wsave, const float *rsave,
                                      const float *v, const uint32_t *wslot, const float *ww,
                                      const uint32_t *rslot, const float *rw, int B, int T, int H,
                                      int Kw, int Kr, int dv, int64_t M, float gamma, float eps,
                                      float eps_g)
{
    __shared__ float s_dot[RN_CUDA_MAX_K], s_dz[RN_CUDA_MAX_K];
    const int c = threadIdx.x;
    const size_t rs = (size_t)dv + 1, vstride = (size_t)H * dv, wstride = (size_t)H * Kw,
                 rstride = (size_t)H * Kr;
    float *dS = dSz + (size_t)blockIdx.x * (size_t)M * rs, *dz = dS + (size_t)M * dv;
    for (int bh = blockIdx.x; bh < B * H; bh += gridDim.x) {
        const int b = bh / H, h = bh % H;
        const size_t r0 = (size_t)b * T, vo = r0 * vstride + (size_t)h * dv;
        const uint32_t *wsb = wslot + (r0 * H + h) * Kw, *rsb = rslot + (r0 * H + h) * Kr;
        const float *wwb = ww + (r0 * H + h) * Kw, *rwb = rw + (r0 * H + h) * Kr;
        float *dwb = dww + (r0 * H + h) * Kw, *drb = drw + (r0 * H + h) * Kr;
        const float *wsv = wsave + ((size_t)b * H + h) * T * Kw * rs,
                    *rsv = rsave + ((size_t)b * H + h) * T * Kr * rs;
        for (int t = T - 1; t >= 0; t--) {
            const uint32_t *ws = wsb + t * wstride, *rsl = rsb + t * rstride;
            const float *wt = wwb + t * wstride, *rt = rwb + t * rstride;
            const float *vt = v + vo + t * vstride, *go = dout + vo + t * vstride;
            float *dvt = dv_out + vo + t * vstride, *dwt = dwb + t * wstride, *drt = drb + t * rstride;
            /* the read: o = Σ_j r_j·S[s_j]/(z[s_j] + eps).  The Kr dots
             * ⟨dout, saved row⟩ are spread over the threads (thread j takes
             * dot j, summed in the CPU's order), not all left to one. */
            for (int j = c; j < Kr; j += blockDim.x) {
                const float *sv = rsv + ((size_t)t * Kr + j) * rs;
                float dot = 0;
                for (int i = 0; i < dv; i++) dot += go[i] * sv[i];
                s_dot[j] = dot;
            }
            __syncthreads();
            for (int j = 0; j < Kr; j++) {
                const float *sv = rsv + ((size_t)t * Kr + j) * rs;
                const uint32_t s = rsl[j];
                const float zz = sv[dv] + eps, k = rt[j] / zz;
                if (c < dv) {
                    dS[(size_t)s * dv + c] += k * go[c];
                } else {
                    const float dot = s_dot[j];
                    drt[j] = dot / zz;
                    dz[s] -= k * dot / zz;
                }
            }
            __syncthreads(); /* dS of the read slots, for the writes' dots */
            /* the writes: S' = d·S + w·v, z' = d·z + w.  Distinct slots:
             * each rank's dots read rows no other rank of this step changes,
             * so all dots come before all decays, and rank j's (thread j's)
             * dots and dz update touch only slot s_j. */
            if (c < dv) {
                float acc = 0;
                for (int j = Kw - 1; j >= 0; j--) acc += wt[j] * dS[(size_t)ws[j] * dv + c];
                dvt[c] = acc;
            }
            for (int j = c; j < Kw; j += blockDim.x) {
                const float *sv = wsv + ((size_t)t * Kw + j) * rs;
                const float w = wt[j], d = rn_cu_decay(w, gamma), dd = rn_cu_decay_grad(w, gamma, eps_g);
                const float *g = dS + (size_t)ws[j] * dv;
                const float gz = dz[ws[j]];
                float dsv = 0, dss = 0;
                for (int i = 0; i < dv; i++) {
                    dsv += g[i] * vt[i];
                    dss += g[i] * sv[i];
                }
                dwt[j] = dsv + gz + dd * (dss + gz * sv[dv]);
                s_dz[j] = d * gz; /* stored after the barrier: thread dv reads dz above */
            }
            __syncthreads();
            for (int j = c; j < Kw; j += blockDim.x) dz[ws[j]] = s_dz[j];
            __syncthreads(); /* the dots read dS before the decays change it */
            if (c < dv)
                for (int j = Kw - 1; j >= 0; j--) dS[(size_t)ws[j] * dv + c] *= rn_cu_decay(wt[j], gamma);
            __syncthreads();
        }
        /* zero the touched accumulators again */
        for (int t = 0; t < T; t++) {
            for (int j = 0; j < Kw; j++) {
                const uint32_t s = wsb[t * wstride + j];
                if (c < dv) dS[(size_t)s * dv + c] = 0;
                else dz[s] = 0;
            }
            for (int j = 0; j < Kr; j++) {
                const uint32_t s = rsb[t * rstride + j];
                if (c < dv) dS[(size_t)s * dv + c] = 0;
                else dz[s] = 0;
            }
        }
        __syncthreads();
    }
}

/* S = 0, z = 1/M (forward states) or 0 (gradient accumulators), for every
 * one of the n_par scans. */
__global__ void k_state_reset(float *Sz, int n_par, int64_t M, int dv, float z0)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, per = M * (dv + 1);
    if (i >= per * n_par) return;
    Sz[i] = i % per < M * dv ? 0.f : z0;
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
        a->wsave = take<float>(cv, n * H * K * (dv + 1)); a->rsave = take<float>(cv, n * H * Kr * (dv + 1));
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
    tr->Sz = take<float>(cv, (size_t)tr->n_par * (size_t)tr->M * (dv + 1));
    tr->dSz = take<float>(cv, (size_t)tr->n_par * (size_t)tr->M * (dv + 1));
    tr->red = take<double>(cv, RED_BLOCKS);
    if (bf) {
        size_t wmax = D > F ? D : F;
        if (hdk > wmax) wmax = hdk;
        if (hdv > wmax) wmax = hdv;
        tr->pbf = take<uint16_t>(cv, nb);
        tr->hselb = take<uint16_t>(cv, NL * D);
        tr->gb = take<uint16_t>(cv, n * wmax > NL * V ? n * wmax : NL * V);
    }
}

/* Dense PDMA scratch per concurrent scan is M·(d_v+1) floats, twice
 * (forward state, backward accumulator); at most this many bytes go to it. */
#define SCAN_SCRATCH_BYTES ((size_t)256 << 20)

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
    if (c->d_v + 1 > 1024)
        return rn_seterr(err, RN_EINPUT, "--device cuda: d_v %d exceeds the GPU trainer's limit of 1023", c->d_v);
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
    const size_t per = sizeof(float) * (size_t)M * (c->d_v + 1);
    int64_t n_par = (int64_t)(SCAN_SCRATCH_BYTES / 2 / per);
    if (n_par < 1) n_par = 1;
    if (n_par > (int64_t)max_rows * c->n_heads) n_par = (int64_t)max_rows * c->n_heads;
    if (n_par > 4096) n_par = 4096;
    tr->n_par = (int)n_par;
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
    if (e == cudaSuccess) {
        const int64_t all = (int64_t)tr->n_par * M * (c->d_v + 1);
        k_state_reset<<<blocks(all, NT), NT>>>(tr->Sz, tr->n_par, M, c->d_v, (float)(1.0 / (double)M));
        k_state_reset<<<blocks(all, NT), NT>>>(tr->dSz, tr->n_par, M, c->d_v, 0.f);
        e = cudaGetLastError();
    }
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

/* Training decoder of n rows (K addresses per head) into addr/slot/w. */
static void address_forward(const rn_cuda_trainer *tr, uint32_t *addr, uint32_t *slot, float *w,
                            const float *a, const float *alpha, int K, uint64_t cape_mask, int n)
{
    const rn_config *c = &tr->c;
    k_address_train_forward<<<blocks((int64_t)n * c->n_heads, 64), 64>>>(
        addr, slot, w, a, alpha, n, tr->T, c->n_heads, c->order, c->d_p, K, c->tau, cape_mask, tr->M);
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
    const int par = B * H < tr->n_par ? B * H : tr->n_par;
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
        k_pdma_train_forward<<<par, dv + 1>>>(a->o, a->wsave, a->rsave, tr->Sz, a->v, a->wslot, a->ww,
                                              a->rslot, a->rw, B, T, H, K, Kr, dv, tr->M, c->gamma, c->eps);
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
    const int par = B * H < tr->n_par ? B * H : tr->n_par;
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
        k_pdma_train_backward<<<par, dv + 1>>>(tr->dv, tr->dww, tr->drw, tr->dSz, tr->dout, a->wsave,
                                               a->rsave, a->v, a->wslot, a->ww, a->rslot, a->rw, B, T, H,
                                               K, Kr, dv, tr->M, c->gamma, c->eps, (float)tr->eps_g);
        address_backward(tr, tr->dq, gl->q_alpha, tr->drw, a->q, a->raddr, a->rw, lw->q_alpha, Kr, n);
        address_backward(tr, tr->dk, gl->k_alpha, tr->dww, a->k, a->waddr, a->ww, lw->k_alpha, K, n);
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wq, tr->dq, lw->wq, a->h1, a->h1b, n, D, hdk, 0));
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wk, tr->dk, lw->wk, a->h1, a->h1b, n, D, hdk, 1));
        GEMM_TRY(prod_bwd(tr, tr->dh, gl->wv, tr->dv, lw->wv, a->h1, a->h1b, n, D, hdv, 1));
        rmsnorm_backward(tr->dres, gl->attn_norm, tr->dh, a->x, lw->attn_norm, a->rstd1, n, D);
    }
    k_embed_backward<<<blocks(D, NT), NT>>>(gw->embed, tr->dres, tr->tokens, n, D);
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
