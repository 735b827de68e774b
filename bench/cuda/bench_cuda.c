/* bench_cuda.c — GPU inference speed with the CPU baseline measured in the
 * same run, at the paper's 340M shape (D=1024, L=27, H=16, d_p=4, U=5,
 * d_v=64, K=8, F=2816, V=32000) and at stories15M's
 * (samples/configs/stories15m.cfg).  Untied head for the paper shape, as
 * `ramtrace init` makes it; random weights (speed does not depend on them).
 *
 * Per shape, one line: prefill tok/s on the GPU (median of 3, T tokens in
 * chunks of C) and on the CPU (median of 3, fewer tokens); generation tok/s
 * on both (median over 3 runs of S steps after the prefill); the weight
 * bytes a generated token reads and the GB/s that achieves on the GPU.
 * Then the same GPU runtime in --precision bf16 (rn_runtime_set_precision):
 * its prefill and generation tok/s, the weight bytes a bf16 token reads and
 * the share of the bandwidth bound that is (this device's copy bandwidth,
 * measured in the same run, over the bytes a token reads), beside the fp32
 * step's share.
 * Traced prefill on the GPU: the same prefill with a probe that counts
 * events, so it measures the per-layer copy of the accesses and the probe
 * calls, not the SQLite writer (bench/bench_trace.c measures that).
 * `bench_cuda train`: training tokens/s (forward, backward, AdamW) at both
 * shapes with the model FLOPs utilisation against this GPU's SGEMM rate
 * measured in the same run, and the CPU trainer's tokens/s beside it.
 * Prints "skipped: no CUDA device" and exits 0 without a GPU.
 *
 * `bench_cuda train-bf16`: the same training rows under --precision bf16,
 * with the cuBLAS bf16 GEMM rate and the device copy bandwidth measured in
 * the same run (the MFU is against the bf16 rate).
 *
 *   bench_cuda [paper|stories15m|all|phases|steps|train|train-bf16|trainstep|bw]   (mk/cuda.mk: make bench-cuda)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench_util.h"
#include "rn_cuda.h"
#include "rn_cuda_gemm.h"
#include "rn_cuda_train.h"
#include "rn_adamw.h"
#include "rn_train.h"
#include "rn_model.h"
#include "rn_params.h"
#include "rn_precision.h"
#include "rn_device.h"
#include "rn_runtime.h"

static void paper_shape(rn_config *c)
{
    rn_config_default(c);
    c->tokenizer = RN_TOK_IDS; c->vocab_size = 32000; c->d_model = 1024; c->n_layers = 27;
    c->n_heads = 16; c->d_p = 4; c->order = 5; c->d_v = 64; c->top_k = 8; c->d_ff = 2816;
    c->tie_embeddings = 0;
}

/* Median prefill tok/s of T tokens (fresh state each run). */
static double prefill_tps(rn_runtime *rt, const int *tok, int T, float *logits)
{
    double v[3];
    rn_error err = { 0 };
    for (int r = 0; r < 3; r++) {
        rn_runtime_reset(rt);
        double t0 = bench_now();
        if (rn_prefill(rt, tok, T, logits, 0, &err)) { fprintf(stderr, "prefill: %s\n", err.msg); exit(1); }
        v[r] = T / (bench_now() - t0);
    }
    return bench_median(v, 3);
}

static void count_access(void *user, int layer, int head, int pos, int op, int k,
                         const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    (void)layer; (void)head; (void)pos; (void)op; (void)slot; (void)addr; (void)weight;
    *(long *)user += k;
}

