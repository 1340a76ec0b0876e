"""The optional pinned judge for prompt hygiene (contradiction columns B and E).

Used only where a system exposes no qualifier on what it injects, so hygiene cannot be
scored mechanically. It goes through the model gateway like every model call: in oracle
mode it is the oracle's lexical judge, in proxy mode a real model, at temperature 0. The
judge's identity (model, prompt version, temperature) is in the stamp, every judgement is
in the transcript, and judged cells are reported apart from mechanical ones.
"""

from __future__ import annotations

import json

import requests

from .model.dialects.memmatrix import JUDGE_MARKER

VERDICTS = ("absent", "qualified", "unqualified")

SYSTEM = f"""{JUDGE_MARKER}
You check the text a memory system hands to a language model before it answers a question.
A value was true once and is no longer (it was replaced, retracted, or its validity ended).
Decide how the text presents that stale value:
- "absent": the stale value does not appear;
- "qualified": every mention marks it as no longer current (former, until a date, superseded, retracted);
- "unqualified": at least one mention presents it as current, so a model would have to guess which value holds.
Answer with JSON only: {{"verdict": "absent" | "qualified" | "unqualified", "reason": "<one sentence>"}}"""


class Judge:
    REQUEST_MODEL = "memmatrix-judge"  # the name in every request; the gateway maps it to the pinned model

    def __init__(self, base_url: str, model: str, timeout_s: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.model = model  # the model that actually judges (stamp)
        self.timeout_s = timeout_s
        self.session = requests.Session()

    def identity(self) -> dict:
        return {"prompt": JUDGE_MARKER, "model": self.model, "temperature": 0}

    def request(self, question: str, stale: str, current: str | None, text: str) -> dict:
        case = {"question": question, "stale": stale, "current": current, "text": text}
        return {"model": self.REQUEST_MODEL, "temperature": 0, "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": json.dumps(case, ensure_ascii=False)}]}

    def judge(self, body: dict) -> tuple[bool, dict]:
        """(True, {verdict, reason}) or (False, {kind, message}); never raises."""
        try:
            resp = self.session.post(f"{self.base_url}/chat/completions", json=body, timeout=self.timeout_s)
            content = resp.json()["choices"][0]["message"]["content"]
            answer = json.loads(content)
        except (requests.RequestException, ValueError, KeyError, IndexError, TypeError) as exc:
            return False, {"kind": "judge", "message": f"the judge did not answer usably: {type(exc).__name__}"}
        if not isinstance(answer, dict) or answer.get("verdict") not in VERDICTS:
            return False, {"kind": "judge", "message": f"the judge answered {str(answer)[:200]!r}, not one of {VERDICTS}"}
        return True, {"verdict": answer["verdict"], "reason": str(answer.get("reason", ""))[:500]}

    def close(self) -> None:
        self.session.close()
