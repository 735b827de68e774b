/* srv_tile.h — one tile of the viewer's trace plot as JSON: the events of
 * one head over a span of positions, every event when zoomed in, binned
 * when zoomed out.
 *
 * Tiles form a pyramid: at zoom level z a tile holds SRV_TILE_COLS
 * columns of 2^z positions each, so tile t of level z covers positions
 * [t·SRV_TILE_COLS·2^z, (t+1)·SRV_TILE_COLS·2^z).
 *   z = 0:  {"z":0,"p0":P0,"p1":P1,"n":N,"ev":[pos,slot,op,rank,addr,weight, ...]}
 *           every event in canonical order (op 0 write, 1 read).
 *   z > 0:  {"z":Z,"p0":P0,"p1":P1,"bin":2^z,"sbin":S,"rows":R,"n":N,"grid":"BASE64"}
 *           the events binned into SRV_TILE_COLS columns of 2^z positions
 *           and R rows of S slots (S the power of two that puts the M
 *           slots in at most SRV_TILE_ROWS rows).  grid is base64 of
 *           SRV_TILE_COLS · R bytes, column-major (byte col·R + row), one
 *           per cell: 0 empty, else the op and weight of the cell's
 *           strongest event (the rule of the PNG trace plot, viz_trace.h):
 *           1 + round(126·w) for a write, 128 + 1 + round(126·w) for a
 *           read.  One byte a cell keeps a zoomed-out tile small and
 *           constant in size however many events it sums.
 * Events are streamed from the trace (tr_iter), so a tile costs memory
 * of its grid, not of the head's events.
 */
#ifndef SRV_TILE_H
#define SRV_TILE_H

#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "tr_reader.h"

#define SRV_TILE_COLS 1024
#define SRV_TILE_ROWS 512
#define SRV_TILE_MAX_Z 40

/* Write tile (z, t) of head (layer, head) of run to out.  RN_EINPUT when
 * the tile starts past the run's positions. */
int srv_tile_write(tr_db *db, const tr_run_info *run, int layer, int head, int z, int64_t t, FILE *out,
                   rn_error *err);

#endif
