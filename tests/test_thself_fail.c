/* test_thself_fail.c — a suite that fails on purpose, registered only with
 * TH_SELFTEST=1 (tests/th_main.c): tests/test_runner.c runs it, then the
 * passing suite thself_pass, in a child runner and checks that the summary
 * and the exit status count this failure. */
#include "th.h"

TH_TEST(test_thself_fails, "fails on purpose (TH_SELFTEST only)")
{
    CU_FAIL("deliberate failure");
}

TH_TEST(test_thself_passes_too, "passes (TH_SELFTEST only)")
{
    CU_PASS("a passing test beside the failing one");
}
