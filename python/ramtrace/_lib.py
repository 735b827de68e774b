"""The ctypes binding of libramnet.so (api/ramnet_api.h)."""
import ctypes
import os

API_MAJOR = 1
API_MINOR = 3  # 1: ramnet_run (hooks, interventions); 2: the slot-state hook, head state, patching figure;
#               3: ramnet_run_layers (the slot-state point on chosen layers only)

# data and slots arrive as addresses: the runtime's buffers are allocated
# once, so the views made of them are kept and reused across calls
HOOK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int64)
SLOT_STATE_ROWS = 1 << 31  # RAMNET_HOOK_SLOT_STATE_ROWS: the slot state a chunk at a time (a cache)


class Error(Exception):
    """An error of the ramtrace library: str() is its one-line message; .code
    its code (2: bad input)."""

    def __init__(self, msg, code=2):
        super().__init__(msg)
        self.code = code


def _candidates():
    env = os.environ.get("RAMTRACE_LIB")
    if env:
        yield env
    try:  # an installed package: make install wrote where the library went
        from ramtrace._config import LIB
        yield LIB
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build", "libramnet.so")         # a source checkout


_lib = None


def lib():
    """The loaded library (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            try:
                L = ctypes.CDLL(os.path.abspath(path))
                break
            except OSError as e:
                tried.append(f"{path}: {e}")
        else:
            tried.append(f"{path}: no such file")
    else:
        raise Error("libramnet.so not found (run make, or set RAMTRACE_LIB): " + "; ".join(tried))
    L.ramnet_api_version.restype = ctypes.c_int
    v = L.ramnet_api_version()
    if v // 100 != API_MAJOR or v % 100 < API_MINOR:
        raise Error(f"libramnet.so has API version {v}, this package needs {API_MAJOR}.{API_MINOR:02d} or a later 1.x")
    c_int_p = ctypes.POINTER(ctypes.c_int)
    sig = {
        "ramnet_last_error": ([], ctypes.c_char_p),
        "ramnet_version": ([], ctypes.c_char_p),
        "ramnet_load": ([ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int),
        "ramnet_free": ([ctypes.c_void_p], None),
        "ramnet_config_text": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                ctypes.POINTER(ctypes.c_size_t)], ctypes.c_int),
        "ramnet_tensor_count": ([ctypes.c_void_p], ctypes.c_int),
        "ramnet_tensor": ([ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), c_int_p,
                           ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.POINTER(ctypes.c_float))],
                          ctypes.c_int),
        "ramnet_tokenize": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(c_int_p), c_int_p], ctypes.c_int),
        "ramnet_detokenize": ([ctypes.c_void_p, c_int_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_size_t)], ctypes.c_int),
        "ramnet_free_buffer": ([ctypes.c_void_p], None),
        "ramnet_forward": ([ctypes.c_void_p, c_int_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_int],
                           ctypes.c_int),
        "ramnet_run": ([ctypes.c_void_p, c_int_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_int,
                        ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_uint32, HOOK_FN, ctypes.c_void_p],
                       ctypes.c_int),
        "ramnet_run_layers": ([ctypes.c_void_p, c_int_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_int,
                               ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_uint32,
                               ctypes.POINTER(ctypes.c_ubyte), HOOK_FN, ctypes.c_void_p], ctypes.c_int),
        "ramnet_head_state": ([ctypes.c_void_p, c_int_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                               ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float),
                               ctypes.POINTER(ctypes.c_float)], ctypes.c_int),
        "ramnet_plot_patching": ([ctypes.c_void_p, ctypes.c_int, c_int_p, c_int_p, c_int_p,
                                  ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.c_int, ctypes.c_char_p],
                                 ctypes.c_int),
    }
    for name, (args, res) in sig.items():
        f = getattr(L, name)
        f.argtypes = args
        f.restype = res
    _lib = L
    return L


def check(rc):
    """Raise Error with the library's message when rc is not 0."""
    if rc:
        raise Error(lib().ramnet_last_error().decode("utf-8", "replace"), rc)
