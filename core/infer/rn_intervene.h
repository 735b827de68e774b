/* rn_intervene.h — causal interventions on the forward pass: ablating,
 * scaling and patching slots, heads and layers (issue 15).
 *
 * A spec is one line of text, "KIND TARGET[ARG][@T0-T1]", e.g.
 * "ablate-slots 1.2:3,17@5-9" or "patch-head 0.1 from clean.txt".  Each
 * kind is one entry of the table in rn_intervene.c (its name, the parser
 * of its argument, the hooks it applies in the forward); a patch-head's
 * source is an input file or, with a source resolver
 * (rn_iv_set.source_fn), the tokens of a traced run.  docs/interventions.md
 * gives each kind's exact meaning.
 *
 * Positions are 0-based and inclusive; "@T" is the single position T and
 * "@T0-" is T0 to the end.  Two specs conflict (RN_EINPUT) when they act
 * on the same head at overlapping positions and either both replace its
 * output (ablate-head, ablate-layer, patch-head) or both name one slot
 * (ablate-slots, scale-slots): the conflict class of the kind's entry.
 * With no spec active the forward is
 * bit-identical to the plain one, by construction: a head with slot specs
 * runs its scan through the plain scan's functions, slot by slot, and a
 * scale factor F multiplies the read weight (F = 1 changes nothing).
 *
 * Use: rn_iv_init, rn_iv_add (or rn_iv_add_arg) per spec, rn_iv_prepare
 * (rn_patch_source.h: runs patch sources), rn_runtime_set_interventions, ..., rn_iv_free.
 */
#ifndef RN_INTERVENE_H
#define RN_INTERVENE_H

#include <stdint.h>

#include "rn_error.h"
#include "rn_model.h"

/* The kinds (indices of rn_intervene.c's table). */
enum {
    RN_IV_ABLATE_SLOTS = 0,
    RN_IV_ABLATE_HEAD,
    RN_IV_ABLATE_LAYER,
    RN_IV_SCALE_SLOTS,
    RN_IV_PATCH_HEAD,
    RN_IV_RECORD_HEAD  /* internal: copy the head's o into buf (patch sources, sweeps) */
};

typedef struct {
    int kind, layer, head;     /* head -1: every head (ablate-layer) */
    int64_t t0, t1;            /* positions covered, inclusive */
    int ranged;                /* a range was given */
    uint32_t *slots;           /* sorted, distinct (slot kinds) */
    int n_slots;
    float scale;               /* scale-slots */
    char *source;              /* patch-head: the input file */
    rn_real *buf;              /* patch/record: o of the head per position [buf_n, d_v] */
    int64_t buf_n;
    int owns_buf;
    char *spec;                /* the spec as given (one line) */
} rn_iv;

/* Resolves a patch source that is not an input file (a run in a trace
 * database: trace/tr_record.h): sets *handled and, when it handles the
 * source, the run's tokens (malloc'd) — RN_EINPUT when the run was made by
 * another model than m. */
typedef int (*rn_iv_source_fn)(void *user, const char *source, const rn_model *m, int **toks,
                               int *n, int *handled, rn_error *err);

typedef struct {
    rn_iv *iv;
    int n, cap;
    rn_iv_source_fn source_fn; /* NULL: sources are input files */
    void *source_user;
    int L, H, d_v;
    int64_t M;
    int prepared;              /* every patch has its buffer */
    int source_chunk;          /* rows per forward of the patch source runs
                                * (rn_iv_init: 256); set it to the patched
                                * runtime's chunk (see rn_iv_prepare) */
    int source_precision;      /* rn_precision of the source runs (0: fp32); set
                                * it to the patched runtime's, as the chunk */
} rn_iv_set;

/* The syntax of the i-th kind a spec may name, e.g. "ablate-head
 * L.H[@T0-T1]" (for --help); NULL past the last. */
const char *rn_iv_kind_usage(int i);

/* An empty set for models of config c. */
void rn_iv_init(rn_iv_set *s, const rn_config *c);
void rn_iv_free(rn_iv_set *s);

/* Parse one spec and add it; RN_EINPUT "--intervene 'SPEC': problem" for a
 * bad or conflicting spec. */
int rn_iv_add(rn_iv_set *s, const char *spec, rn_error *err);

/* One --intervene argument: "@FILE" adds every non-empty line of FILE that
 * does not start with '#'; anything else is one spec. */
int rn_iv_add_arg(rn_iv_set *s, const char *arg, rn_error *err);

/* Add an internal record (or patch, with patch != 0) of head (l, h) over
 * positions [0, n) into / from the caller's buffer buf[n, d_v], which
 * must outlive the set.  For patching sweeps; the new entry (the set's
 * last) covers every position, and its t0 and t1 may be narrowed before
 * the set is attached. */
int rn_iv_add_buffer(rn_iv_set *s, int patch, int l, int h, rn_real *buf, int64_t n,
                     rn_error *err);

/* ---- Called by the runtime's forward (rn_runtime.c), CPU path ---- */

/* Does head (l, h) have slot specs (so its scan goes through rn_iv_scan)? */
int rn_iv_has_slots(const rn_iv_set *s, int l, int h);

/* The memory scan of head (l, h) over n rows at positions pos0.. with the
 * slot specs applied; arguments as rn_pdma_scan_forward. */
void rn_iv_scan(const rn_iv_set *s, int l, int h, rn_real *o, rn_real *S, rn_real *z,
                const rn_real *v, const uint32_t *wslot, const rn_real *ww,
                const uint32_t *rslot, const rn_real *rw, int n, int H, int K, int d_v,
                rn_real gamma, rn_real eps, int64_t pos0);

/* rn_iv_scan's two halves at one position p of head (l, h), for a caller
 * that looks at the state between them (the slot-state hook, rn_runtime.h):
 * the specs' resets and the writes of the row's K slots (v: the row's
 * value [d_v]), then the read into o[d_v] (the row's read slots and
 * weights).  rn_iv_scan is these two, row after row. */
void rn_iv_write(const rn_iv_set *s, int l, int h, rn_real *S, rn_real *z, const rn_real *v,
                 const uint32_t *wslot, const rn_real *ww, int K, int d_v, rn_real gamma, int64_t p);
void rn_iv_read(const rn_iv_set *s, int l, int h, rn_real *o, const rn_real *S, const rn_real *z,
                const uint32_t *rslot, const rn_real *rw, int K, int d_v, rn_real eps, int64_t p);

/* Apply layer l's head-output specs (ablate, patch, record) to o[n, H·d_v]
 * of rows at positions pos0.. */
void rn_iv_apply_o(const rn_iv_set *s, int l, rn_real *o, int n, int64_t pos0);

/* RN_EINPUT when a ranged patch reaches a position of [pos0, pos0 + n)
 * that its source does not have. */
int rn_iv_check_span(const rn_iv_set *s, int64_t pos0, int n, rn_error *err);

#endif
