/* rn_lens.c — the direct logit lens of a head's output-space vector (see
 * rn_lens.h). */
#include "rn_lens.h"

#include <stddef.h>

#include "rn_layers.h"

void rn_lens_head(const rn_model *m, int layer, int head, const rn_real *v, rn_real *scratch,
                  rn_real *logits)
{
    const rn_config *c = &m->cfg;
    const int D = c->d_model, dv = c->d_v, hdv = c->n_heads * c->d_v;
    const rn_real *wo = m->w.layer[layer].wo + (size_t)head * dv; /* row d at + d·hdv */
    rn_real *x = scratch, *hb = scratch + D;
    for (int d = 0; d < D; d++) {
        const rn_real *row = wo + (size_t)d * hdv;
        double s = 0;
        for (int i = 0; i < dv; i++) s += (double)row[i] * v[i];
        x[d] = (rn_real)s;
    }
    rn_rmsnorm_forward(hb, NULL, x, m->w.norm, 1, D, c->norm_eps);
    rn_matmul_forward(logits, hb, m->w.lm_head, 1, D, c->vocab_size, 0);
}

void rn_top_indices(const rn_real *x, int len, int n, int *idx)
{
    int have = 0;
    for (int i = 0; i < len; i++) {
        /* insertion into the sorted prefix idx[0..have) */
        if (have == n && !(x[i] > x[idx[n - 1]])) continue;
        int j = have < n ? have++ : n - 1;
        while (j > 0 && x[i] > x[idx[j - 1]]) { idx[j] = idx[j - 1]; j--; }
        idx[j] = i;
    }
}
