"""memmatrix's own dialects: structured fact extraction (for systems that extract with memmatrix's own prompt) and the
prompt-hygiene judge (used by the contradiction protocol's columns B, E and U).

The judge here is the oracle's: deterministic rules, standard library only. A real model
judges in proxy mode from the prompt in ``memmatrix.judge``, which states the same rules; both
are measured on ``cases/judge/`` (``memmatrix.judgesuite``).

How the rules read a text (``judge_hygiene``):

1. Mentions. The stale value (and the current one, when there is one) is found as whole,
   case-folded tokens, the way ``memmatrix.tokens.found_in`` finds it. A stale mention that
   lies inside a longer current value ("New Quillmere") is not a mention. No mention: absent.
2. Units. The text is cut into sentences: line breaks, sentence punctuation, JSON string and
   bracket boundaries, table cells. A qualifier only counts inside the mention's own sentence;
   a correction on another line or in another sentence does not qualify a bare mention,
   because retrieved text carries no reliable order. A tag after an item's full stop
   ("... Corsa. [superseded]") stays with its item.
3. Qualifiers are whole tokens or phrases, never substrings ("Recommended" holds no "ended"),
   each with a rule for what it attaches to:
   - the first value after it: formerly, former, ex-, once, used to, no longer, left / quit /
     sold / stopped / cancelled <object>, moved / switched / changed from, instead of, not /
     no / never / nobody (denials);
   - the value before it: superseded, retracted, "(former)", "was wrong", "replaced by",
     "expired", "X is not my ...", "X → Y", object-less or passive change verbs ("X: sold");
   - the value its bound belongs to: until / till / through / thru / up to / before <date>,
     "valid to <date>", "ending <date>", "expires <date>", closed ranges ("2019–2024",
     "2–14 March", "from 2 to 14 March", "2023-01-04 → 2026-02-01"); before it, or after it
     when the bound opens the sentence. "since", open ranges and "until further notice" are
     no bound.
   A search for the attached value stops at clause boundaries (";", but, although ...), at
   "now / still / currently", and at the first value it meets, so a qualifier next to the
   current value does not reach the stale one. A change verb does not reach past "and" into
   a new clause. Negation is handled: "never left X" and "didn't quit X" cancel the change,
   while "not X", "no sister called X" and "X is not my employer" deny X. Simple past of a
   state ("lived", "was a member", "was called") marks a past state; present perfect ("have
   lived"), plans ("will quit") and passives of other verbs ("was extended") do not.
   Repeated mentions of the stale value in one clause share what is attached to one of them.
4. Records. Inside a JSON object, a status (former, superseded, retracted, expired, sold...),
   superseded_by, an end date (valid_to, invalid_at, expired_at... other than Present/None),
   or a key naming the value previous/former qualifies the mentions in that object; so do
   inline fields ("status: sold", "valid_to: 2026-03-01"), a filled end or status column of a
   markdown table row, and a list label or leading tag ("Former:", "[superseded, no longer
   true since ...]") for its item.
5. Verdict: "absent" (no mention), "qualified" (every mention has an attached qualifier),
   "unqualified" (at least one mention is presented as current), with a reason quoting the
   deciding sentence.
"""

from __future__ import annotations

import json

from ..gold import GoldIndex
from .common import Reply, message_text, messages_of, tool_names
from .hygiene import judge_hygiene

EXTRACT_MARKER = "memmatrix-extract/v1"
#: an extraction request that offers this tool is answered with one call of it per fact (its arguments: the fact)
RECORD_TOOL = "record_fact"
JUDGE_MARKER = "memmatrix-judge/hygiene-v2"


def _system(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") in ("system", "developer"))


def _user(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


class Extract:
    name = "memmatrix-extract"

    @staticmethod
    def match(request: dict) -> bool:
        return EXTRACT_MARKER in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        text = _user(request)
        facts = gold.facts_in(text)
        if not facts:  # a single statement (a forget or share request) rather than a written conversation
            lines = [ln.split(": ", 1)[-1].strip() for ln in text.splitlines() if ln.strip()]
            facts = [f for f in (gold.fact_for_statement(ln, text) for ln in lines) if f is not None]
        keys = ("subject", "attribute", "value", "statement", "intent", "replaces", "valid_from", "valid_to")
        facts = [{k: f[k] for k in keys if k in f} for f in facts]
        if RECORD_TOOL in tool_names(request):  # the same facts as tool calls, one per fact
            return Reply.tools(Extract.name, bool(facts), [(RECORD_TOOL, f) for f in facts])
        return Reply.json(Extract.name, bool(facts), {"facts": facts})


# =============================================================================== the hygiene judge

class Judge:
    """The oracle's judge: the rules above, deterministic. A real model judges in proxy mode."""

    name = "memmatrix-judge"

    @staticmethod
    def match(request: dict) -> bool:
        return JUDGE_MARKER in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex | None = None) -> Reply:
        try:
            case = json.loads(_user(request))
            stale, text = case["stale"], case["text"]
            current = case.get("current")
            if not isinstance(stale, str) or not isinstance(text, str) or not isinstance(current, (str, type(None))):
                raise TypeError("stale and text must be strings, current a string or null")
        except (ValueError, KeyError, TypeError, AttributeError):
            return Reply.json(Judge.name, False, {"verdict": "unclear", "reason": "the judge input was not understood"})
        verdict, reason = judge_hygiene(stale, current, text)
        return Reply.json(Judge.name, True, {"verdict": verdict, "reason": reason})
