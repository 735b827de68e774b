"""ramtrace.trace — a trace file as pandas DataFrames.

    t = ramtrace.open_trace("t.db")
    t.runs()                                        # the runs table
    t.sql("SELECT layer, head, count(*) FROM reads GROUP BY 1, 2")
    t.events(layer=1, head=2, pos=slice(0, 100), op="r")
    t.stats(); t.simulate(policy="lru,s3fifo", capacity=[64, 256], scope="head")

sql() runs on a read-only connection with the events virtual table
registered (build/libramtrace_sql.so, docs/trace-schema.md), so `events`,
`reads` and `writes` read as tables.  events() reads the packed blocks
with numpy (ramtrace.events).  stats() and simulate() run the ramtrace
command's own code and return its CSV as a DataFrame, so their numbers are
the command's: the binary is RAMTRACE_BIN, `ramtrace` on PATH, or the
checkout's ./ramtrace or build/ramtrace.  Errors are ramtrace.Error (the command's or
SQLite's one-line message), ValueError/TypeError for bad Python arguments.
"""
import io
import os
import shutil
import sqlite3
import subprocess

import pandas as pd

from ramtrace import events as _events
from ramtrace._lib import Error

_HERE = os.path.dirname(os.path.abspath(__file__))


def _find(candidates):
    for p in candidates:
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return None


def _binary():
    b = _find([os.environ.get("RAMTRACE_BIN"), shutil.which("ramtrace"),
               os.path.join(_HERE, "..", "..", "ramtrace"),
               os.path.join(_HERE, "..", "..", "build", "ramtrace")])
    if not b:
        raise Error("the ramtrace command was not found (set RAMTRACE_BIN or put it on PATH)")
    return b


def _extension():
    return _find([os.environ.get("RAMTRACE_SQLEXT"), os.path.join(_HERE, "libramtrace_sql.so"),
                  os.path.join(_HERE, "..", "..", "build", "libramtrace_sql.so")])


class Trace:
    """One trace file (see the module's text)."""

    def __init__(self, path):
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise Error(f"{path}: no such trace file")
        self.path = path
        con = self._connect(extension=False)
        try:
            app = con.execute("PRAGMA application_id").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise Error(f"{path}: not a trace: {e}") from None
        finally:
            con.close()
        if app != _events.APPLICATION_ID:
            raise Error(f"{path}: not a ramtrace trace (application_id {app:#x})")

    def _connect(self, extension=True):
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        ext = _extension() if extension else None
        if ext:
            try:
                con.enable_load_extension(True)
                con.load_extension(os.path.splitext(ext)[0])
                con.enable_load_extension(False)
            except (AttributeError, sqlite3.OperationalError):
                pass  # events/reads/writes then need the extension; the other tables still read
        return con

    def sql(self, query, params=()):
        """The result of one read-only SQL statement as a DataFrame."""
        if not isinstance(query, str):
            raise TypeError(f"sql: expected a str query, not {type(query).__name__}")
        con = self._connect()
        try:
            return pd.read_sql_query(query, con, params=params)
        except (sqlite3.Error, pd.errors.DatabaseError) as e:
            raise Error(f"{self.path}: {e}") from None
        finally:
            con.close()

    def runs(self):
        """The runs table."""
        return self.sql("SELECT * FROM runs ORDER BY run_id")

    def events(self, layer=None, head=None, pos=None, op="rw", run=None):
        """One run's events (the latest by default) as a DataFrame in the
        order (layer, head, pos, op, rank); pos a slice(lo, hi) or (lo, hi);
        op 'r', 'w' or 'rw'."""
        if isinstance(pos, slice):
            if pos.step not in (None, 1):
                raise ValueError("pos: a slice with a step is not supported")
            pos = (pos.start or 0, pos.stop)
        try:
            return _events.load_events(self.path, run=run, layer=layer, head=head, pos=pos, ops=op, frame=True)
        except _events.TraceError as e:
            raise Error(str(e)) from None

    def _cmd(self, *args):
        r = subprocess.run([_binary(), *args], capture_output=True, text=True)
        if r.returncode:
            raise Error(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"ramtrace {args[0]} failed")
        return pd.read_csv(io.StringIO(r.stdout))

    def stats(self, run=None, layer=None, head=None, window=None):
        """`ramtrace stats` of a run as a DataFrame (one row per head)."""
        a = ["stats", self.path, "-f", "csv"]
        for k, v in (("--run", run), ("--layer", layer), ("--head", head), ("--window", window)):
            if v is not None:
                a += [k, str(int(v))]
        return self._cmd(*a)

    def simulate(self, policy="all", capacity=None, scope=None, ops=None, order=None, warmup=None, run=None,
                 layer=None, head=None):
        """`ramtrace simulate` as a DataFrame (capacity: an int or a list;
        None sweeps)."""
        a = ["simulate", self.path, "-f", "csv", "--policy", str(policy)]
        if capacity is None:
            a.append("--sweep")
        else:
            caps = [capacity] if isinstance(capacity, int) else list(capacity)
            if not caps or not all(isinstance(c, int) and c > 0 for c in caps):
                raise ValueError("capacity: expected a positive int or a list of them")
            a += ["--capacity", ",".join(str(c) for c in caps)]
        for k, v in (("--scope", scope), ("--ops", ops), ("--order", order), ("--warmup", warmup), ("--run", run),
                     ("--layer", layer), ("--head", head)):
            if v is not None:
                a += [k, str(v)]
        return self._cmd(*a)


def open_trace(path):
    """Open a trace file (read-only)."""
    return Trace(path)
