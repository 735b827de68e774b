/* test_outputs.c — what an output path names decides how it is written
 * (core/base/rn_atomic.h): a symbolic link survives and its target gets the
 * output; a FIFO and /dev/stdout are written in place, not replaced by a
 * regular file; `-` is standard output for text outputs (export -f csv,
 * attribute -o, simulate --mrc-out) and a one-line error, exit 2, for
 * models, trace databases and pictures; a directory is refused.  Each
 * in-place output is compared with the same command's output to a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rn_atomic.h"
#include "th.h"

static char DIR_[4096], MODEL[4096], DB[4096];

/* A tiny model and a traced run of it, for the CLI cases. */
static int setup(void)
{
    snprintf(DIR_, sizeof DIR_, "%s", th_path("out"));
    snprintf(MODEL, sizeof MODEL, "%s", th_path("out_tiny.bin"));
    snprintf(DB, sizeof DB, "%s", th_path("out_trace.db"));
    char prompt[4096];
    snprintf(prompt, sizeof prompt, "%s", th_path("out_prompt.txt"));
    const char *text = "the quick brown fox jumps over the lazy dog, twice: the quick brown fox";
    if (mkdir(DIR_, 0755) || th_write_file(prompt, text, strlen(text))) return 1;
    if (th_run("%s init --config samples/configs/tiny.cfg -o '%s'", th_bin(), MODEL)) return 1;
    return th_run("%s trace '%s' '%s' -o '%s'", th_bin(), MODEL, prompt, DB) ? 1 : 0;
}
TH_SUITE(outputs, setup, NULL);

static int is_link(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

static int file_is(const char *p, const char *want)
{
    size_t n;
    char *s = th_read_file(p, &n);
    int ok = s && n == strlen(want) && !memcmp(s, want, n);
    free(s);
    return ok;
}

/* Number of entries in directory d (without . and ..). */
static int entries(const char *d)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", d);
    th_run("%s", cmd);
    return atoi(th_out());
}

static int write_text(const char *path, const char *text, rn_error *err)
{
    rn_atomic_file af;
    int rc = rn_atomic_open(&af, path, err);
    if (rc) return rc;
    fputs(text, af.f);
    return rn_atomic_commit(&af, err);
}

TH_TEST(test_symlink_survives, "a symlink output: the link stays, its target gets the bytes")
{
    char a[4200], b[4200], link[4200], target[4200], link2[4200];
    snprintf(a, sizeof a, "%s/a", DIR_);
    snprintf(b, sizeof b, "%s/b", DIR_);
    CU_ASSERT_FATAL(!mkdir(a, 0755) && !mkdir(b, 0755));
    snprintf(link, sizeof link, "%s/out.csv", a);
    snprintf(target, sizeof target, "%s/real.csv", b);
    CU_ASSERT_FATAL(th_write_file(target, "old\n", 4) == 0);
    CU_ASSERT_FATAL(symlink("../b/real.csv", link) == 0); /* relative to the link's directory */
    rn_error err = {0};
    CU_ASSERT_EQUAL(write_text(link, "new contents\n", &err), RN_OK);
    CU_ASSERT(is_link(link));
    CU_ASSERT(file_is(target, "new contents\n"));
    CU_ASSERT_EQUAL(entries(a), 1); /* no temp file left beside the link */
    CU_ASSERT_EQUAL(entries(b), 1); /* nor beside the target */
    /* a chain of two links, the last one dangling: the final name is created */
    snprintf(link2, sizeof link2, "%s/chain.csv", a);
    CU_ASSERT_FATAL(symlink("out2.csv", link2) == 0);
    char link3[4200];
    snprintf(link3, sizeof link3, "%s/out2.csv", a);
    CU_ASSERT_FATAL(symlink(target, link3) == 0 && unlink(target) == 0);
    CU_ASSERT_EQUAL(write_text(link2, "via chain\n", &err), RN_OK);
    CU_ASSERT(is_link(link2) && is_link(link3));
    CU_ASSERT(file_is(target, "via chain\n"));
    CU_ASSERT_EQUAL(entries(b), 1);
    /* an aborted write leaves the target as it was */
    rn_atomic_file af;
    CU_ASSERT_EQUAL_FATAL(rn_atomic_open(&af, link, &err), RN_OK);
    fputs("half", af.f);
    rn_atomic_abort(&af);
    CU_ASSERT(file_is(target, "via chain\n"));
    CU_ASSERT(is_link(link));
    CU_ASSERT_EQUAL(entries(b), 1);
    /* a loop of links is an error naming the path */
    char l1[4200], l2[4200];
    snprintf(l1, sizeof l1, "%s/loop1", a);
    snprintf(l2, sizeof l2, "%s/loop2", a);
    CU_ASSERT_FATAL(symlink("loop2", l1) == 0 && symlink("loop1", l2) == 0);
    CU_ASSERT_EQUAL(write_text(l1, "x", &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "too many levels of symbolic links"));
    CU_ASSERT(is_link(l1) && is_link(l2));
}

