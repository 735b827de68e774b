/* an_stats.h — per-head summary of how a head uses its memory, and the
 * CAPE / non-CAPE summaries (`ramtrace stats`).
 *
 * Definitions (over the head's reads and writes together unless stated):
 *   distinct     slots touched at least once; used_share = distinct / M.
 *   entropy      Shannon entropy (bits) of the access distribution over
 *                slots; entropy_norm = entropy / log2(M).
 *   hot_share    share of accesses that go to the hottest 1% of slots,
 *                i.e. the ceil(M/100) most accessed slots.
 *   warm/cold reads: a read is warm when its slot was written at this or an
 *                earlier position (a token's writes precede its reads), cold
 *                when the slot was never written before (it holds only the
 *                1/M prior).
 *   reuse p50/p90: reuse time in tokens (an_reuse.h), non-cold accesses.
 *   sd p50/p90:  LRU stack distance (an_reuse.h), non-cold accesses.
 *   delta:       the most common shift slot(t+1) − slot(t) between the
 *                same operation and rank at consecutive positions, taken
 *                mod M into (−M/2, M/2], and its share of those pairs.  A
 *                CAPE head whose address repeats shows −1 (the diagonal).
 *                A tie in count goes to the smaller |shift|, then to the
 *                negative one (an_stats_shift_beats).
 *   ws_mean:     mean number of distinct slots per window of `window`
 *                consecutive positions (non-overlapping windows from
 *                position 0; a last partial window is included).
 */
#ifndef AN_STATS_H
#define AN_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "an_load.h"
#include "an_stream.h"
#include "rn_config.h"
#include "rn_error.h"
#include "rn_rows.h"

typedef struct {
    int layer, head, cape;
    uint64_t events, writes, reads;
    uint64_t distinct;
    double used_share, entropy, entropy_norm, hot_share;
    uint64_t warm_reads, cold_reads;
    uint32_t reuse_p50, reuse_p90, sd_p50, sd_p90; /* AN_COLD (printed "-") when none */
    int64_t delta;
    double delta_share;
    double ws_mean;
} an_head_stats;

/* The shift mode's rule, one for the loaded (an_stats_head) and the
 * streamed (an_stats_run) paths: shift d, now seen c times, replaces the
 * mode so far (seen best times) when c > best, or c == best and |d| <
 * |mode|, or c == best, |d| == |mode| and d < mode (−s before +s).  A total
 * order, so the running mode ends on the same shift whatever order the
 * pairs come in. */
static inline int an_stats_shift_beats(int64_t d, uint64_t c, int64_t mode, uint64_t best)
{
    int64_t ad = d < 0 ? -d : d, am = mode < 0 ? -mode : mode;
    return c > best || (c == best && (ad < am || (ad == am && d < mode)));
}

/* Summary of a group of heads: sums of counts and means of the per-head
 * shares. */
typedef struct {
    int heads;
    uint64_t events, reads, warm_reads, cold_reads;
    double used_share, entropy, entropy_norm, hot_share, ws_mean, delta_share;
} an_stats_summary;

/* Stats of one head stream (RN_CACHE_SCOPE_HEAD, both ops, with pos, op, id). */
int an_stats_head(const an_stream *s, int64_t M, int cape, int window, an_head_stats *out,
                  rn_error *err);

/* Stats of every head of run r selected by layer / head (-1 = all), one
 * head at a time, each computed while its events stream from the trace
 * (an_stats_run.c): the numbers of an_stats_head, in memory O(M + the
 * longest reuse time in tokens), whatever the number of events (heads of
 * models above an_stats_stream_max_slots slots are loaded one at a
 * time).
 * *out (malloc'd, *n entries, heads with events in (layer, head) order),
 * *events the total.  ctl (may be NULL): its stop flag is polled between
 * heads (RN_EINTR), its progress called after each head with the heads
 * done and selected. */
typedef struct {
    volatile const int *stop;
    void (*progress)(void *user, int done, int total);
    void *user;
} an_stats_ctl;
int an_stats_run(const an_run *r, int layer, int head, int window, const an_stats_ctl *ctl,
                 an_head_stats **out, int *n, uint64_t *events, rn_error *err);

/* an_stats_run over the runs r[0..nr) of one model (an_runset.h) taken
 * together: per (layer, head), each run is a sequence of its own — written
 * flags, reuse times, stack distances, slot shifts and windows never reach
 * from one run into the next — and the statistics pool the runs: counts
 * summed (events, writes, reads, warm and cold reads, accesses per slot,
 * so distinct, entropy and hot1 are of the pooled slot distribution),
 * percentiles over every run's reuse times and stack distances, the shift
 * mode over every run's pairs, ws_mean over every run's windows.  One run:
 * an_stats_run. */
int an_stats_runs(const an_run *r, int nr, int layer, int head, int window, const an_stats_ctl *ctl,
                  an_head_stats **out, int *n, uint64_t *events, rn_error *err);

/* Models with more slots than this have each head loaded (O(its events))
 * rather than streamed (O(M)); 4M by default, the tests lower it. */
extern size_t an_stats_stream_max_slots;

/* Reuse times below this many tokens are counted in an array, longer ones
 * listed (4 MiB entries by default; the tests lower it). */
extern size_t an_stats_dense_reuse;

/* Summarise the heads with cape == want_cape (want_cape -1: all heads). */
void an_stats_summarise(const an_head_stats *h, int n, int want_cape, an_stats_summary *out);

/* Print the per-head rows and the CAPE / non-CAPE / all summaries in fmt
 * (RN_FMT_*, core/base/rn_rows.h).  CSV: the per-head rows only.  JSON:
 * {"slots", "window", "heads": [...], "summary": {"cape": {...},
 * "non-cape": {...}, "all": {...}}}.  Table: the per-head table, the
 * summary table and a footnote line.  RN_EIO when writing fails. */
int an_stats_print(FILE *f, int fmt, const an_head_stats *h, int n, int64_t M, int window, rn_error *err);

#endif
