/* replay.c — runs a fuzz target without libFuzzer: every file named on the
 * command line (or found in a directory named there) is fed once to
 * LLVMFuzzerTestOneInput.  `make test` links it with each tests/fuzz/
 * fuzz_NAME.c and replays the committed corpus and past crash inputs, so
 * they stay regression tests under the normal, ASan and clang builds.
 *
 * Each input runs in a forked child (after LLVMFuzzerInitialize ran once in
 * the parent), so one crashing or leaking input is reported by name and the
 * others still run; a child that runs for more than 60 s is a failure too.
 * RN_FUZZ_NOFORK=1 runs the inputs in this process (for a debugger).
 *
 * Memory is capped as libFuzzer caps it (2 GiB per allocation), so an
 * input that makes the library size an allocation by a claimed value
 * fails here too: under AddressSanitizer by its max_allocation_size_mb,
 * otherwise by a 4 GiB address-space limit on each child.
 * With no arguments it replays tests/fuzz/corpus/NAME and
 * tests/fuzz/crashes/NAME (NAME: FUZZ_TARGET_NAME, set by mk/fuzz.mk).
 * Prints "fuzz NAME: N passed, M failed"; exit status 1 when any failed.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif

#ifdef FUZZ_ASAN
/* AddressSanitizer's defaults for this program ($ASAN_OPTIONS adds to them). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=2048"; }
#endif

/* In a child: cap its memory (see the header). */
static void cap_memory(void)
{
#ifndef FUZZ_ASAN
    struct rlimit rl = { (rlim_t)4 << 30, (rlim_t)4 << 30 };
    setrlimit(RLIMIT_AS, &rl);
#endif
}

#ifndef FUZZ_TARGET_NAME
#define FUZZ_TARGET_NAME "target"
#endif

/* Read path whole into a malloc'd buffer (NULL on failure). */
static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) { free(b); b = NULL; }
            else b = nb;
        }
    }
    if (b && ferror(f)) { free(b); b = NULL; }
    fclose(f);
    *len = n;
    return b;
}

/* Feed one file to the target in this process; 0 when it returned. */
static int run_one(const char *path)
{
    size_t n = 0;
    uint8_t *data = read_all(path, &n);
    if (!data) { fprintf(stderr, "replay: cannot read %s\n", path); return 1; }
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

/* Run one file (in a child unless nofork); 1 when it failed. */
static int replay(const char *path, int nofork)
{
    if (nofork) return run_one(path); /* no memory cap: a debugger may need more */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) { perror("replay: fork"); return 1; }
    if (pid == 0) {
        alarm(60);
        cap_memory();
        exit(run_one(path)); /* exit, not _exit: LeakSanitizer checks at exit */
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) { perror("replay: waitpid"); return 1; }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "replay: %s: killed by signal %d (%s)\n", path, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? "ran over 60 s" : strsignal(WTERMSIG(st)));
    else
        fprintf(stderr, "replay: %s: exit status %d\n", path, WEXITSTATUS(st));
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file of dir, in name order (hidden files and
 * README files skipped). */
static void replay_dir(const char *dir, int nofork, int *passed, int *failed)
{
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "replay: cannot open %s\n", dir); (*failed)++; return; }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strncmp(e->d_name, "README", 6)) continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (names[i] && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay(path, nofork)) (*failed)++;
            else (*passed)++;
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    const char *nf = getenv("RN_FUZZ_NOFORK");
    int nofork = nf && *nf && strcmp(nf, "0");
    LLVMFuzzerInitialize(&argc, &argv);
    int passed = 0, failed = 0;
    char *defaults[2] = { "tests/fuzz/corpus/" FUZZ_TARGET_NAME, "tests/fuzz/crashes/" FUZZ_TARGET_NAME };
    char **paths = argc > 1 ? argv + 1 : defaults;
    int np = argc > 1 ? argc - 1 : 2;
    for (int i = 0; i < np; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) { fprintf(stderr, "replay: %s: no such file\n", paths[i]); failed++; }
        else if (S_ISDIR(st.st_mode)) replay_dir(paths[i], nofork, &passed, &failed);
        else if (replay(paths[i], nofork)) failed++;
        else passed++;
    }
    printf("fuzz %s: %d passed, %d failed\n", FUZZ_TARGET_NAME, passed, failed);
    return failed ? 1 : 0;
}
