"""tests/python/checks.py — the assertions the Python suites share: each
check counts, a failed one prints one line, and finish() prints the tally
("NAME: N checks, F failed") and exits 1 when any failed."""
import sys

import numpy as np

_n = {"checks": 0, "failed": 0}


def check(ok, what):
    _n["checks"] += 1
    if not ok:
        _n["failed"] += 1
        print("FAIL:", what)


def close(a, b, what, tol=1e-4):
    """max |a - b| <= tol * max(1, max |b|)"""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    err = float(np.abs(a - b).max()) if a.size else 0.0
    scale = max(1.0, float(np.abs(b).max()) if b.size else 0.0)
    check(err <= tol * scale, f"{what}: max |diff| {err:.3g} (scale {scale:.3g})")


def raises(exc, fn, what, text=None):
    """fn() raises exc, whose message contains text (when given)."""
    try:
        fn()
    except exc as e:
        check(text is None or text in str(e), f"{what}: message {str(e)!r} lacks {text!r}")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: nothing raised")


def finish(name):
    print(f"{name}: {_n['checks']} checks, {_n['failed']} failed")
    sys.exit(1 if _n["failed"] else 0)
