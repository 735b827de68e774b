/* study_probe.h — what the case-study programs (studies/case_*.c) share:
 * a probe that keeps every head's write and read slots and weights of one
 * sequence in arrays, a run of a sequence under a set of interventions, and
 * the ablate-slots spec of a list of slots.  Header-only (each study is one
 * program, mk/studies.mk); everything goes through the library's runtime,
 * probe and interventions, exactly as `ramtrace run --intervene` does.
 */
#ifndef STUDY_PROBE_H
#define STUDY_PROBE_H

#include <stdio.h>
#include <string.h>

#include "rn_intervene.h"
#include "rn_probe.h"
#include "rn_rng.h"
#include "rn_runtime.h"

#define STUDY_MAXK 64

/* Every head's write and read slots and weights at every position:
 * [pos][layer][head][K]. */
typedef struct {
    int L, H, K;
    uint32_t *wslot, *rslot;
    float *ww, *rw;
} study_accesses;

/* The probe's access callback: user is a study_accesses. */
static void study_record(void *user, int layer, int head, int pos, int op, int k, const uint32_t *slot,
                         const uint32_t *addr, const float *w)
{
    (void)addr;
    study_accesses *a = user;
    size_t at = (((size_t)pos * a->L + layer) * a->H + head) * a->K;
    memcpy((op == RN_OP_WRITE ? a->wslot : a->rslot) + at, slot, sizeof *slot * k);
    memcpy((op == RN_OP_WRITE ? a->ww : a->rw) + at, w, sizeof *w * k);
}

/* Run toks[0..T) from a fresh state under the specs of iv (may be empty);
 * every row's logits into lg (NULL: none). */
static int study_run(rn_runtime *rt, const rn_iv_set *iv, const int *toks, int T, float *lg, rn_error *err)
{
    rn_runtime_reset(rt);
    int rc = rn_runtime_set_interventions(rt, iv, err);
    return rc ? rc : rn_prefill(rt, toks, T, lg, 1, err);
}

/* Add "ablate-slots L.H:s1,...RANGE" for n <= 2·STUDY_MAXK slots to iv
 * (RANGE: "" for the whole sequence, or "@T0-T1"). */
static int study_ablate(rn_iv_set *iv, int l, int h, const uint32_t *slots, int n, const char *range, rn_error *err)
{
    char spec[96 + 12 * 2 * STUDY_MAXK];
    int len = snprintf(spec, sizeof spec, "ablate-slots %d.%d:", l, h);
    for (int a = 0; a < n; a++) len += snprintf(spec + len, sizeof spec - len, "%s%u", a ? "," : "", slots[a]);
    snprintf(spec + len, sizeof spec - len, "%s", range);
    return rn_iv_add(iv, spec, err);
}

/* Move n of pool[0..np) chosen at random to its front (partial
 * Fisher-Yates, n <= np). */
static void study_pick(rn_rng *r, uint32_t *pool, int np, int n)
{
    for (int a = 0; a < n; a++) {
        int b = a + (int)rn_rng_below(r, (uint64_t)(np - a));
        uint32_t t = pool[a]; pool[a] = pool[b]; pool[b] = t;
    }
}

#endif
