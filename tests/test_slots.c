/* test_slots.c — `ramtrace slots` (analysis/an_slots.c): each slot's writers,
 * state and logit lens against independent computations — the lens against
 * a dense double-precision product built from the weights, the state
 * against the runtime's (in the same chunking, so the same floats), the
 * write shares against the normaliser — and the
 * command's options and errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_slots.h"
#include "rn_model.h"
#include "rn_runtime.h"
#include "th.h"

static void config(rn_config *c)
{
    rn_config_default(c);
    c->vocab_size = 300;
    c->d_model = 32;
    c->n_layers = 2;
    c->n_heads = 3;
    c->d_p = 4;
    c->order = 3;
    c->d_v = 8;
    c->top_k = 5;
    c->d_ff = 48;
    c->gamma = 0.7f;
    c->eps = 1e-4f;
    c->tie_embeddings = 0;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = 5;
}

/* Larger-than-init weights so that addresses and lens logits differ. */
static void make_model(rn_model *m, const rn_config *c, uint64_t seed)
{
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, c, seed, &err), RN_OK);
    for (int64_t j = 0; j < m->n_block; j++) m->params[j] *= 30.0f;
}

/* The lens in double from the weights: W_o slice · v, RMSNorm with the
 * final gain, W_head. */
static void dense_lens(const rn_model *m, int l, int h, const double *v, double *logits)
{
    const rn_config *c = &m->cfg;
    const int D = c->d_model, dv = c->d_v, hdv = c->n_heads * dv;
    double x[64], ms = 0;
    for (int d = 0; d < D; d++) {
        x[d] = 0;
        for (int i = 0; i < dv; i++) x[d] += (double)m->w.layer[l].wo[(size_t)d * hdv + h * dv + i] * v[i];
        ms += x[d] * x[d];
    }
    double r = 1 / sqrt(ms / D + c->norm_eps);
    for (int t = 0; t < c->vocab_size; t++) {
        logits[t] = 0;
        for (int d = 0; d < D; d++) logits[t] += x[d] * r * m->w.norm[d] * m->w.lm_head[(size_t)t * D + d];
    }
}

TH_TEST(test_slots_lens_dense, "slots: state, shares and lens against a dense double reference")
{
    rn_config c;
    config(&c);
    rn_model m;
    make_model(&m, &c, 11);
    int toks[40];
    for (int t = 0; t < 40; t++) toks[t] = (t * 37 + 5) % c.vocab_size;
    const int at = 29, ntop = 4;
    rn_runtime *rt;
    rn_error err;
    /* The runtime's state in the chunking an_slots runs (one forward of
     * at + 1 <= 256 rows), so the two float states are the same by
     * construction.  In another chunking they agree only to rounding, and
     * loosely: BLAS kernels round products of other shapes differently
     * and this model's large weights amplify it (chunks of 8 against 256:
     * slot norms up to 1.2e-4 apart, relative, under Haswell's kernels;
     * 0 under Sandybridge's). */
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 256, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, toks, at + 1, NULL, 0, &err), RN_OK);
    for (int l = 0; l < c.n_layers; l++)
        for (int h = 0; h < c.n_heads; h++) {
            an_slots s;
            CU_ASSERT_EQUAL_FATAL(an_slots_compute(&m, toks, 40, l, h, at, ntop, &s, &err), RN_OK);
            const float *S, *z;
            CU_ASSERT_EQUAL_FATAL(rn_runtime_head_state(rt, l, h, &S, &z, &err), RN_OK);
            CU_ASSERT(s.n_slots >= 1);
            CU_ASSERT_EQUAL(s.n_writes, (size_t)(at + 1) * c.top_k);
            double maxerr = 0, maxshare = 0, relnorm = 0, relz = 0;
            for (size_t i = 0; i < s.n_slots; i++) {
                const an_slot *sl = &s.slots[i];
                if (i) CU_ASSERT(sl->slot > s.slots[i - 1].slot);
                double v[8], nn = 0, sum = sl->prior_share;
                for (int d = 0; d < c.d_v; d++) {
                    nn += (double)S[sl->slot * c.d_v + d] * S[sl->slot * c.d_v + d];
                    v[d] = S[sl->slot * c.d_v + d] / ((double)z[sl->slot] + c.eps);
                }
                /* the same float state: only the double sums' rounding */
                relnorm = fmax(relnorm, fabs(sl->norm - sqrt(nn)) / sqrt(nn));
                relz = fmax(relz, fabs(sl->z - z[sl->slot]) / fabs(z[sl->slot]));
                for (size_t k = 0; k < sl->n_writes; k++) {
                    const an_slot_write *w = &s.writes[sl->first + k];
                    sum += w->share;
                    CU_ASSERT_EQUAL(w->token, toks[w->pos]);
                    CU_ASSERT(w->pos <= at);
                    if (k) CU_ASSERT(w->pos > s.writes[sl->first + k - 1].pos);
                }
                maxshare = fmax(maxshare, fabs(sum - 1));
                double lg[300];
                dense_lens(&m, l, h, v, lg);
                for (int k = 0; k < ntop; k++) {
                    int id = s.top_ids[sl->top + k];
                    maxerr = fmax(maxerr, fabs(lg[id] - s.top_logits[sl->top + k]) / (1 + fabs(lg[id])));
                    /* no token outside the list beats the k-th one (up to rounding) */
                    for (int t = 0; t < c.vocab_size; t++) {
                        int listed = 0;
                        for (int q = 0; q < ntop; q++) listed |= s.top_ids[sl->top + q] == t;
                        if (!listed) CU_ASSERT(lg[t] <= lg[id] + 1e-4 * (1 + fabs(lg[id])));
                    }
                }
            }
            CU_ASSERT(relnorm < 1e-12);
            CU_ASSERT(relz < 1e-12);
            CU_ASSERT(maxerr < 1e-5);
            CU_ASSERT(maxshare < 1e-4);
            an_slots_free(&s);
        }
    rn_runtime_free(rt);
    rn_model_free(&m);
}

