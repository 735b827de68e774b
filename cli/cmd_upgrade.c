/* cmd_upgrade.c — `ramtrace upgrade TRACE.db`: convert a trace of schema
 * version 1 to the current schema in place (the work is tr_upgrade,
 * trace/tr_upgrade.h). */
#include <stdio.h>

#include "cli.h"
#include "tr_schema.h"
#include "tr_upgrade.h"

const char cmd_upgrade_summary[] = "convert a trace file of schema version 1 to the current schema";

static void usage(void)
{
    printf("usage: ramtrace upgrade TRACE.db\n\n"
           "Rewrite a trace of schema version 1 (one row per 8 ranks) in the current\n"
           "schema (packed event blocks; docs/trace-schema.md), keeping every run,\n"
           "token, head and event exactly.  The new file is written beside the old one\n"
           "and renamed over it: an interrupted upgrade leaves the old file intact.\n"
           "A file already in the current schema is left alone.  Positions of a killed\n"
           "version 1 run that are not whole are dropped (run `ramtrace repair` after).\n\n"
           "options:\n"
           "  -h, --help            this text\n");
}

int cmd_upgrade(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    if (argc != 2) return cli_usage_error("upgrade", "expected one TRACE.db");
    tr_upgrade_result r;
    rn_error err = { 0 };
    if (tr_upgrade(argv[1], &r, &err)) return cli_fail(&err);
    if (r.from_version == TR_SCHEMA_VERSION)
        cli_report("upgrade: %s is already trace schema version %d; nothing to do\n", argv[1], TR_SCHEMA_VERSION);
    else
        cli_report("upgrade: %s: schema version %d -> %d: %lld runs, %lld events%s\n", argv[1], r.from_version,
               TR_SCHEMA_VERSION, (long long)r.runs, (long long)r.events,
               r.dropped_events ? " (events of incomplete positions dropped)" : "");
    return 0;
}
