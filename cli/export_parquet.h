/* export_parquet.h — the `--format parquet` branch of `ramtrace export`
 * (cmd_export.c hands over once its options are parsed). */
#ifndef EXPORT_PARQUET_H
#define EXPORT_PARQUET_H

/* Export traces[0..ntraces) to the new dataset directory outp; the other
 * arguments are export's parsed options.  Returns the exit status. */
int cmd_export_parquet(const char *cmd, int ntraces, char *const *traces, const char *outp, long run, int layer,
                       int head, int ops, long threads);

#endif
