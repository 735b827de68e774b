/* bench_load.c — throughput of the model commands on a quiet machine and
 * beside one busy competitor (a spinning process), for the default thread
 * policy (the count follows the load, core/base/rn_threads.h) and for a fixed
 * count of one thread per CPU (the old default), as medians and ratios.
 *
 * Runs the ramtrace binary next to this program's directory
 * (BUILD/bench/bench_load -> BUILD/ramtrace) or $RAMTRACE_BIN, from the
 * repository root (samples/kjv.bin):
 *   run    `run samples/kjv.bin PROMPT -n 400`: generation tok/s
 *   trace  `trace samples/kjv.bin TEXT --no-index` of ~3.7k tokens: tokens/s
 *   train  4 text steps (batch 2 x 128) on kjv.cfg: training tok/s
 * The competitor is forked here, ends by itself after 10 minutes at most
 * (alarm) and is killed when the busy phase ends.  Target: busy >= 50% of
 * quiet for the default (docs/inference.md, "Threads under load").
 */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "rn_threads.h"

#define REPS 5       /* default setting: quiet and busy runs each */
#define REPS_FIXED 3 /* the fixed count, slow under load */

static char bin[1024], dir[] = "/tmp/bench_load.XXXXXX", text[1100];

/* Run a shell command with stderr to DIR/err; return the stderr text
 * (static) or NULL when it failed. */
static const char *run_cmd(const char *cmd)
{
    static char buf[1 << 16];
    char full[4096], errp[1100];
    snprintf(errp, sizeof errp, "%s/err", dir);
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, errp);
    int rc = system(full);
    FILE *f = fopen(errp, "r");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (rc != 0) {
        fprintf(stderr, "bench_load: '%s' failed:\n%s", cmd, buf);
        return NULL;
    }
    return buf;
}

/* One measurement of command kind k (0 run, 1 trace, 2 train) with the
 * thread option opt ("" = default); returns tokens/s, or -1. */
static double measure(int k, const char *opt)
{
    char cmd[4096];
    const char *e;
    if (k == 0) {
        snprintf(cmd, sizeof cmd, "%s run samples/kjv.bin samples/prompts/kjv.txt -n 400 --seed 1 %s", bin, opt);
        if (!(e = run_cmd(cmd)) || !(e = strstr(e, "generation:"))) return -1;
        const char *p = strchr(e, '(');
        return p ? atof(p + 1) : -1;
    }
    if (k == 1) {
        snprintf(cmd, sizeof cmd, "rm -f %s/t.db && %s trace samples/kjv.bin %s -o %s/t.db --no-index %s",
                 dir, bin, text, dir, opt);
        const char *all = run_cmd(cmd);
        if (!all || !(e = strstr(all, " tokens, "))) return -1;
        const char *p = e;
        while (p > all && p[-1] >= '0' && p[-1] <= '9') p--;
        double tokens = atof(p);
        const char *in = strstr(e, " events in ");
        double s = in ? atof(in + 11) : 0;
        return s > 0 ? tokens / s : -1;
    }
    snprintf(cmd, sizeof cmd,
             "%s train --task text --config samples/configs/kjv.cfg --data %s -o %s/m.bin --steps 4 "
             "--batch 2 --seq-len 128 --eval-every 0 --set warmup=1 --set log_every=4 "
             "--set eval_examples=1 --set eval_windows=1 %s",
             bin, text, dir, opt);
    if (!(e = run_cmd(cmd))) return -1;
    const char *last = NULL;
    for (const char *p = e; (p = strstr(p, " tok/s")); p++) last = p;
    if (!last) return -1;
    const char *p = last;
    while (p > e && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')) p--;
    return atof(p);
}

/* Runnable tasks that are not ours right now: the median of 20 samples
 * 10 ms apart (the shared machine's background load). */
static double background(void)
{
    double v[20];
    int n = 0;
    for (int i = 0; i < 20; i++) {
        rn_load l;
        if (!rn_load_sample(&l)) v[n++] = l.others;
        usleep(10000);
    }
    return n ? bench_median(v, n) : -1;
}

static pid_t start_competitor(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(600); /* bounded even if this program dies */
        for (volatile unsigned long i = 0;; i++) {}
    }
    usleep(200000);
    return pid;
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *env = getenv("RAMTRACE_BIN");
    if (env) snprintf(bin, sizeof bin, "%s", env);
    else {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s", argv[0]);
        snprintf(bin, sizeof bin, "%s/../ramtrace", dirname(tmp));
    }
    if (access(bin, X_OK) || access("samples/kjv.bin", R_OK)) {
        fprintf(stderr, "bench_load: needs %s and samples/kjv.bin (run from the repository root after make)\n", bin);
        return 1;
    }
    if (!mkdtemp(dir)) { perror("bench_load: mkdtemp"); return 1; }
    snprintf(text, sizeof text, "%s/text.txt", dir);
    FILE *f = fopen(text, "w");
    FILE *pf = fopen("samples/prompts/kjv.txt", "r");
    char verse[4096];
    size_t vn = pf ? fread(verse, 1, sizeof verse, pf) : 0;
    if (pf) fclose(pf);
    for (int i = 0; f && vn && i < 24; i++) fwrite(verse, 1, vn, f);
    if (f) fclose(f);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    char fixed[64];
    snprintf(fixed, sizeof fixed, "--threads %ld", cpus);
    const char *opts[2] = { "", fixed };
    const char *names[3] = { "run (generation)", "trace (prefill)", "train (steps)" };
    double med[2][3][2]; /* [busy][cmd][setting] */
    int ok = 1;
    double la[3] = { 0 };
    if (getloadavg(la, 3) == 3) printf("load average at start: %.2f (%ld CPUs)\n", la[0], cpus);
    printf("other runnable tasks before: %.1f (median of 20 samples)\n", background());
    /* Quiet and busy alternate run by run, so both see the same background
     * (the machine is shared). */
    for (int k = 0; k < 3 && ok; k++)
        for (int s = 0; s < 2 && ok; s++) {
            int reps = s ? REPS_FIXED : REPS;
            double v[2][REPS];
            for (int r = 0; r < reps && ok; r++) {
                if ((v[0][r] = measure(k, opts[s])) < 0) ok = 0;
                pid_t comp = start_competitor();
                if (ok && (v[1][r] = measure(k, opts[s])) < 0) ok = 0;
                if (comp > 0) { kill(comp, SIGKILL); waitpid(comp, NULL, 0); }
            }
            if (ok) for (int b = 0; b < 2; b++) med[b][k][s] = bench_median(v[b], reps);
        }
    printf("other runnable tasks after: %.1f\n", background());
    char rm[1200];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm)) {}
    if (!ok) return 1;
    printf("tokens/s, median of %d (default) / %d (fixed); busy = one spinning competitor on the %ld CPUs\n", REPS, REPS_FIXED, cpus);
    printf("%-18s %-12s %10s %10s %7s\n", "command", "threads", "quiet", "busy", "ratio");
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < 2; s++)
            printf("%-18s %-12s %10.1f %10.1f %6.0f%%\n", names[k], s ? fixed + 2 : "default",
                   med[0][k][s], med[1][k][s], 100.0 * med[1][k][s] / med[0][k][s]);
    printf("default vs fixed, quiet: run %.2fx, trace %.2fx, train %.2fx\n", med[0][0][0] / med[0][0][1],
           med[0][1][0] / med[0][1][1], med[0][2][0] / med[0][2][1]);
    return 0;
}
