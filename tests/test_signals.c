/* test_signals.c — long commands stop within a second of CPU after SIGINT
 * or SIGTERM, exit 130 / 143 and leave no partial output: a runaway `sql`
 * query, `stats` and `export` on a large trace, `trace`, `run` and `train`.
 * The quadratic attribution matrix polls the flag itself.
 * Each command runs in the background; the signal comes a set delay after
 * the command has installed its handler, and the wait is bounded (SIGKILL
 * after the limit, so a test never hangs). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "an_attribute.h"
#include "an_stop.h"
#include "th.h"

static char g_model[512], g_big[512], g_db[512];

/* A command must stop having used less than STOP_CPU_S of CPU after the
 * signal (its work to the next check of the stop flag, and its cleanup);
 * LIMIT_S of wall time only ends a command that does not stop at all. */
#define STOP_CPU_S 1.0
#define LIMIT_S 30.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A tiny model (2 layers, 4 heads, K = 8: 128 events a token) and a trace
 * of 48k tokens (6.1M events), large enough that loading it for stats or
 * export takes well over the 0.3 s before the signal. */
static int setup(void)
{
    snprintf(g_model, sizeof g_model, "%s", th_path("tiny.bin"));
    snprintf(g_big, sizeof g_big, "%s", th_path("big.txt"));
    snprintf(g_db, sizeof g_db, "%s", th_path("big.db"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_model)) return -1;
    if (th_write_verses(g_big, 48000)) return -1;
    return th_run("%s trace %s %s -o %s", th_bin(), g_model, g_big, g_db) ? -1 : 0;
}
TH_SUITE(signals, setup, NULL);

/* CPU seconds (user + system) pid has used so far, from /proc/PID/stat
 * (fields 14 and 15, in clock ticks); -1 when unreadable. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Whether pid runs ramtrace (sh has exec'd it) and has a handler for sig
 * installed (the SigCgt mask of /proc/PID/status). */
static int catches(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int named = 0, caught = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Name:", 5)) named = strstr(line, "ramtrace") != NULL;
        unsigned long long mask;
        if (sscanf(line, "SigCgt: %llx", &mask) == 1) caught = (mask >> (sig - 1)) & 1;
    }
    fclose(f);
    return named && caught;
}

/* Run `cmd` (through sh, exec'd so the signal reaches ramtrace itself)
 * with stdout to out and stderr to errp; once ramtrace has its handler for
 * sig installed, wait delay seconds more, send sig and wait at most limit
 * seconds (then SIGKILL).  Returns the exit status (128 + signal when
 * killed by one, -1 when it had to be killed) and in *cpu the CPU seconds
 * the process used from the signal to its exit: how much work it did
 * before stopping, which unlike wall time does not depend on how busy the
 * machine is.  (Signalling before the handler is in place would kill it
 * by the default action, a race of the test, not a bug of the command.) */
static int run_signalled(const char *cmd, const char *out, const char *errp, int sig, double delay,
                         double limit, double *cpu)
{
    pid_t pid = fork();
    if (pid < 0) return -2;
    if (pid == 0) {
        if (!freopen(out, "w", stdout) || !freopen(errp, "w", stderr)) _exit(99);
        char full[4096];
        snprintf(full, sizeof full, "exec %s", cmd);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(98);
    }
    double t0 = now_s();
    int status = 0;
    while (!catches(pid, sig) && now_s() - t0 < limit) {
        if (waitpid(pid, &status, WNOHANG) == pid) { /* ended before it could be signalled */
            *cpu = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    nanosleep(&(struct timespec){ (time_t)delay, (long)((delay - (time_t)delay) * 1e9) }, NULL);
    double c0 = proc_cpu_s(pid);
    kill(pid, sig);
    t0 = now_s();
    struct rusage ru;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid) break;
        if (now_s() - t0 > limit) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &ru);
            *cpu = 1e9;
            return -1;
        }
        nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    }
    double total = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                   ru.ru_stime.tv_usec * 1e-6;
    *cpu = c0 >= 0 ? total - c0 : total;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Size of a file, -1 when it does not exist. */
static long file_size(const char *path)
{
    size_t len = 0;
    char *s = th_read_file(path, &len);
    if (!s) return -1;
    free(s);
    return (long)len;
}

/* Signal cmd delay seconds after its handler is in place; assert it exits
 * with want within STOP_CPU_S of CPU, its stderr mentions the interruption
 * and its stdout is empty (no partial result).  Returns the stderr text (malloc'd) for further checks. */
static char *expect_stop_after(const char *cmd, int sig, int want, double delay)
{
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s", th_path("sig.out"));
    snprintf(errp, sizeof errp, "%s", th_path("sig.err"));
    double cpu = 0;
    int rc = run_signalled(cmd, out, errp, sig, delay, LIMIT_S, &cpu);
    char *err = th_read_file(errp, NULL);
    if (rc != want) fprintf(stderr, "\n%s: exit %d (want %d) after %.2f s of CPU: %s\n", cmd, rc, want, cpu, err ? err : "");
    CU_ASSERT_EQUAL(rc, want);
    CU_ASSERT(cpu < STOP_CPU_S);
    CU_ASSERT(err && strstr(err, "interrupted"));
    CU_ASSERT_EQUAL(file_size(out), 0);
    return err;
}

