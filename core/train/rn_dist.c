/* rn_dist.c — ranks, rendezvous and deterministic collectives over MPI for
 * data-parallel training (see rn_dist.h).  MPI errors are returned, not
 * fatal (MPI_ERRORS_RETURN); a wait that MPI never ends is cut by the
 * watchdog thread. */
#include "rn_dist.h"
#include "rn_atomic.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { IDENT_MAX = RN_DIST_IDENT_MAX, SUM_MAX = 8 };

struct rn_dist {
    int rank, size, local_rank;
    unsigned long long token;   /* fs:DIR: this run's name in DIR (rank 0's, sent to all) */
    char spec[1100];
    const char *dir;            /* fs:DIR: DIR (inside spec); NULL for mpi */
    double timeout;
    rn_dist_timeout_fn on_timeout;
    pthread_t wd;
    int wd_on;
    atomic_int busy;            /* a collective with a timeout is under way */
    atomic_int quit;            /* the watchdog ends */
    atomic_llong since_ms;      /* when it began */
    const char *_Atomic op;     /* its name, for the message */
    int *cnt, *dsp;             /* [size] each: shard lengths and offsets of the last block */
    int *rcnt, *rdsp;           /* [size] each: what the reduce-scatter receives */
    int64_t shard_n;            /* the block length cnt/dsp describe (-1: none yet) */
    rn_real *scratch;           /* reduce-scatter: size × the largest shard */
    size_t scratch_cap;
    double *f64;                /* [size · SUM_MAX] */
    char *idents;               /* [size · IDENT_MAX] */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The watchdog: polls the collective under way; one that has waited past
 * the timeout is reported to the handler (once). */
static void *watchdog(void *arg)
{
    rn_dist *d = arg;
    while (!atomic_load(&d->quit)) {
        struct timespec ts = { 0, 100 * 1000000L };
        nanosleep(&ts, NULL);
        if (!atomic_load(&d->busy)) continue;
        long long waited = now_ms() - atomic_load(&d->since_ms);
        if (waited < (long long)(d->timeout * 1000)) continue;
        char msg[300];
        snprintf(msg, sizeof msg,
                 "rank %d of %d: no word from the other ranks for %.0f s in %s "
                 "(a rank died, hangs or was stopped); giving up",
                 d->rank, d->size, d->timeout, atomic_load(&d->op));
        d->on_timeout(msg);
        atomic_store(&d->busy, 0);
    }
    return NULL;
}

static void begin(rn_dist *d, const char *op, int patient)
{
    atomic_store(&d->op, op);
    atomic_store(&d->since_ms, now_ms());
    atomic_store(&d->busy, !patient);
}

static void end(rn_dist *d) { atomic_store(&d->busy, 0); }

/* An MPI call's outcome as ours: one line naming the call. */
static int mpi_check(rn_dist *d, int mrc, const char *op, rn_error *err)
{
    end(d);
    if (mrc == MPI_SUCCESS) return RN_OK;
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mrc, s, &len);
    return rn_seterr(err, RN_EIO, "%s failed: %s (did a rank die?)", op, s);
}

