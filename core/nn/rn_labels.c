/* rn_labels.c — listing a batch's labelled rows (rn_labels.h). */
#include "rn_labels.h"

int rn_train_label_rows(const int *tokens, const int *targets, int n, int V, int max_lab,
                        int *rows, int *tgt, int *n_lab, rn_error *err)
{
    int nl = 0;
    for (int r = 0; r < n; r++) {
        if (tokens[r] < 0 || tokens[r] >= V)
            return rn_seterr(err, RN_EINPUT, "token %d at row %d is outside the vocabulary [0, %d)", tokens[r], r, V);
        if (targets[r] == RN_IGNORE) continue;
        if (targets[r] < 0 || targets[r] >= V)
            return rn_seterr(err, RN_EINPUT, "target %d at row %d is outside the vocabulary [0, %d)", targets[r], r, V);
        if (nl == max_lab)
            return rn_seterr(err, RN_EINPUT, "trainer: more than %d labelled positions in a batch", max_lab);
        rows[nl] = r;
        tgt[nl] = targets[r];
        nl++;
    }
    *n_lab = nl;
    return RN_OK;
}
