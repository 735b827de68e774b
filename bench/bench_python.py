"""bench/bench_python.py — the Python API's cost over the C forward
(`make bench`; PYTHONPATH=python, Debian's python3): 4,096 tokens of the
KJV sample through ramtrace.load(...)(tokens) (the C prefill behind one
call), run_with_cache with every hook point cached, with no hook at all
(run()), and a no-op Python hook at every point of every layer: the time
per hook call over the plain run.  Medians of 5, ratios in one run."""
import statistics
import time

import numpy as np

import ramtrace


def median_time(fn, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


m = ramtrace.load("samples/kjv.bin")
toks = m.to_tokens(open("data/kjv.txt", encoding="utf-8").read()[:4095])
T = len(toks)
plain = median_time(lambda: m(toks))
nohook = median_time(lambda: m.run(toks))
cached = median_time(lambda: m.run_with_cache(toks))
noop = [(n, lambda a, name: None) for n in m.hook_names()]
hooked = median_time(lambda: m.run_with_hooks(toks, fwd_hooks=noop))
calls = len(noop) * -(-T // 256)  # every point once per prefill chunk of 256 rows
print(f"{T} tokens, samples/kjv.bin, chunks of 256: C forward {plain * 1e3:.1f} ms")
print(f"  run() without hooks:              {nohook * 1e3:.1f} ms = {nohook / plain:.3f}x")
print(f"  run_with_cache (every point):     {cached * 1e3:.1f} ms = {cached / plain:.3f}x")
print(f"  a no-op hook at every point:      {hooked * 1e3:.1f} ms, {calls} calls, "
      f"{(hooked - nohook) / calls * 1e6:.1f} us per call over run()")
