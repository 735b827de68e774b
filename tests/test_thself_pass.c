/* test_thself_pass.c — a passing suite run after thself_fail, registered
 * only with TH_SELFTEST=1 (see tests/test_thself_fail.c). */
#include "th.h"

TH_TEST(test_thself_pass, "passes (TH_SELFTEST only)")
{
    CU_PASS("the last suite run passes");
}
