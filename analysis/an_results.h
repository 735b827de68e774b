/* an_results.h — the MQAR sweep's results (scripts/mqar-sweep's CSV) and
 * the published baselines (an anchors CSV: model,state_bytes,accuracy),
 * read into plain rows, and the two summaries the figures of
 * docs/mqar-frontier.md show: the best run of each model shape over its
 * learning rates (Fig. 3), and the mean, min and max over seeds of the
 * runs at each value of one swept key (Fig. 4). */
#ifndef AN_RESULTS_H
#define AN_RESULTS_H

#include "rn_error.h"

#define AN_LADDER 7 /* Zoology's test settings (64,4) ... (1024,256) */

typedef struct {
    char name[96];
    char figure[96];          /* comma-separated figure tags ("fig4-U,fig4-M") */
    double U, d_p, M, K, d_v, heads, layers, lr, seed;
    double state_bytes;       /* Zoology's units: 4 x sum over layers and heads of M(d_v + 1) */
    double active_bytes;      /* per token: 4 x sum of 2K(d_v + 1) */
    double acc[AN_LADDER];
    double mean7, mean_l64;   /* seven-setting mean; mean of the three L = 64 settings */
} an_result;

typedef struct {
    char model[64];
    double state_bytes, accuracy;
} an_anchor;

/* Read the sweep's CSV (columns found by name; `figure`, `state_bytes`,
 * `active_state_bytes`, `mean7` and `mean_l64` required, the others may be
 * missing and read as NaN).  *rows is malloc'd (free()).  RN_EINPUT naming
 * the file and line for a missing column or a bad number. */
int an_results_load(const char *path, an_result **rows, int *n, rn_error *err);

/* Read an anchors CSV: '#' lines are comments, then a header naming
 * model, state_bytes and accuracy.  *rows is malloc'd. */
int an_anchors_load(const char *path, an_anchor **rows, int *n, rn_error *err);

/* Split one CSV line in place into at most max fields (double quotes may
 * enclose commas; "" inside quotes is a quote).  Returns the field count,
 * or -1 for an unterminated quote. */
int an_csv_split(char *line, char **fields, int max);

/* Does the comma-separated tag list `figure` contain tag? */
int an_result_tagged(const an_result *r, const char *tag);

/* Fig. 3: among rows tagged `tag`, the best `mean7` of each shape (same U,
 * d_p, d_v, K, heads, layers; the runs differ in lr or seed).  Fills
 * best[] with indices into rows, sorted by state_bytes; returns the count
 * (at most max). */
int an_results_best(const an_result *rows, int n, const char *tag, int *best, int max);

/* Fig. 4: among rows tagged `tag`, group by the value of `key` ("U" or
 * "M") and give, per group in ascending key order, the key value, the
 * number of runs and the mean, min and max of the metric ("mean7" or
 * "mean_l64").  Returns the group count (at most max), -1 for an unknown
 * key or metric. */
int an_results_by(const an_result *rows, int n, const char *tag, const char *key, const char *metric,
                  double *x, int *count, double *mean, double *lo, double *hi, int max);

#endif
