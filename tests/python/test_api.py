"""tests/python/test_api.py — the Python package against the library and
the library against an independent PyTorch forward (run by
tests/test_python.c with Debian's python3; PYTHONPATH=python, RAMTRACE_BIN
set).  Prints one line per failed check and "python api: N checks, F failed".
"""
import os
import subprocess
import tempfile

import numpy as np

import ramtrace
from checks import check, close, finish, raises
from ramtrace import torch as rt

# the samples: the library's logits against the PyTorch module's
m = ramtrace.load("samples/kjv.bin")
toks = m.to_tokens(open("data/kjv.txt", encoding="utf-8").read()[:300])
check(m.to_string(toks[1:]) == open("data/kjv.txt", encoding="utf-8").read()[:300], "kjv: tokens round trip")
close(m(toks), rt.from_model(m)(toks).detach().numpy(), "kjv.bin: library vs torch")
close(m(toks, chunk=7), m(toks), "kjv.bin: chunk 7 vs 256")
q = ramtrace.load("samples/mqar.bin")
qt = np.random.default_rng(1).integers(0, q.cfg["vocab_size"], 96)
close(q(qt), rt.from_model(q)(qt).detach().numpy(), "mqar.bin: library vs torch")

# random configs with decisive addresses (q/k weights of std 0.3), written by
# write_safetensors, read back by the library
rng = np.random.default_rng(7)
configs = [
    dict(vocab_size=50, d_model=24, n_layers=2, n_heads=3, d_p=4, order=3, d_v=5, top_k=4, d_ff=40, gamma=1.0,
         tau=1.0, eps=1e-6, norm_eps=1e-5, tie_embeddings=0, cape_masks="5,2", tokenizer="ids"),
    dict(vocab_size=257, d_model=16, n_layers=3, n_heads=2, d_p=8, order=2, d_v=8, top_k=8, d_ff=32, gamma=0.5,
         tau=0.7, eps=1e-3, norm_eps=1e-5, tie_embeddings=1, cape_masks="3,0,1", tokenizer="bytes"),
    dict(vocab_size=40, d_model=12, n_layers=1, n_heads=4, d_p=16, order=1, d_v=3, top_k=2, d_ff=20, gamma=2.0,
         tau=1.3, eps=0.0, norm_eps=1e-6, tie_embeddings=0, cape_masks="15", tokenizer="ids"),
    dict(vocab_size=64, d_model=8, n_layers=2, n_heads=1, d_p=3, order=2, d_v=4, top_k=1, d_ff=16, gamma=0.0,
         tau=1.0, eps=1e-6, norm_eps=1e-5, tie_embeddings=1, cape_masks="0,1", tokenizer="ids"),
]
with tempfile.TemporaryDirectory() as tmp:
    for i, c in enumerate(configs):
        net = rt.RAMNet(c)
        tensors = {}
        for name, p in net.state_dict().items():
            std = 0.3 if ("q_proj" in name or "k_proj" in name) else 0.2
            if name.endswith("norm.weight"):
                tensors[name] = 1 + 0.1 * rng.standard_normal(p.shape)
            else:
                tensors[name] = std * rng.standard_normal(p.shape)
        path = os.path.join(tmp, f"r{i}.safetensors")
        rt.write_safetensors(path, c, tensors)
        lm = ramtrace.load(path)
        tt = rng.integers(0, c["vocab_size"], 50)
        ref = rt.load(path)(tt).detach().numpy()
        close(lm(tt), ref, f"random config {i}: library vs torch")
        close(lm(tt, chunk=1), ref, f"random config {i}: chunk 1 (the step's path) vs torch")
        # the library's own model file of the same weights agrees too
        bin_path = os.path.join(tmp, f"r{i}.bin")
        r = subprocess.run([os.environ.get("RAMTRACE_BIN", "./ramtrace"), "convert", path, bin_path],
                           capture_output=True)
        check(r.returncode == 0, f"random config {i}: convert: {r.stderr!r}")
        close(rt.load(bin_path)(tt).detach().numpy(), ref, f"random config {i}: model.bin vs safetensors")
        # 16-bit storage: this package's widening of BF16/F16 tensors equals the library's, bit for bit
        for st in ("bf16", "fp16"):
            p16, p32 = os.path.join(tmp, f"r{i}-{st}.safetensors"), os.path.join(tmp, f"r{i}-{st}-32.safetensors")
            r = subprocess.run([os.environ.get("RAMTRACE_BIN", "./ramtrace"), "convert", path, p16, "--storage", st],
                               capture_output=True)
            r2 = subprocess.run([os.environ.get("RAMTRACE_BIN", "./ramtrace"), "convert", p16, p32, "--storage", "fp32"],
                                capture_output=True)
            check(r.returncode == 0 and r2.returncode == 0, f"random config {i}: convert --storage {st}: {r.stderr!r}")
            t16, t32 = rt.read_safetensors(p16)[1], rt.read_safetensors(p32)[1]
            check(sorted(t16) == sorted(t32) and all(t16[k].dtype == np.float32 and
                                                     np.array_equal(t16[k].view(np.uint32), t32[k].view(np.uint32))
                                                     for k in t32), f"random config {i}: {st} tensors widened as the library does")
        lm.close()

    # bad input: every error a ramtrace.Error (or TypeError/ValueError for Python types)
    raises(ramtrace.Error, lambda: ramtrace.load(os.path.join(tmp, "missing.bin")), "missing file", "missing.bin")
    bad = os.path.join(tmp, "bad.bin")
    with open(bad, "wb") as f:
        f.write(b"not a model at all")
    raises(ramtrace.Error, lambda: ramtrace.load(bad), "corrupt file", "bad.bin")
    raises(ValueError, lambda: rt.read_safetensors(bad), "corrupt safetensors")
