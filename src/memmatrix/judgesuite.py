"""PLACEHOLDER until the judge suite lands (replaced by the judge work)."""
from __future__ import annotations
import json
from pathlib import Path
from .canon import sha256_file


def load_suite(path):
    data = json.loads(Path(path).read_text())
    data["_sha256"] = sha256_file(path)
    return data


def suite_requests(suite, judge):
    return [(it["id"], judge.request(it["question"], it["stale"], it.get("current"), it["text"])) for it in suite["items"]]


def score(suite, answers):
    wrong = [it["id"] for it in suite["items"] if answers.get(it["id"]) != it["expected"]]
    n = len(suite["items"])
    return {"suite": {"version": suite["version"], "sha256": suite["_sha256"]}, "items": n, "correct": n - len(wrong),
            "accuracy": round((n - len(wrong)) / n, 4), "wrong": wrong}
