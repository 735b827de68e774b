/* rn_threads.c — the default thread count follows the machine's load (see
 * rn_threads.h; the measurements behind it are in docs/inference.md).
 *
 * The controller's state belongs to the calling thread (_Thread_local),
 * like OpenMP's own nthreads setting, which omp_set_num_threads changes for
 * the calling thread only: a command sets it up and polls it from the
 * thread that runs the model, and several threads each running a model
 * never share or race on it.
 */
#include "rn_threads.h"

#include <dirent.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HISTORY 3

static _Thread_local struct {
    int on, ceiling, cpus, current, changes;
    double interval, next;
    rn_load_fn sample;
    void *user;
    int hist[HISTORY], nhist;
} ctl;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Threads of this process in state R, from /proc/self/task/<tid>/stat
 * (the state follows the command name's closing parenthesis). */
static int own_running(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char path[64], buf[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* the thread ended meanwhile */
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'R') n++;
    }
    closedir(d);
    return n;
}

int rn_load_sample(rn_load *out)
{
    /* /proc/loadavg: "0.50 0.40 0.30 RUNNING/TOTAL LASTPID"; RUNNING is
     * the number of runnable tasks right now, this reader included. */
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double a, b, c;
    int running = 0, total = 0;
    int got = fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total);
    fclose(f);
    if (got != 5 || running < 0) return -1;
    int ours = own_running();
    if (ours < 1) ours = 1; /* the sampling thread runs */
    out->running = running;
    out->ours = ours;
    out->others = running > ours ? running - ours : 0;
    return 0;
}

int rn_threads_for_load(int ceiling, int cpus, int others)
{
    int n = cpus - (others > 0 ? others : 0);
    if (n > ceiling) n = ceiling;
    return n < 1 ? 1 : n;
}

int rn_threads_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    int n = omp_get_num_procs();
    return n > 0 ? n : 1;
}

int rn_threads_user_env(void)
{
    static const char *const vars[] = { "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_DYNAMIC",
                                        "GOMP_SPINCOUNT", "OMP_THREAD_LIMIT" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return 1;
    }
    return 0;
}

static int default_sample(void *user, rn_load *out)
{
    (void)user;
    return rn_load_sample(out);
}

void rn_threads_auto(int ceiling, double interval_s, rn_load_fn sample, void *user)
{
    memset(&ctl, 0, sizeof ctl);
    if (ceiling < 1) return;
    ctl.on = 1;
    ctl.ceiling = ceiling;
    ctl.cpus = rn_threads_cpus();
    ctl.current = omp_get_max_threads();
    ctl.interval = interval_s > 0 ? interval_s : 0.05;
    ctl.sample = sample ? sample : default_sample;
    ctl.user = sample ? user : NULL;
    ctl.next = 0; /* the first poll samples */
}

/* Take one sample into the history; 0 when it was read. */
static int take_sample(void)
{
    rn_load l;
    if (ctl.sample(ctl.user, &l)) return -1;
    memmove(ctl.hist + 1, ctl.hist, sizeof ctl.hist[0] * (HISTORY - 1));
    ctl.hist[0] = l.others;
    if (ctl.nhist < HISTORY) ctl.nhist++;
    return 0;
}

int rn_threads_poll(void)
{
    if (!ctl.on) return omp_get_max_threads();
    double t = now_s();
    if (t < ctl.next || omp_in_parallel()) return ctl.current;
    ctl.next = t + ctl.interval;
    if (ctl.nhist == 0) {
        /* First decision: three samples half a millisecond apart, so one
         * blip does not cost the run its threads. */
        for (int i = 0; i < HISTORY; i++) {
            if (take_sample()) { ctl.on = 0; return ctl.current; }
            if (i + 1 < HISTORY) nanosleep(&(struct timespec){ 0, 500000 }, NULL);
        }
    } else if (take_sample()) {
        return ctl.current;
    }
    /* The fewest others seen lately: dropping threads needs every recent
     * sample to show the neighbour, taking them back needs one free one. */
    int others = ctl.hist[0];
    for (int i = 1; i < ctl.nhist; i++)
        if (ctl.hist[i] < others) others = ctl.hist[i];
    int want = rn_threads_for_load(ctl.ceiling, ctl.cpus, others);
    if (want != ctl.current) {
        omp_set_num_threads(want);
        ctl.current = want;
        ctl.changes++;
    }
    return ctl.current;
}

int rn_threads_max(void)
{
    int n = omp_get_max_threads();
    return ctl.on && ctl.ceiling > n ? ctl.ceiling : n;
}

int rn_threads_changes(void) { return ctl.changes; }
