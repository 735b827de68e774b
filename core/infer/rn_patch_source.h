/* rn_patch_source.h — the clean runs that patch specs read from.  A
 * patch-head spec names a source file; before the patched run, each source
 * is run once through a runtime of its own and the patched heads' outputs
 * are kept in the set.  Apart from rn_intervene.h so that the specs (which
 * the runtime applies) do not depend on the runtime that runs the sources. */
#ifndef RN_PATCH_SOURCE_H
#define RN_PATCH_SOURCE_H

#include "rn_error.h"
#include "rn_intervene.h"
#include "rn_model.h"

/* Run every patch source (a clean CPU forward of model m over the file, in
 * chunks of s->source_chunk rows from position 0) and keep the patched
 * heads' outputs.  A source run in the chunking of the patched run computes
 * every position with the same products in the same order, so patching
 * heads from the run's own input reproduces its o bit for bit; in another
 * chunking (or for positions the patched run forwards one token at a time)
 * the patched o equals the run's only to rounding: BLAS kernels round a
 * product differently per matrix shape. */
int rn_iv_prepare(rn_iv_set *s, const rn_model *m, rn_error *err);

#endif
