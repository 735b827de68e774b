/* rn_gemv.c — the generation step's matrix-vector products (rn_gemv.h):
 * FP32 or bf16 weights, FP32 arithmetic, a kernel per instruction set
 * chosen at run time.
 *
 * Every kernel computes each row the same way whether it is one of a group
 * of four or a row on its own (the groups only let four rows' loads and
 * FMAs overlap), so a row's value does not depend on how the rows were
 * split among threads.
 */
#include "rn_gemv.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* A kernel: rows [r0, r1) of y (=|+=) W·x, W of the kernel's format. */
typedef void (*gemv_fn)(float *y, const void *W, const float *x, int r0, int r1, int cols, int acc);

/* ---- portable C: one accumulator per row, in element order ---- */

static void f32_c(float *y, const void *Wv, const float *x, int r0, int r1, int cols, int acc)
{
    const float *W = Wv;
    for (int r = r0; r < r1; r++) {
        const float *w = W + (size_t)r * cols;
        float s = 0;
        for (int i = 0; i < cols; i++) s += w[i] * x[i];
        y[r] = acc ? y[r] + s : s;
    }
}

static void bf16_c(float *y, const void *Wv, const float *x, int r0, int r1, int cols, int acc)
{
    const uint16_t *W = Wv;
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * cols;
        float s = 0;
        for (int i = 0; i < cols; i++) s += rn_bf16_to_f32(w[i]) * x[i];
        y[r] = acc ? y[r] + s : s;
    }
}

/* ---- AVX2 + FMA: 8 lanes per row, the tail added in order after ---- */

