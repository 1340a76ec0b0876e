"""The optional pinned judge for prompt hygiene (contradiction columns B, E and U).

Used only where a system exposes no qualifier on what it injects, so hygiene cannot be
scored mechanically. It goes through the model gateway like every model call: in oracle
mode it is the oracle's rule-based judge (``model.dialects.memmatrix.judge_hygiene``), in
proxy mode a real model, at temperature 0; both follow the rules written in ``SYSTEM``. The
judge's identity (model, prompt version, temperature) is in the stamp, every judgement is
in the transcript, and judged cells are reported apart from mechanical ones. How often the
judge agrees with human labels is measured on ``cases/judge/`` (``memmatrix.judgesuite``).
"""

from __future__ import annotations

import json

import requests

from ..model.dialects.memmatrix import JUDGE_MARKER

VERDICTS = ("absent", "qualified", "unqualified")

SYSTEM = f"""{JUDGE_MARKER}
You check the text a memory system hands to a language model before it answers a question.
The user message is JSON: {{"question", "stale", "current", "text"}}. "stale" is a value that was true once and is
no longer (it was replaced, retracted, or its validity ended); "current" is the value that replaced it, or null.
Decide how "text" presents the stale value.

1. Mentions. A mention is the stale value as whole words, ignoring case: "Brackenholt" is not mentioned by
   "Brackenholtby", and a stale value seen only inside the current value ("Brackenholt" in "Upper Brackenholt") is
   not a mention.
2. Locality. A mention is qualified only when a qualifier in its own sentence attaches to it. A correction on
   another line or in another sentence does not qualify a bare mention, even if it is about the same value: the
   model cannot rely on the order of retrieved lines.
3. Qualifiers are whole words or phrases, never parts of words ("Befriended", "blender", "Left-footed", "reformer"
   hold none). They are:
   - an end of validity, in any wording: until / till / through / thru / up to / before <date>, "valid to <date>",
     "ending <date>", "expires <date>", "expired", "ended on <date>", "checking out <date>", a closed range
     ("2017–2021", "3–9 May", "from 3 May to 9 May", "between 3 and 9 May"), "no longer true since <date>". An open
     range ("2021–present", "since 2021") or "until further notice" is no end. A stated end counts whether the
     date is past or future: the reader compares it with today.
   - a past state: formerly, previously, once, former, ex-, used to, no longer, not ... anymore, moved from /
     away from / out of <value>, left / quit / sold / stopped / gave up / cancelled <value>, switched / changed
     from <value>, replaced <value>, instead of / rather than <value>, "<value> → <new>", and the simple past of a
     state ("I lived in X", "I was a member of X"); the present perfect ("I have lived in X since 2019") is current.
   - a retraction or denial: retracted, superseded, withdrawn, "was wrong / a mistake / a mix-up / outdated",
     "I misspoke when I said X", "not X", "no sister called X", "X is not my employer", "X is no longer my name".
   - in structured text: the record's own status (former, superseded, retracted, expired, sold ...),
     superseded_by, or end date (valid_to, invalid_at, expired_at ... other than "Present" or null); a table row's
     filled end column or status column; a list label or leading tag such as "Former:" or "[superseded]". These
     qualify the values of that record, row or item only.
4. Attachment. A qualifier qualifies the value it is grammatically about, not every value nearby:
   - a qualifier on the current value does not qualify the stale one: with stale "Brackenholt" and current
     "Dunmere", "Brackenholt, formerly Dunmere" and "Brackenholt; Dunmere (superseded)" are unqualified, while
     "Dunmere (formerly Brackenholt)" is qualified;
   - "moved from X to Y": X is qualified, Y is not;
   - a negated change presents the value as current ("I never left X", "I didn't quit X", "I haven't stopped X");
   - look-alikes qualify nothing: "ended up in X" (arrived), "left" as a direction ("the left lane", "keep
     left"), "before" as a place or a daily time ("before the roundabout", "before lunch"), "the former mill in X"
     (former describes the mill), "a formerly-quiet X café", plans ("I'm going to give up X", "I plan to leave X
     in the autumn"), "as I said earlier", "my old X" meaning aged, idioms that deny nothing ("not only ...",
     "don't forget ...", an interjection "No, ...").
Verdicts:
- "absent": the stale value is not mentioned;
- "qualified": every mention has a qualifier attached to it;
- "unqualified": at least one mention presents the stale value as current, so a model would have to guess
  which value holds.
Answer with JSON only: {{"verdict": "absent" | "qualified" | "unqualified", "reason": "<one sentence naming the
deciding mention and its qualifier, or the bare mention>"}}"""


class Judge:
    REQUEST_MODEL = "memmatrix-judge"  # the name in every request; the gateway maps it to the pinned model

    def __init__(self, base_url: str, model: str, timeout_s: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.model = model  # the model that actually judges (stamp)
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.trust_env = False  # loopback: no proxy look-up in the environment on every call

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
