"""tests/python/test_patching.py — the slot-state hook and ramtrace.patching
(run by tests/test_python.c with Debian's python3; PYTHONPATH=python,
RAMTRACE_BIN set).  The state is checked against a brute-force replay of
the memory in float64 from the cached addresses and values; its edits
against the interventions they equal and against the replay with the same
edit; the sweeps entry by entry against runs made by hand and against
`ramtrace patch`.  Prints one line per failed check and
"python patching: N checks, F failed"."""
import os
import subprocess
import tempfile

import numpy as np

import ramtrace
from checks import check, finish, raises
from checks import close as close4
from ramtrace import patching


def close(a, b, what, tol=1e-5):
    """close() of checks.py, to 1e-5 unless told."""
    close4(a, b, what, tol)


def replay(c, wslot, ww, v, rslot, edit=None):
    """The memory of one layer in float64, position by position: every head
    writes (S = d·S + w·v, z = d·z + w, d = (1 − w)^γ), edit(p, S, z) may
    change it, then the state of the read slots is taken.  Returns S and z
    of the read slots [T, H, K(, d_v)]."""
    T, H, K = wslot.shape
    M, dv = c["d_p"] ** c["order"], c["d_v"]
    S, z = np.zeros((H, M, dv)), np.full((H, M), 1.0 / M)
    outS, outz = np.empty((T, H, K, dv)), np.empty((T, H, K))
    for p in range(T):
        for h in range(H):
            for j in range(K):
                s, w = wslot[p, h, j], float(ww[p, h, j])
                d = (1 - w) ** c["gamma"]
                S[h, s] = d * S[h, s] + w * v[p, h]
                z[h, s] = d * z[h, s] + w
        if edit:
            edit(p, S, z)
        for h in range(H):
            outS[p, h], outz[p, h] = S[h, rslot[p, h]], z[h, rslot[p, h]]
    return outS, outz


m = ramtrace.load("samples/kjv.bin")
c = m.cfg
H, K, dv, M, eps = c["n_heads"], c["top_k"], c["d_v"], c["d_p"] ** c["order"], c["eps"]
toks = m.to_tokens(open("data/kjv.txt", encoding="utf-8").read()[:120])
T = len(toks)
plain = m(toks)

# the state the heads read, against the replay of the cached addresses and values
for l in (0, 2):
    b = f"blocks.{l}.attn."
    lg, cache = m.run_with_cache(toks, names=[b + n for n in ("hook_addr_write", "hook_addr_read", "hook_v",
                                                              "hook_slot_state", "hook_head_out")])
    check(np.array_equal(lg, plain), f"layer {l}: caching the slot state changes no bit of the logits")
    st = cache[b + "hook_slot_state"]
    check(st.S.shape == (T, H, K, dv) and st.z.shape == st.slots.shape == (T, H, K) and
          np.array_equal(st.pos, np.arange(T)), f"layer {l}: slot state shapes")
    rs, rw = cache[b + "hook_addr_read"]
    check(np.array_equal(st.slots, rs), f"layer {l}: the slot state is of the read slots")
    ws, ww = cache[b + "hook_addr_write"]
    S, z = replay(c, ws, ww, cache[b + "hook_v"].astype(np.float64), rs)
    close(st.S, S, f"layer {l}: S of the read slots = the float64 replay")
    close(st.z, z, f"layer {l}: z of the read slots = the float64 replay")
    o = (rw[..., None] * st.S / (st.z[..., None] + eps)).sum(2)
    close(o, cache[b + "hook_head_out"], f"layer {l}: head_out = sum_j r S / (z + eps) of the slot state")
# a cache gathers the slot state a chunk at a time: the same bits as taking it
# position by position (a hook forces that), chunk boundaries included
b = "blocks.1.attn.hook_slot_state"
rows = m.run_with_cache(toks, names=[b], chunk=7)[1][b]
_, pp = m.run(toks, fwd_hooks=[(b, lambda s, n: None)], names=[b], chunk=7)
check(all(np.array_equal(x, y) for x, y in zip(rows, pp[b])), "slot state in chunks of 7: gathered = position by position")
close(rows.S, m.run_with_cache(toks, names=[b])[1][b].S, "slot state: chunks of 7 vs 256")
# the state after the last token, read whole, holds the last read's rows
Sl, zl = m.head_state(toks, 2, 1)
check(np.array_equal(Sl[st.slots[-1, 1]], st.S[-1, 1]) and np.array_equal(zl[st.slots[-1, 1]], st.z[-1, 1]),
      "head_state after the last token = the last position's slot state")
