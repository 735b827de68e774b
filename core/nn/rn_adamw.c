/* rn_adamw.c — AdamW, clipping and the LR schedule (see rn_adamw.h).  The
 * per-tensor weight decay comes from the parameter table (rn_params.h). */
#include "rn_adamw.h"

#include <math.h>
#include <stdint.h>

#include "rn_params.h"

void rn_adamw_defaults(rn_adamw_opts *o)
{
    o->lr = 1e-3; o->min_lr = 1e-4; o->warmup = 100; o->steps = 1000;
    o->beta1 = 0.9; o->beta2 = 0.95; o->eps = 1e-8;
    o->weight_decay = 0.1; o->clip = 1.0;
}

double rn_lr_at(const rn_adamw_opts *o, int64_t step)
{
    if (step < o->warmup) return o->lr * (double)(step + 1) / (double)o->warmup;
    int64_t span = o->steps - o->warmup;
    double p = span > 0 ? (double)(step - o->warmup) / (double)span : 1.0;
    if (p > 1) p = 1;
    return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1 + cos(M_PI * p));
}

double rn_grad_norm(const rn_real *g, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return sqrt(s);
}

void rn_adamw_update(const rn_config *c, rn_real *params, const rn_real *grad, rn_real *m1,
                     rn_real *m2, const rn_adamw_opts *o, int64_t step, double lr, double gscale)
{
    rn_adamw_update_range(c, params, grad, m1, m2, o, step, lr, gscale, 0, INT64_MAX);
}

void rn_adamw_update_range(const rn_config *c, rn_real *params, const rn_real *grad, rn_real *m1,
                           rn_real *m2, const rn_adamw_opts *o, int64_t step, double lr, double gscale,
                           int64_t lo, int64_t hi)
{
    int nt = rn_params_count_tensors(c);
    double bc1 = 1 - pow(o->beta1, (double)(step + 1)), bc2 = 1 - pow(o->beta2, (double)(step + 1));
    for (int i = 0; i < nt; i++) {
        rn_tensor_desc t;
        rn_params_tensor(c, i, &t);
        double wd = (t.kind == RN_T_MATRIX || t.kind == RN_T_EMBED) ? o->weight_decay : 0;
        /* the part of the tensor inside [lo, hi) */
        int64_t a0 = t.offset > lo ? t.offset : lo, a1 = t.offset + t.numel < hi ? t.offset + t.numel : hi;
        if (a0 >= a1) continue;
        #pragma omp parallel for if (a1 - a0 > 65536) schedule(static)
        for (int64_t j = a0; j < a1; j++) {
            double g = (double)grad[j] * gscale;
            double a = o->beta1 * m1[j - lo] + (1 - o->beta1) * g;
            double b = o->beta2 * m2[j - lo] + (1 - o->beta2) * g * g;
            m1[j - lo] = (rn_real)a;
            m2[j - lo] = (rn_real)b;
            double upd = (a / bc1) / (sqrt(b / bc2) + o->eps);
            params[j] = (rn_real)((double)params[j] - lr * (upd + wd * (double)params[j]));
        }
    }
}
