/* th_main.c — the CUnit runner: registers every suite and test (the table
 * is generated from tests/test_*.c by scripts/gen-suites) and runs them in
 * basic mode.  `build/test_runner SUITE` runs only the suites whose name
 * contains SUITE (none: an error); the summary line and the exit status
 * count every suite run.  The suites thself_* fail on purpose, to test
 * that (tests/test_runner.c): they exist only with TH_SELFTEST=1.  Every SQLite connection
 * the tests open themselves gets the `events` module, as one that loaded
 * build/libramtrace_sql.so would (tests/test_sqlext.c checks the extension
 * itself). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <sqlite3.h>

#include "tr_vtab.h"

#include "th.h"
#include "suites.h" /* generated */

/* sqlite3_auto_extension entry: register the events module. */
static int auto_vtab(sqlite3 *db, const char **errmsg, const void *api)
{
    (void)errmsg;
    (void)api;
    return tr_vtab_register(db);
}

int main(int argc, char **argv)
{
    sqlite3_auto_extension((void (*)(void))auto_vtab);
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    for (size_t i = 0; i < sizeof th_suites / sizeof th_suites[0]; i++) {
        const th_suite_def *d = &th_suites[i];
        if (!strncmp(d->name, "thself", 6) && !getenv("TH_SELFTEST")) continue;
        CU_pSuite s = CU_add_suite(d->name, d->fns ? d->fns->init : NULL, d->fns ? d->fns->cleanup : NULL);
        int ok = s != NULL;
        for (const th_case *c = d->cases; ok && c->what; c++) ok = CU_add_test(s, c->what, c->fn) != NULL;
        if (!ok) {
            fprintf(stderr, "registering suite %s failed\n", d->name);
            CU_cleanup_registry();
            return 1;
        }
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    /* CUnit's counters hold one run's results, and every CU_basic_run_suite
     * is a run of its own: add them up over the suites that match. */
    unsigned run = 0, failed = 0, fails = 0;
    if (argc > 1) {
        int ran = 0;
        for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
            if (strstr(s->pName, argv[1])) {
                CU_basic_run_suite(s);
                run += CU_get_number_of_tests_run();
                failed += CU_get_number_of_tests_failed();
                fails += CU_get_number_of_failures() + CU_get_number_of_tests_failed();
                ran++;
            }
        if (!ran) {
            fprintf(stderr, "no suite matches '%s'\n", argv[1]);
            fails++;
        }
    } else {
        CU_basic_run_tests();
        run = CU_get_number_of_tests_run();
        failed = CU_get_number_of_tests_failed();
        fails = CU_get_number_of_failures() + failed;
    }
    CU_cleanup_registry();
    printf("%u passed, %u failed\n", run - failed, failed);
    return fails ? 1 : 0;
}
