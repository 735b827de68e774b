"""ramtrace.events — read ramtrace trace files (schema v2) from Python.

Loads one run's events as numpy arrays, straight from the packed
`event_blocks` rows (docs/trace-schema.md), without the SQLite extension:

    import ramtrace
    ev = ramtrace.load_events("trace.db", run=None, layer=1, head=2, pos=(0, 1000))
    ev["slot"], ev["weight"], ...          # numpy arrays, canonical order
    df = ramtrace.load_events("trace.db", frame=True)   # a pandas DataFrame, if pandas is there

Arrays: layer, head (uint16), pos (int32), op (uint8: 0 write, 1 read),
rank (uint16), slot, addr (uint32), weight (float32, exactly the model's
value; float16 widened for a run recorded with --weights f16), in the
order (layer, head, pos, op, rank).  Needs only the standard library's
sqlite3 and numpy (Debian: python3-numpy, for /usr/bin/python3; without
numpy the import fails with a message saying so).

A corrupt file (a block whose header disagrees with its run, a short BLOB,
a slot >= M, a weight outside [0, 1]) raises TraceError naming the file.
A bad argument (an unknown ops, a layer or head the run does not have, a
pos that is not (lo, hi) with 0 <= lo <= hi) raises ArgError, a ValueError
whose message starts with the argument's name.

As a command: python3 python/ramtrace TRACE.db (or python3 -m ramtrace
with python/ on PYTHONPATH) [--run N] [--layer L]
[--head H] [--pos LO:HI] [--ops r|w|rw] [--dump DIR] prints the event count
and the load rate; --dump writes each array as raw little-endian DIR/NAME.bin.
A bad file or option: one line on stderr naming it, exit status 2.
"""
import operator
import os
import sqlite3
import sys
import time

try:
    import numpy as np
except ImportError:
    # scripts/setup installs numpy for Debian's /usr/bin/python3; another
    # python3 first on PATH (pyenv, a venv) may lack it: say which to use
    _NO_NUMPY = (f"numpy is not installed for {sys.executable}; scripts/setup installs it for /usr/bin/python3"
                 " (Debian python3-numpy): run this module with /usr/bin/python3, or install numpy for this one")
    raise ImportError(_NO_NUMPY) from None

APPLICATION_ID = 0x524E5452
SCHEMA_VERSION = 2
COLUMNS = ("layer", "head", "pos", "op", "rank", "slot", "addr", "weight")


class TraceError(Exception):
    """A file that is not a readable trace of this schema."""


class ArgError(ValueError):
    """A bad argument of load_events: str() is "ARG: problem"; .arg names it."""

    def __init__(self, arg, msg):
        super().__init__(f"{arg}: {msg}")
        self.arg = arg
        self.msg = msg


OPS = {"rw": 3, "wr": 3, "w": 1, "r": 2}


def _int_arg(name, v):
    """v as an int (int, numpy integer, ...), or ArgError: no floats, no strings."""
    if isinstance(v, bool):
        raise ArgError(name, f"{v!r} is not an integer")
    try:
        return operator.index(v)
    except TypeError:
        raise ArgError(name, f"{v!r} is not an integer") from None


def _check_args(run, layer, head, pos, ops):
    """The arguments of load_events that need no file, normalised:
    (run, layer, head, lo, hi, opmask); ArgError on a bad one."""
    if not isinstance(ops, str) or ops not in OPS:
        raise ArgError("ops", f"{ops!r} is not one of 'rw', 'r', 'w'")
    run = None if run is None else _int_arg("run", run)
    layer = None if layer is None else _int_arg("layer", layer)
    head = None if head is None else _int_arg("head", head)
    lo, hi = 0, None
    if pos is not None:
        if isinstance(pos, (str, bytes)) or not hasattr(pos, "__len__") or len(pos) != 2:
            raise ArgError("pos", f"{pos!r} is not a pair (lo, hi)")
        lo = 0 if pos[0] is None else _int_arg("pos", pos[0])
        hi = None if pos[1] is None else _int_arg("pos", pos[1])
        if lo < 0 or (hi is not None and hi < 0):
            raise ArgError("pos", f"({lo}, {hi}): positions are >= 0")
        if hi is not None and hi < lo:
            raise ArgError("pos", f"lo {lo} > hi {hi}")
        # positions are int32: a larger bound selects the same events (and
        # stays in SQLite's and numpy's integer range)
        lo = min(lo, 2**31)
        hi = None if hi is None else min(hi, 2**31)
    return run, layer, head, lo, hi, OPS[ops]