/* Median generation tok/s: S steps after a P-token prefill. */
static double step_tps(rn_runtime *rt, const int *tok, int P, int S, float *logits)
{
    double v[3];
    rn_error err = { 0 };
    for (int r = 0; r < 3; r++) {
        rn_runtime_reset(rt);
        if (rn_prefill(rt, tok, P, logits, 0, &err)) { fprintf(stderr, "prefill: %s\n", err.msg); exit(1); }
        double t0 = bench_now();
        for (int s = 0; s < S; s++)
            if (rn_step(rt, tok[s], logits, &err)) { fprintf(stderr, "step: %s\n", err.msg); exit(1); }
        v[r] = S / (bench_now() - t0);
    }
    return bench_median(v, 3);
}

/* The device's memory bandwidth as a device-to-device copy of 1 GiB
 * moves it: bytes read plus bytes written per second, median of 5 (0 when
 * out of device memory). */
static double copy_bw(void)
{
    const size_t N = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    if (cudaMalloc(&a, N) || cudaMalloc(&b, N)) {
        cudaFree(a);
        return 0;
    }
    cudaMemset(a, 1, N);
    cudaMemcpy(b, a, N, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    double v[5];
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        cudaMemcpy(b, a, N, cudaMemcpyDeviceToDevice);
        cudaDeviceSynchronize();
        v[r] = 2.0 * (double)N / (bench_now() - t0);
    }
    cudaFree(a);
    cudaFree(b);
    return bench_median(v, 5);
}

/* Weight bytes one generated token reads: every tensor in its format
 * (bf16: the matrices 2 bytes, gains and α 4), the embedding only its one
 * row unless it is also the head. */
static double step_bytes(const rn_config *c, int bf16)
{
    rn_tensor_desc t;
    double b = 0;
    for (int i = 0; rn_params_tensor(c, i, &t) == 0; i++) {
        const double es = bf16 && rn_precision_bf16_tensor(&t) ? 2 : 4;
        /* the input embedding (not an untied lm_head, also of kind RN_T_EMBED) */
        const int embed_only = !strcmp(t.name, "embed.weight") && !c->tie_embeddings;
        b += es * (embed_only ? (double)c->d_model : (double)t.numel);
    }
    return b;
}

/* The bf16 row of a shape: the GPU runtime gpu (fp32 measured already:
 * prefill gp32, step gs32) switched to bf16, against the bandwidth bound. */
static int bf16_row(const char *name, const rn_config *c, rn_runtime *gpu, const int *tok, int T_gpu,
                    float *logits, double gp32, double gs32, double bw)
{
    rn_error err = { 0 };
    if (rn_runtime_set_precision(gpu, RN_PREC_BF16, &err)) {
        fprintf(stderr, "%s bf16: %s\n", name, err.msg);
        return 1;
    }
    double gp = prefill_tps(gpu, tok, T_gpu, logits), gs = step_tps(gpu, tok, 256, 64, logits);
    const double b16 = step_bytes(c, 1), b32 = step_bytes(c, 0);
    printf("%-10s | prefill gpu %10.0f tok/s (T=%d, x%.2f fp32) | step gpu %8.1f tok/s (x%.2f fp32) | "
           "%.1f MB/token, gpu %.0f GB/s | step at %.0f%% of the bf16 bound %.0f tok/s (fp32 step: %.0f%% of %.0f) "
           "| device copy %.0f GB/s\n",
           name, gp, T_gpu, gp / gp32, gs, gs / gs32, b16 / 1e6, b16 * gs / 1e9, 100 * gs * b16 / bw, bw / b16,
           100 * gs32 * b32 / bw, bw / b32, bw / 1e9);
    fflush(stdout);
    return rn_runtime_set_precision(gpu, RN_PREC_FP32, &err) != RN_OK;
}

