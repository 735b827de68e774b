"""ramtrace.torch — the RAM-Net forward as a PyTorch nn.Module: product
softmax addresses, exact top-K, CAPE and PDMA written from docs/design.md's
conventions, independently of the C code, so it is a third check of the
forward (tests/python/test_api.py compares its logits with the library's)
and a route into the PyTorch ecosystem.

    from ramtrace import torch as rt
    net = rt.load("model.safetensors")     # or rt.load("model.bin"), rt.from_model(ramtrace.load(...))
    logits = net(torch.tensor(tokens))     # [T, vocab_size] (or [B, T, vocab_size])

Parameter names are the exchange names (net.state_dict() keys equal the
safetensors tensor names).  Computes in float64 by default (dtype=...).
The memory scan runs token by token in Python: a reference, not a fast path.
"""
import json
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG_KEYS = ("vocab_size", "d_model", "n_layers", "n_heads", "d_p", "order", "d_v", "top_k", "d_ff",
               "gamma", "tau", "eps", "norm_eps", "tie_embeddings", "cape_masks", "tokenizer")


class RMSNorm(nn.Module):
    def __init__(self, d, eps, dtype):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, dtype=dtype))

    def forward(self, x):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    """Addresses (product softmax, exact top-K, CAPE) and the PDMA memory."""

    def __init__(self, c, cape_mask, dtype):
        super().__init__()
        D, H, dk, dv = c["d_model"], c["n_heads"], c["order"] * c["d_p"], c["d_v"]
        self.c, self.cape_mask = c, cape_mask
        self.q_proj = nn.Linear(D, H * dk, bias=False, dtype=dtype)
        self.k_proj = nn.Linear(D, H * dk, bias=False, dtype=dtype)
        self.v_proj = nn.Linear(D, H * dv, bias=False, dtype=dtype)
        self.q_alpha = nn.Parameter(torch.zeros(H, dtype=dtype))
        self.k_alpha = nn.Parameter(torch.zeros(H, dtype=dtype))
        self.o_proj = nn.Linear(H * dv, D, bias=False, dtype=dtype)

    def addresses(self, a, alpha):
        """a [T, H, d_k] -> (slot, weight) [T, H, K]: the K largest of the
        product-softmax weights over all M addresses, ties to the smaller
        address, then shifted by position on CAPE heads."""
        c = self.c
        T, H = a.shape[0], a.shape[1]
        dp, U, K = c["d_p"], c["order"], c["top_k"]
        a = a * torch.exp(alpha)[None, :, None]
        p = F.softmax(a.reshape(T, H, U, dp) / c["tau"], dim=-1)
        w = p[:, :, 0]
        for u in range(1, U):  # chunk 0 is the most significant digit
            w = (w[..., :, None] * p[:, :, u, None, :]).reshape(T, H, -1)
        order = torch.sort(-w, dim=-1, stable=True).indices[..., :K]  # stable: equal weights keep address order
        weight = torch.gather(w, -1, order)
        M = dp ** U
        t = torch.arange(T)[:, None, None]
        cape = torch.tensor([(self.cape_mask >> h) & 1 for h in range(H)], dtype=torch.bool)[None, :, None]
        slot = torch.where(cape, (order - t) % M, order)
        return slot, weight

    def forward(self, h):
        c = self.c
        T = h.shape[0]
        H, dk, dv, M = c["n_heads"], c["order"] * c["d_p"], c["d_v"], c["d_p"] ** c["order"]
        q = self.q_proj(h).reshape(T, H, dk)
        k = self.k_proj(h).reshape(T, H, dk)
        v = self.v_proj(h).reshape(T, H, dv)
        rs, rw = self.addresses(q, self.q_alpha)
        ws, ww = self.addresses(k, self.k_alpha)
        S = torch.zeros(H, M, dv, dtype=h.dtype)
        z = torch.full((H, M), 1.0 / M, dtype=h.dtype)
        hi = torch.arange(H)[:, None]
        out = []
        for t in range(T):  # every write of token t, then its read
            w = ww[t]
            d = torch.pow(1 - w, c["gamma"])  # 0^0 = 1
            S[hi, ws[t]] = d[..., None] * S[hi, ws[t]] + w[..., None] * v[t][:, None, :]
            z[hi, ws[t]] = d * z[hi, ws[t]] + w
            r = rw[t]
            out.append((r[..., None] * S[hi, rs[t]] / (z[hi, rs[t]] + c["eps"])[..., None]).sum(1))
        return self.o_proj(torch.stack(out).reshape(T, H * dv))