def _connect(path):
    if not os.path.isfile(path):
        raise TraceError(f"{path}: no such file")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        app = con.execute("PRAGMA application_id").fetchone()[0]
        ver = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        con.close()
        raise TraceError(f"{path}: not an SQLite database ({e})") from None
    if app != APPLICATION_ID:
        con.close()
        raise TraceError(f"{path}: not a ramtrace trace database (application_id {app})")
    if ver != SCHEMA_VERSION:
        con.close()
        hint = f"; convert it with `ramtrace upgrade {path}`" if ver == 1 else ""
        raise TraceError(f"{path}: trace schema version {ver}, this module reads version {SCHEMA_VERSION}{hint}")
    return con


def _slot_bits(m):
    """Bits per packed slot for M slots (tr_block.h: the fewest that hold M - 1)."""
    return min(32, max(1, (m - 1).bit_length()))


def _unpack_slots(blobs, counts, bits):
    """The slots of every block: blob i packs counts[i] slots in `bits` bits
    each, little-endian bit order, from its own first byte."""
    buf = b"".join(blobs)
    if bits in (8, 16, 32):
        return np.frombuffer(buf, dtype={8: "<u1", 16: "<u2", 32: "<u4"}[bits]).astype(np.uint32)
    total = int(counts.sum())
    padded = buf + bytes(8)
    # every byte offset seen as the start of a little-endian 64-bit word
    # (an unaligned, overlapping view: one gather per entry)
    win = np.ndarray(shape=(len(buf) + 1,), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    lens = np.array([len(x) for x in blobs], dtype=np.int64)
    base = np.repeat((np.cumsum(lens) - lens) * 8, counts)          # each block's first bit
    local = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    o = base + local * bits
    v = win[o >> 3] >> (o & 7).astype(np.uint64)
    return (v & np.uint64((1 << bits) - 1)).astype(np.uint32)


def load_events(path, run=None, layer=None, head=None, pos=None, ops="rw", frame=False):
    """Events of run `run` (None: the latest) of the trace at `path`.

    layer, head: one of each (None: all); pos: (lo, hi) positions lo <= pos < hi
    (either may be None); ops: "rw", "r" or "w".  Returns a dict of numpy
    arrays (COLUMNS), or a pandas DataFrame with frame=True.  A bad argument
    raises ArgError (a ValueError), a bad file TraceError."""
    args = _check_args(run, layer, head, pos, ops)
    con = _connect(path)
    try:
        return _load(con, path, *args, frame)
    except sqlite3.DatabaseError as e:
        raise TraceError(f"{path}: {e}") from None
    finally:
        con.close()


def _load(con, path, run, layer, head, lo, hi, opmask, frame):
    q = "SELECT run_id, n_layers, n_heads, n_slots, top_k, weight_format FROM runs"
    row = (con.execute(q + " ORDER BY run_id DESC LIMIT 1").fetchone() if run is None
           else con.execute(q + " WHERE run_id = ?", (run,)).fetchone() if -2**63 <= run < 2**63 else None)
    if row is None:
        raise TraceError(f"{path}: " + ("the trace holds no runs" if run is None else f"no run {run}"))
    run_id, L, H, M, K, wfmt = row
    if wfmt not in ("f32", "f16") or not (1 <= K <= M):
        raise TraceError(f"{path}: corrupt trace: run {run_id} has an invalid header")
    # the C reader's checks (an_run_check_head): a head the model lacks, or
    # one the run did not trace, is an error, not an empty result
    if layer is not None and not (0 <= layer < L):
        raise ArgError("layer", f"{layer} does not exist (the model of run {run_id} has {L} layers)")
    if head is not None and not (0 <= head < H):
        raise ArgError("head", f"{head} does not exist (the model of run {run_id} has {H} heads)")
    if layer is not None or head is not None:
        hq = "SELECT count(*) FROM heads WHERE run_id = ?" + (" AND layer = ?" if layer is not None else "") \
            + (" AND head = ?" if head is not None else "")
        if con.execute(hq, [run_id] + [v for v in (layer, head) if v is not None]).fetchone()[0] == 0:
            raise ArgError("layer" if layer is not None else "head",
                           f"run {run_id} traced no head matching layer {-1 if layer is None else layer}, "
                           f"head {-1 if head is None else head}")
    sbits = _slot_bits(M)
    wdt = np.dtype("<f4") if wfmt == "f32" else np.dtype("<f2")
    where, args = ["run_id = ?"], [run_id]
    if layer is not None:
        where.append("layer = ?"); args.append(layer)
    if head is not None:
        where.append("head = ?"); args.append(head)
    if opmask != 3:
        where.append("(ops & ?) != 0"); args.append(opmask)
    if hi is not None:
        where.append("pos0 < ?"); args.append(hi)
    if lo > 0:
        where.append("pos0 + npos > ?"); args.append(lo)
    rows = con.execute("SELECT layer, head, pos0, npos, ops, cape_m, n, slots, weights FROM event_blocks WHERE "
                       + " AND ".join(where) + " ORDER BY layer, head, pos0", args).fetchall()
    meta = np.zeros((len(rows), 7), dtype=np.int64)
    sblobs, wblobs = [], []
    prev = None
    for i, (bl, bh, p0, np_, bops, cm, n, sb, wb) in enumerate(rows):
        hdr = (bl, bh, p0, np_, bops, cm, n)
        if not all(type(v) is int for v in hdr) or type(sb) is not bytes or type(wb) is not bytes:
            raise TraceError(f"{path}: corrupt trace: run {run_id} has an event block with a mistyped column")
        nops = (bops & 1) + ((bops >> 1) & 1)
        bad = (not (0 <= bl < L) or not (0 <= bh < H) or not (1 <= bops <= 3) or not (1 <= np_ <= 1 << 24)
               or not (0 <= p0 <= 2**31 - 1) or cm not in (0, M) or n != np_ * nops * K
               or len(sb) != (n * sbits + 7) // 8 or len(wb) != n * wdt.itemsize
               or (prev is not None and prev[:2] == (bl, bh) and p0 < prev[2]))
        if bad:
            raise TraceError(f"{path}: corrupt trace: run {run_id} has an event block (layer {bl}, head {bh}, "
                             f"pos {p0}) that disagrees with its run")
        prev = (bl, bh, p0 + np_)
        meta[i] = hdr
        sblobs.append(sb)
        wblobs.append(wb)
    counts = meta[:, 6]
    slot = _unpack_slots(sblobs, counts, sbits) if sblobs else np.zeros(0, np.uint32)
    weight = np.frombuffer(b"".join(wblobs), dtype=wdt).astype(np.float32)
    if (slot >= M).any():
        raise TraceError(f"{path}: corrupt trace: run {run_id} has a slot outside [0, {M - 1}]")
    if not ((weight >= 0) & (weight <= 1)).all():
        raise TraceError(f"{path}: corrupt trace: run {run_id} has a weight not in [0, 1]")
    # Per block shape (npos, ops), the entries' position offset, op and rank
    # (entries are position-major, then op, then rank: tr_block.h).
    tpl, pos_parts, op_parts, rank_parts = {}, [], [], []
    for bl, bh, p0, np_, bops, cm, n in meta.tolist():
        t = tpl.get((np_, bops))
        if t is None:
            ops_list = [o for o in (0, 1) if (bops >> o) & 1]
            per = len(ops_list) * K
            t = (np.repeat(np.arange(np_, dtype=np.int32), per),
                 np.tile(np.repeat(np.array(ops_list, dtype=np.uint8), K), np_),
                 np.tile(np.arange(K, dtype=np.uint16), np_ * len(ops_list)))
            tpl[(np_, bops)] = t
        pos_parts.append(t[0] + np.int32(p0))
        op_parts.append(t[1])
        rank_parts.append(t[2])
    cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt))
    p = cat(pos_parts, np.int32)
    op = cat(op_parts, np.uint8)
    rank = cat(rank_parts, np.uint16)
    addr = slot
    if (meta[:, 5] > 0).any():
        cape = np.repeat(meta[:, 5], counts)
        addr = np.where(cape > 0, (slot.astype(np.int64) + p) % np.maximum(cape, 1), slot).astype(np.uint32)
    out = {
        "layer": np.repeat(meta[:, 0].astype(np.uint16), counts),
        "head": np.repeat(meta[:, 1].astype(np.uint16), counts),
        "pos": p,
        "op": op,
        "rank": rank,
        "slot": slot,
        "addr": addr,
        "weight": weight,
    }
    keep = None
    if lo > 0 or hi is not None or opmask != 3:
        keep = (p >= lo) & (((opmask >> op) & 1) == 1)
        if hi is not None:
            keep &= p < hi
    if keep is not None and not keep.all():
        out = {k: v[keep] for k, v in out.items()}
    if frame:
        import pandas as pd  # optional
        return pd.DataFrame(out)
    return out