TH_TEST(test_slots_errors, "slots: bad head, position and top are RN_EINPUT")
{
    rn_config c;
    config(&c);
    rn_model m;
    make_model(&m, &c, 2);
    int toks[5] = { 1, 2, 3, 4, 5 };
    an_slots s;
    rn_error err;
    CU_ASSERT_EQUAL(an_slots_compute(&m, toks, 5, 2, 0, -1, 3, &s, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--layer"));
    CU_ASSERT_EQUAL(an_slots_compute(&m, toks, 5, 0, 3, -1, 3, &s, &err), RN_EINPUT);
    CU_ASSERT_EQUAL(an_slots_compute(&m, toks, 5, 0, 0, 5, 3, &s, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--at"));
    CU_ASSERT_EQUAL(an_slots_compute(&m, toks, 5, 0, 0, 4, 301, &s, &err), RN_EINPUT);
    CU_ASSERT_EQUAL(an_slots_compute(&m, toks, 5, 1, 2, 0, 1, &s, &err), RN_OK);
    CU_ASSERT_EQUAL(s.at, 0);
    CU_ASSERT_EQUAL(s.n_writes, (size_t)c.top_k);
    an_slots_free(&s);
    rn_model_free(&m);
}

TH_TEST(test_slots_cli, "slots command: table, CSV, JSON, --at, errors exit 2")
{
    char p[512];
    snprintf(p, sizeof p, "%s", th_path("slots-prompt.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(p, "In the beginning God created", 28), 0);
    CU_ASSERT_EQUAL(th_run("%s slots --help", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "--layer"));
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 3 --head 1 --top 2", th_bin(), p), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "layer 3 head 1 after position 28"));
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 0 --head 0 --at 3 -f csv", th_bin(), p), 0);
    CU_ASSERT(!strncmp(th_out(), "slot,writes,norm,z,prior_share,writers,promotes\n", 48));
    /* 4 positions (the first is BOS) x K = 8 writes into at most 32 slots */
    int rows = th_count_lines(th_out()) - 1;
    CU_ASSERT(rows >= 8 && rows <= 32);
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 2 --head 3 -f json", th_bin(), p), 0);
    CU_ASSERT(!strncmp(th_out(), "{\"layer\": 2, \"head\": 3, \"at\": 28", 32));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\"promotes\": [{\"token\": "));
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 4 --head 0", th_bin(), p), 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 0 --head 0 --at 29", th_bin(), p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "--at"));
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 0", th_bin(), p), 2);
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin --layer 0 --head 0", th_bin()), 2);
    CU_ASSERT_EQUAL(th_run("%s slots samples/kjv.bin %s --layer 0 --head 0 --bogus", th_bin(), p), 2);
}