check(Sl.shape == (M, dv) and zl.shape == (M,), "head_state shapes")

# an unedited hook leaves every bit; with an intervention too
noop = [(f"blocks.{l}.attn.hook_slot_state", lambda s, n: None) for l in range(c["n_layers"])]
check(np.array_equal(m.run_with_hooks(toks, fwd_hooks=noop), plain), "a no-op slot-state hook changes no bit")
spec = "ablate-slots 1.2:0-40,77@30-"
ablated = m.run(toks, intervene=[spec])[0]
check(np.array_equal(m.run_with_hooks(toks, fwd_hooks=noop, intervene=[spec]), ablated),
      "a no-op slot-state hook with ablate-slots changes no bit")
check(np.abs(ablated - plain).max() > 1e-3, "ablate-slots changes the logits")


# an edit that resets the read slots of a set is ablate-slots from t0 on, bit for bit
gone = set(range(41)) | {77}


def reset(state, name):
    if state.pos >= 30:
        for j in range(K):
            if int(state.slots[2, j]) in gone:
                state.S[2, j] = 0
                state.z[2, j] = np.float32(1.0 / M)


check(np.array_equal(m.run_with_hooks(toks, fwd_hooks=[("blocks.1.attn.hook_slot_state", reset)]), ablated),
      "resetting read slots in a hook = ablate-slots 1.2:0-40,77@30-")

# a slot-state hook on one layer: only that layer scans position by
# position (ramnet_run_layers).  Its results are those of the run with every
# layer's scan serial (no-op hooks on the others), bit for bit, and a layer
# without the hook gives the hookless run's bits
posts = [f"blocks.{l}.hook_resid_post" for l in range(c["n_layers"])]
_, none = m.run_with_cache(toks, names=posts)
lg1, one = m.run(toks, fwd_hooks=[("blocks.1.attn.hook_slot_state", reset)], names=posts)
serial = [(f"blocks.{l}.attn.hook_slot_state", lambda s, n: None) for l in range(c["n_layers"]) if l != 1]
lga, alls = m.run(toks, fwd_hooks=[("blocks.1.attn.hook_slot_state", reset)] + serial, names=posts)
check(np.array_equal(lg1, lga) and all(np.array_equal(one[n], alls[n]) for n in posts),
      "a hook on layer 1 alone: every layer's bits as with every layer serial")
check(np.array_equal(one[posts[0]], none[posts[0]]), "a hook on layer 1 alone: layer 0's output is the hookless run's")
check(not np.array_equal(one[posts[1]], none[posts[1]]), "a hook on layer 1 alone: its edit changes layer 1")
_, noop1 = m.run(toks, fwd_hooks=[("blocks.1.attn.hook_slot_state", lambda s, n: None)], names=posts)
check(all(np.array_equal(noop1[n], none[n]) for n in posts), "a no-op hook on layer 1: every layer's output unchanged")

# a stateful edit: slot rank 0 of head 3.3 doubled at position 40 lasts (the
# slot is read again later), and equals the replay with the same edit
l, h, p0 = 3, 3, 40
b = f"blocks.{l}.attn."
names = [b + n for n in ("hook_addr_write", "hook_addr_read", "hook_v", "hook_head_out", "hook_slot_state")]
_, base = m.run_with_cache(toks, names=names)
s0 = int(base[b + "hook_addr_read"][0][p0, h, 0])


def double(state, name):
    if state.pos == p0:
        state.S[h, 0] *= 2


lg, ed = m.run(toks, fwd_hooks=[(b + "hook_slot_state", double)], names=names)
later = [p for p in range(p0 + 1, T) if s0 in base[b + "hook_addr_read"][0][p, h]]
check(len(later) > 0, f"slot {s0} of head {l}.{h} is read again after position {p0}")


def edit(p, S, z):
    if p == p0:
        S[h, s0] *= 2


