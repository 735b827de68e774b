/* fig_patching.c — `ramtrace patch --plot`: the recovered fraction per
 * (layer, head) as a matrix (viz/viz_attribution.h's labelled matrix), and
 * per restored slot as a one-column matrix beside it.  The fraction is
 * signed (a patch can make the metric worse), so both are drawn with the
 * diverging RdBu map centred on 0: red below, white at 0, blue above. */
#include "fig_patching.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rn_tokenizer.h"
#include "viz_attribution.h"
#include "viz_surface.h"

int fig_patching(const an_patch_result *r, const rn_config *c, const char *path, rn_error *err)
{
    const int L = c->n_layers, H = c->n_heads;
    int n_slot_rows = 0;
    for (int i = 0; i < r->n_rows; i++) n_slot_rows += r->rows[i].slot >= 0;
    double *hv = calloc((size_t)L * H, sizeof *hv), *sv = calloc((size_t)n_slot_rows + 1, sizeof *sv);
    char (*lab)[32] = calloc((size_t)(L + H + n_slot_rows), sizeof *lab);
    const char **ptr = calloc((size_t)(L + H + n_slot_rows), sizeof *ptr);
    int rc = RN_OK;
    if (!hv || !sv || !lab || !ptr) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    for (int l = 0; l < L; l++) snprintf(lab[l], sizeof lab[l], "layer %d", l), ptr[l] = lab[l];
    for (int h = 0; h < H; h++) snprintf(lab[L + h], sizeof lab[L + h], "head %d", h), ptr[L + h] = lab[L + h];
    for (int i = 0, k = 0; i < r->n_rows; i++) {
        const an_patch_row *p = &r->rows[i];
        double v = isfinite(p->recovered) ? p->recovered : 0;
        if (p->slot < 0) hv[p->layer * H + p->head] = v;
        else {
            snprintf(lab[L + H + k], sizeof lab[L + H + k], "%d.%d slot %d", p->layer, p->head, p->slot);
            ptr[L + H + k] = lab[L + H + k];
            sv[k++] = v;
        }
    }
    char pa[64];
    rn_token_piece(c, r->answer, pa, sizeof pa);
    viz_matrix_data hd = { L, H, hv, ptr, ptr + L, "", "recovered (fraction)", "", "", 0, 0 };
    snprintf(hd.title, sizeof hd.title, "patching %s of '%s': recovered per head", an_metric_name(r->metric), pa);
    static const char *const one[1] = { "slot" };
    /* slot rows are labelled "L.H slot S": head H of layer L, slot S */
    viz_matrix_data sd = { n_slot_rows, 1, sv, ptr + L + H, one, "per restored slot", "recovered (fraction)", "",
                           "restored slot (layer.head slot S)", 0, 0 };
    double W = n_slot_rows ? 1000 : 640, Hh = 120 + 44.0 * (L > n_slot_rows / 2 ? L : n_slot_rows / 2);
    if (Hh < 420) Hh = 420;
    viz_surface s;
    if ((rc = viz_surface_open(&s, path, W, Hh, 96, err))) goto done;
    double hw = n_slot_rows ? W * 0.6 : W;
    rc = viz_matrix_draw(s.cr, viz_rect_make(4, 4, hw - 8, Hh - 8), &hd, VIZ_CMAP_RDBU, 13, err);
    if (!rc && n_slot_rows)
        rc = viz_matrix_draw(s.cr, viz_rect_make(hw + 4, 4, W - hw - 8, Hh - 8), &sd, VIZ_CMAP_RDBU, 13, err);
    if (rc) viz_surface_abort(&s);
    else rc = viz_surface_commit(&s, err);
done:
    free(hv); free(sv); free(lab); free(ptr);
    return rc;
}