static int run_shape(const char *name, const char *name16, const rn_config *c, int T_gpu, int T_cpu, int chunk,
                     double bw)
{
    rn_model m;
    rn_error err = { 0 };
    if (rn_config_validate(c, &err) || rn_model_create_random(&m, c, 1, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    int *tok = malloc(sizeof(int) * T_gpu);
    float *logits = malloc(sizeof(float) * c->vocab_size);
    for (int t = 0; t < T_gpu; t++) tok[t] = (int)((t * 2654435761u) % (unsigned)c->vocab_size);
    rn_runtime *gpu = NULL, *cpu = NULL;
    if (rn_runtime_create_on(&m, chunk, RN_DEVICE_CUDA, &gpu, &err) ||
        rn_runtime_create_on(&m, 256, RN_DEVICE_CPU, &cpu, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    double gp = prefill_tps(gpu, tok, T_gpu, logits), cp = prefill_tps(cpu, tok, T_cpu, logits);
    long events = 0;
    rn_probe probe = { .user = &events, .access = count_access };
    rn_runtime_set_probe(gpu, &probe);
    double gt = prefill_tps(gpu, tok, T_gpu, logits);
    rn_runtime_set_probe(gpu, NULL);
    double gs = step_tps(gpu, tok, 256, 64, logits), cs = step_tps(cpu, tok, 256, 16, logits);
    /* weights a step reads: every matrix and norm, one embedding row */
    double bytes = step_bytes(c, 0);
    printf("%-10s | prefill gpu %10.0f tok/s (T=%d) | cpu %8.1f tok/s (T=%d) | x%6.1f | "
           "step gpu %8.1f tok/s | cpu %6.1f tok/s | %.1f MB/token, gpu %.0f GB/s | traced gpu %.0f tok/s (x%.2f)\n",
           name, gp, T_gpu, cp, T_cpu, gp / cp, gs, cs, bytes / 1e6, bytes * gs / 1e9, gt, gp / gt);
    fflush(stdout);
    int rc = bf16_row(name16, c, gpu, tok, T_gpu, logits, gp, gs, bw);
    rn_runtime_free(gpu);
    rn_runtime_free(cpu);
    free(tok);
    free(logits);
    rn_model_free(&m);
    return rc;
}

/* ---- training: `bench_cuda train` ---- */

/* Measured GEMM rate of this GPU (FLOP/s): the median of 5 products of
 * 8192 × 8192 × 8192 through rn_cu_matmul (SGEMM; TF32 when
 * RN_CUDA_TF32=1) or, with bf16, rn_cu_matmul_bf16 (cublasGemmEx, bf16
 * operands, FP32 accumulation and output) — the peak the training MFU is
 * measured against. */
static double gemm_rate(int bf16)
{
    const int N = 8192;
    const size_t el = bf16 ? sizeof(uint16_t) : sizeof(float);
    void *a = NULL, *b = NULL;
    float *c = NULL;
    double v[6], rate = 0;
    if (cudaMalloc(&a, el * N * N) || cudaMalloc(&b, el * N * N) || cudaMalloc((void **)&c, sizeof(float) * N * N) ||
        rn_cu_gemm_init())
        goto out;
    cudaMemset(a, 0, el * N * N);
    cudaMemset(b, 0, el * N * N);
    for (int r = 0; r < 6; r++) { /* the first warms up */
        double t0 = bench_now();
        int st = bf16 ? rn_cu_matmul_bf16(c, a, b, N, N, N, 0) : rn_cu_matmul(c, a, b, N, N, N, 0);
        cudaDeviceSynchronize();
        if (st) { fprintf(stderr, "gemm rate: %s\n", rn_cu_gemm_error(st)); goto out; }
        v[r] = 2.0 * N * N * (double)N / (bench_now() - t0);
    }
    rate = bench_median(v + 1, 5);
out: /* cudaFree(NULL) is a no-op */
    cudaFree(a); cudaFree(b); cudaFree(c);
    return rate;
}

/* Median tokens/s of a training step (forward, backward, AdamW) of B
 * sequences of T on the GPU in precision prec (rn_precision), and of steps
 * on the CPU (Bc sequences of Tc; Bc = 0: none), with the MFU against
 * `peak` (named peak_name). */
static int train_shape(const char *name, const rn_config *c, int B, int T, int Bc, int Tc, int prec, double peak,
                       const char *peak_name)
{
    rn_model m;
    rn_error err = { 0 };
    if (rn_model_create_random(&m, c, 1, &err)) { fprintf(stderr, "%s: %s\n", name, err.msg); return 1; }
    const int rows = B * T;
    int *tok = malloc(sizeof(int) * rows), *tgt = malloc(sizeof(int) * rows);
    for (int i = 0; i < rows; i++) {
        tok[i] = (int)((i * 2654435761u) % (unsigned)c->vocab_size);
        tgt[i] = (int)(((i + 1) * 2654435761u) % (unsigned)c->vocab_size);
    }
    rn_adamw_opts o;
    rn_adamw_defaults(&o);
    rn_cuda_trainer *g = NULL;
    if (rn_cuda_trainer_create(&g, &m, rows, rows, 0.0, 0, 0, prec, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    const double gbytes = (double)rn_cuda_trainer_bytes(g) / 1e9;
    double v[4], loss;
    for (int r = 0; r < 4; r++) {
        double t0 = bench_now();
        if (rn_cuda_trainer_zero_grads(g, &err) || rn_cuda_trainer_forward(g, tok, tgt, B, T, &loss, &err) ||
            rn_cuda_trainer_backward(g, 1.0, &err) || rn_cuda_trainer_adamw(g, &o, r + 1, o.lr, 1.0, &err) ||
            rn_cuda_trainer_grad_norm(g, &loss, &err)) { /* the norm's copy waits for the step */
            fprintf(stderr, "%s: %s\n", name, err.msg);
            return 1;
        }
        v[r] = rows / (bench_now() - t0);
    }
    rn_cuda_trainer_free(g);
    double gpu = bench_median(v + 1, 3); /* the first step warms up */
    const int crow = Bc * Tc;
    double cpu = 0;
    if (crow) {
        rn_trainer *t = NULL;
        double cv[3];
        if (rn_trainer_create(&t, &m, crow, crow, 0.0, &err)) { fprintf(stderr, "%s: %s\n", name, err.msg); return 1; }
        for (int r = 0; r < 3; r++) {
            double t0 = bench_now();
            if (rn_trainer_forward(t, tok, tgt, Bc, Tc, &loss, &err)) { fprintf(stderr, "%s: %s\n", name, err.msg); return 1; }
            rn_trainer_backward(t, 1.0);
            cv[r] = crow / (bench_now() - t0);
        }
        rn_trainer_free(t);
        cpu = bench_median(cv, 3);
    }
    /* model FLOPs per token: 6 per parameter that multiplies (every matrix
     * and the head; the embedding lookup multiplies nothing), as usual */
    double mp = (double)rn_config_param_count(c) - (double)c->vocab_size * c->d_model +
                (c->tie_embeddings ? (double)c->vocab_size * c->d_model : 0);
    double mfu = 6.0 * mp * gpu / peak;
    if (crow)
        printf("%-10s | train gpu %9.0f tok/s (B=%d T=%d) | cpu %7.1f tok/s (B=%d T=%d, no optimizer) | x%6.1f | "
               "MFU %.1f%% of measured %s %.1f TFLOP/s\n",
               name, gpu, B, T, cpu, Bc, Tc, gpu / cpu, 100 * mfu, peak_name, peak / 1e12);
    else
        printf("%-10s | train gpu %9.0f tok/s (B=%d T=%d, %s) | %.2f GB on the device | "
               "MFU %.1f%% of measured %s %.1f TFLOP/s\n",
               name, gpu, B, T, rn_precision_name((rn_precision)prec), gbytes, 100 * mfu, peak_name, peak / 1e12);
    fflush(stdout);
    free(tok);
    free(tgt);
    rn_model_free(&m);
    return 0;
}

/* `bench_cuda trainstep`: one training step (forward, backward, AdamW) at
 * stories15M's shape, B = 16, T = 256, and nothing else, for a kernel
 * profiler. */
static int train_step_only(void)
{
    rn_config c;
    rn_model m;
    rn_error err = { 0 };
    rn_config_default(&c);
    if (rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err) ||
        rn_model_create_random(&m, &c, 1, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const int B = 16, T = 256, rows = B * T;
    int *tok = malloc(sizeof(int) * rows), *tgt = malloc(sizeof(int) * rows);
    for (int i = 0; i < rows; i++) {
        tok[i] = (int)((i * 2654435761u) % (unsigned)c.vocab_size);
        tgt[i] = (int)(((i + 1) * 2654435761u) % (unsigned)c.vocab_size);
    }
    rn_adamw_opts o;
    rn_adamw_defaults(&o);
    rn_cuda_trainer *g = NULL;
    double loss;
    int rc = rn_cuda_trainer_create(&g, &m, rows, rows, 0.0, 0, 0, RN_PREC_FP32, &err);
    if (!rc) rc = rn_cuda_trainer_zero_grads(g, &err);
    if (!rc) rc = rn_cuda_trainer_forward(g, tok, tgt, B, T, &loss, &err);
    if (!rc) rc = rn_cuda_trainer_backward(g, 1.0, &err);
    if (!rc) rc = rn_cuda_trainer_adamw(g, &o, 1, o.lr, 1.0, &err);
    if (!rc) rc = rn_cuda_trainer_grad_norm(g, &loss, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    rn_cuda_trainer_free(g);
    free(tok);
    free(tgt);
    rn_model_free(&m);
    return rc != 0;
}

/* `bench_cuda bw`: the device's memory bandwidth as a device-to-device
 * copy of 1 GiB moves it (bytes read plus bytes written per second, median
 * of 5) — the bound a generated token's weight reads run against — and the
 * paper shape's step bound it implies. */
static int bandwidth(void)
{
    double bw = copy_bw();
    if (bw <= 0) { fprintf(stderr, "bw: out of device memory\n"); return 1; }
    rn_config c;
    paper_shape(&c);
    double bytes = step_bytes(&c, 0), b16 = step_bytes(&c, 1);
    printf("bandwidth  | device copy %.0f GB/s (read + written) | paper-340M step bound %.0f tok/s (%.1f MB of weights per token)"
           " | bf16 %.0f tok/s (%.1f MB)\n",
           bw / 1e9, bw / bytes, bytes / 1e6, bw / b16, b16 / 1e6);
    return 0;
}

/* `bench_cuda train-bf16`: this chip's references measured in the same
 * run — the cuBLAS bf16 GEMM rate (8192³, FP32 accumulation) and the
 * device copy bandwidth — then --precision bf16 training at both shapes
 * (the fp32 rows and the CPU baselines are `train`'s), each with its MFU
 * against the measured bf16 rate. */
static int train_bf16(void)
{
    double peak = gemm_rate(1), bw = copy_bw();
    if (peak <= 0 || bw <= 0) return 1;
    printf("bf16-chip  | cuBLAS bf16 GEMM %.1f TFLOP/s (8192^3, FP32 accumulation) | device copy %.0f GB/s\n",
           peak / 1e12, bw / 1e9);
    rn_config c;
    rn_error err = { 0 };
    rn_config_default(&c);
    if (rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rc = train_shape("stories-bf16-train", &c, 16, 256, 0, 0, RN_PREC_BF16, peak, "bf16 GEMM");
    paper_shape(&c);
    rc |= train_shape("paper-bf16-train", &c, 4, 512, 0, 0, RN_PREC_BF16, peak, "bf16 GEMM");
    return rc;
}

/* `bench_cuda phases`: where the GPU's time goes at the paper's shape —
 * one 8192-token prefill and 64 steps, each in its own runtime with
 * RN_CUDA_PHASES=1, which prints the per-phase times when it is freed. */
static int phases(void)
{
    rn_config c;
    rn_model m;
    rn_error err = { 0 };
    paper_shape(&c);
    setenv("RN_CUDA_PHASES", "1", 1);
    if (rn_model_create_random(&m, &c, 1, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const int T = 8192;
    int *tok = malloc(sizeof(int) * T);
    float *logits = malloc(sizeof(float) * c.vocab_size);
    for (int t = 0; t < T; t++) tok[t] = (int)((t * 2654435761u) % (unsigned)c.vocab_size);
    for (int pass = 0; pass < 2; pass++) {
        rn_runtime *rt = NULL;
        if (rn_runtime_create_on(&m, rn_device_default_chunk(RN_DEVICE_CUDA), RN_DEVICE_CUDA, &rt, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        fprintf(stderr, "paper-340M %s: ", pass ? "64 steps" : "prefill of 8192 tokens");
        int rc = pass ? 0 : rn_prefill(rt, tok, T, logits, 0, &err);
        for (int s = 0; pass && s < 64 && !rc; s++) rc = rn_step(rt, tok[s], logits, &err);
        if (rc) { fprintf(stderr, "%s\n", err.msg); return 1; }
        rn_runtime_free(rt);
    }
    free(tok);
    free(logits);
    rn_model_free(&m);
    return 0;
}

/* `bench_cuda steps`: a 16-token prefill and 32 steps at the paper's shape
 * and nothing else, for a kernel profiler (ncu) to time each kernel. */
static int steps_only(void)
{
    rn_config c;
    rn_model m;
    rn_error err = { 0 };
    paper_shape(&c);
    if (rn_model_create_random(&m, &c, 1, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    int tok[48];
    float *logits = malloc(sizeof(float) * c.vocab_size);
    for (int t = 0; t < 48; t++) tok[t] = (int)((t * 2654435761u) % (unsigned)c.vocab_size);
    rn_runtime *rt = NULL;
    int rc = rn_runtime_create_on(&m, 64, RN_DEVICE_CUDA, &rt, &err);
    if (!rc) rc = rn_prefill(rt, tok, 16, logits, 0, &err);
    for (int s = 0; s < 32 && !rc; s++) rc = rn_step(rt, tok[16 + s], logits, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    rn_runtime_free(rt);
    free(logits);
    rn_model_free(&m);
    return rc != 0;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    if (rn_cuda_device_count() < 1) {
        printf("bench_cuda: skipped: no CUDA device\n");
        return 0;
    }
    if (!strcmp(which, "phases")) return phases();
    if (!strcmp(which, "steps")) return steps_only();
    if (!strcmp(which, "bw")) return bandwidth();
    if (!strcmp(which, "trainstep")) return train_step_only();
    int rc = 0;
    rn_config c;
    if (!strcmp(which, "train")) {
        double peak = gemm_rate(0);
        rn_error err = { 0 };
        rn_config_default(&c);
        if (rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        rc |= train_shape("stories15m", &c, 16, 256, 1, 64, RN_PREC_FP32, peak, "SGEMM");
        paper_shape(&c);
        rc |= train_shape("paper-340M", &c, 4, 512, 1, 16, RN_PREC_FP32, peak, "SGEMM");
        return rc;
    }
    if (!strcmp(which, "train-bf16")) return train_bf16();
    /* the inference rows' bound; measured only for the modes that print them */
    const double bw = copy_bw();
    if (!strcmp(which, "stories15m") || !strcmp(which, "all")) {
        rn_error err = { 0 };
        rn_config_default(&c);
        if (rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        rc |= run_shape("stories15m", "stories-bf16", &c, 16384, 2048, rn_device_default_chunk(RN_DEVICE_CUDA), bw);
    }
    if (!strcmp(which, "paper") || !strcmp(which, "all")) {
        paper_shape(&c);
        rc |= run_shape("paper-340M", "paper-bf16", &c, 8192, 64, rn_device_default_chunk(RN_DEVICE_CUDA), bw);
    }
    return rc;
}
