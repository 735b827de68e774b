/* tracegen.h — a small real trace and a script of edits applied to a
 * fresh copy of it, for the trace fuzz targets (docs/fuzzing.md).
 *
 * The trace: 2 layers x 2 heads, M = 16, K = 3, TRACEGEN_NPOS positions,
 * CAPE on two heads, written once per process by the trace writer.  The
 * edits, read from the fuzz input until it is used up (at most 64):
 * SQL-level (a value of any column set to an out-of-range or mistyped
 * value, rows deleted or duplicated, columns swapped, the run's config
 * text spliced, a block's BLOBs cut or zeroed, the schema changed, the run
 * copied as a second run), then byte-level (the file truncated, bytes
 * overwritten). */
#ifndef TRACEGEN_H
#define TRACEGEN_H

#include "fuzz.h"

#define TRACEGEN_NPOS 20

/* Write the pristine trace and keep its bytes (call once per process). */
void tracegen_init(void);

/* Make path a fresh copy of the pristine trace, edited as in says. */
void tracegen_build(const char *path, fuzz_in *in);

#endif
