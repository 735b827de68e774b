"""bench/bench_python.py — the Python API's cost over the C forward
(`make bench`; PYTHONPATH=python, Debian's python3): 4,096 tokens of the
KJV sample through ramtrace.load(...)(tokens) (the C prefill behind one
call), run_with_cache with every hook point cached, with no hook at all
(run()), and no-op Python hooks: at every point of every layer (once per
prefill chunk each, the slot state aside) and at the slot state of every
layer (once per position): the time per hook call over run().  Medians
of 5, ratios in one run."""
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
calls = [0]


def count(a, name):
    calls[0] += 1


chunked = [(n, count) for n in m.hook_names() if "slot_state" not in n]
per_pos = [(n, count) for n in m.hook_names() if "slot_state" in n]
hooked = median_time(lambda: m.run_with_hooks(toks, fwd_hooks=chunked))
calls[0] = 0
m.run_with_hooks(toks, fwd_hooks=chunked)
n_chunked = calls[0]
state_hooked = median_time(lambda: m.run_with_hooks(toks, fwd_hooks=per_pos))
calls[0] = 0
m.run_with_hooks(toks, fwd_hooks=per_pos)
n_pos = calls[0]
print(f"{T} tokens, samples/kjv.bin, chunks of 256: C forward {plain * 1e3:.1f} ms")
print(f"  run() without hooks:              {nohook * 1e3:.1f} ms = {nohook / plain:.3f}x")
print(f"  run_with_cache (every point):     {cached * 1e3:.1f} ms = {cached / plain:.3f}x")
print(f"  a Python hook at every chunk point: {hooked * 1e3:.1f} ms, {n_chunked} calls, "
      f"{(hooked - nohook) / n_chunked * 1e6:.1f} us per call over run()")
print(f"  a Python hook at every position's slot state: {state_hooked * 1e3:.1f} ms, {n_pos} calls, "
      f"{(state_hooked - nohook) / n_pos * 1e6:.1f} us per call over run() (the layer scans serial)")
