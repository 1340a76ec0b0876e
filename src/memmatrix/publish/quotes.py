"""What a case page shows of the transcript behind its cells: which lines its findings cite, each quoted (what a
call got back, what the model answered) or named (line ranges and how many of each call), read in one pass over a
committed transcript that keeps only the lines it will quote."""

from __future__ import annotations

import json

from pathlib import Path

from markupsafe import Markup

from ..common.canon import iter_lines, loads_line, stored_transcript

#: a call's record is quoted by what it got back (its items' texts, each cut at ITEM_CHARS; or the record from the
#: call's name on: its arguments are in its summary), a model call by what it answered
#: (its prompt, named by the summary, is whole in the committed file); a quote longer than HEAD + TAIL characters
#: is shown as its first HEAD and last TAIL, saying how many were left out
HEAD, TAIL, ANSWER_CHARS, ITEM_CHARS = 140, 140, 280, 90


def check_line(check: dict, reason: str = "") -> str:
    """A cell's check as one line: its kind and outcome, then each other field as ``name value`` (a nested value as
    compact JSON), in the order of its keys; a long text the cell's reason already says word for word is pointed
    to, not repeated."""
    mark = {True: "ok", False: "not ok"}.get(check.get("ok"), "")
    fields = [f"{k} {'(as the reason says)' if isinstance(v, str) and len(v) > 40 and v in reason else v}"
              if isinstance(v, str) else f"{k} {json.dumps(v, ensure_ascii=False, separators=(',', ':'))}"
              for k, v in check.items() if k not in ("check", "ok")]
    return " · ".join([f"{check.get('check', 'check')}{': ' + mark if mark else ''}", *fields])


def text_node(value: str) -> Markup:
    """Text inside an element (a quoted transcript line, a reason, a check): only ``&``, ``<`` and ``>`` need
    escaping there, so quotes stay one character each (autoescape would make each five)."""
    return Markup(str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))

def transcript_lines(folder: Path, name: str):
    """The lines of a committed transcript, one at a time (none when the result has no such file)."""
    f = stored_transcript(folder, name)
    return iter_lines(f) if f.is_file() else iter(())


def _cut(line: str, head: int = HEAD, tail: int = TAIL) -> tuple[str, int, str]:
    """A line as (its start, how many characters are left out, its end)."""
    if len(line) <= head + tail:
        return line, 0, ""
    return line[:head], len(line) - head - tail, line[len(line) - tail:]


def _outcome(line: str, rec: dict) -> tuple[str, int, str]:
    """The quote of a harness record: what a call got back, its arguments left to the summary. An answer of items
    is quoted as their texts, numbered (ids, scores and times stay in the committed line); any other answer, or an
    error, as the record from the call's name on. An op's record is not quoted (its summary names it, the case file
    holds it)."""
    if rec.get("kind") != "call":
        return "", 0, ""
    result = rec.get("result")
    items = result.get("items") if isinstance(result, dict) and "error" not in rec else None
    if items == []:
        return "", 0, ""  # its summary says it got nothing back
    if isinstance(items, list) and all(isinstance(i, dict) and "text" in i for i in items):
        texts = [_said(i["text"], ITEM_CHARS) for i in items]
        return _cut(" ".join(f"[{k}] {t}" for k, t in enumerate(texts, 1)), HEAD, TAIL)
    start = line.find(',"call":') if line.startswith('{"args":') else -1
    return _cut("{" + line[start + 1:] if start > 0 else line)


def _tail(line: str) -> str:
    """A model call's record from its response on (its keys are sorted: response, seq, status, usage close it):
    what its quote reads, kept without the prompt until a finding asks for it."""
    start = line.find(',"response":')
    return "{" + line[start + 1:] if start > 0 else line


