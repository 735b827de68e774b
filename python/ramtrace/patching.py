"""ramtrace.patching — activation-patching sweeps in TransformerLens' style:
run a corrupted input with one piece of a clean run's activations put back,
for every head, every (layer, position) of the residual stream, or every
slot a head reads, and measure how much of the clean-vs-corrupted
difference comes back.

    from ramtrace import patching
    clean, corrupt = m.to_tokens(clean_text), m.to_tokens(corrupt_text)
    ans = int(m.to_tokens("o")[-1])
    per_head = patching.heads(m, clean, corrupt, answer=ans)        # [L, H]
    per_pos = patching.resid(m, clean, corrupt, answer=ans)         # [L, T]
    per_slot = patching.slots(m, clean, corrupt, answer=ans)        # rows: layer, head, rank, slot, r, value
    patching.plot(m, "patching.png", per_head, per_slot, answer=ans)  # ramtrace patch's figure

The metric is `ramtrace patch`'s (analysis/an_patch.h), of the last
position's logits: "logit-diff" logit(answer) - logit(wrong) (wrong: the
corrupted run's most likely token other than the answer unless given),
"prob" softmax(logits)[answer], "loss" -log of it, or any function of the
last row of logits -> float.  Each entry is the fraction it recovers,
(patched - corrupted) / (clean - corrupted) (NaN when clean and corrupted
agree), or with raw=True the metric itself.  Every run is a plain forward
with hooks (Model.run), so an entry equals the run a user would make by
hand with the same hook.
"""
import ctypes
import math

import numpy as np

from ramtrace._lib import Error, check, lib

METRICS = ("logit-diff", "prob", "loss")


class _Setup:
    """The pair of inputs, the metric, and the clean and corrupted values."""

    def __init__(self, m, clean, corrupt, answer, wrong, metric, chunk):
        self.m, self.chunk = m, chunk
        self.clean, self.corrupt = m._tokens(clean), m._tokens(corrupt)
        if len(self.clean) == 0 or len(self.clean) != len(self.corrupt):
            raise ValueError(f"clean has {len(self.clean)} tokens and corrupt {len(self.corrupt)}: patching needs "
                             "two non-empty inputs of the same length")
        V = m.cfg["vocab_size"]
        if not callable(metric):
            if metric not in METRICS:
                raise ValueError(f"metric: {metric!r} is not logit-diff, prob, loss or a function of the logits")
            if not isinstance(answer, (int, np.integer)) or not 0 <= answer < V:
                raise ValueError(f"answer: expected a token id in [0, {V}) (e.g. int(m.to_tokens('o')[-1]))")
        if wrong is not None and (not isinstance(wrong, (int, np.integer)) or not 0 <= wrong < V):
            raise ValueError(f"wrong: expected a token id in [0, {V}) or None")
        self.metric, self.answer = metric, None if answer is None else int(answer)
        self.T = len(self.clean)
        lg_clean = m.run(self.clean, chunk=chunk)[0][-1]
        lg_corrupt = m.run(self.corrupt, chunk=chunk)[0][-1]
        if wrong is None and not callable(metric) and metric == "logit-diff":
            x = lg_corrupt.astype(np.float64)
            x[self.answer] = -np.inf
            wrong = int(np.argmax(x))
        self.wrong = None if wrong is None else int(wrong)
        self.v_clean, self.v_corrupt = self.value(lg_clean), self.value(lg_corrupt)

    def value(self, last):
        """The metric of one row of logits, in double precision."""
        if callable(self.metric):
            return float(self.metric(last))
        if self.metric == "logit-diff":
            return float(last[self.answer]) - float(last[self.wrong])
        x = last.astype(np.float64)
        mx = x.max()
        lp = x[self.answer] - mx - math.log(np.exp(x - mx).sum())
        return math.exp(lp) if self.metric == "prob" else -lp

    def patched(self, hooks):
        """The metric of the corrupted input run with hooks."""
        return self.value(self.m.run(self.corrupt, fwd_hooks=hooks, chunk=self.chunk)[0][-1])

    def out(self, values, raw):
        """values as raw metrics, or as the fraction recovered."""
        values = np.asarray(values, dtype=np.float64)
        if raw:
            return values
        span = self.v_clean - self.v_corrupt
        return (values - self.v_corrupt) / span if span != 0 else np.full_like(values, np.nan)


