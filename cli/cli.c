/* cli.c — shared helpers for the command front-ends (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "an_stop.h"
#include "rn_atomic.h"
#include "rn_cache.h"
#include "rn_threads.h"
#include "tr_query.h"

extern void openblas_set_num_threads(int);

volatile sig_atomic_t cli_interrupted = 0;
volatile int cli_stop_flag = 0;

static void on_signal(int sig)
{
    if (cli_interrupted) {
        rn_atomic_cleanup_all();
        _exit(128 + sig);
    }
    cli_interrupted = sig;
    cli_stop_flag = 1;
}

void cli_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    tr_set_stop_flag(&cli_stop_flag); /* queries on read connections stop too */
    an_set_stop_flag(&cli_stop_flag); /* and long analysis loops */
}

int cli_interrupt_status(void) { return 128 + (cli_interrupted ? (int)cli_interrupted : SIGINT); }

int cli_quiet;

void cli_info(const char *fmt, ...)
{
    if (cli_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

int cli_stdout_gone(void)
{
    struct stat st;
    if (fstat(1, &st) || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return 0;
    /* a pipe whose reader closed polls as POLLERR (a socket as POLLHUP) */
    struct pollfd p = { .fd = 1, .events = POLLOUT };
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

int cli_exit_status(int rc)
{
    /* only a write that failed counts: a reader that left after taking
     * everything (`| head -1` of one line) is no failure */
    if (rc || (!fflush(stdout) && !ferror(stdout))) return rc;
    if (cli_stdout_gone()) return CLI_EXIT_PIPE;
    fprintf(stderr, "ramtrace: writing the output failed\n");
    return 1;
}

void cli_report(const char *fmt, ...)
{
    if (cli_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

int cli_fail(const rn_error *err)
{
    if (err->code == RN_EIO && cli_stdout_gone()) return CLI_EXIT_PIPE; /* quietly: the reader left */
    fprintf(stderr, "ramtrace: %s\n", err->msg[0] ? err->msg : "unknown error");
    if (err->code == RN_EINTR) return cli_interrupt_status();
    return rn_exit_status(err->code ? err->code : RN_EINTERNAL);
}

/* Whether path looks like a model file: model.bin's magic, or a
 * .safetensors name. */
static int looks_like_model(const char *path)
{
    size_t n = strlen(path);
    if (n >= 12 && !strcmp(path + n - 12, ".safetensors")) return 1;
    char magic[8] = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == sizeof magic && !memcmp(magic, "RAMNETMB", 8);
}

void cli_hint_swapped(rn_error *err, const char *model_path, const char *other, const char *order)
{
    if (!other || looks_like_model(model_path) || !looks_like_model(other)) return;
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (%s looks like the model: the order is %s)", other, order);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[RN_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ramtrace %s: %s (try 'ramtrace %s --help')\n", cmd, msg, cmd);
    return 2;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    }
    return 0;
}

int cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out, rn_error *err)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not an integer", opt, s ? s : "");
    if (v < lo || v > hi)
        return rn_seterr(err, RN_EINPUT, "%s: %ld is out of range [%ld, %ld]", opt, v, lo, hi);
    *out = v;
    return RN_OK;
}

int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out, rn_error *err)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || errno || !isfinite(v))
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a number", opt, s ? s : "");
    if (v < lo || v > hi)
        return rn_seterr(err, RN_EINPUT, "%s: %g is out of range [%g, %g]", opt, v, lo, hi);
    *out = v;
    return RN_OK;
}

int cli_parse_u64(const char *opt, const char *s, uint64_t *out, rn_error *err)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a non-negative integer", opt, s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a non-negative integer", opt, s);
    *out = v;
    return RN_OK;
}

int cli_parse_size(const char *opt, const char *s, uint64_t *out, rn_error *err)
{
    char *end;
    errno = 0;
    double v = s && *s && *s != '-' ? strtod(s, &end) : -1;
    if (v < 0 || errno || end == s)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a size (bytes, or e.g. 64M, 2G)", opt, s ? s : "");
    double mul = 1;
    if (*end) {
        const char *u = strchr("KMGT", *end);
        if (!u || end[1]) return rn_seterr(err, RN_EINPUT, "%s: '%s' is not a size (bytes, or e.g. 64M, 2G)", opt, s);
        for (const char *p = "KMGT"; p <= u; p++) mul *= 1024;
    }
    v *= mul;
    if (v >= 18446744073709551615.0)
        return rn_seterr(err, RN_EINPUT, "%s: '%s' is too large", opt, s);
    *out = (uint64_t)v;
    return RN_OK;
}