ws, ww = ed[b + "hook_addr_write"]
rs, rw = ed[b + "hook_addr_read"]
S, z = replay(c, ws, ww, ed[b + "hook_v"].astype(np.float64), rs, edit)
close(ed[b + "hook_slot_state"].S, S, "edited run: the slot state = the replay with the same edit")
o = (rw[..., None] * S / (z[..., None] + eps)).sum(2)
close(ed[b + "hook_head_out"], o, "edited run: head_out = the replay's read")
diff = np.abs(ed[b + "hook_head_out"][later, h] - base[b + "hook_head_out"][later, h]).max()
check(diff > 1e-4, f"the edit lasts: a later read of slot {s0} differs by {diff:.3g}")
check(np.array_equal(ed[b + "hook_head_out"][:p0], base[b + "hook_head_out"][:p0]), "positions before the edit: same bits")

raises(TypeError, lambda: m.run_with_hooks(toks, fwd_hooks=[(b + "hook_slot_state", lambda s, n: s.S)]),
       "a slot-state hook returning something", "in place")
raises(RuntimeError, lambda: m.run_with_hooks(toks, fwd_hooks=[(b + "hook_slot_state",
                                                               lambda s, n: (_ for _ in ()).throw(RuntimeError("x")))]),
       "a slot-state hook that raises")
check(np.array_equal(m(toks), plain), "the model runs on after a failed slot-state hook")
raises(ramtrace.Error, lambda: m.head_state(toks, 9, 0), "head_state: no such layer", "4 layers")
raises(TypeError, lambda: m.head_state(toks, 1.5, 0), "head_state: a float layer")

