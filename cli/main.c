/* main.c — `ramtrace <command> ...`: dispatch to cli/cmd_<command>.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rn_version.h"
#include "commands.h" /* generated: cli_commands[] */

#define N_COMMANDS (sizeof cli_commands / sizeof cli_commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: ramtrace <command> [options]\n\n"
               "RAM-Net trainer and inferencer that records every memory slot access.\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f, "\n'ramtrace <command> --help' (or 'ramtrace help <command>') describes a command's options.\n\n"
               "options:\n"
               "  -h, --help            this text\n"
               "      --version         the version of ramtrace\n\n"
               "options of every command:\n"
               "  -q, --quiet           leave out informational lines and progress (errors still\n"
               "                        print)\n");
}

/* Take -q/--quiet out of argv (before a `--`), setting cli_quiet. */
static int take_quiet(int argc, char **argv)
{
    int n = 1;
    for (int i = 1, done = 0; i < argc; i++) {
        if (!done && !strcmp(argv[i], "--")) done = 1;
        if (!done && (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))) {
            cli_quiet = 1;
            continue;
        }
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    argc = take_quiet(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc > 2) { /* ramtrace help CMD = ramtrace CMD --help */
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[2], cli_commands[i].name)) {
                char *hargv[] = { argv[2], "--help", NULL };
                return cli_exit_status(cli_commands[i].fn(2, hargv));
            }
        fprintf(stderr, "ramtrace help: unknown command '%s' (try 'ramtrace --help')\n", argv[2]);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ramtrace %s\n", RAMTRACE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], cli_commands[i].name)) {
            cli_install_signals();
            return cli_exit_status(cli_commands[i].fn(argc - 1, argv + 1));
        }
    fprintf(stderr, "ramtrace: unknown command '%s' (try 'ramtrace --help')\n", argv[1]);
    return 2;
}
