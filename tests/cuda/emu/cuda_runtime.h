/* cuda_runtime.h (host emulation) — just enough of the CUDA runtime to
 * compile a .cu file of core/cuda/ as host C++ and run its kernels on CPU
 * threads, so the GPU trainer's kernels are exercised by `make test` on a
 * machine without a GPU (mk/cuda.mk builds test_cuda_train_emu with it).
 *
 * A launch `k<<<g, b>>>(args)` is rewritten by mk/cuda.mk (sed) into
 * EMU_LAUNCH(k, g, b)(args).  It runs the grid's blocks one after another
 * on the calling thread; a block's threads are coroutines and
 * __syncthreads switches between them (emu_run), so a missing barrier can
 * show as a wrong result (not reliably: real warps interleave otherwise).
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

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

typedef enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 } cudaError_t;
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

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }

/* The emulator's state: the kernel running now, its threads as coroutines
 * (ucontext) on one host thread, and which kernels have been seen to use
 * __syncthreads. */
struct emu_state {
    ucontext_t main;
    std::vector<ucontext_t> ctx;
    std::vector<std::vector<char>> stack;
    std::vector<char> done;
    std::set<const void *> seen;     /* kernels launched before */
    std::set<const void *> syncing;  /* those of them that call __syncthreads */
    const std::function<void()> *fn = nullptr;
    int cur = -1;                    /* the coroutine running, -1: direct mode */
    bool synced = false;
};
inline emu_state emu;

inline void __syncthreads(void)
{
    if (emu.cur < 0) { /* direct mode is only for kernels without barriers */
        fprintf(stderr, "cuda emulation: a kernel first seen without __syncthreads called it\n");
        abort();
    }
    emu.synced = true;
    swapcontext(&emu.ctx[emu.cur], &emu.main);
}

inline void emu_entry(void)
{
    (*emu.fn)();
    emu.done[emu.cur] = 1;
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
    emu.done[t] = 0;
}

__attribute__((noinline)) inline void emu_resume(int t)
{
    emu.cur = t;
    threadIdx = dim3((unsigned)t);
    swapcontext(&emu.main, &emu.ctx[t]);
}

/* Run fn as grid g of blocks of b threads (1-D grids and blocks).  A kernel
 * known to use no barrier runs each thread to completion in turn; any
 * other runs its block's threads as coroutines, phase by phase: each runs
 * up to its next __syncthreads (or its end) before any goes past it, in
 * ascending thread order on even phases and descending on odd ones, so a
 * value read across threads without a barrier between tends to show. */
inline void emu_run(const void *kernel, dim3 g, dim3 b, const std::function<void()> &fn)
{
    blockDim = b;
    gridDim = g;
    const int n = (int)b.x;
    if (emu.seen.count(kernel) && !emu.syncing.count(kernel)) {
        emu.cur = -1;
        for (unsigned k = 0; k < g.x; k++) {
            blockIdx = dim3(k);
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
    emu.done.assign(n, 0);
    emu.fn = &fn;
    emu.synced = false;
    for (unsigned k = 0; k < g.x; k++) {
        blockIdx = dim3(k);
        for (int t = 0; t < n; t++) emu_init_ctx(t);
        for (int phase = 0, alive = n; alive > 0; phase++) {
            alive = 0;
            for (int i = 0; i < n; i++) {
                int t = phase % 2 ? n - 1 - i : i;
                if (emu.done[t]) continue;
                emu_resume(t);
                alive += !emu.done[t];
            }
        }
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
#define EMU_LAUNCH(k, g, b) emu_make(k, g, b)

#endif
