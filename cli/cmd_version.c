/* cmd_version.c — `ramtrace version`: print the tool version. */
#include <stdio.h>

#include "cli.h"
#include "rn_version.h"

const char cmd_version_summary[] = "print the ramtrace version";

int cmd_version(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        printf("usage: ramtrace version\n\n"
               "Print the version of ramtrace (as ramtrace --version).\n\n"
               "options:\n"
               "  -h, --help            this text\n");
        return 0;
    }
    if (argc > 1) return cli_usage_error("version", "unexpected argument '%s'", argv[1]);
    printf("ramtrace %s\n", RAMTRACE_VERSION);
    return 0;
}
