/* export_parquet.c — `ramtrace export TRACE.db… --format parquet -o DIR`:
 * one or more traces as a hive-partitioned Parquet dataset
 * (analysis/an_pq_export.h, docs/analysis.md). */
#include "export_parquet.h"

#include <string.h>

#include "an_pq_export.h"
#include "cli.h"
#include "rn_threads.h"

int cmd_export_parquet(const char *cmd, int ntraces, char *const *traces, const char *outp, long run, int layer,
                       int head, int ops, long threads)
{
    if (ntraces < 1) return cli_usage_error(cmd, "expected one or more trace databases");
    if (!outp) return cli_usage_error(cmd, "-o DIR is required");
    if (!strcmp(outp, "-")) return cli_usage_error(cmd, "-o -: a parquet dataset is a directory, not a stream");
    cli_threads(threads);
    cli_install_signals();
    double t0 = cli_now();
    an_pq_export_opts o = { run, layer, head, ops, rn_threads_poll() };
    an_pq_export_result res;
    rn_error err = { 0 };
    int rc = an_pq_export((const char *const *)traces, ntraces, outp, &o, &cli_stop_flag, &res, &err);
    if (rc == RN_EINTR || (rc == RN_OK && cli_stop_flag)) {
        rn_seterr(&err, RN_EINTR, "export: interrupted; %s not written", outp);
        return cli_fail(&err);
    }
    if (rc) return cli_fail(&err);
    double dt = cli_now() - t0;
    cli_info("export: %lld runs, %lld events, %lld files, %.1f MB (%.2f bytes/event) to %s in %.2f s\n",
             (long long)res.runs, (long long)res.events, (long long)res.files, (double)res.bytes / 1e6,
             res.events ? (double)res.bytes / (double)res.events : 0.0, outp, dt);
    return 0;
}
