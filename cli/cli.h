/* cli.h — helpers shared by the thin command front-ends in cli/cmd_*.c.
 *
 * Every command is a function `int cmd_NAME(int argc, char **argv)` in
 * cli/cmd_NAME.c with a one-line `const char cmd_NAME_summary[]`; the table
 * in main.c is generated from the file names.  argv[0] is the command name.
 * A command returns the process exit status: 0 ok, 2 bad input (option,
 * file, prompt), 1 other failures, 130 interrupted by SIGINT (Ctrl-C), 143
 * by SIGTERM, 141 (CLI_EXIT_PIPE) when stdout's reader went away (`| head`).
 *
 * Help texts share one layout, which scripts/gen-completion reads (and
 * tests/test_cli_opts.c checks): every option on an option line, indented
 * 2 to 6 spaces, its options comma-separated before a two-space gap; a
 * line indented further is description.
 *
 * Output to a closed pipe: SIGPIPE is ignored (so temp files are removed
 * and the run is closed as on any error), writes fail with EPIPE, and the
 * command ends as a program killed by SIGPIPE would look to its shell:
 * status 141, no message.  The policy is here only: cli_fail stays quiet
 * for an I/O error once stdout's reader is gone (whatever the stream:
 * `-o -` writes through its own), and main() passes every command's status
 * through cli_exit_status.
 */
#ifndef CLI_H
#define CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "rn_state.h"

struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/* Set by SIGINT/SIGTERM (first signal); long loops poll it and stop cleanly.
 * A second signal removes registered temp files and exits at once. */
extern volatile sig_atomic_t cli_interrupted;
extern volatile int cli_stop_flag; /* mirrors cli_interrupted for library polling */
void cli_install_signals(void);

/* Exit status of a run stopped by the first signal: 128 + its number (130
 * for SIGINT, 143 for SIGTERM; 130 when no signal was seen). */
int cli_interrupt_status(void);

/* Exit status of a command whose reader closed stdout: 128 + SIGPIPE. */
#define CLI_EXIT_PIPE 141

/* True when stdout is a pipe or socket whose reader is gone: more output
 * is pointless, and a failed write to it no error to report. */
int cli_stdout_gone(void);

/* The process exit status for a command that returned rc (0: stdout is
 * flushed; when a write to it failed, CLI_EXIT_PIPE quietly if its reader
 * is gone, else one line and 1). */
int cli_exit_status(int rc);

/* Print "ramtrace: <msg>" to stderr and return the exit status for err
 * (cli_interrupt_status() for RN_EINTR); nothing is printed, and the
 * status is CLI_EXIT_PIPE, for an I/O error once cli_stdout_gone(). */
int cli_fail(const rn_error *err);

/* -q/--quiet (any command; main.c takes it out of argv): informational
 * lines and progress on stderr are not printed.  Errors always are. */
extern int cli_quiet;

/* An informational line (or progress) on stderr, unless --quiet. */
void cli_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A command's report line on stdout (what upgrade and repair did), unless
 * --quiet. */
void cli_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* After a failed model load of model_path: when the command's next
 * argument `other` is a model file (model.bin magic, or a .safetensors
 * name) and model_path is not, add to err the hint that the two look
 * swapped, naming cmd's expected order ("MODEL PROMPT"). */
void cli_hint_swapped(rn_error *err, const char *model_path, const char *other, const char *order);

/* Print "ramtrace CMD: <msg> (try 'ramtrace CMD --help')" and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when argv holds -h or --help. */
int cli_wants_help(int argc, char **argv);

/* Strict parses of an option value ("--opt VALUE"); errors name the option. */
int cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out, rn_error *err);
int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out, rn_error *err);
int cli_parse_u64(const char *opt, const char *s, uint64_t *out, rn_error *err);
/* A size in bytes: an integer, or a number with K/M/G/T (powers of 1024). */
int cli_parse_size(const char *opt, const char *s, uint64_t *out, rn_error *err);

/* The tiered memory state options shared by run and trace. */
#define CLI_STATE_HELP \
    "      --state-budget B  keep only B bytes of slot rows in memory (e.g. 64M) and\n" \
    "                        the whole state in --state-file (CPU only; docs/tiered-state.md)\n" \
    "      --state-file PATH the state file: the rows written back, packed (created, or\n" \
    "                        replaced, unless a killed run left it dirty or it is not\n" \
    "                        a state file of this version)\n" \
    "      --state-discard   replace --state-file even then\n" \
    "      --state-policy P  which rows stay in memory: an online policy (below;\n" \
    "                        default lru)\n" \
    "      --state-scope S   one cache (and budget) for the model (default), each layer\n" \
    "                        or each head, as simulate --scope\n" \
    "      --state-direct    read and write the state file with O_DIRECT (no page cache),\n" \
    "                        in batches of native AIO where the kernel allows it\n" \
    "      --state-no-prefetch  read a missing row only when it is needed (default:\n" \
    "                        a layer's missing rows are read ahead, several at once)\n" \
    "      --state-io MODE   auto (default: native AIO with --state-direct, else\n" \
    "                        threads), threads (a pread/pwrite per row from threads)\n" \
    "                        or sync (each row read and written when needed, no threads)\n"
enum { CLI_O_STATE_BUDGET = 3000, CLI_O_STATE_FILE, CLI_O_STATE_POLICY, CLI_O_STATE_DIRECT, CLI_O_STATE_SCOPE,
       CLI_O_STATE_DISCARD, CLI_O_STATE_NO_PREFETCH, CLI_O_STATE_IO };
#define CLI_STATE_LONGOPTS \
    { "state-budget", required_argument, 0, CLI_O_STATE_BUDGET }, \
    { "state-file", required_argument, 0, CLI_O_STATE_FILE }, \
    { "state-policy", required_argument, 0, CLI_O_STATE_POLICY }, \
    { "state-direct", no_argument, 0, CLI_O_STATE_DIRECT }, \
    { "state-scope", required_argument, 0, CLI_O_STATE_SCOPE }, \
    { "state-discard", no_argument, 0, CLI_O_STATE_DISCARD }, \
    { "state-no-prefetch", no_argument, 0, CLI_O_STATE_NO_PREFETCH }, \
    { "state-io", required_argument, 0, CLI_O_STATE_IO }
/* The cache policies of the registry (core/cache/rn_cache.h), under a
 * "policies:" heading, one "  NAME  summary" line each; online_only leaves
 * out those that need the future accesses (opt), which a running model
 * (--state-policy) cannot use. */
void cli_print_policies(FILE *f, int online_only);

/* Handle option c if it is one of the state options: 1 handled (*rc set),
 * 0 not a state option.  An unknown --state-policy is refused here, naming
 * the online policies. */
int cli_state_option(int c, const char *arg, rn_state_opts *o, int *rc, rn_error *err);
/* One line on stderr: the tiered state's counters. */
void cli_state_report(const rn_state_opts *o, const rn_state_counters *c);

/* Set OpenMP and OpenBLAS thread counts (n >= 1). */
void cli_set_threads(int n);

/* The thread policy of the model commands (run, trace, train, eval): n > 0
 * (--threads N) fixes the count; otherwise, unless OMP_NUM_THREADS or
 * another OpenMP setting is in the environment, the count follows the
 * machine's load, at most one per CPU (core/base/rn_threads.h). */
void cli_threads(long n);

/* Seconds since an arbitrary epoch (monotonic clock). */
double cli_now(void);

/* True when stderr is a terminal (progress lines are redrawn in place). */
int cli_stderr_tty(void);

#endif
