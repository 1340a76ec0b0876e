"""The Action's opt-in comment: the state changes per cell, the figures over a threshold and the claims whose status
moved, as one comment on the pull request or the commit that the next run updates in place.

The body is built from the files the earlier steps wrote (the diff JSON, the claims JSON and the claims baseline),
checked against ``schemas/github-comment.schema.json`` (what GitHub's REST API accepts for those endpoints), and
sent with the job's token. The comment is found again by the marker it begins with, so a run edits its comment
rather than adding one per night; ``key`` tells apart the comments of several jobs of one workflow.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from ..common.errors import ConfigError
from ..common.schemas import errors as schema_errors
from ..publish.markdown import code, md

MAX_BODY = 65536     # GitHub refuses a longer comment body (422)
MAX_ROWS = 200       # rows of the changes table; the rest is in the job summary and the diff artifact
TARGETS = ("none", "pull-request", "commit")
ORDER = {"regression": 0, "changed": 1, "fixed": 2}


def marker(key: str) -> str:
    return f"<!-- memmatrix-comment:{key or 'memmatrix'} -->"


def body(key: str, diff: dict | None, claim_moves: list[str], run_url: str = "") -> str:
    """The comment's Markdown: a headline, the changes table, the over-threshold figures, the claims that moved."""
    changes = sorted((diff or {}).get("changes") or [], key=lambda c: (ORDER.get(c["kind"], 3), c["system"], c["case"]))
    over = (diff or {}).get("over_threshold") or []
    regressions = sum(c["kind"] == "regression" for c in changes)
    if diff is None:
        head = "no baseline to compare with"
    elif diff.get("baseline_missing"):
        head = f"first run: no baseline at {code(diff['baseline_missing'])} yet, nothing compared"
    elif not diff.get("compared"):
        head = "nothing was comparable with the baseline"
    elif not changes:
        head = f"no cell changed state in {len(diff['compared'])} compared run(s)"
    else:
        head = (f"{regressions} regression(s), {len(changes)} cell(s) changed state in "
                f"{len(diff['compared'])} compared run(s)")
    out = [marker(key), f"## memmatrix: {head}", ""]
    if changes:
        out += ["| kind | system | versions | runtime | case | step | old → new | now because |",
                "|---|---|---|---|---|---|---|---|"]
        for c in changes[:MAX_ROWS]:
            out.append(f"| {c['kind']} | {md(c['system'])} | {md(c['old_version'])} → {md(c['new_version'])} | "
                       f"{md(c['runtime'])} | {md(c['case'])} | {md(c['step'])} | {c['old']} → {c['new']} | "
                       f"{md(_short(c.get('reason') or ''))} |")
        if len(changes) > MAX_ROWS:
            out.append(f"\n{len(changes) - MAX_ROWS} more change(s): the job summary and the diff file list all.")
        out.append("")
    elif diff and diff.get("compared"):
        out += ["No cell changed state.", ""]
    if over:
        out += ["### Over a cost or latency threshold", "", "| system | versions | figure | baseline | now |",
                "|---|---|---|---|---|"]
        out += [f"| {md(o['system'])} | {md(o['old_version'])} → {md(o['new_version'])} | {o['kind']}: "
                f"{md(o['metric'])} | {o['old']:g} | {o['new']:g} |" for o in over[:MAX_ROWS]]
        out.append("")
    if claim_moves:
        out += ["### Claims whose status changed", ""] + [f"- {md(m)}" for m in claim_moves] + [""]
    if run_url:
        out.append(f"[The run]({run_url}): its summary has the full report; its artifact the results.")
    text = "\n".join(out).rstrip() + "\n"
    if len(text) > MAX_BODY:
        cut = "\n\n(cut at GitHub's 65,536 characters: the job summary has the rest)\n"
        text = text[:MAX_BODY - len(cut)] + cut
    return text


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def worth_saying(diff: dict | None, claim_moves: list[str]) -> bool:
    """Something a reader of the commit should see: a changed cell, a figure over its threshold or a moved claim."""
    return bool(diff and (diff.get("changes") or diff.get("over_threshold"))) or bool(claim_moves)


def request_body(text: str, schemas_dir: Path) -> bytes:
    payload = {"body": text}
    problems = schema_errors(schemas_dir, "github-comment", payload)
    if problems:  # a bug here, not the user's: never send what GitHub would refuse
        raise RuntimeError(f"the comment body breaks schemas/github-comment.schema.json: {problems[0]}")
    return json.dumps(payload).encode()


class GitHub:
    """The four REST calls the comment needs, with the job's token, against GITHUB_API_URL."""

    def __init__(self, api: str, repo: str, token: str):
        if not token:
            raise ConfigError("comment is set but github-token is empty; pass github-token: ${{ github.token }} "
                              "(the default) and give the job the permission the comment needs")
        self.api, self.repo, self.token = api.rstrip("/"), repo, token

    def call(self, method: str, path: str, data: bytes | None = None):
        req = urllib.request.Request(f"{self.api}/repos/{self.repo}{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json",
            "User-Agent": "memmatrix-action"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (GITHUB_API_URL, set by the runner)
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403, 404):
                raise ConfigError(f"GitHub answered {exc.code} to {method} {path}: the token may not write comments; "
                                  "give the job `permissions: pull-requests: write` (a pull request) or "
                                  "`contents: write` (a commit)") from None
            raise ConfigError(f"GitHub answered {exc.code} to {method} {path}: {exc.read()[:300]!r}") from None

    def find(self, listing: str, mark: str) -> int | None:
        page = 1
        while True:
            items = self.call("GET", f"{listing}?per_page=100&page={page}") or []
            for item in items:
                if (item.get("body") or "").startswith(mark):
                    return int(item["id"])
            if len(items) < 100:
                return None
            page += 1


def publish(gh: GitHub, target: str, where: str, text: str, schemas_dir: Path, create: bool = True) -> str:
    """Create or update memmatrix's comment on pull request ``where`` (a number) or commit ``where`` (a sha).
    Returns what was done: "updated N", "created" or "nothing to say"."""
    listing = f"/issues/{where}/comments" if target == "pull-request" else f"/commits/{where}/comments"
    edit = "/issues/comments/{}" if target == "pull-request" else "/comments/{}"
    data = request_body(text, schemas_dir)
    found = gh.find(listing, text.split("\n", 1)[0])
    if found is not None:
        gh.call("PATCH", edit.format(found), data)
        return f"updated {found}"
    if not create:
        return "nothing to say"
    made = gh.call("POST", listing, data) or {}
    return f"created {made.get('id', '')}".strip()
