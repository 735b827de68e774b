/* cmd_serve.c — `ramtrace serve TRACE.db`: the interactive trace viewer in
 * the browser (serve/srv_http.h, serve/srv_api.h; docs/viewer.md).  Parses
 * options, starts the server, prints the URL, waits for Ctrl-C. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "srv_api.h"
#include "srv_http.h"

const char cmd_serve_summary[] = "browse a trace in the web browser (a local viewer)";

static void usage(void)
{
    printf("usage: ramtrace serve TRACE.db [options]\n\n"
           "Serve an interactive viewer of a trace database at http://127.0.0.1:PORT/:\n"
           "the runs, a layer x head overview, the memory trace of one or several\n"
           "heads with zoom, pan and hover, the writers and readers of a slot, the\n"
           "accesses at a position, the miss-ratio curve and a read-only SQL box\n"
           "(docs/viewer.md).  The trace is opened read-only.  Ctrl-C stops.\n\n"
           "options:\n"
           "  -p, --port P          port to listen on (default 8080; 0 picks a free one)\n"
           "      --bind ADDR       numeric address to listen on (default 127.0.0.1)\n"
           "      --allow-remote    allow a --bind address other than loopback (anyone\n"
           "                        who reaches it can read the trace)\n"
           "      --cache SIZE      memory for cached answers (default 64M)\n"
           "      --sql-seconds S   time limit of a SQL box query (default 5)\n"
           "      --sql-rows N      rows shown per SQL result (default 1000)\n"
           "  -h, --help            this text\n\n"
           "example:\n"
           "  ramtrace serve trace.db --port 8080\n");
}

int cmd_serve(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { usage(); return 0; }
    static const struct option opts[] = {
        { "port", required_argument, 0, 'p' }, { "bind", required_argument, 0, 'b' },
        { "allow-remote", no_argument, 0, 'R' }, { "cache", required_argument, 0, 'c' },
        { "sql-seconds", required_argument, 0, 's' }, { "sql-rows", required_argument, 0, 'n' },
        { 0, 0, 0, 0 }
    };
    srv_http_opts ho = { "127.0.0.1", 8080, 0, 4 };
    srv_api_opts ao = { 64u << 20, { 5.0, 1000 }, &cli_stop_flag };
    rn_error perr = { 0 };
    long v;
    uint64_t size;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":p:", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_long("--port", optarg, 0, 65535, &v, &perr)) return cli_usage_error("serve", "%s", perr.msg);
            ho.port = (int)v;
            break;
        case 'b': ho.bind = optarg; break;
        case 'R': ho.allow_remote = 1; break;
        case 'c':
            if (cli_parse_size("--cache", optarg, &size, &perr)) return cli_usage_error("serve", "%s", perr.msg);
            if (size < (1u << 20)) return cli_usage_error("serve", "--cache: %s is below 1M", optarg);
            ao.cache_bytes = (size_t)size;
            break;
        case 's':
            if (cli_parse_double("--sql-seconds", optarg, 0.001, 3600, &ao.sql.seconds, &perr))
                return cli_usage_error("serve", "%s", perr.msg);
            break;
        case 'n':
            if (cli_parse_long("--sql-rows", optarg, 1, 1000000, &v, &perr)) return cli_usage_error("serve", "%s", perr.msg);
            ao.sql.max_rows = v;
            break;
        case ':': return cli_usage_error("serve", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("serve", "unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind != 1) return cli_usage_error("serve", "expected TRACE.db");
    const char *path = argv[optind];
    int loop = srv_addr_is_loopback(ho.bind);
    if (loop < 0) return cli_usage_error("serve", "--bind: '%s' is not a numeric IPv4 or IPv6 address", ho.bind);
    if (!loop && !ho.allow_remote)
        return cli_usage_error("serve", "--bind: %s is not a loopback address; anyone who reaches it could read "
                               "the trace: add --allow-remote to mean it", ho.bind);
    cli_install_signals();
    rn_error err = { 0 };
    srv_api *api;
    srv_http *http;
    if (srv_api_open(path, &ao, &api, &err)) return cli_fail(&err);
    if (srv_http_start(api, &ho, &http, &err)) { srv_api_close(api); return cli_fail(&err); }
    if (!loop)
        fprintf(stderr, "ramtrace serve: warning: listening on %s, not loopback: anyone who can reach this "
                "machine can read %s (there is no authentication)\n", ho.bind, path);
    int v6 = strchr(ho.bind, ':') != NULL;
    printf("ramtrace serve: http://%s%s%s:%d/ (%s; Ctrl-C stops)\n", v6 ? "[" : "", ho.bind, v6 ? "]" : "",
           srv_http_port(http), path);
    fflush(stdout);
    while (!cli_stop_flag) usleep(100 * 1000);
    srv_http_stop(http);
    srv_api_close(api);
    cli_info("ramtrace serve: stopped\n");
    return 0;
}