void cli_print_policies(FILE *f, int online_only)
{
    fprintf(f, "policies:\n");
    for (int i = 0; i < rn_policy_count(); i++) {
        const rn_policy *p = rn_policy_at(i);
        if (!online_only || !p->needs_next) fprintf(f, "  %-10s %s\n", p->name, p->summary);
    }
}

int cli_state_option(int c, const char *arg, rn_state_opts *o, int *rc, rn_error *err)
{
    *rc = RN_OK;
    switch (c) {
    case CLI_O_STATE_BUDGET:
        if (!(*rc = cli_parse_size("--state-budget", arg, &o->budget, err)) && !o->budget)
            *rc = rn_seterr(err, RN_EINPUT, "--state-budget: 0 holds no slot");
        return 1;
    case CLI_O_STATE_FILE: o->file = arg; return 1;
    case CLI_O_STATE_POLICY: {
        const rn_policy *p = rn_policy_find(arg);
        if (!p || p->needs_next) {
            char names[256];
            rn_policy_names(names, sizeof names, 1);
            *rc = rn_seterr(err, RN_EINPUT, "--state-policy: '%s' is not an online policy (%s)%s", arg, names,
                            p ? "; it needs the future accesses: simulate only" : "");
        }
        o->policy = arg;
        return 1;
    }
    case CLI_O_STATE_DIRECT: o->direct = 1; return 1;
    case CLI_O_STATE_DISCARD: o->discard = 1; return 1;
    case CLI_O_STATE_NO_PREFETCH: o->no_prefetch = 1; return 1;
    case CLI_O_STATE_IO:
        if (!strcmp(arg, "auto")) o->io = RN_STATE_IO_AUTO;
        else if (!strcmp(arg, "threads")) o->io = RN_STATE_IO_THREADS;
        else if (!strcmp(arg, "sync")) o->io = RN_STATE_IO_SYNC;
        else *rc = rn_seterr(err, RN_EINPUT, "--state-io: '%s': expected auto, threads or sync", arg);
        return 1;
    case CLI_O_STATE_SCOPE: {
        int scope = rn_scope_find(arg);
        if (scope < 0) /* its own wording: model first, the default */
            *rc = rn_seterr(err, RN_EINPUT, "--state-scope: '%s': expected model, layer or head", arg);
        else o->scope = scope;
        return 1;
    }
    default: return 0;
    }
}

void cli_state_report(const rn_state_opts *o, const rn_state_counters *c)
{
    double acc = c->accesses ? (double)c->accesses : 1;
    char per[16] = ""; /* " per layer", " per head" */
    if (o->scope != RN_CACHE_SCOPE_MODEL) snprintf(per, sizeof per, " per %s", rn_scope_name(o->scope));
    if (c->aio_errno) /* not an error: the same rows, one system call each */
        cli_info("ramtrace: note: --state-direct: native AIO unavailable (io_setup: %s); the state file was read "
                 "and written by threads instead\n", strerror(c->aio_errno));
    cli_info("state: %s, budget %llu bytes%s (%llu slots of %llu bytes%s%s): %llu accesses, %llu hits (%.2f%%), "
            "%llu misses, %llu evictions, %.1f MiB read (%llu rows, %llu read ahead), %.1f MiB written\n",
            o->policy ? o->policy : "lru", (unsigned long long)o->budget, per, (unsigned long long)c->capacity,
            (unsigned long long)c->row_bytes, o->direct ? ", O_DIRECT" : "", c->aio ? ", AIO" : "", (unsigned long long)c->accesses,
            (unsigned long long)c->hits, 100.0 * (double)c->hits / acc, (unsigned long long)c->misses,
            (unsigned long long)c->evictions, (double)c->bytes_read / 1048576.0,
            (unsigned long long)(c->row_bytes ? c->bytes_read / c->row_bytes : 0), (unsigned long long)c->prefetched, (double)c->bytes_written / 1048576.0);
}

void cli_set_threads(int n)
{
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

void cli_threads(long n)
{
    if (n > 0) cli_set_threads((int)n);
    else if (!rn_threads_user_env()) rn_threads_auto(omp_get_max_threads(), 0.05, NULL, NULL);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_stderr_tty(void) { return isatty(2); }
