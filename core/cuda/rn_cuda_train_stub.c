/* rn_cuda_train_stub.c — the GPU trainer's interface (rn_cuda_train.h) in
 * a build without CUDA: every entry point reports that the binary has no
 * CUDA, so the CPU build links and `train --device cuda` is refused. */
#include "rn_cuda_train.h"

#include <stddef.h>

static int no_cuda(rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "this ramtrace was built without CUDA (rebuild with make CUDA=1)");
}

int rn_cuda_trainer_create(rn_cuda_trainer **out, const rn_model *m, int max_rows, int max_lab,
                           double eps_g, int kw_max, int kr_max, int precision, rn_error *err)
{
    (void)m; (void)max_rows; (void)max_lab; (void)eps_g; (void)kw_max; (void)kr_max; (void)precision;
    *out = NULL;
    return no_cuda(err);
}

void rn_cuda_trainer_free(rn_cuda_trainer *tr) { (void)tr; }

size_t rn_cuda_trainer_bytes(const rn_cuda_trainer *tr)
{
    (void)tr;
    return 0;
}

int rn_cuda_trainer_set_topk(rn_cuda_trainer *tr, int kw, int kr, rn_error *err)
{
    (void)tr; (void)kw; (void)kr;
    return no_cuda(err);
}

int rn_cuda_trainer_forward(rn_cuda_trainer *tr, const int *tokens, const int *targets, int B, int T,
                            double *loss, rn_error *err)
{
    (void)tr; (void)tokens; (void)targets; (void)B; (void)T;
    *loss = 0;
    return no_cuda(err);
}

int rn_cuda_trainer_n_labelled(const rn_cuda_trainer *tr)
{
    (void)tr;
    return 0;
}

double rn_cuda_trainer_loss_sum(const rn_cuda_trainer *tr)
{
    (void)tr;
    return 0;
}

const uint8_t *rn_cuda_trainer_correct(const rn_cuda_trainer *tr)
{
    (void)tr;
    return NULL;
}

const int *rn_cuda_trainer_label_rows(const rn_cuda_trainer *tr)
{
    (void)tr;
    return NULL;
}

int rn_cuda_trainer_backward(rn_cuda_trainer *tr, double scale, rn_error *err)
{
    (void)tr; (void)scale;
    return no_cuda(err);
}

int rn_cuda_trainer_zero_grads(rn_cuda_trainer *tr, rn_error *err)
{
    (void)tr;
    return no_cuda(err);
}

int rn_cuda_trainer_grads(rn_cuda_trainer *tr, float *out, rn_error *err)
{
    (void)tr; (void)out;
    return no_cuda(err);
}

int rn_cuda_trainer_grad_norm(rn_cuda_trainer *tr, double *norm, rn_error *err)
{
    (void)tr;
    *norm = 0;
    return no_cuda(err);
}

int rn_cuda_trainer_adamw(rn_cuda_trainer *tr, const rn_adamw_opts *o, int64_t step, double lr,
                          double gscale, rn_error *err)
{
    (void)tr; (void)o; (void)step; (void)lr; (void)gscale;
    return no_cuda(err);
}

int rn_cuda_trainer_get_state(rn_cuda_trainer *tr, float *params, float *m1, float *m2, rn_error *err)
{
    (void)tr; (void)params; (void)m1; (void)m2;
    return no_cuda(err);
}

int rn_cuda_trainer_set_state(rn_cuda_trainer *tr, const float *params, const float *m1,
                              const float *m2, rn_error *err)
{
    (void)tr; (void)params; (void)m1; (void)m2;
    return no_cuda(err);
}

int rn_cuda_trainer_adamw_range(rn_cuda_trainer *tr, const float *grad, const rn_adamw_opts *o,
                                int64_t step, double lr, double gscale, int64_t lo, int64_t hi,
                                rn_error *err)
{
    (void)tr; (void)grad; (void)o; (void)step; (void)lr; (void)gscale; (void)lo; (void)hi;
    return no_cuda(err);
}

int rn_cuda_trainer_sumsq(rn_cuda_trainer *tr, const float *g, int64_t n, double *sumsq, rn_error *err)
{
    (void)tr; (void)g; (void)n;
    *sumsq = 0;
    return no_cuda(err);
}

void rn_cuda_trainer_block(rn_cuda_trainer *tr, float **params, float **grad, float **m1, float **m2,
                           int64_t *n)
{
    (void)tr;
    *params = *grad = *m1 = *m2 = NULL;
    *n = 0;
}

int rn_cuda_pdma_train_run(float *o, float *dv, float *dww, float *drw, const float *v,
                           const uint32_t *wslot, const float *ww, const uint32_t *rslot,
                           const float *rw, const float *dout, int B, int T, int H, int Kw, int Kr,
                           int d_v, int64_t M, float gamma, float eps, float eps_g, rn_error *err)
{
    (void)o; (void)dv; (void)dww; (void)drw; (void)v; (void)wslot; (void)ww; (void)rslot; (void)rw;
    (void)dout; (void)B; (void)T; (void)H; (void)Kw; (void)Kr; (void)d_v; (void)M; (void)gamma;
    (void)eps; (void)eps_g;
    return no_cuda(err);
}

int rn_cuda_trainer_weights_bf16(rn_cuda_trainer *tr, uint16_t *out, rn_error *err)
{
    (void)tr; (void)out;
    return no_cuda(err);
}

int rn_cuda_trainer_topk(rn_cuda_trainer *tr, int l, int writes, uint32_t *addr, float *w, rn_error *err)
{
    (void)tr; (void)l; (void)writes; (void)addr; (void)w;
    return no_cuda(err);
}
