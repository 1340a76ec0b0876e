"""notes: a markdown file per scope. Append lines, grep to recall, delete removes lines.

It has no extraction, no derived store, no background job, no audit and no sharing,
and says so in its capability declaration.
"""

from __future__ import annotations

import os
from pathlib import Path

from adapterkit import content_tokens, contains, coverage, tokens

FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of its content words
MAX_LINES = 20          # grep output handed to the model


class NotesAdapter:
    def __init__(self, config: dict):
        self.root = Path(config["data_dir"]) / "notes"
        self.root.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ the memory
    def _file(self, scope: str) -> Path:
        return self.root / f"{scope}.md"

    def _lines(self, scope: str) -> list[str]:
        f = self._file(scope)
        return [ln[2:] for ln in f.read_text(encoding="utf-8").splitlines() if ln.startswith("- ")] if f.exists() else []

    def _save(self, scope: str, lines: list[str]) -> None:
        tmp = self._file(scope).with_suffix(".tmp")
        tmp.write_text("".join(f"- {ln}\n" for ln in lines), encoding="utf-8")
        os.replace(tmp, self._file(scope))

    def _grep(self, query: str, scope: str) -> list[str]:
        words = content_tokens(query)
        hits = []
        for line in self._lines(scope):
            have = set(tokens(line))
            score = sum(w in have for w in words)
            if score:
                hits.append((-score, line))
        return [line for _, line in sorted(hits, key=lambda h: h[0])][:MAX_LINES]

    # ------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "notes", "version": "1.0"},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "supported"},
                "update": no("a notes file has no update; a new line is appended instead"),
                "run_background_jobs": no("a notes file has no background jobs"),
                "probe": {"support": "supported"},
                "audit": no("a notes file keeps no record of its edits"),
                "share": no("a notes file cannot be shared with another scope"),
                "import_history": no("a notes file has one write path: appending lines"),
            },
            "doors": [{"name": "grep", "description": "matching lines, most matching words first, as a markdown list"}],
            "stores": [{"name": "notes-file", "kind": "text", "role": "primary",
                        "description": "the markdown file of the scope"}],
            "background_jobs": [],
        }

    def reset(self) -> None:
        for f in self.root.glob("*.md"):
            f.unlink()

    def write(self, scope: str, at: str, messages: list) -> dict:
        lines = self._lines(scope)
        new = [m["content"].replace("\n", " ") for m in messages if m["role"] == "user"]
        self._save(scope, lines + new)
        return {"ids": []}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "writes are synchronous"}

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        hits = self._grep(query, scope)
        text = "Notes:\n" + "".join(f"- {h}\n" for h in hits) if hits else "Notes: (nothing matches)"
        return {"text": text, "items": [{"text": h, "kind": "line"} for h in hits]}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [{"text": h, "kind": "line"} for h in self._grep(query, scope)[:k]]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        lines = self._lines(scope)
        keep = [ln for ln in lines if coverage(text, ln) < FORGET_COVERAGE]
        self._save(scope, keep)
        return {"ids": []}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        f = self._file(scope)
        raw = f.read_text(encoding="utf-8") if f.exists() else ""
        hits = [ln for ln in raw.splitlines() if contains(ln, needle["token"])]
        return {"state": "present" if hits else "absent", "evidence": hits}
