/* test_threads.c — the default thread count follows the machine's load
 * (core/base/rn_threads.h): the rule, the controller's hysteresis driven by a
 * scripted sampler, the user's environment taking precedence, and the
 * /proc sampler seeing a real busy neighbour and our own busy thread. */
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rn_threads.h"
#include "th.h"

TH_TEST(test_threads_rule, "thread count for a load: free CPUs, between 1 and the ceiling")
{
    CU_ASSERT_EQUAL(rn_threads_for_load(2, 2, 0), 2);
    CU_ASSERT_EQUAL(rn_threads_for_load(2, 2, 1), 1);
    CU_ASSERT_EQUAL(rn_threads_for_load(2, 2, 7), 1);
    CU_ASSERT_EQUAL(rn_threads_for_load(2, 2, -3), 2);
    CU_ASSERT_EQUAL(rn_threads_for_load(4, 8, 3), 4);
    CU_ASSERT_EQUAL(rn_threads_for_load(8, 8, 3), 5);
    CU_ASSERT_EQUAL(rn_threads_for_load(1, 8, 0), 1);
    CU_ASSERT(rn_threads_cpus() >= 1);
}

/* A scripted sampler: others = script[i] on the i-th call (the last one
 * repeats). */
typedef struct {
    const int *script;
    int n, calls;
} script_t;

static int scripted(void *user, rn_load *out)
{
    script_t *s = user;
    int i = s->calls < s->n ? s->calls : s->n - 1;
    s->calls++;
    out->running = s->script[i] + 1;
    out->ours = 1;
    out->others = s->script[i];
    return 0;
}

TH_TEST(test_threads_controller, "drop after three busy samples, rise after one free, never above the ceiling")
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    /* cpus is the real machine's; a ceiling of 2 and others of 0 or >= cpus
     * give 2 and 1 on any machine with 2 or more CPUs. */
    int cpus = rn_threads_cpus();
    int busy = cpus; /* every CPU taken by others: one thread */
    const int script[] = { 0, 0, 0, busy, busy, busy, 0, busy, busy, busy, busy };
    script_t s = { script, (int)(sizeof script / sizeof script[0]), 0 };
    rn_threads_auto(2, 1e-9, scripted, &s);
    CU_ASSERT_EQUAL(rn_threads_max(), 2);
    int want_hi = cpus >= 2 ? 2 : 1;
    /* first poll: three samples (0, 0, 0) */
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    CU_ASSERT_EQUAL(s.calls, 3);
    CU_ASSERT_EQUAL(omp_get_max_threads(), want_hi);
    /* one and two busy samples: a blip, no change */
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    /* the third busy sample in a row: one thread */
    CU_ASSERT_EQUAL(rn_threads_poll(), 1);
    CU_ASSERT_EQUAL(omp_get_max_threads(), 1);
    CU_ASSERT_EQUAL(rn_threads_max(), 2); /* workspaces stay sized for 2 */
    /* one free sample: back to two at once */
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    CU_ASSERT_EQUAL(omp_get_max_threads(), want_hi);
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    CU_ASSERT_EQUAL(rn_threads_poll(), want_hi);
    CU_ASSERT_EQUAL(rn_threads_poll(), 1);
    CU_ASSERT_EQUAL(rn_threads_changes(), want_hi == 2 ? 3 : 0);
    /* not due yet: no sample taken */
    rn_threads_auto(2, 3600, scripted, &s);
    int calls = s.calls;
    rn_threads_poll();
    CU_ASSERT_EQUAL(s.calls, calls + 3);
    rn_threads_poll();
    rn_threads_poll();
    CU_ASSERT_EQUAL(s.calls, calls + 3);
    /* off: polls sample nothing and change nothing */
    rn_threads_auto(0, 0, NULL, NULL);
    omp_set_num_threads(2);
    calls = s.calls;
    CU_ASSERT_EQUAL(rn_threads_poll(), 2);
    CU_ASSERT_EQUAL(s.calls, calls);
    CU_ASSERT_EQUAL(rn_threads_max(), 2);
    omp_set_num_threads(saved);
}

TH_TEST(test_threads_user_env, "OMP_NUM_THREADS, OMP_WAIT_POLICY, GOMP_SPINCOUNT, OMP_DYNAMIC turn adapting off")
{
    static const char *const vars[] = { "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DYNAMIC" };
    char *saved[4];
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(vars[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(vars[i]);
    }
    int clean = rn_threads_user_env();
    for (int i = 0; i < 4; i++) {
        setenv(vars[i], "2", 1);
        CU_ASSERT_EQUAL(rn_threads_user_env(), 1);
        unsetenv(vars[i]);
    }
    if (!getenv("OMP_THREAD_LIMIT")) CU_ASSERT_EQUAL(clean, 0);
    for (int i = 0; i < 4; i++)
        if (saved[i]) { setenv(vars[i], saved[i], 1); free(saved[i]); }
}

static volatile int spin_stop;

static void *spin(void *arg)
{
    (void)arg;
    while (!spin_stop) {}
    return NULL;
}

TH_TEST(test_load_sample, "the /proc sampler sees a busy neighbour and counts our own busy thread as ours")
{
    rn_load l;
    if (rn_load_sample(&l)) { CU_PASS("no /proc"); return; }
    CU_ASSERT(l.ours >= 1);
    CU_ASSERT(l.others >= 0);
    CU_ASSERT_EQUAL(l.others, l.running > l.ours ? l.running - l.ours : 0);
    /* A spinning child is runnable all the time: some sample sees it. */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        for (;;) {}
    }
    CU_ASSERT_FATAL(pid > 0);
    int seen = 0;
    for (int i = 0; i < 40 && !seen; i++) {
        nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
        if (!rn_load_sample(&l) && l.others >= 1) seen = 1;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CU_ASSERT(seen);
    /* A spinning thread of ours is counted as ours (2 running threads). */
    pthread_t th;
    spin_stop = 0;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, spin, NULL) == 0);
    int ours2 = 0;
    for (int i = 0; i < 40 && !ours2; i++) {
        nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
        if (!rn_load_sample(&l) && l.ours >= 2) ours2 = 1;
    }
    spin_stop = 1;
    pthread_join(th, NULL);
    CU_ASSERT(ours2);
}
