/* test_install.c — `make install PREFIX=...` into a scratch prefix: the
 * binary, library, headers, ramnet.pc, a man page for ramtrace and for
 * every command its --help lists, bash completion; a small C program built
 * with `pkg-config --cflags --libs ramnet` against the installed copy runs;
 * `make uninstall` leaves the prefix empty. */
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

#ifndef RN_TEST_CC
#define RN_TEST_CC "cc"
#endif
#ifndef RN_TEST_SAN
#define RN_TEST_SAN ""
#endif

/* The build directory of the binary under test (make's BUILD). */
static const char *build_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", th_bin());
    return dirname(dir);
}

/* make with this build's BUILD, not the caller make's job server. */
static int run_make(const char *target, const char *prefix)
{
    return th_run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s %s PREFIX='%s' BUILD='%s'", target,
                  prefix, build_dir());
}

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 1; /* gone counts as empty */
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

TH_TEST(test_install_uninstall, "make install / pkg-config / make uninstall round trip")
{
    char prefix[4096], p[4096];
    snprintf(prefix, sizeof prefix, "%s", th_path("prefix"));
    CU_ASSERT_EQUAL_FATAL(run_make("install", prefix), 0);

    const char *files[] = { "bin/ramtrace", "lib/libramnet.a", "include/ramnet/rn_model.h",
                            "include/ramnet/viz_trace.h", "lib/pkgconfig/ramnet.pc",
                            "share/man/man1/ramtrace.1", "share/bash-completion/completions/ramtrace" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", prefix, files[i]);
        CU_ASSERT(th_file_exists(p));
    }

    /* one page per command, the commands as `ramtrace --help` lists them */
    CU_ASSERT_EQUAL_FATAL(th_run("%s/bin/ramtrace --help", prefix), 0);
    const char *list = strstr(th_out(), "commands:\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    int n_cmds = 0;
    for (const char *l = strchr(list, '\n') + 1; l[0] == ' ' && l[1] == ' '; l = strchr(l, '\n') + 1) {
        char name[64];
        CU_ASSERT_FATAL(sscanf(l, "%63s", name) == 1);
        snprintf(p, sizeof p, "%s/share/man/man1/ramtrace-%s.1", prefix, name);
        CU_ASSERT(th_file_exists(p));
        n_cmds++;
    }
    CU_ASSERT(n_cmds >= 10);
    /* the pages are valid roff (where groff is installed) */
    CU_ASSERT_EQUAL(th_run("! command -v groff >/dev/null || groff -man -ww -z '%s'/share/man/man1/*.1 2>&1", prefix), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "");
    CU_ASSERT_EQUAL(th_run("bash -n '%s/share/bash-completion/completions/ramtrace'", prefix), 0);
    CU_ASSERT_EQUAL(th_run("bash -c '. %s/share/bash-completion/completions/ramtrace; "
                           "COMP_WORDS=(ramtrace plot he); COMP_CWORD=2; _ramtrace; echo \"${COMPREPLY[@]}\"'",
                           prefix), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "heatmap\n");

    /* a program built against the installed library */
    char src[4096], exe[4096];
    snprintf(src, sizeof src, "%s", th_path("pc_prog.c"));
    snprintf(exe, sizeof exe, "%s", th_path("pc_prog"));
    const char *prog = "#include <stdio.h>\n#include \"rn_config.h\"\n#include \"rn_version.h\"\n"
                       "int main(void) { rn_config c; rn_config_default(&c);\n"
                       "  printf(\"%s %d\\n\", RAMTRACE_VERSION, rn_config_slots(&c) > 0); return 0; }\n";
    CU_ASSERT_EQUAL_FATAL(th_write_file(src, prog, strlen(prog)), 0);
    int rc = th_run("PKG_CONFIG_PATH='%s/lib/pkgconfig' sh -c '%s %s \"$0\" -o \"$1\" $(pkg-config --cflags --libs ramnet)' '%s' '%s'",
                    prefix, RN_TEST_CC, RN_TEST_SAN, src, exe);
    if (rc) fprintf(stderr, "\n%s\n", th_err());
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(th_run("'%s'", exe), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), " 1\n"));

    CU_ASSERT_EQUAL_FATAL(run_make("uninstall", prefix), 0);
    CU_ASSERT(dir_is_empty(prefix));
}
