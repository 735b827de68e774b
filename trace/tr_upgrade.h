/* tr_upgrade.h — `ramtrace upgrade`: convert a trace file of schema
 * version 1 (one event_groups row per 8 ranks) into the current schema
 * (packed event blocks, tr_block.h), in place: the new file is written
 * beside the old one and renamed over it, so an interrupted upgrade leaves
 * the old file as it was. */
#ifndef TR_UPGRADE_H
#define TR_UPGRADE_H

#include <stdint.h>

#include "rn_error.h"

typedef struct {
    int from_version;         /* 1, or TR_SCHEMA_VERSION when there was nothing to do */
    int64_t runs, events;     /* converted */
    int64_t dropped_events;   /* events of incomplete positions (killed v1 runs) */
} tr_upgrade_result;

/* Upgrade the trace at path.  A file already of the current version is
 * left alone (from_version = TR_SCHEMA_VERSION).  RN_EINPUT: not a trace,
 * an unknown version, a corrupt v1 row, or a ramtrace writer still has the
 * file open. */
int tr_upgrade(const char *path, tr_upgrade_result *res, rn_error *err);

#endif
