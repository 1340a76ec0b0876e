"""A loopback stand-in for the four GitHub REST endpoints the Action's comment uses, which refuses (422) a request
body GitHub's API would refuse (schemas/github-comment.schema.json) and records every request."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jsonschema import Draft202012Validator

from conftest import ROOT

SCHEMA = Draft202012Validator(json.loads((ROOT / "schemas" / "github-comment.schema.json").read_text()))


class FakeGitHub:
    def __init__(self, repo: str = "octo/memory", deny: bool = False, page_size: int = 100):
        self.repo, self.deny, self.page_size = repo, deny, page_size
        self.threads: dict[str, list[dict]] = {}   # "issues/7" or "commits/<sha>" -> comments
        self.requests: list[tuple[str, str, dict | None]] = []
        self.next_id = 1000
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, payload) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((method, self.path, body))
                if not self.headers.get("Authorization", "").startswith("Bearer ") or fake.deny:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                if body is not None and list(SCHEMA.iter_errors(body)):
                    return self._send(422, {"message": "Validation Failed"})
                code, payload = fake.handle(method, self.path.split("?")[0], self.path, body)
                self._send(code, payload)

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_PATCH(self):
                self._route("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def handle(self, method: str, path: str, full: str, body):
        base = f"/repos/{self.repo}"
        if not path.startswith(base):
            return 404, {"message": "Not Found"}
        rest = path[len(base):]
        listing = re.fullmatch(r"/(issues/\d+|commits/[0-9a-f]+)/comments", rest)
        edit = re.fullmatch(r"/(?:issues/)?comments/(\d+)", rest)
        if listing and method == "GET":
            page = int(m.group(1)) if (m := re.search(r"[?&]page=(\d+)", full)) else 1
            items = self.threads.get(listing.group(1), [])
            return 200, items[(page - 1) * self.page_size: page * self.page_size]
        if listing and method == "POST":
            self.next_id += 1
            item = {"id": self.next_id, "body": body["body"]}
            self.threads.setdefault(listing.group(1), []).append(item)
            return 201, item
        if edit and method == "PATCH":
            for items in self.threads.values():
                for item in items:
                    if item["id"] == int(edit.group(1)):
                        item["body"] = body["body"]
                        return 200, item
        return 404, {"message": "Not Found"}

    def close(self) -> None:
        self.server.shutdown()
