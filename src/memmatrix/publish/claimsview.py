"""The vendor claims as Markdown (docs/claims.md, ``memmatrix claims``): a table, then each claim with the evidence
behind its status, release by release."""

from __future__ import annotations

import re

MARK = {"reproduced": "✅ reproduced", "contradicted": "❌ contradicted", "undecided": "⚠ undecided",
        "not measured": "· not measured", "untestable offline": "∅ untestable offline"}


def test_label(t: dict) -> str:
    """One test as a reader says it: 'deletion 9 [observations, right after the forget] expects PASS (setup …)'."""
    what = f"{t['protocol']} {t['step']}"
    if t.get("stores"):
        what += f" [{', '.join(t['stores'])} {(t.get('moment') or 'after-forget')}]"
    extra = []
    if t.get("setup"):
        extra.append("setup " + ", ".join(f"{k}={v}" for k, v in sorted(t["setup"].items())))
    if t.get("cases"):
        extra.append(f"cases {t['cases']}" + (f" ({', '.join(t['shapes'])})" if t.get("shapes") else ""))
    elif t.get("shapes"):
        extra.append(f"shapes {', '.join(t['shapes'])}")
    return f"{what} expects {t['expect']}" + (f" ({'; '.join(extra)})" if extra else "")


def _cells(cells: list[dict], link_base: str) -> str:
    parts = []
    for c in cells:
        if c["status"] == "not measured":
            parts.append(f"{test_label(c)}: not measured")
            continue
        n = f"{c['agree']} agree, {c['against']} against" + (f", {c['undecided']} undecided" if c["undecided"] else "")
        link = f" ([result]({link_base}{c['result']}))" if c.get("result") else ""
        parts.append(f"{test_label(c)}: {n}{link}")
    return "; ".join(parts)


def _modes(row: dict) -> str:
    """The claim's status under the error modes, in a table cell: holds under n, moves under the modes named, or ·."""
    under = row.get("under_modes") or {}
    modes = under.get("modes") or {}
    if not modes:
        return "·"
    moved = [m for m, s in modes.items() if s != row["status"]]
    if not moved:
        return f"holds under all {len(modes)} measured"
    return "moves: " + ", ".join(f"{m} → {modes[m]}" for m in moved) + f" ({len(modes)} measured)"


def _legend(statuses: dict) -> list[str]:
    return ["Statuses (one vocabulary for the registry, the README and the site):", ""] + \
        [f"- **{s}**: {what}" for s, what in statuses.items()]


def markdown(rows: list[dict], link_base: str = "") -> str:
    """The claims table, then one section per claim with its cells at each measured release."""
    from .claims import STATUSES
    counts = {s: sum(r["status"] == s for r in rows) for s in MARK}
    out = ["## Vendor claims", "",
           f"{len(rows)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ".", "",
           *_legend(STATUSES), "",
           "The column *under error modes* reads each status again from the same release's results under each "
           "imperfect oracle ([which cells are plumbing](plumbing.md)): whether it holds under every mode measured.",
           "",
           "| claim | system | releases | status | at | under error modes | quote | source |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        quote = r["quote"] if len(r["quote"]) <= 90 else r["quote"][:87] + "…"
        at = r.get("at") or ""
        setup = f" ({', '.join(f'{k}={v}' for k, v in sorted(r['setup'].items()))})" if r.get("setup") else ""
        out.append(f"| [{r['id']}](#{r['id'].lower()}) | {r['system']} | `{r['versions'] or 'any'}` | "
                   f"{MARK[r['status']]}{setup} | {at} | {_modes(r)} | {quote.replace('|', '/')} | "
                   f"[{r['source']['date']}]({r['source']['url']}) |")
    for r in rows:
        out += ["", f"### {r['id']}", "", f"> {r['quote']}", "",
                f"{r['system']} `{r['versions'] or 'any'}` · {r['kind']} · {r['topic']} · "
                f"[source]({r['source']['url']}) ({r['source'].get('where') or r['source']['date']})", ""]
        if r["untestable"]:
            out.append(f"Untestable offline: {r['untestable']}.")
        if r["tests"]:
            setup = ", ".join(f"{k}={v}" for k, v in sorted(r["setup"].items())) or "the vendor's default setup"
            out.append(f"**{r['summary']}**" + (f" at {r['at']}" if r.get("at") else "") + f", {setup}. Tested by " +
                       "; ".join(test_label(t) for t in r["tests"] if (t.get("setup") or {}) == r["setup"]) + ".")
        for m in r["measured"]:
            out.append(f"- {m['version']} {m['runtime']}: {m['summary']}: {_cells(m['cells'], link_base)}")
        if r["tests"] and not r["measured"]:
            out.append("- no result of a release in range at this setup")
        for v in r.get("variants", []):
            out.append(f"- variant {v['label']}: **{v['summary']}**" + (f" at {v['at']}" if v.get("at") else ""))
            for m in v["measured"]:
                out.append(f"  - {m['version']} {m['runtime']}: {m['summary']}: {_cells(m['cells'], link_base)}")
        if (r.get("under_modes") or {}).get("modes"):
            out.append(f"Under imperfect models: {r['under_modes']['summary']} (" + ", ".join(
                f"{m}: {s}" for m, s in r["under_modes"]["modes"].items()) + ").")
        for i in r.get("ignores", []):
            out.append(f"Not read: {i['store']} ({i['why']}).")
        if r["note"]:
            out.append(f"Note: {r['note']}")
        if r["contested"]:
            out.append("Contested: " + ", ".join(r["contested"]))
    return "\n".join(out) + "\n"


#: The words a finding may use about a vendor claim, and the status each needs.
VERBS = {"Confirmed": "reproduced", "Reproduced": "reproduced", "Refuted": "contradicted", "Contradicted": "contradicted"}
_VERB = re.compile(r"\b(" + "|".join(VERBS) + r")\b")
_ID = re.compile(r"\b[A-Z]{3}-\d+\b")


def findings_problems(text: str, rows: list[dict], where: str) -> list[str]:
    """Lines of hand-written findings that say a vendor claim is confirmed or refuted where the registry's status (of
    the claim, or of the release or variant setup the line names) says otherwise, or that use the words without
    naming a claim of the registry: one source of truth for every "confirmed / refuted"."""
    status = {r["id"]: r for r in rows}
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        verbs = _VERB.findall(line)
        if not verbs:
            continue
        ids = [i for i in _ID.findall(line) if i in status]
        if not ids:
            out.append(f"{where}:{n}: says {verbs[0]!r} but names no claim of the registry: name the claim it is about "
                       "(e.g. MEM-1), or say what was observed without 'confirmed' or 'refuted'")
            continue
        want = {VERBS[v] for v in verbs}
        for cid in ids:
            r = status[cid]
            shown = {r["status"]} | {v["status"] for v in r.get("variants", []) if v["label"] in line} | \
                {m["status"] for m in r["measured"] if re.search(rf"\b{re.escape(m['version'])}\b", line)}
            if not want & shown:
                out.append(f"{where}:{n}: says {'/'.join(sorted(set(verbs)))} of {cid}, whose status is {r['status']} "
                           f"({r['summary']}): make the line say what the registry says")
    return out
