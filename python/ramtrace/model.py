"""ramtrace.model — a RAM-Net model loaded in process through libramnet.so.

    m = ramtrace.load("samples/kjv.bin")
    m.cfg["d_model"], m.cfg["cape_masks"]
    toks = m.to_tokens("In the beginning")     # numpy int32 [T]
    logits = m(toks)                           # numpy float32 [T, vocab_size]
    m.params["layers.0.attn.q_proj.weight"]    # numpy float32 [H*d_k, D], no copy, read-only

A model is freed with m.close() (or at garbage collection, or leaving a
`with` block); using it afterwards raises ramtrace.Error.
"""
import ctypes

import numpy as np

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

    def __repr__(self):
        c = self.cfg
        return (f"<ramtrace.Model {self.path!r}: V={c.get('vocab_size')} D={c.get('d_model')} "
                f"L={c.get('n_layers')} H={c.get('n_heads')} M={c.get('d_p', 0) ** c.get('order', 0)} "
                f"K={c.get('top_k')}>")


def load(path):
    """Load a model file (model.bin or .safetensors)."""
    return Model(path)
