/* cmd_version.c — `ramtrace version`: print the tool version. */
#include <stdio.h>

#include "cli.h"
#include "rn_version.h"

const char cmd_version_summary[] = "print the ramtrace version";

int cmd_version(int argc, char **argv)
{
    (void)argc; (void)argv;
    printf("ramtrace %s\n", RAMTRACE_VERSION);
    return 0;
}
