/* tr_select.h — a selection of (layer, head, op) events: which events a
 * traced run records (tr_writer.h) and which traced heads a reader wants
 * (plots, analysis).  Parsed from the --layers / --heads / --ops option
 * forms and printed back as stored in runs.selection. */
#ifndef TR_SELECT_H
#define TR_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_error.h"
#include "rn_probe.h"

/* A bit per layer and per head; ops is an RN_OPS_* set. */
typedef struct {
    uint64_t layers[RN_MAX_LAYERS / 64];
    uint64_t heads;
    int ops;
} tr_select;

/* Every layer, head and op. */
void tr_select_all(tr_select *s);

/* Parse the command-line forms: layers/heads "all" or lists of indices and
 * inclusive ranges ("0-3,7"); ops as rn_ops_parse ("r", "w", "rw", "wr",
 * "all").  NULL means all.  Indices are checked against cfg (RN_EINPUT
 * naming the option: "--layers: 9 is outside [0, 4)"). */
int tr_select_parse(tr_select *s, const char *layers, const char *heads, const char *ops,
                    const rn_config *cfg, rn_error *err);

/* Is head (layer, head) selected, whatever the ops? */
static inline int tr_select_has_head(const tr_select *s, int layer, int head)
{
    return ((s->layers[layer >> 6] >> (layer & 63)) & 1u) && ((s->heads >> head) & 1u);
}

/* Is the event (layer, head, op) selected? */
static inline int tr_select_has(const tr_select *s, int layer, int head, int op)
{
    return tr_select_has_head(s, layer, head) && rn_ops_has(s->ops, op);
}

/* The text form of a selection ("layers=0-3,7 heads=all ops=rw"), as stored
 * in runs.selection. */
void tr_select_format(const tr_select *s, const rn_config *cfg, char *buf, size_t cap);

#endif
