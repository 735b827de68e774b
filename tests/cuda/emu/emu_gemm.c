/* emu_gemm.c — rn_cuda_gemm.h on the host for the emulated GPU trainer
 * (tests/cuda/emu/cuda_runtime.h): the same row-major products, float
 * accumulation in index order. */
#include "rn_cuda_gemm.h"

int rn_cu_gemm_init(void) { return 0; }

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
