"""ramtrace — RAM-Net models and their memory traces from Python.

    import ramtrace
    m = ramtrace.load("samples/kjv.bin")        # a model, in process (libramnet.so)
    toks = m.to_tokens("In the beginning")
    logits = m(toks)                            # numpy [T, vocab_size], float32
    m.to_string(toks)
    logits, cache = m.run_with_cache(toks, names=lambda n: n.endswith("hook_slot_state"))
    cache["blocks.3.attn.hook_slot_state"].S    # SlotState: the memory each head reads [T, H, K, d_v]

    from ramtrace import patching               # TransformerLens' patching sweeps, ramtrace patch's figure

    ev = ramtrace.load_events("t.db", layer=1, head=2)   # a trace's events as numpy arrays
    t = ramtrace.open_trace("t.db")             # SQL, events, stats, simulate as DataFrames

    from ramtrace import torch as rt_torch      # an independent PyTorch forward
    tm = rt_torch.from_model(m)                 # or rt_torch.load("model.safetensors")

Needs Debian's python3 with python3-numpy (python3-pandas for traces as
DataFrames, python3-torch for ramtrace.torch).  The model API binds libramnet.so with ctypes: the
library is looked for beside the package (an installed copy), in the
build/ directory of a source checkout, or where RAMTRACE_LIB names it.
Errors are ramtrace.Error with the library's one-line message.
"""
from ramtrace.events import ArgError, TraceError, load_events  # noqa: F401
from ramtrace.model import Error, Model, SlotState, load  # noqa: F401
from ramtrace.trace import Trace, open_trace  # noqa: F401

__all__ = ["load", "Model", "SlotState", "Error", "open_trace", "Trace", "load_events", "TraceError", "ArgError"]
