/* cuda_runtime.h (host emulation) — just enough of the CUDA runtime to
 * compile a .cu file of core/cuda/ as host C++ and run its kernels on CPU
 * threads, so the GPU trainer's kernels are exercised by `make test` on a
 * machine without a GPU (mk/cuda.mk builds test_cuda_train_emu with it).
 *
 * A launch `k<<<g, b>>>(args)` is rewritten by mk/cuda.mk (sed) into
 * EMU_LAUNCH(k, g, b)(args).  It runs the grid's blocks one after another
 * on the calling thread; a block's threads are coroutines and
 * __syncthreads, __syncwarp and the warp shuffles (__shfl_*_sync) switch
 * between them (emu_run), so a missing barrier can show as a wrong result
 * (not reliably: real warps interleave otherwise).
 * __shared__ becomes `static`: one block runs at a time.  Device memory is host memory; cudaMalloc fills
 * it with 0xff bytes (NaN as float) so reads of unwritten data show.
 * Arithmetic is the host's: the _rn intrinsics are plain operations and
 * there is no FMA contraction (compiled -std=c++17 without -mfma), so the
 * emulation tests logic and indexing, not the GPU's rounding.
 */
#ifndef RN_CUDA_EMU_RUNTIME_H
#define RN_CUDA_EMU_RUNTIME_H

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__ static

inline char emu_stream_tag; /* the address every emulated stream names */

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

typedef enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorNotSupported = 801 } cudaError_t;
typedef enum { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice } cudaMemcpyKind;

inline const char *cudaGetErrorString(cudaError_t e) { return e ? "out of memory (emulated)" : "no error"; }
inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
template <typename T> inline cudaError_t cudaMalloc(T **p, size_t n)
{
    *p = (T *)malloc(n ? n : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    memset((void *)*p, 0xff, n);
    return cudaSuccess;
}
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memcpy(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind) { memcpy(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemset(void *d, int v, size_t n) { memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n) { memset(d, v, n); return cudaSuccess; }

/* Streams (everything runs at once, in order: a stream is only a name),
 * pinned host memory (plain), one device; graph capture is refused, so a
 * caller takes its uncaptured path. */
typedef struct emu_stream *cudaStream_t;
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;
enum { cudaStreamNonBlocking = 1 };
typedef enum { cudaStreamCaptureModeThreadLocal = 1 } cudaStreamCaptureMode;
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = (cudaStream_t)&emu_stream_tag; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) { memcpy(d, s, n); return cudaSuccess; }
template <typename T> inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMalloc(p, n); }
inline cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) { return cudaErrorNotSupported; }
inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g) { *g = nullptr; return cudaErrorNotSupported; }
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t, unsigned long long) { return cudaErrorNotSupported; }
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { return cudaErrorNotSupported; }
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
inline cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, sizeof u); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, sizeof f); return f; }

/* The emulator's state: the kernel running now, its threads as coroutines
 * (ucontext) on one host thread, what each thread waits at, and which
 * kernels have been seen to use a barrier or a warp operation. */
enum { EMU_RUN, EMU_BAR, EMU_WARP, EMU_DONE }; /* a thread: runnable, at __syncthreads, at a warp sync, ended */
struct emu_state {
    ucontext_t main;
    std::vector<ucontext_t> ctx;
    std::vector<std::vector<char>> stack;
    std::vector<char> wait;          /* EMU_* of each thread of the block */
    std::vector<uint64_t> lane;      /* the values each thread offers to warp shuffles, two each */
    std::vector<unsigned> shfl_n;    /* shuffles each thread has made */
    std::set<const void *> seen;     /* kernels launched before */
    std::set<const void *> syncing;  /* those of them that call __syncthreads or a warp operation */
    const std::function<void()> *fn = nullptr;
    int cur = -1;                    /* the coroutine running, -1: direct mode */
    int n = 0;                       /* threads in the block */
    bool synced = false;
};
inline emu_state emu;

/* Suspend the running thread until the scheduler (emu_run) releases what
 * it waits at: why is EMU_BAR or EMU_WARP. */
inline void emu_wait(char why)
{
    if (emu.cur < 0) { /* direct mode is only for kernels without barriers */
        fprintf(stderr, "cuda emulation: a kernel first seen without barriers or warp operations used one\n");
        abort();
    }
    emu.synced = true;
    emu.wait[emu.cur] = why;
    swapcontext(&emu.ctx[emu.cur], &emu.main);
}

inline void __syncthreads(void) { emu_wait(EMU_BAR); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_wait(EMU_WARP); }

/* A warp shuffle: every lane of the warp offers v, waits for the others
 * and takes the value of lane src (its own when src < 0 or past the
 * block's last thread).  Offers alternate between two buffers, so a lane
 * that runs on to its next shuffle cannot overwrite a value another lane
 * has still to take (it cannot get two shuffles ahead: each waits for the
 * whole warp).  All lanes of the warp take part (the mask is the full
 * warp's in every use here). */
template <typename T> inline T emu_shfl(T v, int src)
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "cuda emulation: shuffle of a type wider than 8 bytes");
    if (emu.cur < 0) emu_wait(EMU_WARP); /* direct mode: aborts */
    const int t = emu.cur, buf = emu.shfl_n[t]++ % 2;
    memcpy(&emu.lane[2 * t + buf], &v, sizeof v);
    emu_wait(EMU_WARP);
    T r = v;
    const int s = t - t % 32 + src;
    if (src >= 0 && s < emu.n) memcpy(&r, &emu.lane[2 * s + buf], sizeof r);
    return r;
}
inline int emu_laneid(void) { return (int)threadIdx.x % 32; }
template <typename T> inline T __shfl_sync(unsigned, T v, int src, int w = 32)
{
    return emu_shfl(v, emu_laneid() / w * w + src % w);
}
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned d, int w = 32)
{
    const int l = emu_laneid();
    return emu_shfl(v, l % w + (int)d < w ? l + (int)d : -1);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned d, int w = 32)
{
    const int l = emu_laneid();
    return emu_shfl(v, l % w >= (int)d ? l - (int)d : -1);
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int m, int w = 32)
{
    const int l = emu_laneid(), s = l ^ m;
    return emu_shfl(v, s / w == l / w ? s : -1);
}