int rn_dist_open(rn_dist **out, const char *spec, double timeout_s, rn_dist_timeout_fn on_timeout,
                 rn_error *err)
{
    *out = NULL;
    int fs = !strncmp(spec, "fs:", 3);
    if (strcmp(spec, "mpi") && !fs)
        return rn_seterr(err, RN_EINPUT, "--dist: '%s' is not mpi, fs:DIR or none", spec);
    if (fs && !spec[3]) return rn_seterr(err, RN_EINPUT, "--dist fs:DIR: no directory after 'fs:'");
    if (strlen(spec) >= 1024) return rn_seterr(err, RN_EINPUT, "--dist: the directory name is too long");
    if (!(timeout_s > 0)) return rn_seterr(err, RN_EINPUT, "--dist-timeout must be positive");
    int inited = 0, provided;
    MPI_Initialized(&inited);
    if (inited) return rn_seterr(err, RN_EINTERNAL, "--dist: MPI is already initialised in this process");
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return rn_seterr(err, RN_EIO, "--dist %s: MPI could not start (launch with mpirun or srun)", spec);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rn_dist *d = calloc(1, sizeof *d);
    if (!d) {
        MPI_Finalize();
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    MPI_Comm node;
    d->local_rank = d->rank;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &d->local_rank);
        MPI_Comm_free(&node);
    }
    snprintf(d->spec, sizeof d->spec, "%s", spec);
    d->dir = fs ? d->spec + 3 : NULL;
    d->timeout = timeout_s;
    d->on_timeout = on_timeout;
    d->shard_n = -1;
    atomic_store(&d->op, "startup");
    const size_t N = (size_t)d->size;
    d->cnt = calloc(4 * N, sizeof(int));
    d->f64 = calloc(N * SUM_MAX, sizeof(double));
    d->idents = calloc(N, IDENT_MAX);
    if (!d->cnt || !d->f64 || !d->idents) {
        rn_dist_close(d);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    d->dsp = d->cnt + N;
    d->rcnt = d->cnt + 2 * N;
    d->rdsp = d->cnt + 3 * N;
    if (on_timeout) {
        if (pthread_create(&d->wd, NULL, watchdog, d)) {
            rn_dist_close(d);
            return rn_seterr(err, RN_EIO, "--dist: cannot start the watchdog thread");
        }
        d->wd_on = 1;
    }
    *out = d;
    return RN_OK;
}

void rn_dist_close(rn_dist *d)
{
    if (!d) return;
    if (d->wd_on) {
        atomic_store(&d->quit, 1);
        pthread_join(d->wd, NULL);
    }
    free(d->cnt);
    free(d->f64);
    free(d->idents);
    free(d->scratch);
    free(d);
    MPI_Finalize();
}

int rn_dist_rank(const rn_dist *d) { return d->rank; }
int rn_dist_size(const rn_dist *d) { return d->size; }
int rn_dist_local_rank(const rn_dist *d) { return d->local_rank; }
const char *rn_dist_spec(const rn_dist *d) { return d->spec; }

void rn_dist_share(int64_t n, int size, int r, int64_t *lo, int64_t *hi)
{
    int64_t q = n / size, rem = n % size;
    *lo = r * q + (r < rem ? r : rem);
    *hi = *lo + q + (r < rem);
}

/* cnt/dsp for blocks of n elements (int counts: MPI's). */
static int shards(rn_dist *d, int64_t n, rn_error *err)
{
    if (d->shard_n == n) return RN_OK;
    if (n > INT_MAX)
        return rn_seterr(err, RN_EINPUT, "--dist: a block of %lld elements is too large for MPI's int counts",
                         (long long)n);
    for (int r = 0; r < d->size; r++) {
        int64_t lo, hi;
        rn_dist_share(n, d->size, r, &lo, &hi);
        d->cnt[r] = (int)(hi - lo);
        d->dsp[r] = (int)lo;
    }
    d->shard_n = n;
    return RN_OK;
}

int rn_dist_prepare(rn_dist *d, int64_t n, rn_error *err)
{
    int rc = shards(d, n, err);
    if (rc) return rc;
    size_t need = (size_t)d->size * (size_t)d->cnt[0]; /* shard 0 is the largest */
    if (need <= d->scratch_cap) return RN_OK;
    free(d->scratch);
    d->scratch = malloc(need * sizeof(rn_real) + 1);
    if (!d->scratch) {
        d->scratch_cap = 0;
        return rn_seterr(err, RN_ENOMEM, "out of memory (%zu bytes of reduce-scatter buffer)", need * sizeof(rn_real));
    }
    d->scratch_cap = need;
    return RN_OK;
}

/* The identity lines of every rank, via files in DIR: write ours (temp +
 * rename, so a reader never sees half of it), then read the others' until
 * all are there or the timeout passes. */