def _main(argv):
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 2 (argparse prints the usage too)
            self.exit(2, f"ramtrace: {message} (try --help)\n")

    ap = Parser(prog="ramtrace", description="load one run's events of a ramtrace trace")
    ap.add_argument("trace")
    ap.add_argument("--run", type=int)
    ap.add_argument("--layer", type=int)
    ap.add_argument("--head", type=int)
    ap.add_argument("--pos", help="LO:HI (either may be empty)")
    ap.add_argument("--ops", default="rw", choices=["rw", "r", "w"])
    ap.add_argument("--dump", help="write each array as raw DIR/NAME.bin")
    a = ap.parse_args(argv)  # a malformed option: one line, exit 2
    if a.dump is not None and not os.path.isdir(a.dump):
        print(f"ramtrace: --dump: {a.dump}: not a directory", file=sys.stderr)
        return 2
    pos = None
    if a.pos is not None:
        lo, colon, hi = a.pos.partition(":")
        try:
            pos = (int(lo) if lo.strip() else None, int(hi) if hi.strip() else None)
        except ValueError:
            colon = ""
        if not colon:
            print(f"ramtrace: --pos: {a.pos!r} is not LO:HI (integers, either may be empty)", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    try:
        ev = load_events(a.trace, a.run, a.layer, a.head, pos, a.ops)
    except ArgError as e:
        print(f"ramtrace: --{e.arg}: {e.msg}", file=sys.stderr)
        return 2
    except TraceError as e:
        print(f"ramtrace: {e}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    n = len(ev["slot"])
    print(f"{n} events in {dt:.3f} s ({n / dt / 1e6 if dt > 0 else 0:.1f}M events/s)")
    if a.dump is not None:
        for k in COLUMNS:
            tmp = os.path.join(a.dump, k + ".bin.tmp")
            try:
                ev[k].tofile(tmp)
                os.replace(tmp, os.path.join(a.dump, k + ".bin"))
            except OSError as e:
                if os.path.exists(tmp):
                    os.remove(tmp)
                print(f"ramtrace: --dump: {tmp}: {e.strerror}", file=sys.stderr)
                return 2
    return 0


def main(argv=None):
    """The command line (python/ramtrace/__main__.py)."""
    return _main(sys.argv[1:] if argv is None else argv)
