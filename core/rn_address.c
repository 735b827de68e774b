/* rn_address.c — address decoding of every head of a batch of rows, with
 * the per-head α scale and CAPE (see rn_decoder.h for the decoder). */
#include <math.h>
#include <omp.h>

#include "rn_layers.h"

void rn_address_forward(uint32_t *addr, uint32_t *slot, rn_real *w, const rn_real *a,
                        const rn_real *alpha, const rn_config *c, uint64_t cape_mask,
                        int n, int64_t pos0, rn_decode_ws **ws)
{
    const int H = c->n_heads, U = c->order, dp = c->d_p, K = c->top_k, dk = U * dp;
    const int64_t M = rn_config_slots(c);
    double scale[RN_MAX_HEADS];
    for (int h = 0; h < H; h++) scale[h] = exp((double)alpha[h]) / (double)c->tau;
    #pragma omp parallel for if (n * H > 16) schedule(static)
    for (int r = 0; r < n; r++) {
        rn_decode_ws *my = ws[omp_get_thread_num()];
        for (int h = 0; h < H; h++) {
            size_t o = ((size_t)r * H + h) * K;
            rn_decode_topk(a + (size_t)r * H * dk + (size_t)h * dk, U, dp, K, scale[h],
                           addr + o, w + o, my);
            if ((cape_mask >> h) & 1u)
                for (int j = 0; j < K; j++) slot[o + j] = rn_cape_slot(addr[o + j], pos0 + r, M);
            else
                for (int j = 0; j < K; j++) slot[o + j] = addr[o + j];
        }
    }
}