static int fs_exchange(rn_dist *d, const char *ident, rn_error *err)
{
    /* a name of this run's own: rank 0's clock and pid, sent to all */
    unsigned long long token = (unsigned long long)now_ms() * 1000003ull ^ (unsigned long long)getpid() << 20;
    begin(d, "the rendezvous", 0);
    int rc = mpi_check(d, MPI_Bcast(&token, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast", err);
    if (rc) return rc;
    d->token = token;
    char path[1200];
    snprintf(path, sizeof path, "%s/ramtrace-rdv-%016llx-%d-of-%d", d->dir, token, d->rank, d->size);
    if ((rc = rn_atomic_write(path, ident, strlen(ident), err))) return rn_preferr(err, "--dist fs:%s", d->dir);
    const long long t0 = now_ms();
    int seen = 0, missing = -1;
    char *got = calloc((size_t)d->size, 1);
    if (!got) {
        remove(path);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    while (seen < d->size) {
        missing = -1;
        for (int r = 0; r < d->size; r++) {
            if (got[r]) continue;
            char p[1200];
            snprintf(p, sizeof p, "%s/ramtrace-rdv-%016llx-%d-of-%d", d->dir, token, r, d->size);
            FILE *g = fopen(p, "r");
            if (!g) {
                if (missing < 0) missing = r;
                continue;
            }
            char *buf = d->idents + (size_t)r * IDENT_MAX;
            size_t k = fread(buf, 1, IDENT_MAX - 1, g);
            buf[k] = 0;
            fclose(g);
            got[r] = 1;
            seen++;
        }
        if (seen == d->size) break;
        if (now_ms() - t0 > (long long)(d->timeout * 1000)) {
            free(got);
            remove(path);
            return rn_seterr(err, RN_EIO, "--dist fs:%s: %d of the %d ranks' files were there after %.0f s "
                             "(not rank %d's): is %s a directory every rank shares?",
                             d->dir, seen, d->size, d->timeout, missing, d->dir);
        }
        struct timespec ts = { 0, 20 * 1000000L };
        nanosleep(&ts, NULL);
    }
    free(got);
    /* everyone has read everything before the files go */
    begin(d, "the rendezvous", 0);
    rc = mpi_check(d, MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", err);
    remove(path);
    return rc;
}

/* The first line of a that differs from b's, copied into out. */
static void first_diff(const char *a, const char *b, char *out, size_t n)
{
    while (*a || *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la)) {
            snprintf(out, n, "%.*s", (int)la, a);
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    snprintf(out, n, "?");
}

int rn_dist_rendezvous(rn_dist *d, const char *ident, rn_error *err)
{
    if (strlen(ident) >= IDENT_MAX) return rn_seterr(err, RN_EINTERNAL, "--dist: identity text too long");
    int rc;
    if (d->dir) {
        rc = fs_exchange(d, ident, err);
    } else {
        char *mine = d->idents + (size_t)d->rank * IDENT_MAX;
        snprintf(mine, IDENT_MAX, "%s", ident);
        begin(d, "the rendezvous", 0);
        rc = mpi_check(d, MPI_Allgather(MPI_IN_PLACE, 0, MPI_CHAR, d->idents, IDENT_MAX, MPI_CHAR, MPI_COMM_WORLD),
                       "MPI_Allgather", err);
    }
    /* a rank that could not take part fails the others too (not a hang) */
    rc = rn_dist_agree(d, rc, err);
    if (rc) return rc;
    for (int r = 1; r < d->size; r++) {
        const char *a = d->idents + (size_t)r * IDENT_MAX, *b = d->idents;
        if (!strcmp(a, b)) continue;
        char la[300], lb[300];
        first_diff(a, b, la, sizeof la);
        first_diff(b, a, lb, sizeof lb);
        return rn_seterr(err, RN_EINPUT, "--dist %s: rank %d has '%s', rank 0 has '%s': every rank must be "
                         "given the same model config, training keys, initial weights and data", d->spec, r, la, lb);
    }
    return RN_OK;
}

/* Rank root's (rc, message) to every rank; *rc, err updated on the others. */
static int bcast_outcome(rn_dist *d, int root, int patient, int *rc, rn_error *err)
{
    struct { int rc; char msg[RN_ERRMSG_LEN]; } o;
    memset(&o, 0, sizeof o);
    o.rc = *rc;
    if (*rc) snprintf(o.msg, sizeof o.msg, "%s", err->msg);
    begin(d, "a wait for another rank's outcome", patient);
    int mrc = MPI_Bcast(&o, (int)sizeof o, MPI_BYTE, root, MPI_COMM_WORLD);
    int crc = mpi_check(d, mrc, "MPI_Bcast", err);
    if (crc) return crc;
    if (d->rank != root && o.rc) rn_seterr(err, o.rc, "rank %d: %s", root, o.msg);
    *rc = o.rc;
    return RN_OK;
}

int rn_dist_agree(rn_dist *d, int rc, rn_error *err)
{
    int *all = d->cnt; /* scratch: [size] ints; shard counts are rebuilt after */
    begin(d, "an agreement between ranks", 0);
    int crc = mpi_check(d, MPI_Allgather(&rc, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather", err);
    int first = -1;
    for (int r = 0; r < d->size && !crc; r++)
        if (all[r] && first < 0) first = r;
    d->shard_n = -1;
    if (crc) return crc;
    if (first < 0) return RN_OK;
    int out = all[first];
    crc = bcast_outcome(d, first, 0, &out, err);
    return crc ? crc : out;
}

int rn_dist_from_root(rn_dist *d, int rc, int patient, rn_error *err)
{
    int out = rc;
    int crc = bcast_outcome(d, 0, patient, &out, err);
    return crc ? crc : out;
}

int rn_dist_sum_f64(rn_dist *d, double *v, int n, rn_error *err)
{
    if (n < 1 || n > SUM_MAX) return rn_seterr(err, RN_EINTERNAL, "rn_dist_sum_f64: %d values", n);
    begin(d, "a sum over ranks", 0);
    int rc = mpi_check(d, MPI_Allgather(v, n, MPI_DOUBLE, d->f64, n, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather", err);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int r = 0; r < d->size; r++) s += d->f64[(size_t)r * n + i];
        v[i] = s;
    }
    return RN_OK;
}

int rn_dist_max_int(rn_dist *d, int *v, rn_error *err)
{
    begin(d, "a step's agreement", 0);
    return mpi_check(d, MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce", err);
}

/* MPI's type for rn_real (float; double in the gradient check's build,
 * which does not compile this file). */
#define RN_MPI_REAL (sizeof(rn_real) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT)

int rn_dist_reduce_scatter(rn_dist *d, rn_real *g, int64_t n, rn_error *err)
{
    int rc = rn_dist_prepare(d, n, err);
    if (rc) return rc;
    const int me = d->rank, sh = d->cnt[me];
    /* rank j's shard of every rank's g comes to rank j, which adds the N
     * pieces in rank order: the order never depends on arrival */
    int *rcnt = d->rcnt, *rdsp = d->rdsp;
    for (int r = 0; r < d->size; r++) {
        rcnt[r] = sh;
        rdsp[r] = r * sh;
    }
    begin(d, "the gradient reduce-scatter", 0);
    rc = mpi_check(d, MPI_Alltoallv(g, d->cnt, d->dsp, RN_MPI_REAL, d->scratch, rcnt, rdsp, RN_MPI_REAL,
                                    MPI_COMM_WORLD), "MPI_Alltoallv", err);
    if (rc) return rc;
    const rn_real *in = d->scratch;
    rn_real *dst = g + d->dsp[me];
    const int N = d->size;
    #pragma omp parallel for if (sh > 65536) schedule(static)
    for (int i = 0; i < sh; i++) {
        double s = 0;
        for (int r = 0; r < N; r++) s += (double)in[(size_t)r * sh + i];
        dst[i] = (rn_real)s;
    }
    return RN_OK;
}

int rn_dist_allgather(rn_dist *d, rn_real *p, int64_t n, rn_error *err)
{
    int rc = shards(d, n, err);
    if (rc) return rc;
    begin(d, "the parameter all-gather", 0);
    return mpi_check(d, MPI_Allgatherv(MPI_IN_PLACE, 0, RN_MPI_REAL, p, d->cnt, d->dsp, RN_MPI_REAL, MPI_COMM_WORLD),
                     "MPI_Allgatherv", err);
}

int rn_dist_gather(rn_dist *d, rn_real *full, const rn_real *shard, int64_t n, rn_error *err)
{
    int rc = shards(d, n, err);
    if (rc) return rc;
    const int me = d->rank;
    begin(d, "the moments' gather", 0);
    if (me == 0) {
        if (shard != full) memmove(full, shard, sizeof(rn_real) * (size_t)d->cnt[0]);
        return mpi_check(d, MPI_Gatherv(MPI_IN_PLACE, d->cnt[0], RN_MPI_REAL, full, d->cnt, d->dsp, RN_MPI_REAL, 0,
                                        MPI_COMM_WORLD), "MPI_Gatherv", err);
    }
    return mpi_check(d, MPI_Gatherv(shard, d->cnt[me], RN_MPI_REAL, NULL, NULL, NULL, RN_MPI_REAL, 0, MPI_COMM_WORLD),
                     "MPI_Gatherv", err);
}

int rn_dist_scatter(rn_dist *d, const rn_real *full, rn_real *shard, int64_t n, rn_error *err)
{
    int rc = shards(d, n, err);
    if (rc) return rc;
    const int me = d->rank;
    begin(d, "the moments' scatter", 0);
    if (me == 0) {
        rc = mpi_check(d, MPI_Scatterv(full, d->cnt, d->dsp, RN_MPI_REAL, MPI_IN_PLACE, d->cnt[0], RN_MPI_REAL, 0,
                                       MPI_COMM_WORLD), "MPI_Scatterv", err);
        if (!rc && shard != full) memmove(shard, full, sizeof(rn_real) * (size_t)d->cnt[0]);
        return rc;
    }
    return mpi_check(d, MPI_Scatterv(NULL, NULL, NULL, RN_MPI_REAL, shard, d->cnt[me], RN_MPI_REAL, 0, MPI_COMM_WORLD),
                     "MPI_Scatterv", err);
}

/* fs:DIR: rank 0's blob to the others through the file `path`. */
static int fs_blob(rn_dist *d, void *blob, size_t bytes, const char *path, rn_error *err)
{
    int rc = RN_OK;
    if (d->rank == 0 && (rc = rn_atomic_write(path, blob, bytes, err))) rn_preferr(err, "--dist fs:%s", d->dir);
    if ((rc = rn_dist_from_root(d, rc, 0, err))) return rc;
    if (d->rank != 0) {
        const long long t0 = now_ms();
        for (;;) {
            FILE *f = fopen(path, "rb");
            size_t got = f ? fread(blob, 1, bytes, f) : 0;
            if (f) fclose(f);
            if (got == bytes) break;
            if (now_ms() - t0 > (long long)(d->timeout * 1000)) {
                rc = rn_seterr(err, RN_EIO, "--dist fs:%s: rank 0's %s was not there after %.0f s: is %s a "
                               "directory every rank shares?", d->dir, path, d->timeout, d->dir);
                break;
            }
            struct timespec ts = { 0, 20 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    rc = rn_dist_agree(d, rc, err);
    if (d->rank == 0) remove(path);
    return rc;
}

int rn_dist_share_blob(rn_dist *d, void *blob, size_t bytes, const char *name, rn_error *err)
{
    if (!d->dir) return rn_dist_bcast(d, blob, bytes, err);
    char path[1200];
    snprintf(path, sizeof path, "%s/ramtrace-%s-%016llx", d->dir, name, d->token);
    return fs_blob(d, blob, bytes, path, err);
}

int rn_dist_bcast(rn_dist *d, void *buf, size_t bytes, rn_error *err)
{
    char *p = buf;
    while (bytes > 0) {
        int k = bytes > (size_t)INT_MAX ? INT_MAX : (int)bytes;
        begin(d, "a broadcast from rank 0", 0);
        int rc = mpi_check(d, MPI_Bcast(p, k, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast", err);
        if (rc) return rc;
        p += k;
        bytes -= (size_t)k;
    }
    return RN_OK;
}
