/* cmd_sql.c — `ramtrace sql TRACE.db "SELECT ..."`: run SQL on a trace over a
 * read-only connection; SQL from the argument, a file (-f) or stdin; scoped
 * to one run (the latest, or --run N) unless --all-runs.  -f is --format, as
 * in every command (the SQL file is --file). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rn_tokenizer.h"
#include "tr_query.h"

const char cmd_sql_summary[] = "run read-only SQL on a trace database";

static void usage(void)
{
    printf("usage: ramtrace sql TRACE.db [SQL] [options]\n\n"
           "Run SQL statements on a trace database opened read-only (statements that\n"
           "would modify it are refused).  SQL comes from the argument, from a file\n"
           "(--file FILE), or from stdin when neither is given (or SQL is '-').\n"
           "Tables and views: runs, tokens, heads, events, writes, reads, and\n"
           "event_blocks, the stored blocks events are read from (docs/trace-schema.md).\n\n"
           "One run at a time: events, reads, writes, tokens, heads and event_blocks\n"
           "hold only the rows of the latest run (or of --run N), and runs_this is\n"
           "that run's row; runs still lists every run, and main.NAME reaches the\n"
           "unscoped table.  --all-runs turns the scoping off.\n\n"
           "options:\n"
           "      --run N           scope the SQL to run N (default: the latest run)\n"
           "      --all-runs        no scoping: every run's rows\n"
           "      --file FILE       read the SQL from FILE\n"
           "  -f, -F, --format FMT  table (default), csv or json\n"
           "  -h, --help            this text\n\n"
           "example:\n"
           "  ramtrace sql trace.db \"SELECT layer, head, count(*) FROM reads GROUP BY 1, 2\"\n");
}

/* Read all of stdin (NUL-terminated, malloc'd). */
static char *read_stdin(void)
{
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    while (s) {
        size_t got = fread(s + n, 1, cap - n - 1, stdin);
        n += got;
        if (n + 1 < cap) break;
        char *t = realloc(s, cap * 2);
        if (!t) { free(s); return NULL; }
        s = t;
        cap *= 2;
    }
    if (s) s[n] = 0;
    return s;
}

int cmd_sql(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    static const struct option opts[] = {
        { "file", required_argument, 0, 'i' }, { "format", required_argument, 0, 'f' },
        { "run", required_argument, 0, 'r' }, { "all-runs", no_argument, 0, 'a' },
        { 0, 0, 0, 0 }
    };
    const char *file = NULL;
    int format = RN_FMT_TABLE;
    long run = TR_RUN_LATEST;
    int all_runs = 0, run_given = 0;
    rn_error perr = { 0 };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":f:F:", opts, NULL)) != -1) {
        switch (c) {
        case 'i': file = optarg; break;
        case 'f':
        case 'F': /* checked here: `-f FILE.sql`, the old spelling of --file, is named as such */
            if (rn_format_parse(optarg, &format, &perr))
                return cli_usage_error("sql", "%s%s", perr.msg,
                                       strchr(optarg, '.') || strchr(optarg, '/') ? " (the SQL file is --file FILE)" : "");
            break;
        case 'r':
            if (cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &perr))
                return cli_usage_error("sql", "%s", perr.msg);
            run_given = 1;
            break;
        case 'a': all_runs = 1; break;
        case ':': return cli_usage_error("sql", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("sql", "unknown option %s", argv[optind - 1]);
        }
    }
    if (all_runs && run_given) return cli_usage_error("sql", "give --run or --all-runs, not both");
    int nargs = argc - optind;
    if (nargs < 1) return cli_usage_error("sql", "expected TRACE.db");
    if (nargs > 2) return cli_usage_error("sql", "expected TRACE.db and at most one SQL argument (quote it)");
    if (nargs == 2 && file) return cli_usage_error("sql", "give SQL as an argument or with --file, not both");
    const char *path = argv[optind];
    rn_error err = { 0 };
    char *sql = NULL;
    if (file) {
        size_t len;
        if (rn_read_file(file, &sql, &len, &err)) return cli_fail(&err);
    } else if (nargs == 2 && strcmp(argv[optind + 1], "-")) {
        sql = strdup(argv[optind + 1]);
    } else {
        sql = read_stdin();
    }
    if (!sql) { rn_seterr(&err, RN_ENOMEM, "out of memory reading the SQL"); return cli_fail(&err); }
    int rc = tr_query_print_run(path, sql, all_runs ? TR_RUN_ALL : run, format, stdout, &err);
    free(sql);
    fflush(stdout);
    return rc ? cli_fail(&err) : 0;
}