class MLP(nn.Module):
    def __init__(self, D, Fw, dtype):
        super().__init__()
        self.gate_proj = nn.Linear(D, Fw, bias=False, dtype=dtype)
        self.up_proj = nn.Linear(D, Fw, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(Fw, D, bias=False, dtype=dtype)

    def forward(self, h):
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Block(nn.Module):
    def __init__(self, c, cape_mask, dtype):
        super().__init__()
        self.attn_norm = RMSNorm(c["d_model"], c["norm_eps"], dtype)
        self.attn = Attention(c, cape_mask, dtype)
        self.mlp_norm = RMSNorm(c["d_model"], c["norm_eps"], dtype)
        self.mlp = MLP(c["d_model"], c["d_ff"], dtype)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


def _masks(c):
    m = str(c.get("cape_masks", "")).strip()
    masks = [int(x) for x in m.split(",")] if m else []
    return (masks + [0] * c["n_layers"])[: c["n_layers"]]


class RAMNet(nn.Module):
    """The model of config c (a dict with CONFIG_KEYS)."""

    def __init__(self, c, dtype=torch.float64):
        super().__init__()
        self.cfg = dict(c)
        self.embed = nn.Embedding(c["vocab_size"], c["d_model"], dtype=dtype)
        self.layers = nn.ModuleList(Block(c, m, dtype) for m in _masks(c))
        self.norm = RMSNorm(c["d_model"], c["norm_eps"], dtype)
        self.lm_head = None if int(c["tie_embeddings"]) else nn.Linear(c["d_model"], c["vocab_size"], bias=False,
                                                                         dtype=dtype)

    def forward(self, tokens):
        """tokens [T] or [B, T] (each sequence from a fresh memory) ->
        logits [T, V] or [B, T, V]."""
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        if tokens.dim() == 2:
            return torch.stack([self.forward(t) for t in tokens])
        x = self.embed(tokens)
        for blk in self.layers:
            x = blk(x)
        h = self.norm(x)
        W = self.embed.weight if self.lm_head is None else self.lm_head.weight
        return h @ W.T

    def load_tensors(self, tensors):
        """Set every parameter from a dict of exchange name -> array."""
        sd = self.state_dict()
        missing = [k for k in sd if k not in tensors]
        if missing:
            raise ValueError(f"missing tensors: {', '.join(missing[:5])}")
        with torch.no_grad():
            for k, p in sd.items():
                a = torch.from_numpy(np.array(tensors[k], dtype=np.float64))
                if tuple(a.shape) != tuple(p.shape):
                    raise ValueError(f"{k}: shape {tuple(a.shape)}, expected {tuple(p.shape)}")
                p.copy_(a.to(p.dtype))
        return self


def read_safetensors(path):
    """(config dict, {name: numpy float32 array}) of one of our .safetensors
    files (the format: an 8-byte little-endian header length, a JSON header
    with the tensors' dtype, shape and byte offsets and a __metadata__ of
    ramnet.* keys, then the data).  F32, BF16 and F16 tensors all come back
    as float32, exactly."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    n = struct.unpack("<Q", raw[:8])[0]
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    hdr = json.loads(raw[8: 8 + n])
    meta = hdr.pop("__metadata__", {})
    c = {}
    for k in CONFIG_KEYS:
        v = meta.get("ramnet." + k)
        if v is None:
            raise ValueError(f"{path}: metadata has no ramnet.{k}")
        c[k] = v if k in ("cape_masks", "tokenizer") else (float(v) if "." in v or "e" in v else int(v))
    data = raw[8 + n:]
    tensors = {}
    for name, t in hdr.items():
        b, e = t["data_offsets"]
        if t["dtype"] == "F32":
            a = np.frombuffer(data[b:e], dtype="<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(data[b:e], dtype="<f2").astype(np.float32)  # exact
        elif t["dtype"] == "BF16":  # the upper 16 bits of a float32: exact
            a = (np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: {name}: dtype {t['dtype']}, expected F32, BF16 or F16")
        tensors[name] = a.reshape(t["shape"])
    return c, tensors


def write_safetensors(path, c, tensors):
    """Write config c and {name: array} as one of our .safetensors files
    (float32, the config in __metadata__ as ramnet.* strings), which
    ramtrace.load and the ramtrace command read: the way out of PyTorch
    (write_safetensors(p, net.cfg, net.state_dict()))."""
    meta = {"ramnet." + k: str(c[k]) for k in CONFIG_KEYS}
    hdr, blobs, off = {"__metadata__": meta}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a, dtype="<f4")
        hdr[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def from_model(m, dtype=torch.float64):
    """The module for a ramtrace.Model (weights copied)."""
    return RAMNet(m.cfg, dtype).load_tensors(m.params)


def load(path, dtype=torch.float64):
    """The module of a .safetensors file (read here, without the library)
    or of a model.bin (through ramtrace.load)."""
    if str(path).endswith(".safetensors"):
        c, t = read_safetensors(path)
        return RAMNet(c, dtype).load_tensors(t)
    from ramtrace.model import load as load_model
    with load_model(path) as m:
        return from_model(m, dtype)
