/* test_runner.c — the test runner itself (tests/th_main.c): a filter that
 * matches several suites reports and exits with all of them, not the last
 * one; a filter that matches nothing is an error.  It runs this very
 * runner in a child, on the suites thself_fail (one failing test, one
 * passing) and thself_pass (passing), which exist only with TH_SELFTEST=1. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "th.h"

/* This process's executable (the runner under test, whatever its build). */
static const char *self_exe(void)
{
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return NULL;
    path[n] = 0;
    return path;
}

TH_TEST(test_runner_total, "test_runner NAME: the summary and the exit status count every suite that ran")
{
    const char *exe = self_exe();
    CU_ASSERT_PTR_NOT_NULL_FATAL(exe);
    /* thself_fail runs first, thself_pass last */
    int rc = th_run("TH_SELFTEST=1 '%s' thself", exe);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "Suite: thself_fail"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "Suite: thself_pass"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "deliberate failure"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\n2 passed, 1 failed\n"));
    /* the passing suite alone passes */
    CU_ASSERT_EQUAL(th_run("TH_SELFTEST=1 '%s' thself_pass", exe), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "\n1 passed, 0 failed\n"));
    /* without TH_SELFTEST the deliberate suites do not exist */
    CU_ASSERT_EQUAL(th_run("env -u TH_SELFTEST '%s' thself", exe), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "no suite matches 'thself'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "0 passed, 0 failed"));
}
