"""The wire's HTTP connection: answers of a Content-Length, chunked and to the end of the connection; an answer cut
short is a failure of the call, and the next call starts on a new connection."""

import socket
import threading

import pytest

from memmatrix.exchange.loopback import Connection, HTTPFailure


def serve(answers: list[bytes]):
    """A server that answers each request of one connection with the next of ``answers`` (raw bytes), then closes
    it; a second connection gets the rest. Returns its port and the requests it read."""
    lsock = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def run():
        while answers:
            conn, _ = lsock.accept()
            f = conn.makefile("rb")
            while answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = f.readline()
                    if not line:
                        break
                    head += line
                if not head:
                    break
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                seen.append(head + f.read(length))
                answer = answers.pop(0)
                conn.sendall(answer)
                if b"Connection: close" in answer or not answer.endswith(b"}"):
                    break
            f.close()
            conn.close()
        lsock.close()

    threading.Thread(target=run, daemon=True).start()
    return lsock.getsockname()[1], seen


def test_kept_alive_answers_of_a_length_and_chunked_on_one_connection():
    port, seen = serve([b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Memmatrix-Call-Ms: 1.5\r\n\r\n{\"a\": 1}",
                        b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"b\"\r\n3\r\n: 2\r\n1\r\n}\r\n0\r\n\r\n"])
    c = Connection("127.0.0.1", port)
    assert c.post("/call", b"{}", 5) == (200, {"content-length": "8", "x-memmatrix-call-ms": "1.5"}, b'{"a": 1}')
    status, _, body = c.post("/call", b'{"x": 1}', 5)
    assert (status, body) == (500, b'{"b": 2}')
    assert seen[0].startswith(b"POST /call HTTP/1.1\r\n") and seen[1].endswith(b'\r\n\r\n{"x": 1}')
    c.close()


def test_an_answer_cut_short_fails_and_the_next_call_opens_a_new_connection():
    port, _ = serve([b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"cut",
                     b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"])
    c = Connection("127.0.0.1", port)
    with pytest.raises(HTTPFailure, match="after 5 of 50 bytes"):
        c.post("/call", b"{}", 5)
    assert c.sock is None
    assert c.post("/call", b"{}", 5)[2] == b"{}"
    assert c.sock is None  # the server said Connection: close


def test_not_http_is_named():
    port, _ = serve([b"SSH-2.0-OpenSSH\r\n\r\n}"])
    with pytest.raises(HTTPFailure, match="not an HTTP/1.x status line"):
        Connection("127.0.0.1", port).post("/call", b"{}", 5)
