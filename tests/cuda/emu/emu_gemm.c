/* emu_gemm.c — rn_cuda_gemm.h on the host for the emulated GPU trainer
 * (tests/cuda/emu/cuda_runtime.h): the same row-major products, float
 * accumulation in index order; the bf16 products widen their operands
 * (exactly) and run the same loops, FP32 accumulation as the tensor cores. */
#include "rn_bf16.h"
#include "rn_cuda_gemm.h"

#include <stdlib.h>

int rn_cu_gemm_init(void) { return 0; }

/* TF32 changes only the GPU's rounding; the emulation computes in FP32. */
int rn_cu_gemm_set_tf32(int on)
{
    (void)on;
    return 0;
}

int rn_cu_gemm_stream(void *stream) { (void)stream; return 0; } /* one emulated stream */

const char *rn_cu_gemm_error(int status) { return status ? "error" : "no error"; }

int rn_cu_matmul(float *out, const float *in, const float *W, int n, int I, int O, int acc)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < O; o++) {
            float s = 0;
            for (int k = 0; k < I; k++) s += in[(long long)r * I + k] * W[(long long)o * I + k];
            float *p = out + (long long)r * O + o;
            *p = acc ? *p + s : s;
        }
    return 0;
}

int rn_cu_matmul_din(float *din, const float *dout, const float *W, int n, int I, int O, int acc)
{
    for (int r = 0; r < n; r++)
        for (int i = 0; i < I; i++) {
            float s = 0;
            for (int k = 0; k < O; k++) s += dout[(long long)r * O + k] * W[(long long)k * I + i];
            float *p = din + (long long)r * I + i;
            *p = acc ? *p + s : s;
        }
    return 0;
}

int rn_cu_matmul_dw(float *dW, const float *dout, const float *in, int n, int I, int O)
{
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            float s = 0;
            for (int r = 0; r < n; r++) s += dout[(long long)r * O + o] * in[(long long)r * I + i];
            dW[(long long)o * I + i] += s;
        }
    return 0;
}

/* One bf16 product: widen both operands into scratch, then the fp32 loop. */
typedef int (*emu_f32_product)(float *, const float *, const float *, int, int, int, int);

static int emu_bf16(emu_f32_product f, float *out, const uint16_t *a, long long na, const uint16_t *b,
                    long long nb, int n, int I, int O, int acc)
{
    float *wa = malloc(sizeof(float) * (size_t)(na ? na : 1)), *wb = malloc(sizeof(float) * (size_t)(nb ? nb : 1));
    if (!wa || !wb) {
        free(wa);
        free(wb);
        return 1;
    }
    rn_bf16_widen(wa, a, (size_t)na);
    rn_bf16_widen(wb, b, (size_t)nb);
    int rc = f(out, wa, wb, n, I, O, acc);
    free(wa);
    free(wb);
    return rc;
}

int rn_cu_matmul_bf16(float *out, const uint16_t *in, const uint16_t *W, int n, int I, int O, int acc)
{
    return emu_bf16(rn_cu_matmul, out, in, (long long)n * I, W, (long long)O * I, n, I, O, acc);
}

int rn_cu_matmul_din_bf16(float *din, const uint16_t *dout, const uint16_t *W, int n, int I, int O, int acc)
{
    return emu_bf16(rn_cu_matmul_din, din, dout, (long long)n * O, W, (long long)O * I, n, I, O, acc);
}

static int emu_dw(float *dW, const float *dout, const float *in, int n, int I, int O, int acc)
{
    (void)acc;
    return rn_cu_matmul_dw(dW, dout, in, n, I, O);
}

int rn_cu_matmul_dw_bf16(float *dW, const uint16_t *dout, const uint16_t *in, int n, int I, int O)
{
    return emu_bf16(emu_dw, dW, dout, (long long)n * O, in, (long long)n * I, n, I, O, 1);
}