__attribute__((target("avx2,fma"))) static inline float hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static inline __m256 ld_bf16_avx2(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* Software prefetch, PF rows ahead of the group of four being summed (0:
 * none): the group that many rows on, at the same column.  The step's
 * matrices have short rows (a few hundred weights: a few cache lines), too
 * short for the hardware's stream prefetcher to get ahead of four row
 * streams; with bf16 weights, which mostly fit the last-level cache, the
 * products then wait on the cache rather than on memory or arithmetic.
 * Measured at the stories15M shape, one thread (docs/inference.md): 16
 * rows ahead took the bf16 step from about 4.1 to 2.6 s of CPU over 3,000
 * steps; FP32 weights, which stream from memory, gained nothing. */
#define PF_ROWS_BF16 16

#define PREFETCH_GROUP(PF, i)                                                                     \
    do {                                                                                          \
        if ((PF) && r + 4 + (PF) <= r1) {                                                         \
            const size_t pd = (size_t)(PF) * cols + (size_t)(i);                                  \
            _mm_prefetch((const char *)(w0 + pd), _MM_HINT_T0);                                   \
            _mm_prefetch((const char *)(w1 + pd), _MM_HINT_T0);                                   \
            _mm_prefetch((const char *)(w2 + pd), _MM_HINT_T0);                                   \
            _mm_prefetch((const char *)(w3 + pd), _MM_HINT_T0);                                   \
        }                                                                                         \
    } while (0)

/* Rows [r0, r1) with LOAD(p) giving 8 FP32 weights at p: four rows at a
 * time (four independent FMA chains), then the rest one by one; each row
 * is the same sequence of FMAs, horizontal sum and in-order tail either way
 * (the prefetch PF changes no value). */
#define AVX2_KERNEL(NAME, T, LOAD, WIDEN, PF)                                                     \
    __attribute__((target("avx2,fma"))) static void NAME(float *y, const void *Wv, const float *x, \
                                                         int r0, int r1, int cols, int acc)     \
    {                                                                                            \
        const T *W = Wv;                                                                         \
        int r = r0;                                                                              \
        for (; r + 4 <= r1; r += 4) {                                                            \
            const T *w0 = W + (size_t)r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols; \
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                          \
            int i = 0;                                                                           \
            for (; i + 8 <= cols; i += 8) {                                                      \
                if (i % 32 == 0) PREFETCH_GROUP(PF, i);                                          \
                __m256 xv = _mm256_loadu_ps(x + i);                                              \
                a0 = _mm256_fmadd_ps(LOAD(w0 + i), xv, a0);                                      \
                a1 = _mm256_fmadd_ps(LOAD(w1 + i), xv, a1);                                      \
                a2 = _mm256_fmadd_ps(LOAD(w2 + i), xv, a2);                                      \
                a3 = _mm256_fmadd_ps(LOAD(w3 + i), xv, a3);                                      \
            }                                                                                    \
            float s0 = hsum_avx2(a0), s1 = hsum_avx2(a1), s2 = hsum_avx2(a2), s3 = hsum_avx2(a3);        \
            for (int t = i; t < cols; t++) {                                                     \
                s0 += WIDEN(w0[t]) * x[t], s1 += WIDEN(w1[t]) * x[t];                            \
                s2 += WIDEN(w2[t]) * x[t], s3 += WIDEN(w3[t]) * x[t];                            \
            }                                                                                    \
            if (acc) s0 += y[r], s1 += y[r + 1], s2 += y[r + 2], s3 += y[r + 3];                 \
            y[r] = s0, y[r + 1] = s1, y[r + 2] = s2, y[r + 3] = s3;                              \
        }                                                                                        \
        for (; r < r1; r++) {                                                                    \
            const T *w0 = W + (size_t)r * cols;                                                  \
            __m256 a0 = _mm256_setzero_ps();                                                     \
            int i = 0;                                                                           \
            for (; i + 8 <= cols; i += 8) a0 = _mm256_fmadd_ps(LOAD(w0 + i), _mm256_loadu_ps(x + i), a0); \
            float s0 = hsum_avx2(a0);                                                              \
            for (int t = i; t < cols; t++) s0 += WIDEN(w0[t]) * x[t];                            \
            y[r] = acc ? s0 + y[r] : s0;                                                         \
        }                                                                                        \
    }

#define F32_AS_IS(v) (v)
AVX2_KERNEL(f32_avx2, float, _mm256_loadu_ps, F32_AS_IS, 0)
AVX2_KERNEL(bf16_avx2, uint16_t, ld_bf16_avx2, rn_bf16_to_f32, PF_ROWS_BF16)

/* ---- AVX-512F: 16 lanes per row, the tail by a masked load ---- */

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx2,fma"

__attribute__((target(AVX512_TARGET))) static inline __m512 ld_bf16_avx512(const uint16_t *p, __mmask16 m)
{
    __m256i h = m == 0xffff ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(m, p);
    __m512i w = _mm512_cvtepu16_epi32(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

__attribute__((target(AVX512_TARGET))) static inline __m512 ld_f32_avx512(const float *p, __mmask16 m)
{
    return m == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

/* As AVX2_KERNEL with 16 lanes; the last partial vector is a masked load
 * (zeros beyond the row), so there is no scalar tail. */
#define AVX512_KERNEL(NAME, T, LOAD, PF)                                                          \
    __attribute__((target(AVX512_TARGET))) static void NAME(float *y, const void *Wv, const float *x, \
                                                            int r0, int r1, int cols, int acc)  \
    {                                                                                            \
        const T *W = Wv;                                                                         \
        int r = r0;                                                                              \
        for (; r + 4 <= r1; r += 4) {                                                            \
            const T *w0 = W + (size_t)r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols; \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                          \
            int i = 0;                                                                           \
            for (; i + 16 <= cols; i += 16) {                                                    \
                if (i % 32 == 0) PREFETCH_GROUP(PF, i);                                          \
                __m512 xv = _mm512_loadu_ps(x + i);                                              \
                a0 = _mm512_fmadd_ps(LOAD(w0 + i, 0xffff), xv, a0);                              \
                a1 = _mm512_fmadd_ps(LOAD(w1 + i, 0xffff), xv, a1);                              \
                a2 = _mm512_fmadd_ps(LOAD(w2 + i, 0xffff), xv, a2);                              \
                a3 = _mm512_fmadd_ps(LOAD(w3 + i, 0xffff), xv, a3);                              \
            }                                                                                    \
            if (i < cols) {                                                                      \
                __mmask16 m = (__mmask16)((1u << (cols - i)) - 1);                               \
                __m512 xv = _mm512_maskz_loadu_ps(m, x + i);                                     \
                a0 = _mm512_fmadd_ps(LOAD(w0 + i, m), xv, a0);                                   \
                a1 = _mm512_fmadd_ps(LOAD(w1 + i, m), xv, a1);                                   \
                a2 = _mm512_fmadd_ps(LOAD(w2 + i, m), xv, a2);                                   \
                a3 = _mm512_fmadd_ps(LOAD(w3 + i, m), xv, a3);                                   \
            }                                                                                    \
            float s0 = _mm512_reduce_add_ps(a0), s1 = _mm512_reduce_add_ps(a1);                  \
            float s2 = _mm512_reduce_add_ps(a2), s3 = _mm512_reduce_add_ps(a3);                  \
            if (acc) s0 += y[r], s1 += y[r + 1], s2 += y[r + 2], s3 += y[r + 3];                 \
            y[r] = s0, y[r + 1] = s1, y[r + 2] = s2, y[r + 3] = s3;                              \
        }                                                                                        \
        for (; r < r1; r++) {                                                                    \
            const T *w0 = W + (size_t)r * cols;                                                  \
            __m512 a0 = _mm512_setzero_ps();                                                     \
            int i = 0;                                                                           \
            for (; i + 16 <= cols; i += 16)                                                      \
                a0 = _mm512_fmadd_ps(LOAD(w0 + i, 0xffff), _mm512_loadu_ps(x + i), a0);          \
            if (i < cols) {                                                                      \
                __mmask16 m = (__mmask16)((1u << (cols - i)) - 1);                               \
                a0 = _mm512_fmadd_ps(LOAD(w0 + i, m), _mm512_maskz_loadu_ps(m, x + i), a0);      \
            }                                                                                    \
            float s0 = _mm512_reduce_add_ps(a0);                                                 \
            y[r] = acc ? s0 + y[r] : s0;                                                         \
        }                                                                                        \
    }

AVX512_KERNEL(f32_avx512, float, ld_f32_avx512, 0)
AVX512_KERNEL(bf16_avx512, uint16_t, ld_bf16_avx512, PF_ROWS_BF16)

/* ---- choice and dispatch ---- */

static const struct kernel {
    const char *name;
    gemv_fn f32, bf16;
} kernels[] = {
    { "c", f32_c, bf16_c },
    { "avx2", f32_avx2, bf16_avx2 },
    { "avx512", f32_avx512, bf16_avx512 },
};

static int cpu_has(int k)
{
    __builtin_cpu_init();
    if (k == 2) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512vl") && cpu_has(1);
    if (k == 1) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return 1;
}

static int kernel_index(const char *name)
{
    for (int k = 0; k < (int)(sizeof kernels / sizeof kernels[0]); k++)
        if (!strcmp(name, kernels[k].name)) return k;
    return -1;
}

static const struct kernel *chosen;

/* The best kernel the CPU has, or RAMTRACE_GEMV's (lowered to what the
 * CPU has).  Chosen once; two first calls that race pick the same. */
static const struct kernel *kernel(void)
{
    const struct kernel *k = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (k) return k;
    const char *env = getenv("RAMTRACE_GEMV");
    int want = env && kernel_index(env) >= 0 ? kernel_index(env) : 2;
    while (want > 0 && !cpu_has(want)) want--;
    k = &kernels[want];
    __atomic_store_n(&chosen, k, __ATOMIC_RELEASE);
    return k;
}

int rn_gemv_set_kernel(const char *name)
{
    int k = name ? kernel_index(name) : -1;
    if (k < 0 || !cpu_has(k)) return -1;
    __atomic_store_n(&chosen, &kernels[k], __ATOMIC_RELEASE);
    return 0;
}

const char *rn_gemv_kernel(void) { return kernel()->name; }

/* Threads for a rows×cols product: one below 64k weights (a fork costs more
 * than the rows), else the team a parallel region would get. */
static int threads_for(int rows, int cols)
{
    if ((int64_t)rows * cols < (1 << 16) || omp_in_parallel()) return 1;
    int nt = omp_get_max_threads();
    return nt < rows ? nt : rows;
}

/* Rows split evenly among the threads (each row computed as on its own). */
static void run(gemv_fn f, float *y, const void *W, const float *x, int rows, int cols, int accumulate)
{
    int nt = threads_for(rows, cols);
    if (nt <= 1) {
        f(y, W, x, 0, rows, cols, accumulate);
        return;
    }
    #pragma omp parallel num_threads(nt)
    {
        int id = omp_get_thread_num(), n = omp_get_num_threads();
        f(y, W, x, (int)((int64_t)rows * id / n), (int)((int64_t)rows * (id + 1) / n), cols, accumulate);
    }
}

void rn_gemv_f32(float *y, const float *W, const float *x, int rows, int cols, int accumulate)
{
    run(kernel()->f32, y, W, x, rows, cols, accumulate);
}

void rn_gemv_bf16(float *y, const uint16_t *W, const float *x, int rows, int cols, int accumulate)
{
    run(kernel()->bf16, y, W, x, rows, cols, accumulate);
}
