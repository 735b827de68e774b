/* bench_aio.c — the cost of the tiered state's slow-tier I/O
 * (docs/tiered-state.md): random O_DIRECT reads and writes of one block,
 * issued one pread/pwrite per system call from N threads (the write-behind
 * and read-ahead threads' design) against batches of Linux native AIO
 * (io_setup / io_submit / io_getevents through syscall(2), <linux/aio_abi.h>),
 * B iocbs per io_submit, all reaped before the next batch.
 *
 *   build/bench/bench_aio [DIR] [SIZE_MIB] [SECONDS] [BLOCKS]
 *
 * Defaults: /var/tmp, 1024 MiB, 2 s per measurement, blocks 512,4096.
 * Two files in DIR (free space checked first, removed at the end): one
 * written through (every block holds data: reads and overwrites), one
 * sparse (writes into holes, as a fresh state file gets them).  Per (op,
 * file, block, mode) one CSV row: operations a second, and the process's
 * CPU time (getrusage, user + sys, all threads) per operation in
 * microseconds, and for AIO the share of the wall time spent inside
 * io_submit (near 1 when the kernel completes each iocb before returning).
 * Writes into holes stop after 4,096 (or the time), to bound the cost of
 * freeing them.  The last rows ("sparse+fallocate", 4096-byte blocks)
 * allocate each block with fallocate(FALLOC_FL_KEEP_SIZE) first, as the
 * tiered state does for a fresh row (core/state/rn_aio.c); their CPU time
 * includes the fallocate calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_DEPTH 256
#define SPARSE_OPS 4096

typedef struct {
    int fd, write;
    size_t block;
    uint64_t nblocks, seed;
    double stop;
    uint64_t ops, max_ops;
} job;

static int g_falloc; /* fallocate each written block first */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* One thread: one pread/pwrite a system call until the stop time. */
static void *sync_main(void *arg)
{
    job *j = arg;
    void *buf = aligned_alloc(4096, j->block);
    if (!buf) return NULL;
    memset(buf, 0x5a, j->block);
    while (bench_now() < j->stop && j->ops < j->max_ops) {
        for (int i = 0; i < 16; i++) {
            off_t off = (off_t)(rnd(&j->seed) % j->nblocks * j->block);
            if (g_falloc && j->write) fallocate(j->fd, FALLOC_FL_KEEP_SIZE, off, (off_t)j->block);
            ssize_t r = j->write ? pwrite(j->fd, buf, j->block, off) : pread(j->fd, buf, j->block, off);
            if (r != (ssize_t)j->block) { perror("bench_aio: pread/pwrite"); exit(1); }
            j->ops++;
        }
    }
    free(buf);
    return NULL;
}

/* N threads; returns ops/s, *cpu_us: CPU microseconds an operation. */
static double run_threads(int fd, int write, size_t block, uint64_t nblocks, int n, double secs, uint64_t max_ops,
                          double *cpu_us)
{
    job jobs[64];
    pthread_t th[64];
    double c0 = cpu_seconds(), t0 = bench_now();
    for (int i = 0; i < n; i++) {
        jobs[i] = (job){ fd, write, block, nblocks, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) + block, t0 + secs, 0,
                         max_ops / (uint64_t)n };
        pthread_create(&th[i], NULL, sync_main, &jobs[i]);
    }
    uint64_t ops = 0;
    for (int i = 0; i < n; i++) { pthread_join(th[i], NULL); ops += jobs[i].ops; }
    double wall = bench_now() - t0;
    *cpu_us = 1e6 * (cpu_seconds() - c0) / (double)ops;
    return (double)ops / wall;
}

/* Batches of b iocbs, one io_submit each, reaped with io_getevents (all b)
 * before the next; returns ops/s (0 when io_setup fails). */
static double run_aio(int fd, int write, size_t block, uint64_t nblocks, int b, double secs, uint64_t max_ops,
                      double *cpu_us, double *submit_share)
{
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, b, &ctx) < 0) {
        fprintf(stderr, "bench_aio: io_setup(%d): %s\n", b, strerror(errno));
        return 0;
    }
    char *buf = aligned_alloc(4096, (size_t)b * block);
    struct iocb cb[MAX_DEPTH], *ptr[MAX_DEPTH];
    struct io_event ev[MAX_DEPTH];
    memset(buf, 0x5a, (size_t)b * block);
    uint64_t seed = 0x2545F4914F6CDD1Dull + block, ops = 0;
    double c0 = cpu_seconds(), t0 = bench_now(), in_submit = 0;
    while (bench_now() < t0 + secs && ops < max_ops) {
        for (int i = 0; i < b; i++) {
            memset(&cb[i], 0, sizeof cb[i]);
            cb[i].aio_fildes = (uint32_t)fd;
            cb[i].aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
            cb[i].aio_buf = (uint64_t)(uintptr_t)(buf + (size_t)i * block);
            cb[i].aio_nbytes = block;
            cb[i].aio_offset = (int64_t)(rnd(&seed) % nblocks * block);
            if (g_falloc && write) fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)cb[i].aio_offset, (off_t)block);
            ptr[i] = &cb[i];
        }
        double s0 = bench_now();
        for (int done = 0; done < b;) {
            long r = syscall(SYS_io_submit, ctx, (long)(b - done), ptr + done);
            if (r < 0 && errno == EAGAIN) continue;
            if (r <= 0) { fprintf(stderr, "bench_aio: io_submit: %s\n", strerror(errno)); exit(1); }
            done += (int)r;
        }
        in_submit += bench_now() - s0;
        for (int got = 0; got < b;) {
            long r = syscall(SYS_io_getevents, ctx, (long)(b - got), (long)(b - got), ev, NULL);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) { fprintf(stderr, "bench_aio: io_getevents: %s\n", strerror(errno)); exit(1); }
            for (long i = 0; i < r; i++)
                if (ev[i].res != (int64_t)block) { fprintf(stderr, "bench_aio: short AIO (%lld)\n", (long long)ev[i].res); exit(1); }
            got += (int)r;
        }
        ops += (uint64_t)b;
    }
    double wall = bench_now() - t0;
    *cpu_us = 1e6 * (cpu_seconds() - c0) / (double)ops;
    *submit_share = in_submit / wall;
    syscall(SYS_io_destroy, ctx);
    free(buf);
    return (double)ops / wall;
}