raises(TypeError, lambda: m.to_tokens(5), "to_tokens(int)")
raises(TypeError, lambda: m([0.5, 1.5]), "float tokens")
raises(ValueError, lambda: m(np.zeros((2, 2), dtype=int)), "2-D tokens")
raises(ValueError, lambda: m([]), "no tokens")
raises(ramtrace.Error, lambda: m([0, 99999]), "token outside the vocabulary", "outside the vocabulary")
raises(ramtrace.Error, lambda: m.to_string([300]), "detokenize outside the vocabulary", "outside the vocabulary")
raises(ValueError, lambda: m([1, 2], chunk=-1), "negative chunk")
m.close()
raises(ramtrace.Error, lambda: m([1]), "closed model", "closed")
q.close()

# hooks and the cache, checked against computations from the weights
m = ramtrace.load("samples/kjv.bin")
toks = m.to_tokens(open("data/kjv.txt", encoding="utf-8").read()[:200])
plain = m(toks)
lg, cache = m.run_with_cache(toks, chunk=64)
close(lg, plain, "run_with_cache: logits as the plain run's")
L, P = m.cfg["n_layers"], m.params
check(len(cache) == len(m.hook_names()) == 11 * L + 1, "run_with_cache: every hook point")


def rms(x, g):
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + m.cfg["norm_eps"]) * g


for l in range(L):
    b = f"blocks.{l}."
    if l + 1 < L:
        check(np.array_equal(cache[b + "hook_resid_post"], cache[f"blocks.{l + 1}.hook_resid_pre"]),
              f"layer {l}: resid_post is the next resid_pre")
    h = rms(cache[b + "hook_resid_pre"], P[f"layers.{l}.attn_norm.weight"])
    close(cache[b + "attn.hook_q"].reshape(len(toks), -1), h @ P[f"layers.{l}.attn.q_proj.weight"].T,
          f"layer {l}: q = norm(resid_pre) Wq")
    o = cache[b + "attn.hook_head_out"].reshape(len(toks), -1)
    close(cache[b + "hook_resid_mid"], cache[b + "hook_resid_pre"] + o @ P[f"layers.{l}.attn.o_proj.weight"].T,
          f"layer {l}: resid_mid = resid_pre + o Wo")
    close(cache[b + "hook_resid_post"], cache[b + "hook_resid_mid"] + cache[b + "hook_mlp_out"],
          f"layer {l}: resid_post = resid_mid + mlp_out")
    slots, w = cache[b + "attn.hook_addr_read"]
    check(slots.shape == w.shape == (len(toks), m.cfg["n_heads"], m.cfg["top_k"]) and (np.diff(w, axis=-1) <= 0).all(),
          f"layer {l}: read addresses [T, H, K], weights by rank")
fin = cache["ln_final.hook_normalized"]
close(fin, rms(cache[f"blocks.{L - 1}.hook_resid_post"], P["norm.weight"]), "ln_final = norm(last resid_post)")
close(fin @ P["lm_head.weight"].T, plain, "logits = ln_final W_head")
# the addresses against the PyTorch module's decoder (written independently)
import torch as _t
net = rt.from_model(m)
with _t.no_grad():
    q = _t.from_numpy(cache["blocks.1.attn.hook_q"].astype(np.float64))
    ref_slots, ref_w = net.layers[1].attn.addresses(q, net.layers[1].attn.q_alpha)
