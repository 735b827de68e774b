/* rn_intervene.h — causal interventions on the forward pass: ablating,
 * scaling and patching slots, heads and layers (issue 15).
 *
 * A spec is one line of text; its exact meaning:
 *
 *   ablate-slots L.H:S1,S2,...[@T0-T1]  those physical slots of head (L, H)
 *        hold their initial state (S = 0, z = 1/M) during positions T0..T1
 *        (default: throughout): they are reset at T0 and writes to them are
 *        dropped.  Addressing is unchanged, so they are still chosen by
 *        top-K and contribute zero to the reads.  After T1 they are written
 *        again, starting from the initial state.
 *   ablate-head L.H[@T0-T1]    the head's read output o is zero.
 *   ablate-layer L[@T0-T1]     every head of layer L, as ablate-head.
 *   scale-slots L.H:S1,...=F[@T0-T1]  those slots' contributions
 *        r·S[s]/(z[s] + ε) to the head's reads are multiplied by F (the
 *        state itself is untouched).
 *   patch-head L.H from SOURCE[@T0-T1]  the head's read output o at those
 *        positions is replaced by its value in a clean run of the same
 *        model on SOURCE: an input file (tokenized like a prompt) or, with
 *        a source resolver (rn_iv_set.source_fn), the tokens of a traced
 *        run.  Without a range, the positions the source has are patched
 *        (later ones run unpatched); with one (@T0- too), a run reaching a
 *        position the source lacks is refused (rn_iv_check_span).
 *
 * Positions are 0-based and inclusive; "@T" is the single position T and
 * "@T0-" is T0 to the end.  Two specs conflict (RN_EINPUT) when they act
 * on the same head at overlapping positions and either both replace its
 * output (ablate-head, ablate-layer, patch-head) or both name one slot
 * (ablate-slots, scale-slots).  With no spec active the forward is
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
} rn_iv_set;

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

/* Apply layer l's head-output specs (ablate, patch, record) to o[n, H·d_v]
 * of rows at positions pos0.. */
void rn_iv_apply_o(const rn_iv_set *s, int l, rn_real *o, int n, int64_t pos0);

/* RN_EINPUT when a ranged patch reaches a position of [pos0, pos0 + n)
 * that its source does not have. */
int rn_iv_check_span(const rn_iv_set *s, int64_t pos0, int n, rn_error *err);

#endif