/* Fill fd with size_mib MiB of data (one pass of large O_DIRECT writes). */
static int fill(int fd, uint64_t size_mib)
{
    char *buf = aligned_alloc(4096, 1 << 20);
    uint64_t s = 88172645463325252ull;
    if (!buf) return -1;
    for (uint64_t m = 0; m < size_mib; m++) {
        for (size_t i = 0; i < (1 << 20) / 8; i++) ((uint64_t *)buf)[i] = rnd(&s);
        if (pwrite(fd, buf, 1 << 20, (off_t)(m << 20)) != 1 << 20) { free(buf); return -1; }
    }
    free(buf);
    return fsync(fd);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/var/tmp";
    uint64_t size = argc > 2 ? strtoull(argv[2], NULL, 10) : 1024;
    double secs = argc > 3 ? atof(argv[3]) : 2.0;
    char blocks[256];
    snprintf(blocks, sizeof blocks, "%s", argc > 4 ? argv[4] : "512,4096");
    struct statvfs vs;
    if (statvfs(dir, &vs) || (double)vs.f_bavail * (double)vs.f_frsize < 2.5 * (double)(size << 20)) {
        fprintf(stderr, "bench_aio: %s: needs %llu MiB free\n", dir, (unsigned long long)(size * 5 / 2));
        return 2;
    }
    char data[1024], sparse[1024];
    snprintf(data, sizeof data, "%s/bench_aio-%d.data", dir, (int)getpid());
    snprintf(sparse, sizeof sparse, "%s/bench_aio-%d.sparse", dir, (int)getpid());
    int fd = open(data, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
    if (fd < 0 || fill(fd, size)) {
        fprintf(stderr, "bench_aio: %s: %s\n", data, strerror(errno));
        unlink(data);
        return 1;
    }
    const int threads[] = { 1, 16 }, batch[] = { 16, 64, 256 };
    printf("op,file,block,mode,depth,ops_per_s,cpu_us_per_op,submit_share\n");
    for (char *tok = strtok(blocks, ","); tok; tok = strtok(NULL, ",")) {
        size_t block = (size_t)atol(tok);
        for (int k = 0; k < 4; k++) { /* read data, overwrite data, write holes, fallocate + write holes */
            int w = k > 0, f = fd;
            if (k == 3 && block != 4096) break;
            g_falloc = k == 3;
            if (k >= 2) { /* a fresh sparse file per block size: its writes fill holes */
                f = open(sparse, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
                if (f < 0 || ftruncate(f, (off_t)(size << 20))) { perror("bench_aio: sparse file"); break; }
            }
            const char *op = w ? "write" : "read", *fl = k == 3 ? "sparse+fallocate" : k == 2 ? "sparse" : "data";
            uint64_t nb = (size << 20) / block;
            /* holes: at most SPARSE_OPS writes a measurement, since removing
             * the file frees every written block (one discard each on a file
             * system mounted with discard: minutes for 10^5 blocks) */
            uint64_t cap = k >= 2 ? SPARSE_OPS : UINT64_MAX;
            double cpu, share;
            for (int i = 0; i < 2 - (k == 3); i++) {
                double r = run_threads(f, w, block, nb, threads[i], secs, cap, &cpu);
                printf("%s,%s,%zu,threads,%d,%.0f,%.2f,\n", op, fl, block, threads[i], r, cpu);
                fflush(stdout);
            }
            for (int i = 0; i < 3; i++) {
                double r = run_aio(f, w, block, nb, batch[i], secs, cap, &cpu, &share);
                if (r > 0) printf("%s,%s,%zu,aio,%d,%.0f,%.2f,%.2f\n", op, fl, block, batch[i], r, cpu, share);
                fflush(stdout);
            }
            if (k >= 2) { close(f); unlink(sparse); }
        }
    }
    close(fd);
    unlink(data);
    return 0;
}
