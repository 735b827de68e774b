/* bench_parquet.c — `ramtrace export --format parquet` against its targets
 * (issue 30: >= 30M events/s and <= 3 bytes/event on a 100M-event trace;
 * DuckDB `GROUP BY layer, head` over the dataset <= 5 s).
 *
 * A real trace, not a synthetic stream (compression depends on the data):
 * samples/kjv.bin traces the first TOKENS bytes of data/kjv.txt (256
 * events per token: 4 layers x 4 heads x 2 ops x K = 8), once with exact
 * float32 weights and once with `--weights f16`.  For each: export to a
 * new dataset (median of 3 wall times; the process's CPU time beside it,
 * as the machine is shared), events/s, bytes/event of the Parquet files
 * against the trace database's, and the time of
 *   SELECT layer, head, count(*), avg(weight) ... GROUP BY layer, head
 * in DuckDB (node, tests/js/pq_query.mjs; skipped without node_modules).
 *
 * Usage: build/bench/bench_parquet [TOKENS [DIR]]  (default 40000 tokens,
 * about 10M events; DIR default /tmp; needs build/ramtrace).
 *        build/bench/bench_parquet TRACE.db [DIR]  (an existing trace's
 * latest run instead, kept: a 100M-event trace takes minutes to make;
 * its bytes per column are printed too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

#define REPS 3

static double child_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static int sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "bench_parquet: failed: %s\n", cmd);
    return rc;
}

/* The first number a shell command prints (-1: none). */
static long long command_number(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    long long v = -1;
    if (p) {
        if (fscanf(p, "%lld", &v) != 1) v = -1;
        pclose(p);
    }
    return v;
}

/* Bytes under a directory (du -sb). */
static long long dir_bytes(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "du -sb %s", dir);
    return command_number(cmd);
}

static long long file_bytes(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* Events of the latest run of a trace (ramtrace runs -f csv: column 6). */
static long long trace_events(const char *db)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "build/ramtrace runs %s -f csv | tail -1 | cut -d, -f6", db);
    return command_number(cmd);
}

/* Export the trace (text != NULL: made first by tracing text with weights,
 * and removed after; NULL: given in db and kept). */
static int one(const char *dir, const char *text, const char *label, const char *weights, const char *given)
{
    char db[4096], ds[4096], cmd[16384];
    snprintf(db, sizeof db, "%s/bench_parquet_%s.db", dir, label);
    if (given) snprintf(db, sizeof db, "%s", given);
    snprintf(ds, sizeof ds, "%s/bench_parquet_%s.parquet", dir, label);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s; build/ramtrace trace samples/kjv.bin %s -o %s -q --weights %s", db, ds,
             text, db, weights);
    if (given) snprintf(cmd, sizeof cmd, "rm -rf %s", ds);
    if (sh(cmd)) return 1;
    long long n = trace_events(db);
    double wall[REPS], cpu[REPS];
    for (int r = 0; r < REPS; r++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", ds);
        if (sh(cmd)) return 1;
        snprintf(cmd, sizeof cmd, "build/ramtrace export %s -f parquet -o %s -q 2>/dev/null", db, ds);
        double c0 = child_cpu(), t0 = bench_now();
        if (sh(cmd)) return 1;
        wall[r] = bench_now() - t0;
        cpu[r] = child_cpu() - c0;
    }
    double w = bench_median(wall, REPS), c = bench_median(cpu, REPS);
    long long b = dir_bytes(ds), tb = file_bytes(db);
    printf("%-4s %11lld events  export %6.2f s wall (%5.1fM events/s), %6.2f s CPU (%5.1fM events/s per CPU-s)"
           "  %.2f bytes/event (trace db %.2f)\n",
           label, n, w, (double)n / w / 1e6, c, (double)n / c / 1e6, (double)b / (double)n, (double)tb / (double)n);
    if (access("tests/js/node_modules/@duckdb/node-api/package.json", F_OK) == 0) {
        snprintf(cmd, sizeof cmd,
                 "node tests/js/pq_query.mjs \"SELECT layer, head, count(*), avg(weight) FROM read_parquet('%s/events/*/*/*.parquet', "
                 "hive_partitioning = true) GROUP BY layer, head\" > /dev/null", ds);
        double q[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            if (sh(cmd)) return 1;
            q[r] = bench_now() - t0;
        }
        printf("%-4s DuckDB GROUP BY layer, head: %.2f s (median of %d, node start included)\n", label,
               bench_median(q, REPS), REPS);
        if (given) {
            fflush(stdout);
            snprintf(cmd, sizeof cmd,
                     "node tests/js/pq_query.mjs \"SELECT path_in_schema, round(sum(total_compressed_size) / %lld, 4) "
                     "FROM parquet_metadata('%s/events/*/*/*.parquet') GROUP BY 1 ORDER BY 2 DESC\" | "
                     "sed 's/^/     bytes\\/event of /'", n, ds);
            if (sh(cmd)) return 1;
        }
    } else {
        printf("%-4s DuckDB query skipped: tests/js/node_modules is missing (scripts/setup)\n", label);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", given ? "" : db, ds);
    return sh(cmd);
}

int main(int argc, char **argv)
{
    long tokens = argc > 1 ? atol(argv[1]) : 40000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    size_t alen = argc > 1 ? strlen(argv[1]) : 0;
    if (alen > 3 && !strcmp(argv[1] + alen - 3, ".db")) {
        if (access("build/ramtrace", X_OK)) { fprintf(stderr, "bench_parquet: needs build/ramtrace (make)\n"); return 1; }
        printf("export --format parquet of %s (median of %d)\n", argv[1], REPS);
        return one(dir, NULL, "db", NULL, argv[1]);
    }
    if (access("build/ramtrace", X_OK) || access("data/kjv.txt", R_OK)) {
        fprintf(stderr, "bench_parquet: needs build/ramtrace and data/kjv.txt (make; scripts/setup)\n");
        return 1;
    }
    char text[4096], cmd[8192];
    snprintf(text, sizeof text, "%s/bench_parquet_%ld.txt", dir, (long)getpid());
    snprintf(cmd, sizeof cmd, "head -c %ld data/kjv.txt > %s", tokens, text);
    if (sh(cmd)) return 1;
    printf("export --format parquet of samples/kjv.bin over %ld tokens of data/kjv.txt (median of %d)\n", tokens,
           REPS);
    int rc = one(dir, text, "f32", "f32", NULL) || one(dir, text, "f16", "f16", NULL);
    unlink(text);
    return rc;
}
