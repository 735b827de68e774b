/* an_spill.h — a scope's access streams (an_stream.h) built by streaming a
 * run from the trace, their dense keys kept in a temporary file instead of
 * memory, so cache simulations and miss-ratio curves of any trace size run
 * in memory O(distinct keys).
 *
 * Building reads the run once through an_replay (replay order), numbers
 * each stream's (layer, head, slot) ids densely in order of first access
 * (the same keys an_streams_build gives) and appends each access's key (4
 * bytes) to an unlinked temporary file in $TMPDIR (default /tmp): 400 MB
 * of disk for 100M accesses, normally served from the page cache.
 *
 * Next use (Belady's OPT needs it) is the one look-ahead: an_spill_next_use
 * computes it in one backward pass per stream over the key file, in chunks,
 * writing the next-use index of every access to a second temporary file
 * (4 bytes per access), so it too costs disk, not memory.
 *
 * Warm-up: a stream's positions never decrease (replay order), so the
 * accesses before position T are a prefix of it, n_warm long.
 *
 * Resident.  Streams already in memory (an_streams_build) enter the same
 * pipeline as a resident spill (an_spill_resident): their key arrays stand
 * in for the key file and the next uses go to memory, so the simulation
 * grid, the exact LRU curve and the next uses of `plot mrc` and `export`
 * are computed by the code that computes `simulate`'s.
 */
#ifndef AN_SPILL_H
#define AN_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "an_load.h"
#include "an_stream.h"
#include "rn_error.h"

typedef struct {
    int layer, head;       /* the group: -1 where the scope spans it */
    uint64_t off;          /* first access's index in the files */
    uint64_t n;            /* accesses (< 2^32 - 1) */
    uint64_t n_warm;       /* accesses at positions < warmup (a prefix) */
    uint32_t n_keys;       /* distinct keys */
    uint64_t universe;     /* keys the scope could touch: M, H·M or L·H·M */
} an_spill_stream;

typedef struct {
    int scope;
    int n;                 /* streams, in (layer, head) order (built: the non-empty ones) */
    an_spill_stream *s;
    int fd_key, fd_next;   /* temporary files (-1: none) */
    const an_streams *mem; /* resident: the streams whose keys stand in for the key file */
    uint32_t *next;        /* resident: every access's next use, stream si's at s[si].off */
} an_spill;

/* Stream the events of run r selected by layer / head (-1 = all) and ops
 * into the streams of scope; warmup as for an_simulate.  stop (may be
 * NULL) is polled every an_spill_chunk accesses; non-zero stops with
 * RN_EINTR.  A
 * block outside the run's layers and heads is a corrupt trace. */
int an_spill_build(const an_run *r, int layer, int head, int scope, int ops, int32_t warmup,
                   volatile const int *stop, an_spill *out, rn_error *err);

/* an_spill_build in the order the run was computed: the prefill chunks of
 * the run (tr_load_chunks; n_chunks 0: every position alone, the step's
 * order) replay as units (an_replay.h), the tiered state's order of access.
 * The warm-up then counts whole units: those starting before warmup. */
int an_spill_build_order(const an_run *r, int layer, int head, int scope, int ops, int32_t warmup,
                         const tr_chunk *chunks, int n_chunks, volatile const int *stop, an_spill *out,
                         rn_error *err);

/* an_spill_build_order over the runs r[0..nr) of one model (an_runset.h)
 * as one access stream per group, run after run (in the order given: file
 * order, then run id).  A run's memory is its own: its (layer, head, slot)
 * objects are other keys than the same slots of any other run, so a
 * stream's universe is nr times the scope's, and a cache carries the
 * earlier runs' keys into the next run only as dead weight (for LRU the
 * counts are the sums of the runs' counts, each from a cold cache).
 * chunks[i], n_chunks[i]: run i's prefill chunks (chunks NULL: step
 * order).  warmup must be 0 when nr > 1 (RN_EINPUT). */
int an_spill_build_runs(const an_run *r, int nr, int layer, int head, int scope, int ops, int32_t warmup,
                        const tr_chunk *const *chunks, const int *n_chunks, volatile const int *stop,
                        an_spill *out, rn_error *err);

/* The streams of ss (kept by reference until an_spill_free) as a resident
 * spill: stream for stream (empty ones included), the accesses at
 * positions < warmup their warm prefix (an_stream_warm). */
int an_spill_resident(const an_streams *ss, int32_t warmup, an_spill *out, rn_error *err);

/* Compute every access's next use (an_next_use) into the second file
 * (resident: into next). */
int an_spill_next_use(an_spill *sp, rn_error *err);

/* Read accesses [i0, i0 + n) of stream si: keys into key, and (when nxt is
 * not NULL, after an_spill_next_use) next uses, as stream indices, into
 * nxt. */
int an_spill_read(const an_spill *sp, int si, uint64_t i0, size_t n, uint32_t *key, uint32_t *nxt,
                  rn_error *err);

/* Models of at most this many keys (L·H·M) are numbered through a table
 * (4 + 4 bytes a key), larger ones through a hash map; the same numbering
 * either way (the tests lower it to 0 to check the hash path). */
extern uint64_t an_spill_direct_max;

/* Accesses per read or write of the key and next-use files, and so the
 * span of one step of an_spill_next_use's backward pass: 1M (4 MiB
 * buffers) by default; the tests lower it to a few accesses so that a
 * small trace crosses many chunk boundaries. */
extern size_t an_spill_chunk;

uint64_t an_spill_total(const an_spill *sp);
/* Accesses a buffer needs to read sp in chunks of at most cap: cap, or the
 * longest stream when shorter (at least 1). */
size_t an_spill_chunk_for(const an_spill *sp, size_t cap);
uint32_t an_spill_max_keys(const an_spill *sp);
void an_spill_free(an_spill *sp);

#endif
