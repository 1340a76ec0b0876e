from pathlib import Path

import pytest

from memmatrix.adapterkit import AdapterLoadError, check_adapter_class, coverage, load_adapter_class, split_spec


def test_spec_must_name_a_python_file_and_a_class():
    with pytest.raises(AdapterLoadError, match="path/to/adapter.py:ClassName"):
        split_spec("adapter.py")
    assert split_spec("a/b.py:C")[1] == "C"


def test_missing_file_and_missing_class_are_named(tmp_path):
    with pytest.raises(AdapterLoadError, match="does not exist"):
        load_adapter_class(f"{tmp_path}/nope.py:X")
    f = tmp_path / "a.py"
    f.write_text("class Other:\n    pass\n")
    with pytest.raises(AdapterLoadError, match=r"no class 'X'; classes defined there: \['Other'\]"):
        load_adapter_class(f"{f}:X")


def test_an_adapter_file_that_fails_to_import_names_the_error(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("import not_a_module_anywhere\n")
    with pytest.raises(AdapterLoadError, match="failed to import: ModuleNotFoundError"):
        load_adapter_class(f"{f}:X")


def test_every_signature_mismatch_is_reported_at_once():
    class Bad:
        def capabilities(self): ...
        def reset(self): ...
        def write(self, text, scope): ...
        def forget(self, scope, at, text): ...

    with pytest.raises(AdapterLoadError) as err:
        check_adapter_class(Bad)
    msg = str(err.value)
    assert "missing required operation door(query, scope, door, at)" in msg
    assert "Bad.write(self, text, scope) does not match the contract write(scope, at, messages)" in msg
    assert "missing parameter(s) ['at', 'messages']" in msg
    assert "required parameter(s) not in the contract ['text']" in msg
    assert "forget" not in msg


def test_coverage_counts_content_words_only():
    assert coverage("The code for my storage locker", "storage locker code") == 1.0
    assert coverage("the of my", "anything") == 0.0


def test_sqlite_hits_finds_the_token_in_any_table_and_in_json_leaves(tmp_path):
    import sqlite3
    from memmatrix.adapterkit import sqlite_hits
    db = tmp_path / "x.sqlite3"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE queue (id INTEGER, doc TEXT, meta TEXT)")
    con.execute("CREATE TABLE other (blob BLOB)")
    con.execute("INSERT INTO queue VALUES (1, 'the code is QX-4471-TRV', ?)",
                ('{"inode": 77, "content": "code QX-4471-TRV", "n": ["QX-4471-TRVX"]}',))
    con.execute("INSERT INTO queue VALUES (2, 'the code is QX-4471-TRVX', '{}')")
    con.execute("INSERT INTO other VALUES (?)", (b"bytes QX-4471-TRV",))
    con.commit()
    con.close()
    assert sqlite_hits(db, "QX-4471-TRV") == ["other: bytes QX-4471-TRV", "queue: code QX-4471-TRV",
                                              "queue: the code is QX-4471-TRV"]
    assert sqlite_hits(db, "ZZ-0000") == [] and sqlite_hits(tmp_path / "missing.sqlite3", "QX") == []


def test_grant_search_opens_only_the_folders_below_the_temp_directory(tmp_path):
    import os
    import stat
    from memmatrix.adapterkit import grant_search
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    for d in (tmp_path, tmp_path / "a", deep):
        os.chmod(d, 0o700)
    grant_search(deep, "nobody", "Postgres")
    assert all((d.stat().st_mode & 0o777) == 0o701 for d in (tmp_path, tmp_path / "a", deep))  # search, never read
    closed = Path.home() / ".memmatrix-grant-test"
    closed.mkdir(exist_ok=True)
    try:
        if not Path.home().stat().st_mode & stat.S_IXOTH:  # a home folder is never opened: the caller is told why
            with pytest.raises(PermissionError, match="is not searchable by others"):
                grant_search(closed, "nobody", "Postgres")
            assert not Path.home().stat().st_mode & stat.S_IXOTH
    finally:
        closed.rmdir()


def test_concurrent_writers_are_in_flight_together_and_a_failure_is_that_writers_own():
    import threading
    from memmatrix.adapterkit import concurrently
    first, second = threading.Event(), threading.Event()

    def one():  # returns only once the other writer has started: run one after the other, it times out
        first.set()
        if not second.wait(5):
            raise TimeoutError("the other writer never started")
        return {"ids": ["m1"]}

    def two():
        second.set()
        if not first.wait(5):
            raise TimeoutError("the other writer never started")
        raise RuntimeError("busy")

    assert concurrently([one, two]) == [{"ids": ["m1"]}, {"error": "RuntimeError: busy"}]


@pytest.fixture
def adapter_server(tmp_path):
    """examples/minimal_adapter.py behind adapterkit's server, in a process of its own: its port."""
    import subprocess
    import sys
    import time
    import memmatrix.adapterkit as kit
    root = Path(__file__).resolve().parents[1]
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, kit.__file__, "--adapter", f"{root}/examples/minimal_adapter.py:MinimalAdapter",
                             "--data-dir", str(tmp_path), "--port", "0", "--port-file", str(port_file)],
                            stdout=subprocess.DEVNULL)
    for _ in range(200):
        if port_file.exists():
            break
        time.sleep(0.05)
    yield int(port_file.read_text())
    proc.terminate()
    proc.wait(10)


def exchange(port: int, raw: bytes) -> bytes:
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_the_server_answers_every_client_the_wire_meets(adapter_server):
    import requests
    from memmatrix.exchange.wire import HttpEndpoint
    assert requests.get(f"http://127.0.0.1:{adapter_server}/health", timeout=5).json()["ok"] is True
    e = HttpEndpoint(f"http://127.0.0.1:{adapter_server}")
    assert "write" in e.call("init", {"config": {}}, 5)["implemented"]
    assert e.call("write", {"scope": "u", "at": "2026-01-01T00:00:00Z",
                            "messages": [{"role": "user", "content": "hi"}]}, 5) is not None
    e.close()
    old = exchange(adapter_server, b"GET /health HTTP/1.0\r\n\r\n")  # HTTP/1.0: the standard parser's way
    assert old.startswith(b"HTTP/1.") and b'"ok": true' in old
    chunked = exchange(adapter_server, b"POST /call HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       b"2\r\n{}\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 411")
    lower = exchange(adapter_server, b"POST /nowhere HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
    assert lower.startswith(b"HTTP/1.1 404") and b"no route /nowhere" in lower


def test_stop_serving_wakes_a_loop_that_polls_rarely():
    """The gateway and the adapter server poll for shutdown rarely (every 0.5 s); stopping must not wait for the
    poll: a loop polling every 60 s is stopped by the connection stop_serving makes."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from memmatrix.adapterkit import stop_serving

    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 60}, daemon=True)
    loop.start()
    stopper = threading.Thread(target=stop_serving, args=(server,), daemon=True)
    stopper.start()
    stopper.join(20)
    loop.join(1)
    assert not stopper.is_alive() and not loop.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
