/* bench_modelfile.c — model file speed: the parameter-block checksum
 * against a plain memory-read baseline (sum of 64-bit words), and loading
 * the stories15m-shaped model from model.bin (mmap + validate + checksum)
 * and from safetensors (parse + copy).  Medians of 7 runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_checksum.h"
#include "rn_modelfile.h"
#include "bench_util.h"

#define REPS 7
static volatile uint64_t sink;

int main(void)
{
    rn_config c;
    rn_error err = {0};
    rn_config_default(&c);
    if (rn_config_load_file(&c, "samples/configs/stories15m.cfg", NULL, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rn_model m;
    if (rn_model_create_random(&m, &c, 1, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    size_t bytes = (size_t)m.n_block * 4;
    double t_sum[REPS], t_ck[REPS], t_bin[REPS], t_st[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now();
        uint64_t s = 0, w;
        for (size_t i = 0; i + 8 <= bytes; i += 8) { memcpy(&w, (char *)m.params + i, 8); s += w; }
        sink = s;
        t_sum[r] = bench_now() - t0;
        t0 = bench_now();
        sink = rn_checksum64(m.params, bytes);
        t_ck[r] = bench_now() - t0;
    }
    const char *bin = "build/bench_modelfile.bin", *st = "build/bench_modelfile.safetensors";
    if (rn_model_save(&m, bin, &err) || rn_model_save(&m, st, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    for (int r = 0; r < REPS; r++) {
        rn_model x;
        double t0 = bench_now();
        if (rn_model_load(&x, bin, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        t_bin[r] = bench_now() - t0;
        rn_model_free(&x);
        t0 = bench_now();
        if (rn_model_load(&x, st, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        t_st[r] = bench_now() - t0;
        rn_model_free(&x);
    }
    qsort(t_sum, REPS, sizeof(double), bench_cmp_double);
    qsort(t_ck, REPS, sizeof(double), bench_cmp_double);
    qsort(t_bin, REPS, sizeof(double), bench_cmp_double);
    qsort(t_st, REPS, sizeof(double), bench_cmp_double);
    double mb = (double)bytes / 1e6;
    printf("parameter block: %.1f MB (stories15m shape), medians of %d\n", mb, REPS);
    printf("  baseline word sum   %7.2f ms  %6.0f MB/s\n", 1e3 * t_sum[REPS / 2], mb / t_sum[REPS / 2]);
    printf("  rn_checksum64       %7.2f ms  %6.0f MB/s  (%.2fx baseline time)\n", 1e3 * t_ck[REPS / 2],
           mb / t_ck[REPS / 2], t_ck[REPS / 2] / t_sum[REPS / 2]);
    printf("  load model.bin      %7.2f ms  (mmap + validate + checksum; %.2fx checksum)\n", 1e3 * t_bin[REPS / 2],
           t_bin[REPS / 2] / t_ck[REPS / 2]);
    printf("  load safetensors    %7.2f ms  (parse + copy; %.2fx model.bin)\n", 1e3 * t_st[REPS / 2],
           t_st[REPS / 2] / t_bin[REPS / 2]);
    remove(bin);
    remove(st);
    rn_model_free(&m);
    return 0;
}
