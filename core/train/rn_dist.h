/* rn_dist.h — data-parallel training across processes (`ramtrace train
 * --dist mpi|fs:DIR`): the ranks, their rendezvous, and the collectives
 * the training loop needs, over MPI (Debian's OpenMPI).
 *
 * Every collective is deterministic by construction: sums over ranks are
 * formed by one rank in rank order 0, 1, …, N−1 (never by the order
 * messages arrive), so a run gives the same numbers on every rank and on
 * every repeat.  The parameter block is split into N contiguous shards
 * (rank r holds [r·n/N, (r+1)·n/N)): ZeRO-1 — each rank reduces and
 * updates its shard and the shards are gathered back.
 *
 * A collective that waits longer than the timeout (a rank died, hangs or
 * was stopped) calls the caller's timeout handler from a watchdog thread;
 * the library itself never exits (the CLI's handler prints one line and
 * ends the process).  Waits for rank 0's own work (an evaluation, a file
 * written) are exempt: rn_dist_from_root(patient).
 */
#ifndef RN_DIST_H
#define RN_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "rn_real.h"

typedef struct rn_dist rn_dist;

/* The longest identity text of rn_dist_rendezvous. */
#define RN_DIST_IDENT_MAX 16384

/* Called from the watchdog thread with a one-line message (no newline). */
typedef void (*rn_dist_timeout_fn)(const char *msg);

/* Join the run: spec "mpi" (ranks from the MPI launcher) or "fs:DIR"
 * (ranks from the MPI launcher, meeting in the shared directory DIR, see
 * rn_dist_rendezvous).  timeout_s > 0 bounds every wait on other ranks;
 * on_timeout (may be NULL: no watchdog) is called when one runs out.
 * RN_EINPUT for a bad spec; RN_EIO when MPI cannot start. */
int rn_dist_open(rn_dist **out, const char *spec, double timeout_s, rn_dist_timeout_fn on_timeout,
                 rn_error *err);
/* Leave the run (MPI_Finalize).  NULL is a no-op. */
void rn_dist_close(rn_dist *d);

int rn_dist_rank(const rn_dist *d);
int rn_dist_size(const rn_dist *d);
/* This rank's index among the ranks of its node (one GPU each). */
int rn_dist_local_rank(const rn_dist *d);
/* "mpi" or "fs:DIR", as given. */
const char *rn_dist_spec(const rn_dist *d);

/* Rank r's part [*lo, *hi) of n items split into contiguous shares (the
 * first n mod N ranks' shares are one larger when N does not divide n). */
void rn_dist_share(int64_t n, int size, int r, int64_t *lo, int64_t *hi);

/* The ranks meet and compare their identity (`key = value` lines: the
 * config, the training keys, checksums of the initial weights and data;
 * up to RN_DIST_IDENT_MAX − 1 bytes): RN_EINPUT on every rank, quoting
 * the first line where a rank differs from rank 0, when they disagree.
 * mpi: exchanged over MPI.  fs:DIR: each rank writes its lines to a file
 * in DIR and reads every other rank's there, so a DIR that is not shared
 * ends in a timeout error naming the ranks it could not see. */
int rn_dist_rendezvous(rn_dist *d, const char *ident, rn_error *err);

/* Combine every rank's outcome: RN_OK when all are RN_OK, else every rank
 * returns the error of the lowest failing rank (its message prefixed with
 * "rank R: " on the other ranks). */
int rn_dist_agree(rn_dist *d, int rc, rn_error *err);

/* Rank 0 did something alone (rc, err its outcome); the others wait for
 * it and take its outcome (message prefixed "rank 0: ").  patient: no
 * timeout for this wait (rank 0 evaluates or writes files meanwhile). */
int rn_dist_from_root(rn_dist *d, int rc, int patient, rn_error *err);

/* Sums over ranks, the same on every rank (in rank order). */
int rn_dist_sum_f64(rn_dist *d, double *v, int n, rn_error *err);
/* The largest value over ranks. */
int rn_dist_max_int(rn_dist *d, int *v, rn_error *err);

/* Size the scratch of rn_dist_reduce_scatter for blocks of n elements
 * (once, before the loop: nothing is allocated per step). */
int rn_dist_prepare(rn_dist *d, int64_t n, rn_error *err);
/* g[0..n) on every rank → g[lo..hi) of this rank's shard holds the sum
 * over ranks (formed in rank order, in double, rounded once); the rest of
 * g is left as it was. */
int rn_dist_reduce_scatter(rn_dist *d, rn_real *g, int64_t n, rn_error *err);
/* Every rank's shard of p[0..n) to every rank. */
int rn_dist_allgather(rn_dist *d, rn_real *p, int64_t n, rn_error *err);
/* Rank 0's full[0..n) receives every rank's shard (shard: this rank's
 * [lo, hi) elements; on rank 0 it may be full itself). */
int rn_dist_gather(rn_dist *d, rn_real *full, const rn_real *shard, int64_t n, rn_error *err);
/* The reverse: each rank's shard from rank 0's full[0..n). */
int rn_dist_scatter(rn_dist *d, const rn_real *full, rn_real *shard, int64_t n, rn_error *err);
/* A small blob (NCCL's unique id) from rank 0 to every rank, through the
 * rendezvous: mpi: a broadcast; fs:DIR: a file rank 0 writes in DIR (temp
 * + rename) that the others read (timeout: the not-shared error) and
 * rank 0 removes once all have.  After rn_dist_rendezvous. */
int rn_dist_share_blob(rn_dist *d, void *blob, size_t bytes, const char *name, rn_error *err);
/* bytes from rank 0 to every rank. */
int rn_dist_bcast(rn_dist *d, void *buf, size_t bytes, rn_error *err);

#endif
