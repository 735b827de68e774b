/* rn_lens.h — the logit lens of one head's value-space vector: what a vector
 * v[d_v] in head (l, h)'s output space would promote if it reached the
 * unembedding directly.
 *
 *   x[D]      = W_o[:, h·d_v : (h+1)·d_v] · v     (that head's slice of o_proj)
 *   logits[V] = RMSNorm_final(x) · W_headᵀ
 *
 * The residual stream and the later layers are skipped on purpose (the
 * "direct" logit lens).  Nothing allocates: the caller passes scratch.
 */
#ifndef RN_LENS_H
#define RN_LENS_H

#include "rn_model.h"

/* logits[V] of v[d_v] through head (layer, head); scratch holds 2·D reals. */
void rn_lens_head(const rn_model *m, int layer, int head, const rn_real *v, rn_real *scratch,
                  rn_real *logits);

/* The n indices of the largest x[0..len) into idx[0..n), in descending
 * value, ties towards the smaller index (n <= len).  O(len·n). */
void rn_top_indices(const rn_real *x, int len, int n, int *idx);

#endif
