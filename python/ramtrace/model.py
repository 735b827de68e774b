"""ramtrace.model — a RAM-Net model loaded in process through libramnet.so.

    m = ramtrace.load("samples/kjv.bin")
    m.cfg["d_model"], m.cfg["cape_masks"]
    toks = m.to_tokens("In the beginning")     # numpy int32 [T]
    logits = m(toks)                           # numpy float32 [T, vocab_size]
    m.params["layers.0.attn.q_proj.weight"]    # numpy float32 [H*d_k, D], no copy, read-only

    logits, cache = m.run_with_cache(toks, names=lambda n: "slot_state" in n)
    cache["blocks.3.attn.hook_slot_state"].S   # [T, H, K, d_v]: what each head reads

A model is freed with m.close() (or at garbage collection, or leaving a
`with` block); using it afterwards raises ramtrace.Error.
"""
import collections
import ctypes
import inspect

import numpy as np

from ramtrace import _lib
from ramtrace._lib import Error, check, lib


def _parse_config(text):
    cfg = {}
    for line in text.splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        k, v = (x.strip() for x in line.split("=", 1))
        try:
            cfg[k] = int(v)
        except ValueError:
            try:
                cfg[k] = float(v)
            except ValueError:
                cfg[k] = v
    return cfg


SlotState = collections.namedtuple("SlotState", "pos slots S z")
SlotState.__doc__ = """The memory state a layer's heads read at a position (the point
blocks.{l}.attn.hook_slot_state): for head h and rank j, slot slots[h, j]
(the j-th slot of the head's read, as hook_addr_read gives it) holds the
row S[h, j] (d_v values) and the normaliser z[h, j], after the position's
writes and before its read, so the head's output is
o[h] = sum_j r[h, j] * S[h, j] / (z[h, j] + eps).  In a hook pos is the
position (an int) and the arrays are [H, K(, d_v)] views that may be
edited in place: the edit is stored into the memory (the read uses it and
later positions see it).  In a cache pos is arange(T) and the arrays are
[T, H, K(, d_v)]."""


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def sl_ok(fn):
    """Whether a hook takes a third positional argument (the slots of an address point)."""
    return len([p for n, p in _params(fn).items() if n != "pos" and p.kind != p.KEYWORD_ONLY]) >= 3


def pos_ok(fn):
    """Whether a hook takes the keyword argument pos (its rows' positions)."""
    return "pos" in _params(fn)