inline void emu_entry(void)
{
    (*emu.fn)();
    emu.wait[emu.cur] = EMU_DONE;
}

/* A fresh coroutine for thread t, and running it up to its next barrier
 * or its end.  Kept out of line: getcontext and swapcontext return twice,
 * and the caller's locals must not live across them. */
__attribute__((noinline)) inline void emu_init_ctx(int t)
{
    getcontext(&emu.ctx[t]);
    emu.ctx[t].uc_stack.ss_sp = emu.stack[t].data();
    emu.ctx[t].uc_stack.ss_size = emu.stack[t].size();
    emu.ctx[t].uc_link = &emu.main;
    makecontext(&emu.ctx[t], emu_entry, 0);
    emu.wait[t] = EMU_RUN;
    emu.shfl_n[t] = 0;
}

__attribute__((noinline)) inline void emu_resume(int t)
{
    emu.cur = t;
    threadIdx = dim3((unsigned)t);
    swapcontext(&emu.main, &emu.ctx[t]);
}

/* After a round (no thread runnable): release what may go on.  A warp
 * whose live lanes all wait at a warp sync goes on first; when none does
 * and every live thread waits at __syncthreads, all go on.  Anything else
 * is a deadlock on a GPU too (a warp sync with lanes that ended or wait at
 * __syncthreads, a barrier some threads never reach): abort.  Returns
 * whether any thread is left. */
inline bool emu_release(void)
{
    const int n = emu.n;
    bool warp = false, alive = false, all_bar = true;
    for (int w0 = 0; w0 < n; w0 += 32) {
        const int w1 = w0 + 32 < n ? w0 + 32 : n;
        int at_warp = 0, ended = 0;
        for (int t = w0; t < w1; t++) {
            at_warp += emu.wait[t] == EMU_WARP;
            ended += emu.wait[t] == EMU_DONE;
        }
        if (at_warp && at_warp + ended == w1 - w0 && !ended) {
            for (int t = w0; t < w1; t++) emu.wait[t] = EMU_RUN;
            warp = true;
        }
    }
    if (warp) return true;
    for (int t = 0; t < n; t++)
        if (emu.wait[t] != EMU_DONE) {
            alive = true;
            all_bar = all_bar && emu.wait[t] == EMU_BAR;
        }
    if (!alive) return false;
    if (!all_bar) {
        fprintf(stderr, "cuda emulation: block %u deadlocks (a warp sync some lanes of the warp never reach)\n",
                blockIdx.x);
        abort();
    }
    for (int t = 0; t < n; t++)
        if (emu.wait[t] == EMU_BAR) emu.wait[t] = EMU_RUN;
    return true;
}

/* Run fn as grid g of blocks of b threads (1-D blocks; grids of x by y
 * blocks, y outer).  A kernel
 * known to use no barrier runs each thread to completion in turn; any
 * other runs its block's threads as coroutines, round by round: each
 * runnable thread runs up to its next __syncthreads, warp sync or shuffle
 * (or its end), in ascending thread order on even rounds and descending on
 * odd ones, so a value read across threads without a barrier between tends
 * to show; then emu_release lets the waiting threads on. */
inline void emu_run(const void *kernel, dim3 g, dim3 b, const std::function<void()> &fn)
{
    blockDim = b;
    gridDim = g;
    const int n = (int)b.x;
    if (emu.seen.count(kernel) && !emu.syncing.count(kernel)) {
        emu.cur = -1;
        for (unsigned k = 0; k < g.x * g.y; k++) {
            blockIdx = dim3(k % g.x, k / g.x);
            for (int t = 0; t < n; t++) {
                threadIdx = dim3((unsigned)t);
                fn();
            }
        }
        return;
    }
    if ((int)emu.ctx.size() < n) {
        emu.ctx.resize(n);
        emu.stack.resize(n);
        for (auto &st : emu.stack) st.resize(64 << 10);
    }
    emu.n = n;
    emu.wait.assign(n, EMU_RUN);
    emu.shfl_n.assign(n, 0);
    emu.lane.assign(2 * (size_t)n, 0);
    emu.fn = &fn;
    emu.synced = false;
    for (unsigned k = 0; k < g.x * g.y; k++) {
        blockIdx = dim3(k % g.x, k / g.x);
        for (int t = 0; t < n; t++) emu_init_ctx(t);
        int round = 0;
        do {
            for (int i = 0; i < n; i++) {
                int t = round % 2 ? n - 1 - i : i;
                if (emu.wait[t] == EMU_RUN) emu_resume(t);
            }
            round++;
        } while (emu_release());
    }
    emu.cur = -1;
    if (emu.synced) emu.syncing.insert(kernel);
    emu.seen.insert(kernel); /* barrier-free from now on unless it synced */
}

template <typename... P> struct emu_call {
    dim3 g, b;
    void (*k)(P...);
    template <typename... A> void operator()(A... a) const
    {
        emu_run((const void *)k, g, b, [&] { k(a...); });
    }
};
template <typename... P> emu_call<P...> emu_make(void (*k)(P...), dim3 g, dim3 b) { return { g, b, k }; }
#define EMU_LAUNCH(k, g, b, ...) emu_make(k, g, b) /* shared bytes and stream: ignored */

#endif
