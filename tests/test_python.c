/* test_python.c — the Python package (python/ramtrace/) in Debian's
 * python3: tests/python/test_api.py loads the samples and random models
 * through libramnet.so and compares their logits with the PyTorch module
 * ramtrace.torch (written from docs/design.md's conventions, not from the
 * C code) within 1e-4, and checks that every bad call is a Python
 * exception with the library's message; tests/python/test_patching.py
 * checks the slot-state hook and ramtrace.patching; the tour notebook runs
 * in a Jupyter kernel.  python3-numpy, python3-pandas, python3-torch,
 * jupyter-nbconvert and python3-ipykernel are installed by scripts/setup:
 * their absence fails the test. */
#include <stdio.h>
#include <string.h>

#include "th.h"

/* Run tests/python/SCRIPT with Debian's python3; it prints ", 0 failed"
 * when every check passed.  OMP_NUM_THREADS fixes the thread count: by
 * default it follows the machine's load (rn_threads.c), and the suites
 * compare runs bit for bit, which holds only when each run's products are
 * split among the same number of threads. */
static void run_suite(const char *script)
{
    int rc = th_run("OMP_NUM_THREADS=2 PYTHONPATH=python RAMTRACE_BIN='%s' /usr/bin/python3 tests/python/%s", th_bin(),
                    script);
    if (rc) fprintf(stderr, "\n%s%s", th_out(), th_err());
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), ", 0 failed"));
    CU_ASSERT_PTR_NULL(strstr(th_err(), "Traceback"));
}

TH_TEST(test_python_api, "python: ramtrace.load runs the model; ramtrace.torch agrees within 1e-4; errors are exceptions")
{
    run_suite("test_api.py");
}

TH_TEST(test_python_patching, "python: hook_slot_state = a float64 replay, its edits = interventions; patching sweeps = runs by hand and ramtrace patch")
{
    run_suite("test_patching.py");
}

/* The tour runs in a real Jupyter kernel (Debian's jupyter-nbconvert and
 * python3-ipykernel, installed by scripts/setup); its cells assert what
 * they show (nbconvert fails on an error), and the executed copy must hold
 * the last cell's line among its outputs. */
TH_TEST(test_python_notebook, "python: docs/notebooks/tour.ipynb executes in a Jupyter kernel with its checks passing")
{
    int rc = th_run("OMP_NUM_THREADS=2 RAMTRACE_BIN='%s' PYDEVD_DISABLE_FILE_VALIDATION=1 jupyter nbconvert --to notebook --execute "
                    "--ExecutePreprocessor.timeout=300 --output-dir '%s' --output nb-tour docs/notebooks/tour.ipynb && "
                    "grep -cF 'every check passed\\n\"' '%s'", /* the line as an output, not as source */
                    th_bin(), th_tmpdir(), th_path("nb-tour.ipynb"));
    if (rc) fprintf(stderr, "\n%s%s", th_out(), th_err());
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "1\n");
}