class Model:
    """A loaded model (see the module's text)."""

    def __init__(self, path):
        L = lib()
        h = ctypes.c_void_p()
        check(L.ramnet_load(str(path).encode(), ctypes.byref(h)))
        self._h = h
        self.path = str(path)
        n = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(4096)
        check(L.ramnet_config_text(h, buf, len(buf), ctypes.byref(n)))
        if n.value >= len(buf):
            buf = ctypes.create_string_buffer(n.value + 1)
            check(L.ramnet_config_text(h, buf, len(buf), ctypes.byref(n)))
        self.cfg = _parse_config(buf.value.decode())
        self.params = {}
        for i in range(L.ramnet_tensor_count(h)):
            name, ndim = ctypes.c_char_p(), ctypes.c_int()
            shape = (ctypes.c_int64 * 2)()
            data = ctypes.POINTER(ctypes.c_float)()
            check(L.ramnet_tensor(h, i, ctypes.byref(name), ctypes.byref(ndim), shape, ctypes.byref(data)))
            shp = (shape[0], shape[1]) if ndim.value == 2 else (shape[0],)
            a = np.ctypeslib.as_array(data, shape=shp)
            a.flags.writeable = False  # the block may be a read-only mapping of the file
            self.params[name.value.decode()] = a
        if self.cfg.get("tie_embeddings"):
            self.params.setdefault("lm_head.weight", self.params["embed.weight"])

    def _handle(self):
        if self._h is None:
            raise Error("the model has been closed")
        return self._h

    def close(self):
        """Free the model (its params arrays become invalid)."""
        if getattr(self, "_h", None) is not None:
            lib().ramnet_free(self._h)
            self._h = None
            self.params = {}

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def to_tokens(self, text):
        """Token ids of text (str or bytes) with the model's tokenizer."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray)):
            raise TypeError(f"to_tokens: expected str or bytes, not {type(text).__name__}")
        L = lib()
        ids, n = ctypes.POINTER(ctypes.c_int)(), ctypes.c_int()
        check(L.ramnet_tokenize(self._handle(), bytes(text), len(text), ctypes.byref(ids), ctypes.byref(n)))
        try:
            return np.ctypeslib.as_array(ids, shape=(n.value,)).astype(np.int32, copy=True)
        finally:
            L.ramnet_free_buffer(ids)

    def to_string(self, tokens):
        """The text of tokens, as `ramtrace run` prints a continuation (str;
        bytes that are not UTF-8 are replaced)."""
        t = self._tokens(tokens)
        L = lib()
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(L.ramnet_detokenize(self._handle(), t.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), len(t),
                                  ctypes.byref(p), ctypes.byref(n)))
        try:
            return ctypes.string_at(p, n.value).decode("utf-8", "replace")
        finally:
            L.ramnet_free_buffer(p)

    @staticmethod
    def _tokens(tokens):
        a = np.asarray(tokens)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1:
            raise ValueError(f"tokens: expected one sequence (a 1-D array), got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"tokens: expected integer token ids, got dtype {a.dtype}")
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise ValueError("tokens: ids beyond 32 bits")
        return np.ascontiguousarray(a, dtype=np.int32)

    def __call__(self, tokens, chunk=0):
        """Logits of every position, float32 [T, vocab_size], from a fresh
        memory state (chunk: prefill rows per forward, 0 = the default)."""
        t = self._tokens(tokens)
        if len(t) == 0:
            raise ValueError("tokens: empty sequence")
        if not isinstance(chunk, int) or chunk < 0:
            raise ValueError("chunk: expected an integer >= 0")
        out = np.empty((len(t), self.cfg["vocab_size"]), dtype=np.float32)
        check(lib().ramnet_forward(self._handle(), t.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), len(t),
                                   out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), chunk))
        return out

    # ---- hook points (TransformerLens-style names) ----

    _POINTS = (("hook_resid_pre", 0), ("attn.hook_q", 1), ("attn.hook_k", 2), ("attn.hook_addr_read", 3),
               ("attn.hook_addr_write", 4), ("attn.hook_v", 5), ("attn.hook_slot_state", 11),
               ("attn.hook_head_out", 6), ("hook_resid_mid", 7), ("hook_mlp_out", 8), ("hook_resid_post", 9))
    _SLOT_STATE = 11
    _FINAL = ("ln_final.hook_normalized", 10)

    def hook_names(self):
        """Every hook point's name, in the order the forward meets them."""
        return [f"blocks.{l}.{n}" for l in range(self.cfg["n_layers"]) for n, _ in self._POINTS] + [self._FINAL[0]]

    def _point(self, name):
        if name == self._FINAL[0]:
            return self._FINAL[1], self.cfg["n_layers"]
        parts = name.split(".", 2)
        if len(parts) == 3 and parts[0] == "blocks" and parts[1].isdigit():
            l = int(parts[1])
            for n, p in self._POINTS:
                if parts[2] == n and l < self.cfg["n_layers"]:
                    return p, l
        raise ValueError(f"{name!r} is not a hook point of this model (see hook_names())")

    def _shape(self, point, rows):
        c = self.cfg
        H, dk, dv, D = c["n_heads"], c["order"] * c["d_p"], c["d_v"], c["d_model"]
        return {1: (rows, H, dk), 2: (rows, H, dk), 3: (rows, H, c["top_k"]), 4: (rows, H, c["top_k"]),
                5: (rows, H, dv), 6: (rows, H, dv), 11: (H, c["top_k"], dv + 1)}.get(point, (rows, D))

    def run(self, tokens, intervene=(), fwd_hooks=(), names=None, chunk=0):
        """One forward from a fresh memory state with interventions (the
        --intervene specs of docs/interventions.md), Python hooks and a
        cache.  fwd_hooks: (name, fn) pairs; fn(activation, name) gets the
        chunk's rows as a numpy view it may edit in place (or return a new
        array of the same shape to write back); for the address points the
        view is the weights and fn may take a third argument, the slots; a
        fn with a parameter named pos gets pos=slice(first, last + 1), the
        rows' positions.  At hook_slot_state fn(state, name) gets a
        SlotState of one position to edit in place.  names: hook names to
        cache (a list, a callable name -> bool, or None for none).  Returns
        (logits [T, V], cache {name: array}); an address point caches
        (slots, weights), hook_slot_state a SlotState."""
        t = self._tokens(tokens)
        if len(t) == 0:
            raise ValueError("tokens: empty sequence")
        if not isinstance(chunk, int) or chunk < 0:
            raise ValueError("chunk: expected an integer >= 0")
        specs = self._specs(intervene)
        T = len(t)
        wanted = {}  # (point, layer) -> (names to cache, hook functions)
        if names is not None:
            pick = names if callable(names) else set(names)
            all_names = self.hook_names()
            chosen = [n for n in all_names if pick(n)] if callable(pick) else list(pick)
            for n in chosen:
                wanted.setdefault(self._point(n), ([], []))[0].append(n)
        for pair in fwd_hooks:
            if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[1])):
                raise TypeError("fwd_hooks: expected (name, function) pairs")
            wanted.setdefault(self._point(pair[0]), ([], []))[1].append(pair)
        cache, failure, views = {}, [], {}
        c = self.cfg
        H, K, dv = c["n_heads"], c["top_k"], c["d_v"]
        three = {fn: sl_ok(fn) for _, fn in fwd_hooks}
        wants_pos = {fn: pos_ok(fn) for _, fn in fwd_hooks}

        def view_of(addr, n, shape, dtype):
            key = (addr, shape, dtype)
            v = views.get(key)
            if v is None:
                buf = ((ctypes.c_float if dtype is np.float32 else ctypes.c_uint32) * n).from_address(addr)
                v = views[key] = np.frombuffer(buf, dtype=dtype).reshape(shape)
            return v

        def slot_state(user, point, layer, data, slots, rows, width, pos0):
            cached, hooks = wanted.get((point, layer), ((), ()))
            if not cached and not hooks:
                return
            buf = view_of(data, width, (H, K, dv + 1), np.float32)
            st = SlotState(pos0, view_of(slots, H * K, (H, K), np.uint32), buf[..., :dv], buf[..., dv])
            for name, fn in hooks:
                r = fn(st, name, pos=pos0) if wants_pos[fn] else fn(st, name)
                if r is not None:
                    raise TypeError(f"a hook at {name} edits state.S and state.z in place and returns None")
            if cached:
                slot_rows(point, layer, data, slots, 1, pos0)

        def slot_rows(point, layer, data, slots, rows, pos0):
            # a cache only: the chunk's positions at once (RAMNET_HOOK_SLOT_STATE_ROWS)
            cached = wanted.get((point, layer), ((), ()))[0]
            buf = view_of(data, rows * H * K * (dv + 1), (rows, H, K, dv + 1), np.float32)
            sl = view_of(slots, rows * H * K, (rows, H, K), np.uint32)
            for name in cached:
                if name not in cache:
                    cache[name] = SlotState(np.arange(T), np.empty((T, H, K), np.uint32),
                                            np.empty((T, H, K, dv), np.float32), np.empty((T, H, K), np.float32))
                e = cache[name]
                e.slots[pos0:pos0 + rows], e.S[pos0:pos0 + rows], e.z[pos0:pos0 + rows] = sl, buf[..., :dv], buf[..., dv]

        def at(user, point, layer, data, slots, rows, width, pos0):
            try:
                if point == self._SLOT_STATE:
                    if gather:
                        slot_rows(point, layer, data, slots, rows, pos0)
                    else:
                        slot_state(user, point, layer, data, slots, rows, width, pos0)
                    return 0
                cached, hooks = wanted.get((point, layer), ((), ()))
                shape = self._shape(point, rows)
                view = view_of(data, rows * width, shape, np.float32)
                sl = view_of(slots, rows * width, shape, np.uint32) if point in (3, 4) else None
                for name, fn in hooks:
                    kw = {"pos": slice(pos0, pos0 + rows)} if wants_pos[fn] else {}
                    r = fn(view, name, sl, **kw) if sl is not None and three[fn] else fn(view, name, **kw)
                    if r is not None and r is not view:
                        view[...] = np.asarray(r, dtype=np.float32).reshape(shape)
                for name in cached:
                    if name not in cache:
                        full = (T,) + shape[1:]
                        cache[name] = ((np.empty(full, np.uint32), np.empty(full, np.float32)) if sl is not None
                                       else np.empty(full, np.float32))
                    if sl is not None:
                        cache[name][0][pos0:pos0 + rows] = sl
                        cache[name][1][pos0:pos0 + rows] = view
                    else:
                        cache[name][pos0:pos0 + rows] = view
                return 0
            except BaseException as e:  # noqa: BLE001 - re-raised after the run stops
                failure.append(e)
                return 1

        points = 0
        for p, _ in wanted:
            points |= 1 << p
        # the slot state only cached: its positions come a chunk at a time
        gather = not any(hooks for (p, _), (_, hooks) in wanted.items() if p == self._SLOT_STATE)
        if gather and points >> self._SLOT_STATE & 1:
            points |= _lib.SLOT_STATE_ROWS
        # only the layers with a slot-state hook or cache scan its way
        # (position by position when hooked): the others keep their threads
        slot_layers = (ctypes.c_ubyte * c["n_layers"])()
        for p, l in wanted:
            if p == self._SLOT_STATE:
                slot_layers[l] = 1
        cb = _lib.HOOK_FN(at)
        arr = (ctypes.c_char_p * max(1, len(specs)))(*specs)
        out = np.empty((T, c["vocab_size"]), dtype=np.float32)
        rc = lib().ramnet_run_layers(self._handle(), t.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), T,
                                     out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), chunk, arr, len(specs),
                                     points, slot_layers, cb, None)
        if failure:
            raise failure[0]
        check(rc)
        return out, cache

    @staticmethod
    def _specs(intervene):
        if isinstance(intervene, str):
            intervene = [intervene]
        specs = [s.encode() if isinstance(s, str) else s for s in intervene]
        if not all(isinstance(s, bytes) for s in specs):
            raise TypeError("intervene: expected a list of spec strings")
        return specs

    def head_state(self, tokens, layer, head, intervene=(), chunk=0):
        """The memory of head (layer, head) after a run over tokens (with
        interventions, as run takes them): (S [M, d_v], z [M]), float32."""
        t = self._tokens(tokens)
        if len(t) == 0:
            raise ValueError("tokens: empty sequence")
        if not all(isinstance(x, (int, np.integer)) for x in (layer, head, chunk)):
            raise TypeError("head_state: layer, head and chunk are integers")
        specs = self._specs(intervene)
        c = self.cfg
        M = c["d_p"] ** c["order"]
        S = np.empty((M, c["d_v"]), np.float32)
        z = np.empty(M, np.float32)
        fp = ctypes.POINTER(ctypes.c_float)
        arr = (ctypes.c_char_p * max(1, len(specs)))(*specs)
        check(lib().ramnet_head_state(self._handle(), t.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), len(t),
                                      int(chunk), arr, len(specs), int(layer), int(head), S.ctypes.data_as(fp),
                                      z.ctypes.data_as(fp)))
        return S, z

    def run_with_cache(self, tokens, names=None, chunk=0):
        """(logits, cache) with every hook point cached, or only those named
        (a list or a callable name -> bool)."""
        return self.run(tokens, names=self.hook_names() if names is None else names, chunk=chunk)

    def run_with_hooks(self, tokens, fwd_hooks=(), intervene=(), chunk=0):
        """Logits of a run with Python hooks that may edit activations."""
        return self.run(tokens, intervene=intervene, fwd_hooks=fwd_hooks, chunk=chunk)[0]

    def __repr__(self):
        c = self.cfg
        return (f"<ramtrace.Model {self.path!r}: V={c.get('vocab_size')} D={c.get('d_model')} "
                f"L={c.get('n_layers')} H={c.get('n_heads')} M={c.get('d_p', 0) ** c.get('order', 0)} "
                f"K={c.get('top_k')}>")


def load(path):
    """Load a model file (model.bin or .safetensors)."""
    return Model(path)