# the sweeps, entry by entry against runs made by hand and against `ramtrace patch`
ct = open("samples/prompts/kjv-patch-clean.txt", encoding="utf-8").read()
xt = open("samples/prompts/kjv-patch-corrupt.txt", encoding="utf-8").read()
clean, corrupt = m.to_tokens(ct), m.to_tokens(xt)
ans = int(m.to_tokens("o")[-1])
per_head = patching.heads(m, clean, corrupt, answer=ans)
raw = patching.heads(m, clean, corrupt, answer=ans, raw=True)
check(per_head.shape == (c["n_layers"], H), "heads: [L, H]")
lc, lx = m(clean)[-1], m(corrupt)[-1]
x = lx.astype(np.float64)
x[ans] = -np.inf
wrong = int(np.argmax(x))
vc, vx = float(lc[ans]) - float(lc[wrong]), float(lx[ans]) - float(lx[wrong])
close(per_head, (raw - vx) / (vc - vx), "heads: recovered = (patched - corrupted) / (clean - corrupted)", tol=1e-12)
binp = os.environ.get("RAMTRACE_BIN", "./ramtrace")
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "clean.txt")
    with open(src, "w", encoding="utf-8") as f:
        f.write(ct)
    for (l, h) in ((1, 3), (3, 3), (0, 2)):
        lg = m.run(corrupt, intervene=[f"patch-head {l}.{h} from {src}"])[0][-1]
        check(float(lg[ans]) - float(lg[wrong]) == raw[l, h],
              f"heads: entry {l}.{h} = the run with patch-head {l}.{h}, bit for bit")
    r = subprocess.run([binp, "patch", "samples/kjv.bin", "samples/prompts/kjv-patch-clean.txt",
                        "samples/prompts/kjv-patch-corrupt.txt", "--answer", "o", "-f", "csv"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"ramtrace patch: {r.stderr!r}")
    rows = [ln.split(",") for ln in r.stdout.splitlines()[1:]]
    cli_heads = np.array([float(x[6]) for x in rows if x[2] == ""]).reshape(per_head.shape)
    close(per_head, cli_heads, "heads = ramtrace patch's heads", tol=1e-4)
    per_slot = patching.slots(m, clean, corrupt, answer=ans)
    cli_slots = [x for x in rows if x[2] != ""]
    check(len(per_slot) == len(cli_slots) == 3 * K, "slots: 3 heads x K rows, as ramtrace patch")
    check(all((int(a[0]), int(a[1]), int(a[2]), int(a[3])) == (int(s["layer"]), int(s["head"]), int(s["slot"]),
                                                                 int(s["rank"])) for a, s in zip(cli_slots, per_slot)),
          "slots: the same heads, slots and ranks as ramtrace patch")
    close(per_slot["value"], [float(a[6]) for a in cli_slots], "slots = ramtrace patch's slot rows", tol=1e-4)
    close(per_slot["r"], [float(a[4]) for a in cli_slots], "slots: read weights", tol=1e-3)
    # the figure, drawn by the library's code
    png = os.path.join(tmp, "p.png")
    patching.plot(m, png, per_head, per_slot, answer=ans)
    check(open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "plot: a PNG")
    raises(ValueError, lambda: patching.plot(m, png, per_head[:2]), "plot: wrong shape")
    raises(ramtrace.Error, lambda: patching.plot(m, os.path.join(tmp, "p.txt"), per_head), "plot: bad suffix")

# a slot row = a run with the hook written out by hand
l, h, j = int(per_slot[0]["layer"]), int(per_slot[0]["head"]), int(per_slot[0]["rank"])
Sc, zc = m.head_state(clean, l, h)


def restore(state, name):
    if state.pos == len(corrupt) - 1:
        s = state.slots[h, j]
        state.S[h, j], state.z[h, j] = Sc[s], zc[s]


lg = m.run_with_hooks(corrupt, fwd_hooks=[(f"blocks.{l}.attn.hook_slot_state", restore)])[-1]
check((float(lg[ans]) - float(lg[wrong]) - vx) / (vc - vx) == per_slot[0]["value"], "slots: row 0 = its run by hand")
# residual positions: a hand-made hook per entry; unchanged tokens recover nothing at layer 0
cols = [0, 5, len(clean) - 1] + [int(p) for p in np.nonzero(clean != corrupt)[0][:2]]
per_pos = patching.resid(m, clean, corrupt, answer=ans, positions=cols)
check(per_pos.shape == (c["n_layers"], len(clean)) and np.isnan(per_pos[:, 1]).all(), "resid: [L, T], NaN off the columns")
cache = m.run_with_cache(clean, names=[f"blocks.{l}.hook_resid_pre" for l in range(c["n_layers"])])[1]
for l in range(c["n_layers"]):
    for p in cols:
        def put(a, name, l=l, p=p):
            a[p] = cache[f"blocks.{l}.hook_resid_pre"][p]
        lg = m.run_with_hooks(corrupt, fwd_hooks=[(f"blocks.{l}.hook_resid_pre", put)])[-1]
        check((float(lg[ans]) - float(lg[wrong]) - vx) / (vc - vx) == per_pos[l, p], f"resid: entry ({l}, {p}) by hand")
same = [p for p in cols if clean[p] == corrupt[p]]
check(len(same) > 0 and (per_pos[0, same] == 0).all(), "resid: layer 0 at an unchanged token recovers 0")
diffp = [p for p in cols if clean[p] != corrupt[p]]
check(len(diffp) > 0 and (np.abs(per_pos[0, diffp]) > 0).all(), "resid: layer 0 at a changed token moves the metric")
last = patching.resid(m, clean, corrupt, answer=ans, point="resid_post", positions=[len(clean) - 1])
check(abs(last[-1, -1] - 1) < 1e-6, "resid: the last layer's output at the last position recovers all")
# metrics and bad input
pr = patching.heads(m, clean, corrupt, answer=ans, metric="prob", raw=True)
lo = patching.heads(m, clean, corrupt, answer=ans, metric="loss", raw=True)
close(lo, -np.log(pr), "loss = -log prob", tol=1e-9)
fn = patching.heads(m, clean, corrupt, metric=lambda row: float(row[ans]) - float(row[wrong]), raw=True)
check(np.array_equal(fn, raw), "a metric function = logit-diff")
raises(ValueError, lambda: patching.heads(m, clean, corrupt[:-1], answer=ans), "inputs of two lengths", "same length")
raises(ValueError, lambda: patching.heads(m, clean, corrupt, answer=99999), "answer outside the vocabulary")
raises(ValueError, lambda: patching.heads(m, clean, corrupt, answer=ans, metric="kl"), "unknown metric")
raises(ValueError, lambda: patching.resid(m, clean, corrupt, answer=ans, point="q"), "resid: unknown point")
raises(ValueError, lambda: patching.resid(m, clean, corrupt, answer=ans, positions=[9999]), "resid: position")
raises(ValueError, lambda: patching.slots(m, clean, corrupt, answer=ans, which=[(9, 0)]), "slots: unknown head")
m.close()
finish("python patching")
