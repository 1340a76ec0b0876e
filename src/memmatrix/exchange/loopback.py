"""One kept-alive HTTP/1.1 connection to an adapter server, with its answers read as plain lines.

``http.client`` parses response headers with the email package: about a tenth of a millisecond per call on
loopback (measured: 0.18 ms a round trip against 0.09 ms this way, benchmarks/README.md), the largest part of
what the wire costs a system whose own calls take a millisecond. h11 (python-hyper's HTTP/1.1 state machine)
measured the same as ``http.client``. The wire needs little of HTTP: a POST with a Content-Length, an answer
with a status, headers and a body of a Content-Length (adapterkit's server) or chunked (another server's).
"""

from __future__ import annotations

import socket


class HTTPFailure(OSError):
    """The server's answer is not HTTP/1.x as the wire speaks it, or the connection closed mid-answer."""


class Connection:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.sock: socket.socket | None = None
        self.file = None

    def _open(self, timeout: float) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # keep-alive + Nagle: ~40 ms a call
        self.file = self.sock.makefile("rb")

    def post(self, path: str, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        """Send one POST and read its whole answer: (status, headers by lower-case name, body). Any failure closes
        the connection, so a half-read answer never reaches the next call."""
        try:
            if self.sock is None:
                self._open(timeout)
            self.sock.settimeout(timeout)
            self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self.host.encode(), self.port,
                                                                 len(body), body))
            status, headers = self._head()
            data = self._body(headers)
            if headers.get("connection", "").lower() == "close":
                self.close()
            return status, headers, data
        except BaseException:
            self.close()
            raise

    def _line(self) -> bytes:
        line = self.file.readline(65537)
        if not line:
            raise HTTPFailure("the adapter server closed the connection before answering")
        return line

    def _head(self) -> tuple[int, dict[str, str]]:
        parts = self._line().split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise HTTPFailure(f"not an HTTP/1.x status line: {b' '.join(parts)[:80]!r}")
        headers: dict[str, str] = {}
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return int(parts[1]), headers
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()

    def _body(self, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            return self._exactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            out = []
            while True:
                size = int(self._line().split(b";")[0].strip(), 16)
                if size == 0:
                    while self._line() not in (b"\r\n", b"\n"):  # trailers
                        pass
                    return b"".join(out)
                out.append(self._exactly(size))
                self._line()
        data = self.file.read()  # neither: the body runs to the end of the connection
        self.close()
        return data

    def _exactly(self, n: int) -> bytes:
        data = self.file.read(n)
        if len(data) != n:
            raise HTTPFailure(f"the answer ended after {len(data)} of {n} bytes")
        return data

    def close(self) -> None:
        for part in (self.file, self.sock):
            if part is not None:
                try:
                    part.close()
                except OSError:
                    pass
        self.sock = self.file = None
