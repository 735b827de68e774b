/* rn_threads.h — the default thread count follows the machine's load.
 *
 * OpenMP's team of N threads meets at a barrier after every parallel loop.
 * When another process keeps one of our cores busy, every barrier waits for
 * whichever of our threads the scheduler has parked, and a 2-thread run on
 * 2 cores falls 10-40x (docs/inference.md, "Threads under load").  So, when
 * the user has not chosen a thread count, the model's loops ask
 * rn_threads_poll() between chunks, tokens, training steps and evaluation
 * batches; it samples how many runnable tasks are not ours (every 50 ms at
 * most) and sets the OpenMP thread count to the free CPUs:
 * min(ceiling, max(1, cpus - others)).
 * Workspaces are sized for rn_threads_max() threads, so the count may move
 * freely below it.
 */
#ifndef RN_THREADS_H
#define RN_THREADS_H

/* One sample of the machine's load. */
typedef struct {
    int running; /* runnable tasks on the machine (/proc/loadavg), ours included */
    int ours;    /* of those, threads of this process */
    int others;  /* running - ours, at least 0 */
} rn_load;

/* Sample the load from /proc.  Returns 0, or -1 when /proc cannot be read
 * (then the thread count is left alone). */
int rn_load_sample(rn_load *out);

/* The thread count for `others` busy tasks on `cpus` CPUs, at most ceiling
 * and at least 1. */
int rn_threads_for_load(int ceiling, int cpus, int others);

/* CPUs this process may run on (its affinity mask), at least 1. */
int rn_threads_cpus(void);

/* Non-zero when the user fixed OpenMP's threads or waiting through the
 * environment (OMP_NUM_THREADS, OMP_WAIT_POLICY, OMP_DYNAMIC,
 * GOMP_SPINCOUNT): then the count is theirs and is never adapted. */
int rn_threads_user_env(void);

/* A load sampler (tests inject one); returns 0 and fills *out, or -1. */
typedef int (*rn_load_fn)(void *user, rn_load *out);

/* Adapt the thread count from now on, between 1 and ceiling (the count
 * workspaces are sized for), from samples of sample(user) (NULL:
 * rn_load_sample) taken at most every interval_s seconds.  A drop needs
 * the last three samples to agree (a busy neighbour, not a blip); a rise
 * needs one.  ceiling < 1 turns adapting off. */
void rn_threads_auto(int ceiling, double interval_s, rn_load_fn sample, void *user);

/* Called by the model's loops from the initial thread, outside parallel
 * regions: re-sample when due and apply the count.  A no-op (one branch)
 * unless rn_threads_auto is on.  Returns the thread count in force. */
int rn_threads_poll(void);

/* The most threads a workspace must serve: the ceiling while adapting,
 * else omp_get_max_threads(). */
int rn_threads_max(void);

/* Changes of count made so far (for reports and tests). */
int rn_threads_changes(void);

#endif