def _head_patch(clean_o, h):
    def hook(act, name, pos):
        act[:, h, :] = clean_o[pos, h, :]
    return hook


def heads(m, clean, corrupt, answer=None, wrong=None, metric="logit-diff", raw=False, chunk=0):
    """Per head: the corrupted run with that head's read output o replaced at
    every position by its value on the clean input (`patch-head L.H` of
    the whole input, as `ramtrace patch` does).  float64 [L, H]."""
    s = _Setup(m, clean, corrupt, answer, wrong, metric, chunk)
    return s.out(_heads(m, s, chunk), raw)


def _heads(m, s, chunk):
    """heads()' metrics ([L, H], not yet normalised) over the setup s."""
    L, H = m.cfg["n_layers"], m.cfg["n_heads"]
    names = [f"blocks.{l}.attn.hook_head_out" for l in range(L)]
    clean_o = m.run(s.clean, names=names, chunk=chunk)[1]
    vals = np.empty((L, H))
    for l in range(L):
        for h in range(H):
            vals[l, h] = s.patched([(names[l], _head_patch(clean_o[names[l]], h))])
    return vals


def resid(m, clean, corrupt, answer=None, wrong=None, metric="logit-diff", raw=False, point="resid_pre",
          positions=None, chunk=0):
    """Per (layer, position): the corrupted run with the residual stream at
    that layer's point ("resid_pre", "resid_mid" or "resid_post") and that
    position replaced by the clean run's (TransformerLens'
    get_act_patch_resid_pre).  float64 [L, T]; positions (a list) restricts
    the sweep to those columns (the others are NaN).  L * len(positions) + 2
    forward passes."""
    if point not in ("resid_pre", "resid_mid", "resid_post"):
        raise ValueError(f"point: {point!r} is not resid_pre, resid_mid or resid_post")
    s = _Setup(m, clean, corrupt, answer, wrong, metric, chunk)
    L, T = m.cfg["n_layers"], s.T
    cols = range(T) if positions is None else [int(p) for p in positions]
    if any(not 0 <= p < T for p in cols):
        raise ValueError(f"positions: every position must be in [0, {T})")
    names = [f"blocks.{l}.hook_{point}" for l in range(L)]
    cache = m.run(s.clean, names=names, chunk=chunk)[1]
    vals = np.full((L, T), np.nan)
    for l in range(L):
        src = cache[names[l]]
        for p in cols:
            def hook(act, name, pos, p=p, src=src):
                if pos.start <= p < pos.stop:
                    act[p - pos.start] = src[p]
            vals[l, p] = s.patched([(names[l], hook)])
    return s.out(vals, raw)


SLOT_ROW = np.dtype([("layer", np.int32), ("head", np.int32), ("rank", np.int32), ("slot", np.int64),
                     ("r", np.float64), ("value", np.float64)])


