"""bench/bench_python.py — the Python API's cost over the C forward
(`make bench`; PYTHONPATH=python, Debian's python3): 4,096 tokens of the
KJV sample through ramtrace.load(...)(tokens) (the C prefill behind one
call), run_with_cache with every hook point cached, with no hook at all
(run()), and no-op Python hooks: at every point of every layer (once per
prefill chunk each, the slot state aside) and at the slot state of every
layer (once per position), and at one layer's slot state (layer 1: only
that layer's scan runs position by position): the time per hook call
over run().  The
variants run in turn, round after round (so a neighbour's load falls on
all of them alike); medians of 7 rounds, ratios in one run."""
import statistics
import time

import ramtrace

m = ramtrace.load("samples/kjv.bin")
toks = m.to_tokens(open("data/kjv.txt", encoding="utf-8").read()[:4095])
T = len(toks)
calls = [0]


def count(a, name):
    calls[0] += 1


chunked = [(n, count) for n in m.hook_names() if "slot_state" not in n]
per_pos = [(n, count) for n in m.hook_names() if "slot_state" in n]
one_layer = [("blocks.1.attn.hook_slot_state", count)]
variants = {
    "plain": lambda: m(toks),
    "run": lambda: m.run(toks),
    "cache": lambda: m.run_with_cache(toks),
    "chunked": lambda: m.run_with_hooks(toks, fwd_hooks=chunked),
    "per_pos": lambda: m.run_with_hooks(toks, fwd_hooks=per_pos),
    "one_layer": lambda: m.run_with_hooks(toks, fwd_hooks=one_layer),
}
n_calls = {}
for k in ("chunked", "per_pos", "one_layer"):
    calls[0] = 0
    variants[k]()
    n_calls[k] = calls[0]
times = {k: [] for k in variants}
for _ in range(7):
    for k, fn in variants.items():
        t0 = time.perf_counter()
        fn()
        times[k].append(time.perf_counter() - t0)
med = {k: statistics.median(v) for k, v in times.items()}
plain, nohook = med["plain"], med["run"]
print(f"{T} tokens, samples/kjv.bin, chunks of 256: C forward {plain * 1e3:.1f} ms")
print(f"  run() without hooks:              {nohook * 1e3:.1f} ms = {nohook / plain:.3f}x")
print(f"  run_with_cache (every point):     {med['cache'] * 1e3:.1f} ms = {med['cache'] / plain:.3f}x")
print(f"  a Python hook at every chunk point: {med['chunked'] * 1e3:.1f} ms, {n_calls['chunked']} calls, "
      f"{(med['chunked'] - nohook) / n_calls['chunked'] * 1e6:.1f} us per call over run()")
print(f"  a Python hook at every position's slot state: {med['per_pos'] * 1e3:.1f} ms, {n_calls['per_pos']} calls, "
      f"{(med['per_pos'] - nohook) / n_calls['per_pos'] * 1e6:.1f} us per call over run() (the layer scans serial)")
print(f"  a Python hook at layer 1's slot state: {med['one_layer'] * 1e3:.1f} ms, {n_calls['one_layer']} calls, "
      f"{(med['one_layer'] - nohook) / n_calls['one_layer'] * 1e6:.1f} us per call over run() (that layer's scan serial)")
