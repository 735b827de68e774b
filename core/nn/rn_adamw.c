/* rn_adamw.c — AdamW, clipping and the LR schedule (see rn_adamw.h).  The
 * per-tensor weight decay comes from the parameter table (rn_params.h). */
#include "rn_adamw.h"

#include <math.h>

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
    int nt = rn_params_count_tensors(c);
    double bc1 = 1 - pow(o->beta1, (double)(step + 1)), bc2 = 1 - pow(o->beta2, (double)(step + 1));
    for (int i = 0; i < nt; i++) {
        rn_tensor_desc t;
        rn_params_tensor(c, i, &t);
        double wd = (t.kind == RN_T_MATRIX || t.kind == RN_T_EMBED) ? o->weight_decay : 0;
        int64_t off = t.offset, n = t.numel;
        #pragma omp parallel for if (n > 65536) schedule(static)
        for (int64_t j = off; j < off + n; j++) {
            double g = (double)grad[j] * gscale;
            double a = o->beta1 * m1[j] + (1 - o->beta1) * g;
            double b = o->beta2 * m2[j] + (1 - o->beta2) * g * g;
            m1[j] = (rn_real)a;
            m2[j] = (rn_real)b;
            double upd = (a / bc1) / (sqrt(b / bc2) + o->eps);
            params[j] = (rn_real)((double)params[j] - lr * (upd + wd * (double)params[j]));
        }
    }
}