TH_TEST(test_fifo_in_place, "a FIFO output is written in place and stays a FIFO")
{
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/pipe", DIR_);
    CU_ASSERT_FATAL(mkfifo(fifo, 0644) == 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open does not block */
    CU_ASSERT_FATAL(rd >= 0);
    rn_error err = {0};
    CU_ASSERT_EQUAL(write_text(fifo, "through the pipe\n", &err), RN_OK);
    char buf[64] = {0};
    ssize_t n = read(rd, buf, sizeof buf - 1);
    close(rd);
    CU_ASSERT_EQUAL(n, 17);
    CU_ASSERT_STRING_EQUAL(buf, "through the pipe\n");
    struct stat st;
    CU_ASSERT(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
}

TH_TEST(test_dash_and_dirs, "library: '-' is stdout only for text; a directory is refused")
{
    rn_atomic_file af;
    rn_error err = {0};
    CU_ASSERT_EQUAL(rn_atomic_open(&af, "-", &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "-: this output cannot go to standard output"));
    CU_ASSERT_EQUAL(rn_atomic_open(&af, DIR_, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a directory"));
    CU_ASSERT_EQUAL(rn_atomic_open_text(&af, "-", &err), RN_OK);
    CU_ASSERT(af.direct);
    CU_ASSERT_EQUAL(rn_atomic_commit(&af, &err), RN_OK);
    /* standard output itself is still open */
    CU_ASSERT(fcntl(1, F_GETFD) != -1);
}

/* Run `cmd` writing to FILE and to the in-place target; the in-place
 * output (stdout) must equal the file's bytes. */
static void same_as_file(const char *what, const char *cmd_file, const char *cmd_stdout, const char *file)
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s", cmd_file), 0);
    size_t n;
    char *want = th_read_file(file, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    CU_ASSERT(n > 0);
    int rc = th_run("%s", cmd_stdout);
    int ok = rc == 0 && strlen(th_out()) == n && !memcmp(th_out(), want, n);
    if (!ok) printf("\n  %s: rc %d, %zu bytes on stdout, want %zu; stderr '%s'\n", what, rc, strlen(th_out()), n, th_err());
    CU_ASSERT(ok);
    free(want);
}

TH_TEST(test_cli_dash_text, "CLI: -o - is stdout for CSV/JSON/table outputs")
{
    const char *bin = th_bin();
    char file[4200], c1[8800], c2[8800];
    snprintf(file, sizeof file, "%s/export.csv", DIR_);
    snprintf(c1, sizeof c1, "%s export '%s' -f csv -o '%s'", bin, DB, file);
    snprintf(c2, sizeof c2, "cd '%s' && %s export '%s' -f csv -o -", DIR_, bin, DB);
    same_as_file("export csv", c1, c2, file);
    snprintf(c2, sizeof c2, "%s export '%s' -f csv -o /dev/stdout", bin, DB);
    same_as_file("export csv to /dev/stdout", c1, c2, file);
    snprintf(file, sizeof file, "%s/attr.json", DIR_);
    snprintf(c1, sizeof c1, "%s attribute '%s' --layer 0 --head 1 --pos 20 -f json -o '%s'", bin, DB, file);
    snprintf(c2, sizeof c2, "cd '%s' && %s attribute '%s' --layer 0 --head 1 --pos 20 -f json -o -", DIR_, bin, DB);
    same_as_file("attribute json", c1, c2, file);
    snprintf(file, sizeof file, "%s/mrc.csv", DIR_);
    snprintf(c1, sizeof c1, "%s simulate '%s' --mrc-out '%s'", bin, DB, file);
    snprintf(c2, sizeof c2, "cd '%s' && %s simulate '%s' --mrc-out -", DIR_, bin, DB);
    same_as_file("simulate --mrc-out", c1, c2, file);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "lru")); /* the table went to stderr */
    /* the oracleGeneral stream to a pipe: 24 bytes per access, as the file */
    snprintf(file, sizeof file, "%s/export.og", DIR_);
    snprintf(c1, sizeof c1, "%s export '%s' -o '%s'", bin, DB, file);
    CU_ASSERT_EQUAL(th_run("%s", c1), 0);
    size_t n;
    char *og = th_read_file(file, &n);
    CU_ASSERT(og && n > 0 && n % 24 == 0);
    CU_ASSERT_EQUAL(th_run("cd '%s' && %s export '%s' -o - | cmp - '%s'", DIR_, bin, DB, file), 0);
    free(og);
    CU_ASSERT(!th_file_exists(th_path("out/-")));
}

TH_TEST(test_cli_dash_refused, "CLI: -o - for a model, database or picture: one line, exit 2, no file")
{
    const char *bin = th_bin();
    char prompt[4200];
    snprintf(prompt, sizeof prompt, "%s", th_path("out_prompt.txt"));
    struct { const char *args, *want; } cases[] = {
        { "init --d-model 16 -o -", "cannot go to standard output" },
        { "convert '%1$s' -", "cannot go to standard output" },
        { "train --task mqar --steps 1 -o -", "a model cannot go to standard output" },
        { "trace '%1$s' '%3$s' -o -", "a trace database cannot go to standard output" },
        { "run '%1$s' '%3$s' -n 1 --trace -", "a trace database cannot go to standard output" },
        { "plot heatmap '%2$s' -o -", "-: " },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[8800];
        snprintf(args, sizeof args, cases[i].args, MODEL, DB, prompt);
        /* run from the scratch directory, so a stray file named '-' shows */
        int rc = th_run("cd '%s' && %s %s", DIR_, bin, args);
        int ok = rc == 2 && strstr(th_err(), cases[i].want) && th_count_lines(th_err()) <= 2 &&
                 strstr(th_err(), "ramtrace") && !th_file_exists(th_path("out/-"));
        if (!ok) printf("\n  %s: rc %d '%s'\n", args, rc, th_err());
        CU_ASSERT(ok);
    }
}

TH_TEST(test_cli_device, "CLI: a character device output is written in place (/dev/full: disk full)")
{
    struct stat st;
    if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) return; /* no /dev/full here */
    int rc = th_run("%s export '%s' -f csv -o /dev/full", th_bin(), DB);
    CU_ASSERT(rc == 1 || rc == 2);
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)); /* still the device */
}