def slots(m, clean, corrupt, answer=None, wrong=None, metric="logit-diff", raw=False, which=None, n_heads=3,
          chunk=0):
    """Per slot: for each head in which (a list of (layer, head); default
    the n_heads heads that recover most in heads()), each of the K slots the
    corrupted run reads at the last position, restored on its own: its S
    and z at that read (blocks.{l}.attn.hook_slot_state) set to the clean
    run's after the last token, read with the corrupted query's weight r —
    `ramtrace patch`'s slot rows.  A structured array of len(which) * K rows
    (SLOT_ROW: layer, head, rank, slot, r, value), value as heads() gives
    it."""
    s = _Setup(m, clean, corrupt, answer, wrong, metric, chunk)
    L, H, K = m.cfg["n_layers"], m.cfg["n_heads"], m.cfg["top_k"]
    if which is None:
        per = s.out(_heads(m, s, chunk), False)  # the setup's clean and corrupted runs, not two more
        key = np.where(np.isnan(per), -np.inf, per).ravel()
        order = sorted(range(L * H), key=lambda i: -key[i])  # stable: ties in layer-major order, as the C sweep
        which = [(i // H, i % H) for i in order[:max(0, min(int(n_heads), L * H))]]
    which = [(int(a), int(b)) for a, b in which]
    if any(not (0 <= a < L and 0 <= b < H) for a, b in which):
        raise ValueError(f"which: every (layer, head) must be in the model's {L} x {H}")
    names = [f"blocks.{l}.attn.hook_addr_read" for l in range(L)]
    reads = m.run(s.corrupt, names=names, chunk=chunk)[1]
    rows = np.zeros(len(which) * K, dtype=SLOT_ROW)
    T = s.T
    for i, (l, h) in enumerate(which):
        Sc, zc = m.head_state(s.clean, l, h, chunk=chunk)
        sl, w = reads[names[l]][0][T - 1, h], reads[names[l]][1][T - 1, h]
        for j in range(K):
            def hook(state, name, j=j):
                if state.pos == T - 1:
                    state.S[h, j] = Sc[state.slots[h, j]]
                    state.z[h, j] = zc[state.slots[h, j]]
            rows[i * K + j] = (l, h, j, sl[j], w[j], s.patched([(f"blocks.{l}.attn.hook_slot_state", hook)]))
    rows["value"] = s.out(rows["value"], raw)
    return rows


def plot(m, path, per_head, per_slot=None, metric="logit-diff", answer=0):
    """Draw per_head ([L, H] of heads()) and per_slot (rows of slots(), or
    None) as `ramtrace patch --plot` does — the library's own figure code
    (.png, .svg or .pdf): recovered per layer x head on a diverging map,
    the restored slots as rows beside it.  metric and answer name the
    metric in the title (a function: give the nearest of METRICS)."""
    L, H = m.cfg["n_layers"], m.cfg["n_heads"]
    per_head = np.asarray(per_head, dtype=np.float64)
    if per_head.shape != (L, H):
        raise ValueError(f"per_head: expected shape ({L}, {H}), got {per_head.shape}")
    if metric not in METRICS:
        raise ValueError(f"metric: {metric!r} is not logit-diff, prob or loss")
    lay, hd = np.divmod(np.arange(L * H, dtype=np.int32), H)
    sl = np.full(L * H, -1, dtype=np.int32)
    rec = per_head.ravel()
    if per_slot is not None:
        per_slot = np.asarray(per_slot)
        if per_slot.dtype != SLOT_ROW:
            raise TypeError("per_slot: expected the rows slots() returns")
        lay = np.concatenate([lay, per_slot["layer"].astype(np.int32)])
        hd = np.concatenate([hd, per_slot["head"].astype(np.int32)])
        sl = np.concatenate([sl, per_slot["slot"].astype(np.int32)])
        rec = np.concatenate([rec, per_slot["value"]])
    lay, hd, sl = (np.ascontiguousarray(a, dtype=np.int32) for a in (lay, hd, sl))
    rec = np.ascontiguousarray(rec, dtype=np.float64)
    ip = ctypes.POINTER(ctypes.c_int)
    check(lib().ramnet_plot_patching(m._handle(), len(rec), lay.ctypes.data_as(ip), hd.ctypes.data_as(ip),
                                     sl.ctypes.data_as(ip), rec.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                     METRICS.index(metric), int(answer), str(path).encode()))


__all__ = ["heads", "resid", "slots", "plot", "METRICS", "SLOT_ROW", "Error"]
