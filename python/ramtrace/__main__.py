"""python3 python/ramtrace TRACE.db [...] (or python3 -m ramtrace): load one
run's events of a trace and print their count and the load rate; see
ramtrace.events."""
import os
import sys

if __package__ in (None, ""):
    # run as a directory (python3 python/ramtrace): its parent holds the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import numpy  # noqa: F401  (the reader needs it: say which interpreter has it)
except ImportError:
    print(f"ramtrace: numpy is not installed for {sys.executable}; scripts/setup installs it for /usr/bin/python3"
          " (Debian python3-numpy): run this module with /usr/bin/python3, or install numpy for this one",
          file=sys.stderr)
    sys.exit(2)

from ramtrace.events import main  # noqa: E402

sys.exit(main())