check(np.array_equal(cache["blocks.1.attn.hook_addr_read"][0], ref_slots.numpy()), "layer 1: read slots = torch's")
close(cache["blocks.1.attn.hook_addr_read"][1], ref_w.numpy(), "layer 1: read weights = torch's", tol=1e-5)
# a filter caches only what it names
_, few = m.run_with_cache(toks, names=lambda n: n.endswith("hook_v"))
check(sorted(few) == [f"blocks.{l}.attn.hook_v" for l in range(L)], "names filter")
# a hook that zeroes a head's output is the intervention ablate-head, bit for bit
def zero_head(a, name):
    a[:, 2, :] = 0


hooked = m.run_with_hooks(toks, fwd_hooks=[("blocks.1.attn.hook_head_out", zero_head)])
check(np.array_equal(hooked, m.run(toks, intervene=["ablate-head 1.2"])[0]), "hook ablation == ablate-head 1.2")
check(np.abs(hooked - plain).max() > 1e-3, "the ablation changes the logits")
# a hook may return a new array; slots are offered to three-argument hooks
seen = []
m.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_addr_write", lambda a, n, s: seen.append(s.shape))])
check(seen and seen[0][1:] == (m.cfg["n_heads"], m.cfg["top_k"]), "address hooks see the slots")
doubled = m.run_with_hooks(toks, fwd_hooks=[("blocks.0.hook_mlp_out", lambda a, n: 0 * a)])
check(np.abs(doubled - plain).max() > 1e-3, "a returned array replaces the activation")


def boom(a, name):
    raise RuntimeError("boom from a hook")


raises(RuntimeError, lambda: m.run_with_hooks(toks, fwd_hooks=[("blocks.0.hook_resid_pre", boom)]), "a hook raises",
       "boom")
check(np.abs(m(toks) - plain).max() == 0, "the model runs on after a failed hook")
raises(ValueError, lambda: m.run_with_cache(toks, names=["blocks.99.hook_q"]), "unknown hook name")
raises(TypeError, lambda: m.run_with_hooks(toks, fwd_hooks=["x"]), "fwd_hooks not pairs")
raises(ramtrace.Error, lambda: m.run(toks, intervene=["ablate-slots x"]), "bad intervention spec", "ablate-slots")
raises(TypeError, lambda: m.run(toks, intervene=[5]), "intervention not a string")
m.close()

# traces as DataFrames: the same numbers by SQL, by the packed blocks and by the command
binp = os.environ.get("RAMTRACE_BIN", "./ramtrace")
with tempfile.TemporaryDirectory() as tmp:
    inp, db = os.path.join(tmp, "in.txt"), os.path.join(tmp, "t.db")
    with open(inp, "w", encoding="utf-8") as f:
        f.write(open("data/kjv.txt", encoding="utf-8").read()[:250])
    r = subprocess.run([binp, "trace", "samples/kjv.bin", inp, "-o", db, "-q"], capture_output=True)
    check(r.returncode == 0, f"trace: {r.stderr!r}")
    t = ramtrace.open_trace(db)
    check(len(t.runs()) == 1, "runs: one run")
    by_sql = t.sql("SELECT count(*) AS n FROM reads WHERE layer = 1 AND head = 2")["n"][0]
    ev = t.events(layer=1, head=2, op="r")
    check(by_sql == len(ev) and by_sql > 0, f"events: {len(ev)} rows, SQL counts {by_sql}")
    check(len(t.events(layer=1, head=2, pos=slice(10, 20))) == 10 * 2 * 8, "events: a position slice")
    st = t.stats()
    r = subprocess.run([binp, "stats", db, "-f", "csv"], capture_output=True, text=True)
    import io
    import pandas as pd
    cli = pd.read_csv(io.StringIO(r.stdout))
    check(st.equals(cli), "stats: the command's numbers")
    check(int(st["reads"].sum()) == int(t.sql("SELECT count(*) AS n FROM reads")["n"][0]), "stats: reads = SQL")
    sim = t.simulate(policy="lru", capacity=[16, 64])
    check(list(sim["capacity"]) == [16, 64] and (sim["hits"] + sim["misses"] == sim["accesses"]).all(),
          "simulate: a row per capacity")
    raises(ramtrace.Error, lambda: t.sql("SELECT * FROM nope"), "sql error", "no such table")
    raises(ValueError, lambda: t.events(layer=9), "events: unknown layer", "does not exist")
    raises(ValueError, lambda: t.events(op="x"), "events: bad op")
    raises(ramtrace.Error, lambda: t.stats(run=9), "stats: unknown run", "no run 9")
    raises(ValueError, lambda: t.simulate(capacity=[0]), "simulate: capacity 0")
    raises(ramtrace.Error, lambda: ramtrace.open_trace(inp), "a text file is not a trace", "not a trace")
    raises(ramtrace.Error, lambda: ramtrace.open_trace(os.path.join(tmp, "none.db")), "no file", "no such")

finish("python api")
