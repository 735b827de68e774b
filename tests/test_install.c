/* test_install.c — `make install PREFIX=...` into a scratch prefix: the
 * binary, library, headers, ramnet.pc, a man page for ramtrace and for
 * every command its --help lists, bash completion; a small C program built
 * with `pkg-config --cflags --libs ramnet` against the installed copy runs;
 * `make uninstall` leaves the prefix empty.  The installed binary runs on
 * any x86-64: its code has no instruction beyond the x86-64 baseline (no
 * VEX/EVEX encoding, no BMI, POPCNT, LZCNT, MOVBE) but in the kernels chosen
 * at run time (functions named *_avx2, *_avx512), and a build made with
 * -march=native is refused before anything is built. */
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
#ifndef RN_TEST_OPT
#define RN_TEST_OPT "-O2"
#endif

/* The build directory of the binary under test (make's BUILD). */
static const char *build_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", th_bin());
    return dirname(dir);
}

/* make with this build's BUILD, CC, OPT and SAN (other flags would rebuild
 * it), not the caller make's job server; opt NULL: this build's OPT. */
static int run_make_opt(const char *target, const char *prefix, const char *build, const char *opt)
{
    return th_run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s %s PREFIX='%s' BUILD='%s' CC='%s' OPT='%s' SAN='%s'",
                  target, prefix, build, RN_TEST_CC, opt ? opt : RN_TEST_OPT, RN_TEST_SAN);
}

static int run_make(const char *target, const char *prefix)
{
    return run_make_opt(target, prefix, build_dir(), NULL);
}

/* Does OPT name a CPU (as mk/install.mk's CPU_FLAGS_RE)? */
static int cpu_specific(const char *opt)
{
    return th_run("printf '%%s\n' ' %s' | grep -Eq -- '( )-(march=([^x ]|x86-64-)|mavx|mfma|mf16c|mbmi|mlzcnt|mpopcnt|msse3|mssse3|msse4|mmovbe|mamx)'",
                  opt) == 0;
}

/* Instructions beyond the x86-64 baseline in the code of binary path: a
 * VEX or EVEX encoding (AVX and later: the mnemonics that start with v but
 * for verr/verw, and any ymm/zmm/mask register) or BMI1/2, POPCNT, LZCNT,
 * MOVBE, CRC32 (SSE4.2).  Functions named *_avx2 and *_avx512 are not
 * counted: they are kernels the code reaches only after asking the CPU
 * (core/nn/rn_gemv.c's dispatch), compiled with a target attribute.
 * Returns their count (-1: objdump failed) and leaves a few of them in
 * th_out(). */
static int beyond_baseline(const char *path)
{
    int rc = th_run("objdump -d --no-show-raw-insn '%s' > '%s' && awk -F'\t' '/^[0-9a-f]+ <.*>:$/ { fn = $0 }"
                    " NF >= 2 && fn !~ /_avx(2|512)[.>]/ { split($2, a, \" \"); m = a[1];"
                    " if ((m ~ /^v/ && m !~ /^verr|^verw/) || $2 ~ /%%[yz]mm|%%k[0-7]/ ||"
                    " m ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|popcnt|lzcnt|movbe)$|^crc32/)"
                    " { n++; if (n <= 5) print } } END { print n + 0 }' '%s'",
                    path, th_path("objdump.txt"), th_path("objdump.txt"));
    if (rc) return -1;
    const char *last = strrchr(th_out(), '\n');
    while (last && last > th_out() && last[-1] != '\n') last--;
    return last ? atoi(last) : -1;
}

TH_TEST(test_install_portable, "make install ships a baseline x86-64 binary; a -march=native build is refused")
{
    char prefix[4096], p[4096], scratch[4096];
    snprintf(prefix, sizeof prefix, "%s", th_path("prefix-cpu"));
    if (cpu_specific(RN_TEST_OPT)) {
        /* this build names a CPU (make test-portable's native run): refused */
        CU_ASSERT_EQUAL(run_make("install", prefix), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "an installed binary must run on any x86-64"));
        snprintf(p, sizeof p, "%s/bin/ramtrace", prefix);
        CU_ASSERT(!th_file_exists(p));
        return;
    }
    /* the binary under test, built like the one install ships: baseline */
    int n = beyond_baseline(th_bin());
    if (n) fprintf(stderr, "\n  %s: %d instructions beyond x86-64, e.g.\n%s", th_bin(), n, th_out());
    CU_ASSERT_EQUAL(n, 0);
    /* a check that sees them where they are: the same code built for this
     * CPU (one object, compiled here) */
    char obj[4096];
    snprintf(obj, sizeof obj, "%s", th_path("native_pdma.o"));
    if (th_run("%s -std=c11 -O2 -march=haswell -Icore -c core/nn/rn_pdma.c -o '%s'", RN_TEST_CC, obj) == 0)
        CU_ASSERT(beyond_baseline(obj) > 0);
    /* a build dir made with -march=native: refused before anything is built */
    snprintf(scratch, sizeof scratch, "%s", th_path("native-build"));
    CU_ASSERT_EQUAL(run_make_opt("install", prefix, scratch, "-O2 -march=native"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "is built with -march=native"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "an installed binary must run on any x86-64"));
    snprintf(p, sizeof p, "%s/bin/ramtrace", prefix);
    CU_ASSERT(!th_file_exists(p));
    snprintf(p, sizeof p, "%s/core", scratch);
    CU_ASSERT(!th_file_exists(p)); /* nothing compiled */
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
    if (cpu_specific(RN_TEST_OPT)) return; /* not installable (test_install_portable) */
    CU_ASSERT_EQUAL_FATAL(run_make("install", prefix), 0);

    const char *files[] = { "bin/ramtrace", "lib/libramnet.a", "lib/libramnet.so", "include/ramnet/ramnet_api.h",
                            "include/ramnet/rn_model.h",
                            "include/ramnet/viz_trace.h", "lib/pkgconfig/ramnet.pc",
                            "share/man/man1/ramtrace.1", "share/bash-completion/completions/ramtrace" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", prefix, files[i]);
        CU_ASSERT(th_file_exists(p));
    }

    /* the installed binary: x86-64 baseline code only */
    snprintf(p, sizeof p, "%s/bin/ramtrace", prefix);
    int nb = beyond_baseline(p);
    if (nb) fprintf(stderr, "\n  %s: %d instructions beyond x86-64, e.g.\n%s", p, nb, th_out());
    CU_ASSERT_EQUAL(nb, 0);

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

    /* the Python package, from its installed directory (PYTHONPATH stands
     * for the system's site directory of a real prefix), loads the
     * installed libramnet.so and runs the sample model */
    rc = th_run("cd / && PYTHONPATH=\"$(ls -d '%s'/lib/python3*/dist-packages)\" /usr/bin/python3 -c '"
                "import ramtrace, ramtrace._lib as L; m = ramtrace.load(\"%s/samples/kjv.bin\"); "
                "print(m(m.to_tokens(\"In\")).shape, L.lib()._name)'", prefix, getenv("PWD"));
    if (rc) fprintf(stderr, "\n%s\n", th_err());
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "(3, 257)"));
    snprintf(p, sizeof p, "%s/lib/libramnet.so", prefix);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), p));

    CU_ASSERT_EQUAL_FATAL(run_make("uninstall", prefix), 0);
    CU_ASSERT(dir_is_empty(prefix));
}