static char *expect_stop(const char *cmd, int sig, int want) { return expect_stop_after(cmd, sig, want, 0.3); }

static const char runaway[] =
    "\"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c\"";

TH_TEST(test_sql_sigterm, "sql: a runaway query stops on SIGTERM, exit 143")
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s sql %s %s", th_bin(), g_db, runaway);
    free(expect_stop(cmd, SIGTERM, 143));
}

TH_TEST(test_sql_sigint, "sql: a runaway query stops on SIGINT, exit 130")
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s sql %s %s -F json", th_bin(), g_db, runaway);
    free(expect_stop(cmd, SIGINT, 130));
}

TH_TEST(test_stats_signals, "stats on a large trace: SIGTERM 143, SIGINT 130, no output")
{
    char cmd[2048];
    /* one thread and an early signal: with its heads in parallel on a quiet
     * machine stats reads the 6.1M events in about 0.25 s (0.54 s on one) */
    snprintf(cmd, sizeof cmd, "%s stats %s -j 1", th_bin(), g_db);
    free(expect_stop_after(cmd, SIGTERM, 143, 0.1));
    free(expect_stop_after(cmd, SIGINT, 130, 0.1));
}

TH_TEST(test_export_signal, "export on a large trace: SIGTERM 143, no output file")
{
    char cmd[2048], outp[512];
    snprintf(outp, sizeof outp, "%s", th_path("export.csv"));
    snprintf(cmd, sizeof cmd, "%s export %s -f csv -o %s", th_bin(), g_db, outp);
    free(expect_stop(cmd, SIGTERM, 143));
    CU_ASSERT_EQUAL(file_size(outp), -1);
}

TH_TEST(test_model_commands_sigterm, "trace, run and train stop on SIGTERM with exit 143")
{
    char cmd[2048], db[512], ckpt[512];
    snprintf(db, sizeof db, "%s", th_path("term.db"));
    snprintf(cmd, sizeof cmd, "%s trace %s %s -o %s --chunk 64 -j 1", th_bin(), g_model, g_big, db);
    free(expect_stop(cmd, SIGTERM, 143));
    CU_ASSERT_EQUAL(th_run("%s runs %s -F csv", th_bin(), db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "interrupted"));

    /* run: generation goes to stdout as it is made, so only the status. */
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s", th_path("gen.out"));
    snprintf(errp, sizeof errp, "%s", th_path("gen.err"));
    snprintf(cmd, sizeof cmd, "%s run %s %s -n 100000000", th_bin(), g_model, g_big);
    double cpu = 0;
    CU_ASSERT_EQUAL(run_signalled(cmd, out, errp, SIGTERM, 0.3, LIMIT_S, &cpu), 143);
    CU_ASSERT(cpu < STOP_CPU_S);

    snprintf(ckpt, sizeof ckpt, "%s", th_path("term.bin"));
    snprintf(cmd, sizeof cmd, "%s train --task text --config samples/configs/tiny.cfg --data %s -o %s "
             "--steps 1000000 --set warmup=1 --eval-every 0", th_bin(), g_big, ckpt);
    CU_ASSERT_EQUAL(run_signalled(cmd, out, errp, SIGTERM, 0.3, LIMIT_S, &cpu), 143);
    CU_ASSERT(cpu < STOP_CPU_S);
    CU_ASSERT_EQUAL(file_size(ckpt), -1); /* interrupted: checkpoint only, no model */
}

TH_TEST(test_attribute_matrix_stops, "attribution matrix: RN_EINTR and nothing kept once the stop flag is up")
{
    tr_event ev[3];
    memset(ev, 0, sizeof ev);
    ev[0].pos = 0; ev[0].op = 0; ev[0].slot = 0; ev[0].weight = 0.5f;
    ev[1].pos = 1; ev[1].op = 0; ev[1].slot = 0; ev[1].weight = 0.5f;
    ev[2].pos = 1; ev[2].op = 1; ev[2].slot = 0; ev[2].weight = 1.0f;
    volatile int stop = 1;
    an_matrix m;
    rn_error err = { 0 };
    an_set_stop_flag(&stop);
    CU_ASSERT_EQUAL(an_attribute_matrix(ev, 3, 2, 1.0, 0.0, 100, &m, &err), RN_EINTR);
    CU_ASSERT_PTR_NULL(m.values);
    CU_ASSERT_PTR_NULL(m.pos);
    stop = 0;
    CU_ASSERT_EQUAL_FATAL(an_attribute_matrix(ev, 3, 2, 1.0, 0.0, 100, &m, &err), RN_OK);
    CU_ASSERT_DOUBLE_EQUAL(m.values[2], 0.25 / 0.875, 1e-12);
    an_matrix_free(&m);
    an_set_stop_flag(NULL);
}