def _answer(tail: str) -> tuple[str, int, str]:
    """The quote of a model call: what the model answered (its message's text, or the error it returned)."""
    if not tail:
        return "", 0, ""
    try:
        response = loads_line(tail).get("response")
    except (ValueError, AttributeError):
        return _cut(tail)
    return _cut(_said_by(response), ANSWER_CHARS // 2, ANSWER_CHARS // 2)


def _said_by(response) -> str:
    if not isinstance(response, dict):
        return "" if response is None else json.dumps(response, ensure_ascii=False)
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message") or {}
        return str(message.get("content") if message.get("content") is not None else json.dumps(message))
    return json.dumps(response["error"], ensure_ascii=False) if "error" in response else ""


def _said(value, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def summary(rec: dict) -> str:
    """One readable line for a transcript record: what was asked and what came back (the line itself follows)."""
    kind = rec.get("kind")
    if kind == "call":
        args = rec.get("args") or {}
        shown = ", ".join(f"{k}={_said(v, 60)}" for k, v in args.items() if k not in ("at", "config"))
        if "error" in rec:
            got = f"error: {_said((rec['error'] or {}).get('message', rec['error']))}"
        else:
            result = rec.get("result")
            items = result.get("items") if isinstance(result, dict) else None
            got = f"{len(items)} item(s)" if isinstance(items, list) else _said(result, 70)
        return f"{rec.get('call')}({shown}) → {got}"
    if kind == "op":
        spec = rec.get("spec") or {}
        return f"op {rec.get('index')}: {spec.get('op')}" + (f": {_said(spec['note'])}" if spec.get("note") else "")
    if kind == "chat" or "endpoint" in rec:  # a model call
        ctx = rec.get("context") or {}
        return (f"{rec.get('kind')} {rec.get('endpoint', '')} during {ctx.get('call')}: dialect {rec.get('dialect', '—')}"
                f", matched {rec.get('matched', '—')}")
    return str(kind)


#: a cell whose verdict is one of these is a finding: the lines behind it are quoted; a passing cell's are named
FINDINGS = frozenset({"FAIL", "ERROR"})


def evidence(case: dict, by_op: dict, model_by_op: dict, step_ops: dict) -> tuple[list[dict], list[dict]]:
    """The cells, each with the ops its checks name (or, for a check naming none, the ops of the cell's step); and
    those ops, each once, with their transcript lines and the model calls made during them. An op a finding names
    has its lines quoted; an op only passing (or skipped) cells name has each line named by its number and what it
    was, the line itself left in the committed file."""
    cells, named, quoted = [], {}, set()
    for cell in case["cells"]:
        ops = list(dict.fromkeys(ch["op"] for ch in cell.get("checks", []) if isinstance(ch.get("op"), int)))
        if cell.get("checks") and any(not isinstance(ch.get("op"), int) for ch in cell["checks"]):
            ops += [op for op in sorted(step_ops.get(cell["step"], ())) if op not in ops]
        cells.append({"cell": cell, "ops": ops})
        if cell.get("verdict") in FINDINGS:
            quoted.update(ops)
        for op in ops:
            named.setdefault(op, {"op": op})
    for op, entry in named.items():
        lines, model = by_op.get(op, []), model_by_op.get(op, [])
        if op in quoted:
            answers = [(n, label, rec, _answer(tail)) for n, label, rec, tail in model]
            entry.update(quoted=True, lines=_join([_quoted(n, line) for n, _, _, line in lines]),
                         model=_join([_item(n, summary(rec), a) for n, _, rec, a in answers if a[0]]),
                         silent=_brief([a for a in answers if not a[3][0]]))  # calls answering no text: embeddings
        else:
            entry.update(quoted=False, lines=_brief(lines), model=_brief(model))
    return cells, [named[op] for op in sorted(named)]


class _join(list):
    """Quoted lines as a list (its length is how many) whose text is their list items, each on its line."""

    def __html__(self) -> str:
        return "\n".join(self)


def _quoted(n: int, line: str) -> Markup:
    """A harness transcript line quoted: read again (only quoted lines are summarised)."""
    if not line:
        return Markup(f'<li value="{n}"><b>line {n}</b></li>')
    rec = loads_line(line)
    return _item(n, summary(rec), _outcome(line, rec))


def _brief(entries: list) -> dict | None:
    """Lines named, not quoted: their numbers as ranges, and how many of each kind (a call by its name, a model call
    by its kind and dialect), in the order they first came."""
    if not entries:
        return None
    ranges: list[list[int]] = []
    kinds: dict[str, int] = {}
    for n, label, _, _ in entries:
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
        kinds[label] = kinds.get(label, 0) + 1
    return {"count": len(entries), "ranges": ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in ranges),
            "kinds": ", ".join(f"{k} ×{c}" for k, c in kinds.items())}


def _item(n: int, what: str, quote: tuple[str, int, str]) -> Markup:
    """One quoted transcript line as a list item: its number in the committed file, what it was, the line (its
    middle left out when long, saying how much)."""
    start, cut, end = quote
    if not (start or end):
        return Markup(f'<li value="{n}"><b>{text_node(what)}</b></li>')
    middle = f"<em> …{cut} characters… </em>" if cut else ""
    return Markup(f'<li value="{n}"><b>{text_node(what)}</b><code>{text_node(start)}{middle}{text_node(end)}</code></li>')


def _head(line: str) -> str:
    """A model call's record without its request and what follows (its keys are sorted: context, dialect, endpoint,
    kind and matched come first): all its summary reads, without parsing a whole prompt."""
    cut = line.find(',"request":')
    return line[:cut] + "}" if cut > 0 else line


def findings(result: dict) -> dict[str, tuple[set, set]]:
    """Per case, what its findings (FAIL and ERROR cells) cite: the ops their checks name, and the steps of those
    with a check naming no op (all that step's ops are cited)."""
    out = {}
    for case in result["cases"]:
        ops, steps = set(), set()
        for cell in case["cells"]:
            if cell.get("verdict") in FINDINGS:
                checks = cell.get("checks", [])
                ops.update(ch["op"] for ch in checks if isinstance(ch.get("op"), int))
                if any(not isinstance(ch.get("op"), int) for ch in checks):
                    steps.add(cell["step"])
        if ops or steps:
            out[case["id"]] = (ops, steps)
    return out


def index_transcript(lines, findings: dict, step_of: dict, model: bool = False) -> tuple[dict, dict]:
    """One pass over a transcript: case -> op -> [(line number, its kind, and for a model call its record's head
    and the tail its quote is read from (``_tail``); for a harness line None and the line)], and (for the harness
    transcript) case -> step -> the op indexes recorded under that step, filling ``step_of`` ((case, op) -> step)
    as it goes. A model call's case and op are in its ``context``. Only a line a finding cites (``findings``) keeps
    its text, so a run's pages hold what they quote, not its whole transcript."""
    by_case: dict[str, dict[int, list]] = {}
    steps: dict[str, dict[str, set]] = {}
    for n, line in enumerate(lines, 1):
        try:
            rec = loads_line(_head(line) if model else line)
        except ValueError:
            try:
                rec = loads_line(line)
            except ValueError:
                continue
        ctx = rec.get("context") if model else rec
        if not isinstance(ctx, dict):
            continue
        case, op = ctx.get("case"), ctx.get("index")
        if case is None or not isinstance(op, int):
            continue
        if not model and rec.get("kind") == "op":
            step_of[(case, op)] = str(rec.get("step"))
            steps.setdefault(case, {}).setdefault(str(rec.get("step")), set()).add(op)
        cited_ops, cited_steps = findings.get(case, ((), ()))
        keep = op in cited_ops or step_of.get((case, op)) in cited_steps
        if model:  # an embedding's answer is vectors, never quoted
            entry = (n, f"{rec.get('kind')} {rec.get('dialect') or ''}".strip(), rec,
                     _tail(line) if keep and rec.get("kind") != "embedding" else "")
        else:
            entry = (n, str(rec.get("call") if rec.get("kind") == "call" else rec.get("kind")), None,
                     line if keep else "")
        by_case.setdefault(case, {}).setdefault(op, []).append(entry)
    return by_case, steps
