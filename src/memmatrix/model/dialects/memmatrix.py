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

import bisect
import json
import re
from dataclasses import dataclass, field

from ..gold import GoldIndex
from .common import Reply, message_text, messages_of

EXTRACT_MARKER = "memmatrix-extract/v1"
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
        return Reply.json(Extract.name, bool(facts), {"facts": [{k: f[k] for k in keys if k in f} for f in facts]})


# =============================================================================== the hygiene judge
# ------------------------------------------------------------------------------- lexicon

_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec"}
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues",
             "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "weekend"}
_SEASONS = {"spring", "summer", "autumn", "fall", "winter", "christmas", "easter", "midsummer", "new"}
_RELATIVE_DAYS = {"yesterday", "today", "tomorrow", "tonight", "then", "recently", "noon", "midnight", "lately"}
_UNITS = {"week", "month", "year", "weekend", "morning", "evening", "night", "spring", "summer", "autumn", "winter",
          "fall", "quarter", "term", "semester", "season", "time"}
_DATE_PREFIX = {"the", "early", "mid", "late", "end", "start", "beginning", "middle", "close", "of", "on", "in", "at",
                "around", "about", "approximately", "roughly"}
_OPEN_END = {"present", "now", "today", "ongoing", "current", "date", "onwards", "onward", "later", "open",
             "indefinitely", "forever", "none", "null", "never", "na", "n/a", "tbd", "unknown"}

_PRESENT = {"now", "currently", "nowadays", "today", "still", "presently"}
_PRESENT_PAIRS = {("these", "days"), ("at", "present"), ("right", "now")}  # "at the moment": see _stop
_PRESENT_VERBS = {"live", "lives", "work", "works", "drive", "drives", "own", "owns", "am", "is", "are", "'m", "has",
                  "have", "stay", "stays", "smoke", "smokes", "drink", "drinks", "use", "uses", "belong", "belongs",
                  "rent", "rents", "keep", "keeps"}
_STRONG_WORDS = {"but", "whereas", "while", "whilst", "although", "though", "however", "yet", "because", "so",
                 "except"}
_AND_WORDS = {"and", "or", "nor"}
_SOFT_PUNCT = {",", "—", "–", "--", "(", ")", "[", "]"}
_DEST = {"for", "to", "toward", "towards", "into", "onto"}
_PREPS = {"in", "at", "on", "near", "by", "to", "for", "with", "from", "into", "onto", "behind", "beside", "inside",
          "outside", "across", "around", "past", "beyond", "next", "opposite"}
_DETS = {"the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these", "those", "some",
         "any", "all", "every"}
_SUBJ_PRON = {"i", "we", "you", "he", "she", "they", "it", "i've", "we've", "they've", "i'd", "we'd", "she'd", "he'd"}
_MODALS = {"will", "would", "shall", "should", "might", "may", "could", "can", "must", "to", "'ll", "gonna", "wanna",
           "cannot", "about"}
_HAVE = {"have", "has", "having", "'ve"}
_COPULA = {"is", "are", "was", "were", "am", "'s", "be", "been", "being"}
_NEG_COPULA = {"isn't", "aren't", "wasn't", "weren't", "ain't"}
_ROLE_AFTER_NEG = {"my", "our", "your", "his", "her", "their", "the", "a", "an", "any", "anymore", "true", "correct",
                   "right", "valid", "current", "accurate", "real", "actually", "longer"}
_NEG_IDIOMS = {"only", "just", "least", "matter", "doubt", "problem", "forget", "wait", "mind", "bad", "worry",
               "hesitate", "surprisingly", "unlike", "merely"}
_IRREG_PAST = {"left", "went", "got", "came", "took", "sold", "quit", "gave", "moved", "became", "found", "made",
               "bought", "switched", "changed", "started", "stopped", "finished", "retired", "resigned"}
#: A change verb in any form: a negation that governs one ("didn't leave X", "never quit X") denies the
#: change, not the value.
_CHANGE_FORMS = {"leave", "leaves", "left", "leaving", "quit", "quits", "quitting", "quitted", "stop", "stops",
                 "stopped", "stopping", "sell", "sells", "sold", "selling", "move", "moves", "moved", "moving",
                 "give", "gave", "given", "giving", "cancel", "cancels", "cancelled", "canceled", "cancelling",
                 "drop", "dropped", "dropping", "abandon", "abandoned", "resign", "resigned", "retire", "retired",
                 "switch", "switched", "change", "changed", "replace", "replaced", "end", "ended", "ending",
                 "relocate", "relocated", "lose", "lost", "divorce", "divorced", "ditch", "ditched", "expire",
                 "expired", "terminate", "terminated", "close", "closed", "trade", "traded", "swap", "swapped"}
_CHANGE_GERUNDS = {"moving", "leaving", "switching", "changing", "quitting", "selling", "relocating", "retiring",
                   "resigning", "stopping", "cancelling", "canceling"}
_PARTICIPLES = {"born", "told", "given", "taken", "made", "sold", "left", "known", "seen", "done", "gone", "kept",
                "held", "brought", "bought", "found", "put", "set", "built", "sent", "spent", "paid", "led", "meant",
                "shown", "thrown", "won", "lost", "hit", "cut", "run", "shut", "stolen", "written", "driven", "eaten",
                "forgotten", "chosen", "frozen", "spoken", "broken", "quit", "been", "become", "got", "gotten"}
_NAMING_PARTICIPLES = {"called", "named", "known", "based", "located", "employed", "married", "registered",
                       "enrolled", "listed", "stationed", "housed", "assigned", "titled", "nicknamed"}
_NOT_STATE_ING = {"thinking", "wondering", "saying", "telling", "asking", "hoping", "planning", "going", "trying",
                  "considering", "talking", "looking", "about", "wishing", "expecting", "told", "meaning", "joking",
                  "kidding", "dreaming", "referring", "reading", "writing", "hearing", "calling", "waiting"}
_PAST_STATE_VERBS = {"lived", "resided", "worked", "stayed", "drove", "owned", "had", "smoked", "drank", "belonged",
                     "rented", "studied", "taught", "was", "were", "dated"}
_ADV_PAST = {"formerly", "previously", "once", "erstwhile", "originally", "earlier"}  # "earlier": only "Earlier, ..."
_PAST_PHRASES = (("in", "the", "past"), ("back", "then"), ("at", "one", "point"), ("back", "in", "the", "day"),
                 ("at", "the", "time"))
#: "left" is no verb of leaving after these ("on the left", "turn left", "two days left") or before these
#: ("left side", "left for Quillmere": a destination).
_LEFT_NOT_VERB_BEFORE = {"on", "to", "at", "from", "far", "turn", "turned", "turning", "keep", "kept", "bear", "go",
                         "hand", "veer", "swipe", "upper", "lower", "top", "bottom", "is", "are", "was", "were", "be",
                         "nothing", "anything", "something", "one", "two", "few", "only", "still", "hardly", "much",
                         "little", "time", "money", "days", "minutes", "hours", "what", "more", "less", "none",
                         "some", "any"}
_LEFT_NOT_VERB_AFTER = {"for", "to", "on", "at", "after", "side", "hand", "turn", "lane", "of", "over", "behind",
                        "alone", "out", "open", "unchanged", "here", "there", "with", "in", "off", "wing", "bank",
                        "field", "foot", "arm", "leg", "eye", "ear", "knee", "shoulder", "corner", "column", "panel",
                        "onto", "into", "unsaid", "undone", "untouched", "intact", "over", "blank", "empty"}
_OBJECT_PRONOUNS = {"it", "them", "him", "her", "that", "this", "those", "these", "everything", "all", "one"}
_ADJ_PAST = {"former", "previous", "erstwhile", "onetime", "prior", "ex"}
_LABEL_QUAL = {"former", "formerly", "previous", "previously", "old", "past", "ex", "retracted", "superseded",
               "outdated", "obsolete", "expired", "ended", "history", "historical", "earlier", "deprecated",
               "invalid", "withdrawn", "revoked", "prior", "replaced", "cancelled", "canceled", "stale"}
_TAG_QUAL = _LABEL_QUAL | {"until", "till", "thru", "through", "expires", "expiring", "ending", "retracted",
                          "superseded", "formerly", "previously", "invalidated", "corrected", "wrong", "incorrect",
                          "deleted", "inactive", "lapsed", "void"}
_RETRACT_PRED = {"wrong", "incorrect", "mistaken", "mistake", "error", "outdated", "obsolete", "false", "untrue",
                 "retracted", "superseded", "withdrawn", "deprecated", "revoked", "invalidated", "retired",
                 "discontinued", "replaced", "dropped", "overridden", "overwritten", "corrected", "void", "stale",
                 "cancelled", "canceled", "inaccurate", "misremembered", "typo", "mixup"}
_RETRACT_FWD = {"misspoke", "misspoken", "misstated", "misremembered", "retract", "retracted", "disregard",
                "ignore", "scratch", "forget", "withdraw", "withdrew"}
_IMPERATIVE_ONLY = {"ignore", "disregard", "scratch", "forget"}
_ANAPHORS = {"that", "this", "which", "it", "that's", "it's", "this's"}
_NOT_CURRENT_VALUES = {"former", "superseded", "retracted", "expired", "invalid", "invalidated", "outdated",
                       "obsolete", "deleted", "ended", "inactive", "past", "historical", "revoked", "cancelled",
                       "canceled", "replaced", "stale", "archived", "withdrawn", "deprecated", "previous", "old",
                       "no longer valid", "no longer current", "not current", "closed", "terminated", "lapsed",
                       "sold", "left", "quit", "moved out", "gone", "given up", "stopped", "resigned", "retired",
                       "divorced", "dissolved", "ended", "moved", "ex", "no longer"}
_END_KEYS = {"validto", "validuntil", "validthrough", "validtill", "invalidat", "invalidfrom", "invalidsince",
             "expiredat", "expiresat", "expires", "expiry", "expirydate", "expiration", "expirationdate", "expired",
             "end", "endat", "endedat", "enddate", "ends", "ended", "until", "till", "through", "retractedat",
             "deletedat", "supersededat", "replacedat", "invalidatedat", "revokedat", "endtime", "validend",
             "tvalidto", "leftat", "left", "movedout", "to"}
_STATUS_KEYS = {"status", "state", "validity", "currency", "lifecycle", "recordstatus", "factstatus"}
_LINK_KEYS = {"supersededby", "replacedby", "retractedby", "correctedby", "invalidatedby", "successor"}
_FALSE_MEANS_OLD = {"current", "iscurrent", "active", "isactive", "valid", "isvalid", "latest", "islatest", "live"}
_TRUE_MEANS_OLD = {"expired", "retracted", "superseded", "invalid", "isexpired", "isretracted", "issuperseded",
                   "deleted", "isdeleted", "stale", "isstale", "former", "isformer", "outdated"}
_TABLE_END = {"until", "till", "to", "end", "ended", "ends", "enddate", "validto", "validuntil", "expires",
              "expired", "expiry", "left", "movedout", "invalidat", "through", "thru"}
_ABBREV = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "prof", "rd", "ave", "approx",
           "dept", "est", "fig", "inc", "ltd", "co", "mt"}

_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|->|=>|--|[^\w\s]|_", re.UNICODE)
_SUBTOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass
class _Tok:
    text: str
    low: str
    start: int
    end: int
    word: bool
    glued: bool = False    # no whitespace between the previous token and this one
    newline: bool = False  # a line break between the previous token and this one


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    prev_end = 0
    for m in _TOKEN_RE.finditer(text):
        gap = text[prev_end:m.start()]
        low = m.group().casefold().replace("’", "'")
        toks.append(_Tok(m.group(), low, m.start(), m.end(), bool(_SUBTOKEN_RE.match(m.group())),
                         glued=bool(toks) and gap == "", newline="\n" in gap or "\r" in gap))
        prev_end = m.end()
    return toks


def _subtokens(value: str) -> list[str]:
    return _SUBTOKEN_RE.findall(value.casefold())


# ------------------------------------------------------------------------------- sentences

def _sentences(toks: list[_Tok]) -> list[list[int]]:
    """Token indexes of each unit: lines, sentences, JSON strings and brackets, table cells."""
    cuts: set[int] = set()
    n = len(toks)
    json_brackets = set()
    for i, t in enumerate(toks):
        if t.text == "[" and i + 1 < n and toks[i + 1].text in '"{[':
            json_brackets.add(i)
        if t.text == "]" and i > 0 and toks[i - 1].text in '"}]':
            json_brackets.add(i)
    for i, t in enumerate(toks):
        if t.newline:
            cuts.add(i)
        if t.text in "{}|" or i in json_brackets:
            cuts.update((i, i + 1))
        if t.text in ",:" and i > 0 and toks[i - 1].text == '"' and t.glued:
            cuts.update((i, i + 1))
        if t.text in ".!?" or t.text == "…":
            nxt = toks[i + 1] if i + 1 < n else None
            prev = toks[i - 1] if i > 0 else None
            if nxt is not None and nxt.glued and nxt.word:
                continue  # 3.5, e.g, U.S
            if t.text == "." and prev is not None and prev.word and prev.low in _ABBREV and nxt is not None \
                    and nxt.word and not nxt.text[:1].isupper():
                continue
            cuts.add(i + 1)
    out, cur = [], []
    for i in range(n):
        if i in cuts and cur:
            out.append(cur)
            cur = []
        if toks[i].text in "{}|" or i in json_brackets:
            continue
        cur.append(i)
    if cur:
        out.append(cur)
    # a tag standing after its item's full stop on the same line ("... Corsa. [superseded]") belongs to the item
    merged: list[list[int]] = []
    for unit in out:
        first = toks[unit[0]]
        if merged and first.text in "[(" and not first.newline and _closes_at_end(toks, unit):
            merged[-1].extend(unit)
        else:
            merged.append(unit)
    return merged


def _closes_at_end(toks: list[_Tok], unit: list[int]) -> bool:
    """Is the unit one bracket group (followed by nothing but punctuation)?"""
    opening = toks[unit[0]].text
    closing = ")" if opening == "(" else "]"
    depth = 0
    for pos, k in enumerate(unit):
        if toks[k].text == opening:
            depth += 1
        elif toks[k].text == closing:
            depth -= 1
            if depth == 0:
                return all(not toks[j].word for j in unit[pos + 1:])
    return False


# ------------------------------------------------------------------------------- dates

def _is_day(s: str) -> bool:
    m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th)?", s)
    return bool(m) and 1 <= int(m.group(1)) <= 31


def _is_year(s: str) -> bool:
    return bool(re.fullmatch(r"(19|20)\d\d", s)) or bool(re.fullmatch(r"'?\d\ds", s))


class _View:
    """One sentence: its tokens, with word-level helpers."""

    def __init__(self, toks: list[_Tok], idx: list[int]):
        self.t = [toks[i] for i in idx]
        self.n = len(self.t)

    def low(self, i: int) -> str:
        return self.t[i].low if 0 <= i < self.n else ""

    def is_word(self, i: int) -> bool:
        return 0 <= i < self.n and self.t[i].word

    def next_word(self, i: int) -> int:
        """Index of the first word token at or after i (skipping punctuation), or n."""
        while i < self.n and not self.t[i].word:
            i += 1
        return i

    def prev_word(self, i: int) -> int:
        """Index of the last word token at or before i, or -1."""
        while i >= 0 and not self.t[i].word:
            i -= 1
        return i

    def words_at(self, i: int, *words: str) -> int | None:
        """If the word tokens starting at i (punctuation skipped only for hyphens) spell ``words``, the end index."""
        j = i
        for w in words:
            while j < self.n and self.t[j].text in "-'" and self.t[j].glued:
                j += 1
            if j >= self.n or self.t[j].low != w:
                return None
            j += 1
        return j

    def text(self, a: int, b: int) -> str:
        if a >= b:
            return ""
        return "".join((" " if k > a and not self.t[k].glued else "") + self.t[k].text for k in range(a, b))

    # -- dates
    def date_at(self, i: int) -> int | None:
        """End index of a date expression starting at token i (after optional 'the end of' etc.), or None."""
        j, prefix = i, 0
        while j < self.n and prefix < 4:
            w = self.low(j)
            if w in ("-", "'") and self.t[j].glued:
                j += 1
                continue
            if w in _DATE_PREFIX and self.low(j + 1) not in ("present", "now"):
                j += 1
                prefix += 1
                continue
            break
        end = self._date_core(j)
        return end

    def _date_core(self, j: int) -> int | None:
        w = self.low(j)
        if not w:
            return None
        # ISO 2026-03-31, with an optional time
        if re.fullmatch(r"(19|20)\d\d", w) and self.low(j + 1) == "-" and self.t[j + 1].glued \
                and re.fullmatch(r"\d{1,2}", self.low(j + 2)):
            k = j + 3
            if self.low(k) == "-" and re.fullmatch(r"\d{1,2}(t\d.*)?", self.low(k + 1)):
                k += 2
                while k < self.n and self.t[k].glued and (self.t[k].text in ":.+-z" or self.t[k].word) \
                        and self.t[k].text not in ",;":
                    k += 1
            return k
        # 03/2025
        if re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and re.fullmatch(r"(19|20)\d\d", self.low(j + 2)) and self.t[j + 2].glued:
            return j + 3
        # 31/03/2026, 31.03.2026, 3/31
        if re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and re.fullmatch(r"\d{1,2}", self.low(j + 2)) and self.t[j + 2].glued:
            k = j + 3
            if self.low(k) in ("/", ".") and self.t[k].glued and re.fullmatch(r"\d{2,4}", self.low(k + 1)):
                k += 2
            return k
        if w in _MONTHS:
            k = j + 1
            if _is_day(self.low(k)):
                k += 1
                if self.low(k) == ",":
                    k += 1 if _is_year(self.low(k + 1)) else 0
            if _is_year(self.low(k)):
                k += 1
            return k
        if _is_day(w):
            k = j + 1
            if self.low(k) == "of":
                k += 1
            if self.low(k) in _MONTHS:
                k += 1
                if _is_year(self.low(k)):
                    k += 1
                return k
            if self.low(k) in ("-", "–", "—") and _is_day(self.low(k + 1)):  # part of a day range; caller decides
                return None
            return None
        if _is_year(w):
            return j + 1
        if w in _WEEKDAYS:
            return j + 1
        if w in _SEASONS:
            if w == "new" and self.low(j + 1) != "year":
                return None
            return j + (2 if w == "new" else 1)
        if w in _RELATIVE_DAYS:
            return j + 1
        if w in ("last", "next", "this", "that", "the") and (self.low(j + 1) in _UNITS or self.low(j + 1) in _MONTHS
                                                              or self.low(j + 1) in _WEEKDAYS):
            return j + 2
        if re.fullmatch(r"\d{1,2}(am|pm)", w) or (re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) == ":"
                                                  and re.fullmatch(r"\d\d", self.low(j + 2))):
            return j + 1 if w.endswith("m") else j + 3
        if w == "q" and re.fullmatch(r"\d", self.low(j + 1)):
            return j + 2
        return None


# ------------------------------------------------------------------------------- qualifier operators

STRONG, SOFT, AND, PRESENT, COLON, DEST, PREP, PRESVERB, OF, CLAUSE_AND = (
    "strong", "soft", "and", "present", "colon", "dest", "prep", "presverb", "of", "clause-and")


@dataclass
class _Op:
    kind: str                 # bound, past, negation, retraction, change, label, record
    start: int
    end: int
    phrase: str
    fwd: tuple | None = None  # (max words, stop classes)
    bwd: tuple | None = None
    order: str = "fwd"        # fwd | bwd | fwd_then_bwd | bwd_then_fwd
    fwd_from: int | None = None  # where a forward search starts (after a bound's complement)
    cancellable: bool = False
    cancels: bool = False     # a negation: cancels a cancellable operator it meets first
    cancelled: bool = False
    meta: dict = field(default_factory=dict)


class _Analysis:
    """Qualifier operators of one sentence, and which value mention each attaches to."""

    def __init__(self, view: _View, stale: list[tuple[int, int]], current: list[tuple[int, int]]):
        self.v = view
        self.ops: list[_Op] = []
        self.value_starts = {a for a, _ in stale + current}  # lets a verb see that its object is a value
        self._find_ops()
        op_tokens = {k for op in self.ops if op.kind != "label" for k in range(op.start, op.end)}
        cur = [(a, b) for a, b in current if not any(k in op_tokens for k in range(a, b))]
        self.mentions: dict[int, tuple[str, int]] = {}
        for a, b in cur:
            self.mentions[a] = ("current", b)
        for a, b in stale:
            if not any(ca <= a and b <= cb and (cb - ca) > (b - a) for ca, cb in cur):
                self.mentions[a] = ("stale", b)
        self.ends = {b: a for a, (_, b) in self.mentions.items()}
        self.op_starts = {op.start: op for op in self.ops if op.cancellable}

    # -------------------------------------------------------------- stop classes
    def _stop(self, i: int, stops: set) -> bool:
        v = self.v
        t = v.t[i]
        w = t.low
        if STRONG in stops and (w == ";" or (t.word and w in _STRONG_WORDS)):
            return True
        if SOFT in stops and w in _SOFT_PUNCT:
            return True
        if AND in stops and t.word and w in _AND_WORDS:
            return True
        if PRESENT in stops and t.word and (w in _PRESENT or (v.low(i - 1), w) in _PRESENT_PAIRS
                                            or (w == "moment" and v.low(i - 1) == "the")):
            return True
        if COLON in stops and w == ":":
            return True
        if DEST in stops and t.word and w in _DEST:
            return True
        if PREP in stops and t.word and w in _PREPS:
            return True
        if PRESVERB in stops and t.word and w in _PRESENT_VERBS:
            return True
        if OF in stops and w == "of":
            return True
        if CLAUSE_AND in stops and t.word and w in _AND_WORDS:
            # "and" starts a new clause unless a value follows it directly ("quit tea and X")
            k = v.next_word(i + 1)
            if v.low(k) in _DETS:
                k = v.next_word(k + 1)
            return k not in self.mentions and k not in self.value_starts
        return False

    def scan_fwd(self, i: int, max_words: int, stops: set, cancels: bool = False) -> tuple[str, int] | None:
        words = 0
        while i < self.v.n:
            if i in self.mentions:
                return ("mention", i)
            if cancels and i in self.op_starts and not self.op_starts[i].cancelled:
                return ("op", i)
            if cancels and self.v.t[i].word and self.v.low(i) in _CHANGE_FORMS:
                return ("change-verb", i)
            if self._stop(i, stops):
                return None
            if self.v.t[i].word:
                words += 1
                if words > max_words:
                    return None
            i += 1
        return None

    def scan_bwd(self, i: int, max_words: int, stops: set) -> tuple[str, int] | None:
        """Nearest mention ending before token i."""
        words = 0
        j = i - 1
        while j >= 0:
            if j + 1 in self.ends:
                return ("mention", self.ends[j + 1])
            if self._stop(j, stops):
                return None
            if self.v.t[j].word:
                words += 1
                if words > max_words:
                    return None
            j -= 1
        return None

    # -------------------------------------------------------------- operator detection
    def _add(self, kind, start, end, **kw) -> _Op:
        op = _Op(kind, start, end, self.v.text(start, end), **kw)
        self.ops.append(op)
        return op

    def _modal_before(self, i: int) -> bool:
        p = self.v.prev_word(i - 1)
        while p >= 0 and self.v.low(p) in ("just", "really", "finally", "also", "then", "probably", "soon",
                                            "definitely", "never", "not"):
            p = self.v.prev_word(p - 1)
        w = self.v.low(p)
        return w in _MODALS or w.endswith("'ll") or w in ("going", "want", "plan", "planning", "intend", "hope")

    def _have_before(self, i: int) -> bool:
        p = self.v.prev_word(i - 1)
        while p >= 0 and self.v.low(p) in ("always", "just", "also", "already", "only", "ever", "all", "both",
                                            "mostly", "really"):
            p = self.v.prev_word(p - 1)
        w = self.v.low(p)
        return w in _HAVE or w.endswith("'ve")

    def _fronted(self, i: int) -> bool:
        """No word before token i in its sentence, except a label ended by a colon or 'from'/'between'."""
        v = self.v
        for k in range(i - 1, -1, -1):
            if v.t[k].text == ":":
                return True
            if v.t[k].word and v.low(k) not in ("from", "between", "and", "only", "valid", "good", "effective"):
                return False
        return True

    def _find_ops(self) -> None:
        v = self.v
        i = 0
        self._find_label()
        self._find_ranges()
        range_tokens = {k for op in self.ops for k in range(op.start, op.end)}
        while i < v.n:
            if i in range_tokens or not v.t[i].word:
                if v.t[i].text in ("->", "=>", "→", "⇒", "⟶"):
                    self._add("change", i, i + 1, order="bwd", bwd=(6, {STRONG, SOFT}))
                i += 1
                continue
            i = self._op_at(i)

    def _find_label(self) -> None:
        v = self.v
        start = 0
        while start < v.n:  # skip list markers: "-", "*", "1.", "2)"
            if v.t[start].text in "-*•#>`":
                start += 1
            elif _is_day(v.low(start)) and start + 1 < v.n and v.t[start + 1].text in ".)":
                start += 2
            else:
                break
        if start < v.n and v.t[start].text in "[(":
            self._find_tag(start)
        words = []
        for k in range(min(v.n, 14)):
            t = v.t[k]
            if t.text == ":":
                if 1 <= len(words) <= 4 and any(w in _LABEL_QUAL for w in words):
                    self._add("label", 0, k + 1, meta={"after": k + 1})
                return
            if t.word:
                if _is_day(t.low) and not words and k + 1 < v.n and v.t[k + 1].text in ".)":
                    continue  # "1." list numbers
                words.append(t.low)
                if len(words) > 4:
                    return
            elif t.text not in "-*•#>`_":
                return

    def _find_tag(self, start: int) -> None:
        """A leading '[superseded, no longer true since ...]' or '(former)' annotates its whole item."""
        v = self.v
        opening = v.t[start].text
        closing = ")" if opening == "(" else "]"
        depth = 0
        for k in range(start, v.n):
            if v.t[k].text == opening:
                depth += 1
            elif v.t[k].text == closing:
                depth -= 1
                if depth == 0:
                    inner = [v.low(j) for j in range(start + 1, k) if v.t[j].word]
                    qualifies = any(w in _TAG_QUAL for w in inner) or \
                        any(a == "no" and b in ("longer", "more") for a, b in zip(inner, inner[1:]))
                    if qualifies and k + 1 < v.n:
                        self._add("label", start, k + 1, meta={"after": k + 1})
                    return

    def _find_ranges(self) -> None:
        """Closed date ranges: '2019–2024', '2–14 March', 'from 2 March to 14 March', 'between X and Y'.
        An open end ('2021–present', '2021-') is no bound."""
        v = self.v
        i = 0
        while i < v.n:
            lead = v.low(i) in ("from", "between")
            j = v.next_word(i + 1) if lead else i
            first_end = v.date_at(j)
            bare_day = first_end is None and _is_day(v.low(j))  # "2" in "2–14 March"
            if first_end is None and not bare_day:
                i += 1
                continue
            k = first_end if first_end is not None else j + 1
            conn = v.low(k)
            if conn not in ("-", "–", "—", "--", "to", "through", "thru", "until", "till", "and", "->", "→", "⟶") or \
                    (conn == "and" and v.low(i) != "between"):
                i = max(k, i + 1)
                continue
            second = k + 1
            end = v.date_at(second) if second < v.n and v.low(second) not in _OPEN_END else None
            if end is None or (bare_day and v.low(end - 1) not in _MONTHS and not _is_year(v.low(end - 1))):
                i = k + 1
                continue
            self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, {STRONG}), fwd=(12, {STRONG}), fwd_from=end,
                      meta={"fronted": self._fronted(i)})
            i = end

    def _inline_field(self, i: int) -> int | None:
        """'status: sold', 'valid_to: 2026-03-01', 'superseded_by=m7' in running text: a field of the line's
        record, qualifying the value it annotates whatever punctuation separates them."""
        v = self.v
        key_words, k = [], i
        while k < v.n and len(key_words) < 3:
            if not v.t[k].word:
                return None
            key_words.append(v.low(k))
            k += 1
            if k < v.n and v.t[k].text in ":=":
                break
            if k < v.n and v.t[k].text in "_-" and v.t[k].glued:
                k += 1
                continue
            if k < v.n and v.t[k].word and len(key_words) < 3:
                continue
            return None
        if k >= v.n or v.t[k].text not in ":=":
            return None
        key = "".join(key_words)
        if key not in _END_KEYS | _STATUS_KEYS | _LINK_KEYS or key == "to":
            return None
        e = k + 1
        while e < v.n and v.t[e].text not in ",;)]" and not (v.t[e].word and v.low(e) in _STRONG_WORDS):
            e += 1
        value = v.text(k + 1, e).strip().strip("\"'")
        if not value or not _record_qualifier([(key, value)]):
            return None
        self._field_bound(i, e)
        return e

    def _op_at(self, i: int) -> int:  # noqa: C901 - a lexicon, read top to bottom
        v = self.v
        field_end = self._inline_field(i)
        if field_end is not None:
            return field_end
        w = v.low(i)
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        glued_hyphen_next = i + 1 < v.n and v.t[i + 1].text == "-" and v.t[i + 1].glued and \
            i + 2 < v.n and v.t[i + 2].glued
        prev = v.prev_word(i - 1)
        pw = v.low(prev)

        # ---------------------------------------------------------------- temporal bounds
        if w in ("until", "till", "til", "unto", "through", "thru") or (w == "up" and nw in ("to", "until", "till",
                                                                                               "through")):
            kw_end = nxt + 1 if w == "up" else i + 1
            if w == "up":
                w = nw
            comp = v.next_word(kw_end)
            date_end = v.date_at(comp)
            if date_end is not None and v.low(comp) not in _OPEN_END:
                if any(v.t[k].text in ":=" for k in range(kw_end, comp)):
                    self._field_bound(i, date_end)  # "valid until: 2026-03-31"
                else:
                    self._bound(i, date_end, prepositional=True)
                return date_end
            if w in ("until", "till", "til", "unto") and v.low(comp) not in ("further", "now", "forever", "notice",
                                                                           "death") and comp < v.n:
                end = comp
                while end < v.n and not self._stop(end, {STRONG, SOFT}):
                    end += 1
                self._bound(i, end, prepositional=True)
                return end
            return i + 1
        if w == "to" and pw in ("valid", "good", "effective", "runs", "running", "lasts", "lasting"):
            date_end = v.date_at(v.next_word(i + 1))
            if date_end is not None:
                if any(v.t[k].text in ":=" for k in range(i + 1, v.next_word(i + 1))):
                    self._field_bound(i, date_end)
                else:
                    self._bound(i, date_end, prepositional=True)
                return date_end
        if w == "before":
            comp = v.next_word(i + 1)
            date_end = v.date_at(comp)
            c = v.low(comp)
            if date_end is not None and c not in _OPEN_END:
                self._bound(i, date_end, prepositional=True)
                return date_end
            if c in ("that", "then") and (comp + 1 >= v.n or not v.t[comp + 1].word or v.low(comp + 1) in _SUBJ_PRON):
                self._bound(i, comp + 1, prepositional=True)
                return comp + 1
            c2 = v.low(v.next_word(comp + 1))
            if c in _CHANGE_GERUNDS or (c in _SUBJ_PRON and (c2 in _IRREG_PAST or c2.endswith("ed"))):
                end = comp
                while end < v.n and not self._stop(end, {STRONG, SOFT}):
                    end += 1
                self._bound(i, end, prepositional=True)
                return end
            return i + 1
        if w in ("ending", "ends", "expires", "expiring", "expiry", "expiration", "lapses", "lapsing"):
            if nw == "of" or (w == "ending" and pw == "happy"):
                return i + 1
            comp = nxt + 1 if nw in ("on", "in", "at", "by", "date", ":") else nxt
            date_end = v.date_at(v.next_word(comp))
            if date_end is not None:
                if ":" in v.text(i, v.next_word(comp)) or "=" in v.text(i, v.next_word(comp)):
                    self._field_bound(i, date_end)  # "expiry date: 2026-03-31", a field of the line's record
                else:
                    self._bound(i, date_end, prepositional=w == "ending")
                return date_end
            if w in ("expires", "expiring", "lapses"):
                self._add("bound", i, i + 1, order="bwd", bwd=(8, {STRONG, SOFT, AND}))
            return i + 1
        if w in ("ended", "expired", "lapsed"):
            if nw in ("up",):
                return nxt + 1
            if w == "ended" and nw in _DETS - {"the", "a", "an"}:
                return self._change(i, i + 1, window=8)
            end = i + 1
            comp = nxt + 1 if nw in ("on", "in", "at", "by", "last", "this") else nxt
            date_end = v.date_at(v.next_word(comp)) if nw in ("on", "in", "at", "by") else v.date_at(nxt)
            if date_end is not None:
                end = date_end
            # "My stay ended on 14 March" (the subject before it) or "the expired pass TP-5520-QV"
            self._add("bound", i, end, order="bwd_then_fwd", bwd=(8, {STRONG, SOFT, AND}),
                      fwd=(3, {STRONG, SOFT, AND, PREP}), fwd_from=i + 1, meta={"adjectival": True})
            return i + 1
        if (w in ("checking", "check", "checked") and nw == "out") or w in ("checkout", "departing", "departure"):
            k = nxt + 1 if nw == "out" else i + 1
            if v.low(v.next_word(k)) in ("on", "at", "date", "by"):
                k = v.next_word(k) + 1
            date_end = v.date_at(v.next_word(k))
            if date_end is not None:
                self._bound(i, date_end, prepositional=True)
                return date_end
            return k
        if w == "valid" and nw in ("till", "until", "through", "thru", "to", "up"):
            return i + 1  # the keyword that follows carries the bound

        # ---------------------------------------------------------------- "no longer", "used to", "not anymore"
        if w == "no" and nw in ("longer", "more"):
            end = nxt + 1
            if nw == "more" and v.is_word(v.next_word(end)) and v.low(v.next_word(end)) not in ("than",):
                # "no more X": denial of what follows
                self._add("negation", i, end, order="fwd", fwd=(6, {STRONG, SOFT, PRESENT}))
                return end
            if nw == "more" and v.low(v.next_word(end)) == "than":
                return end
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}), bwd=(6, {STRONG, SOFT, AND}),
                      cancellable=True)
            return end
        if w in ("not", "never", "nobody") or w.endswith("n't") or w == "cannot":
            return self._negation(i)
        if w == "no" and i + 1 < v.n and v.t[i + 1].text in (",", "!", ".", ":"):
            return i + 1  # an interjection
        if w == "no" and nw not in _NEG_IDIOMS:
            if nw in ("one", "where", "body"):
                return i + 1
            self._add("negation", i, i + 1, order="fwd", fwd=(6, {STRONG, SOFT, PRESENT}), cancels=True)
            return i + 1
        if w in ("anymore", "any") and (w == "anymore" or nw in ("more", "longer")):
            end = i + 1 if w == "anymore" else nxt + 1
            p = v.prev_word(i - 1)
            if v.low(p) in ("not", "no") or v.low(p).endswith("n't"):
                self._add("past", p, end, order="bwd", bwd=(8, {STRONG}))
            return end
        if w == "used" and nw == "to" and pw not in _COPULA | {"get", "got", "getting", "gets", "i'm", "we're",
                                                                "you're", "they're", "he's", "she's", "it's"}:
            end = nxt + 1
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}), bwd=(6, {STRONG, SOFT, AND}))
            return end

        # ---------------------------------------------------------------- adverbs and adjectives of a past state
        if w in _ADV_PAST and not glued_hyphen_next:
            if w == "once" and (nw in ("again", "more", "upon", "in", "per", "every", "or")
                                or (nw in ("a", "an") and v.low(v.next_word(nxt + 1)) in _UNITS | {"day", "while"})):
                return i + 1
            if w == "earlier" and not (self._fronted(i) and v.t[min(i + 1, v.n - 1)].text in (",", ":")):
                return i + 1
            self._add("past", i, i + 1, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}),
                      bwd=(6, {STRONG, SOFT, AND, PRESENT}))
            return i + 1
        end = next((e for e in (v.words_at(i, *p) for p in _PAST_PHRASES) if e), None)
        if end is not None:
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}),
                      bwd=(8, {STRONG, SOFT, AND, PRESENT}))
            return end
        if w in _ADJ_PAST:
            if w == "ex" and not (glued_hyphen_next or nw in ("wife", "husband", "partner", "boyfriend",
                                                                "girlfriend", "employer", "colleague")
                                  or i + 1 >= v.n or not v.t[i + 1].word):  # "X is my ex."
                return i + 1
            if w != "ex" and glued_hyphen_next:
                return i + 1
            if w == "prior" and nw == "to":
                return self._bound_prior_to(i, nxt)
            # "the previous tenant of X" names someone else; "my former employer X" is about the value
            stops = {STRONG, PREP, PRESENT} | ({OF} if pw == "the" else set())
            self._add("past", i, i + 1, order="fwd_then_bwd", fwd=(5, stops),
                      bwd=(6, {STRONG, AND, PRESENT}))
            return i + 1

        # ---------------------------------------------------------------- change verbs governing their object
        if w in ("moved", "relocated", "switched", "changed", "went", "upgraded", "transferred", "converted",
                 "migrated", "graduated", "downgraded", "emigrated", "came", "escaped") and not self._modal_before(i):
            j = nxt
            if v.low(j) in ("away", "out", "back", "over", "on", "up"):
                j = v.next_word(j + 1)
            if v.low(j) not in ("from", "of"):  # "changed my address from X", "switched the plan from X"
                k, hops = j, 0
                while hops < 3 and k < v.n and v.t[k].word and v.low(k) not in ("from", "to", "into") and \
                        k not in self.value_starts and not self._stop(k, {STRONG, SOFT, AND}):
                    k, hops = v.next_word(k + 1), hops + 1
                if v.low(k) == "from" and hops <= 3:
                    j = k
            if v.low(j) in ("from", "of"):
                end = j + 1
                self._add("change", i, end, order="fwd", fwd=(6, {STRONG, DEST, PRESENT}), cancellable=True)
                return end
            return i + 1
        if w == "left":
            role = self._left_role(i)
            if role == "object":
                return self._change(i, i + 1, window=5, stops={STRONG, SOFT, DEST, PRESENT})
            if role == "predicate":
                self._add("change", i, i + 1, order="bwd", bwd=(6, {STRONG, AND}), cancellable=True)
            return i + 1
        if w in ("quit", "quitted", "sold", "abandoned", "ditched", "divorced", "terminated", "closed", "cancelled",
                 "canceled", "dumped", "vacated", "surrendered", "returned", "discontinued", "renounced",
                 "unsubscribed", "deleted", "removed"):
            if w in ("returned",) and nw in ("to", "home", "from"):
                return i + 1
            if w in ("closed", "removed", "deleted", "returned", "discontinued") and nw not in _DETS and \
                    nxt not in self.value_starts and self._has_object(i + 1) and pw not in _COPULA | {"got"}:
                return i + 1  # "the shop closed early": not said of a value
            if self._modal_before(i):
                return i + 1
            return self._change(i, i + 1, window=8)
        if w == "stopped" and nw not in ("at", "in", "by", "off", "for", "over", "to", "outside", "near", "on",
                                         "briefly", "there", "here", "raining"):
            if self._modal_before(i):
                return i + 1
            return self._change(i, i + 1, window=8)
        if w == "dropped" and nw not in ("off", "by", "in", "at"):
            if pw in _COPULA or pw in ("been", "got"):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG, SOFT, AND}))
                return i + 1
            if nw == "out":
                return self._change(i, v.next_word(nxt + 1) + 1 if v.low(v.next_word(nxt + 1)) == "of" else nxt + 1,
                                    window=8)
            return self._change(i, i + 1, window=8)
        if w in ("gave", "given", "giving") and nw == "up":
            if w == "giving" or self._modal_before(i):
                return nxt + 1
            return self._change(i, nxt + 1, window=8)
        if w in ("took", "taken", "taking", "takes", "take") and v.words_at(nxt, "over", "from"):
            end = v.words_at(nxt, "over", "from")  # "Y has taken over from X"
            self._add("change", i, end, order="fwd", fwd=(6, {STRONG, DEST, PRESENT}), cancellable=True)
            return end
        if w in ("got", "gotten") and v.words_at(nxt, "rid", "of"):
            return self._change(i, v.words_at(nxt, "rid", "of"), window=8)
        if w == "broke" and v.words_at(nxt, "up", "with"):
            return self._change(i, v.words_at(nxt, "up", "with"), window=6)
        if w in ("resigned", "retired", "withdrew", "graduated", "unsubscribed", "departed", "exited") and \
                nw in ("from", "as"):
            if self._modal_before(i):
                return nxt + 1
            return self._change(i, nxt + 1, window=8)
        if w in ("traded", "swapped", "exchanged", "replaced", "superseded", "overrode", "overwrote", "succeeded") \
                and nw not in ("by", "with"):
            if (nw in _DETS or nxt in self.value_starts) and not self._modal_before(i):
                return self._change(i, i + 1, window=6)
            if w in ("replaced", "superseded"):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG}))
            return i + 1
        if w in ("replaced", "superseded", "overridden", "overwritten", "succeeded", "retracted", "withdrawn",
                 "corrected", "invalidated", "revoked", "retired") and nw == "by":
            self._add("retraction", i, nxt + 1, order="bwd", bwd=(8, {STRONG}))
            return nxt + 1
        if (w == "instead" and nw == "of") or (w == "rather" and nw == "than") or \
                (w == "in" and v.words_at(i, "in", "place", "of")):
            end = v.words_at(i, "in", "place", "of") or nxt + 1
            self._add("change", i, end, order="fwd", fwd=(5, {STRONG, PRESENT}))
            return end

        # ---------------------------------------------------------------- retractions
        if w in _RETRACT_FWD:
            if w in _IMPERATIVE_ONLY and not (self._fronted(i) or pw in ("please", "just", "kindly", "so")):
                return i + 1
            if w in ("retracted", "withdrawn") and not (nw in _DETS or nxt in self.value_starts):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG}))
                return i + 1
            self._add("retraction", i, i + 1, order="fwd", fwd=(10, {STRONG, COLON}))
            return i + 1
        if w == "meant" and any(v.low(k) in ("said", "wrote", "typed", "told", "put") for k in range(i)):
            self._add("retraction", i, i + 1, order="bwd", bwd=(15, set()))  # "I said X, but I meant Y"
            return i + 1
        if w in ("take", "took", "taking") and nw == "back":
            self._add("retraction", i, nxt + 1, order="fwd", fwd=(8, {STRONG, COLON}))
            return nxt + 1
        if w in ("wrong", "mistaken", "incorrect") and nw in ("about", "to", "when", "that"):
            self._add("retraction", i, nxt + 1, order="fwd", fwd=(10, {STRONG, COLON}))
            return nxt + 1
        if w in ("mix", "mixed", "mixup", "mix-up") or w in _RETRACT_PRED:
            end = i + 1
            if w in ("mix", "mixed"):
                k = v.words_at(i, w, "up")
                if k is None:
                    k2 = v.next_word(nxt + 1)
                    if nw in _ANAPHORS and v.low(k2) == "up":
                        k = k2 + 1
                if k is None:
                    return i + 1
                end = k
            self._retraction_pred(i, end)
            return end
        if w in ("typo",) or (w == "out" and v.words_at(i, "out", "of", "date")):
            end = v.words_at(i, "out", "of", "date") or i + 1
            self._retraction_pred(i, end)
            return end

        # ---------------------------------------------------------------- simple past of a state
        if w in _PAST_STATE_VERBS or (w == "had" and nw == "been"):
            return self._past_state(i, nxt, nw)
        return i + 1

    # -------------------------------------------------------------- operator helpers
    def _bound(self, i: int, end: int, prepositional: bool) -> None:
        """A bound belongs to the value before it ("X until 9 April", across commas and "and" when it is a
        prepositional phrase, "X, valid until ..."), or, when it opens the sentence, to the value after it."""
        stops_b = {STRONG} if prepositional else {STRONG, SOFT, AND}
        self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, stops_b), fwd=(12, {STRONG}), fwd_from=end,
                  meta={"fronted": self._fronted(i)})

    def _field_bound(self, i: int, end: int) -> None:
        """'expiry: <date>', 'valid until: <date>': a field of the record the line is, whatever separates it."""
        self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, set()), fwd=(12, set()), fwd_from=end,
                  meta={"fronted": True})

    def _bound_prior_to(self, i: int, to_idx: int) -> int:
        end = self.v.date_at(self.v.next_word(to_idx + 1))
        if end is None:
            return to_idx + 1
        self._bound(i, end, prepositional=True)
        return end

    def _change(self, i: int, end: int, window: int, stops: set | None = None) -> int:
        """A change verb governing its object ("quit X", "cancelled my membership of X"); without an object
        ("Veltrani Corsa: sold last month", "membership cancelled") it is said of the value before it."""
        if self.v.low(self.v.next_word(end)) in _OBJECT_PRONOUNS:
            return end  # "sold it": the object is something named elsewhere
        if self.v.low(self.v.prev_word(i - 1)) in _COPULA | {"got", "get", "gets"}:  # passive: "was sold"
            self._add("change", i, end, order="bwd", bwd=(8, {STRONG, AND}), cancellable=True)
            return end
        if self._has_object(end):
            self._add("change", i, end, order="fwd", fwd=(window, (stops or {STRONG, DEST, PRESENT}) | {CLAUSE_AND}),
                      cancellable=True)
        else:
            self._add("change", i, end, order="bwd", bwd=(6, {STRONG, AND}), cancellable=True)
        return end

    def _has_object(self, end: int) -> bool:
        v = self.v
        if end >= v.n or not v.t[end].word:
            return end < v.n and v.t[end].text in "\"'"  # "quit 'Marovian'": a quoted object
        w = v.low(end)
        if end in self.value_starts:
            return True
        if v.date_at(end) is not None and w not in _DETS:
            return False
        return w not in {"on", "in", "at", "by", "last", "this", "yesterday", "today", "recently", "long", "ago",
                         "already", "and", "but", "or", "for", "since", "after", "before", "when", "because"}

    def _left_role(self, i: int) -> str | None:
        """'object' (I left Quillmere), 'predicate' (Quillmere: left in May) or None (on the left, left-handed)."""
        v = self.v
        if i + 1 < v.n and v.t[i + 1].text == "-" and v.t[i + 1].glued:
            return None  # left-handed, left-wing
        pw = v.low(v.prev_word(i - 1))
        if pw in _DETS | _LEFT_NOT_VERB_BEFORE or self._modal_before(i):
            return None
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        if nw in ("in", "on", "at", "by") and v.date_at(v.next_word(nxt + 1)) is not None:
            return "predicate"
        if nw in _LEFT_NOT_VERB_AFTER:
            return None
        if i + 1 >= v.n or not v.t[i + 1].word or v.date_at(nxt) is not None:
            return "predicate"
        return "object"

    def _negation(self, i: int) -> int:
        v = self.v
        w = v.low(i)
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        end = i + 1
        if nw in _NEG_IDIOMS or (w.startswith("can") and nw == "wait") or (nw == "to" and v.low(nxt + 1) == "mention"):
            return i + 1
        if nw in ("any",) and v.low(v.next_word(nxt + 1)) in ("longer", "more"):
            # "not any longer" after the value, or before the predicate: both directions
            e = v.next_word(nxt + 1) + 1
            self._add("past", i, e, order="bwd", bwd=(8, {STRONG}))
            self._add("negation", i, e, order="fwd", fwd=(8, {STRONG, SOFT, PRESENT}), cancels=True)
            return e
        if nw == "anymore":
            self._add("past", i, nxt + 1, order="bwd", bwd=(8, {STRONG}))
            return nxt + 1
        if nw in ("true", "correct", "accurate", "right", "so", "the") and \
                (nw != "the" or v.words_at(nxt, "the", "case")):
            k = v.words_at(nxt, "the", "case") or nxt + 1
            if v.low(v.next_word(k)) == "that":
                self._add("negation", i, k, order="fwd", fwd=(10, {STRONG, PRESENT}), cancels=True)
            else:
                self._retraction_pred(i, k)
            return k
        # copula negation with the value as subject: "X is not my employer", "X isn't current"
        p = v.prev_word(i - 1)
        if (w in _NEG_COPULA or (w in ("not", "never") and v.low(p) in _COPULA)) and \
                (nw in _ROLE_AFTER_NEG or (nw == "any" and v.low(v.next_word(nxt + 1)) in ("longer", "more"))):
            subj_end = i if w in _NEG_COPULA else p
            self._add("negation", subj_end, end, order="bwd", bwd=(4, {STRONG, SOFT, AND}))
        self._add("negation", i, end, order="fwd", fwd=(8, {STRONG, SOFT, PRESENT}), cancels=True)
        return end

    def _retraction_pred(self, i: int, end: int) -> None:
        """'X was wrong', '(retracted)', 'that was a mistake': the value before it."""
        v = self.v
        # anaphoric: "that was wrong", "which is outdated", "it's false" → the preceding clause(s)
        k = v.prev_word(i - 1)
        steps, anaphoric = 0, False
        while k >= 0 and steps < 4:
            lw = v.low(k)
            if lw in _ANAPHORS:
                anaphoric = True
                break
            if lw not in _COPULA | {"a", "an", "all", "just", "simply", "completely", "totally", "been", "has", "have",
                                    "had", "entirely", "actually", "was", "mixed", "mix", "big", "bit", "of",
                                    "sadly", "plain", "and", "so", "also", "now"}:
                break
            k = v.prev_word(k - 1)
            steps += 1
        if anaphoric:
            self._add("retraction", k, end, order="bwd", bwd=(15, set()))
        else:
            self._add("retraction", i, end, order="bwd", bwd=(8, {STRONG, AND}))

    def _past_state(self, i: int, nxt: int, nw: str) -> int:
        v = self.v
        w = v.low(i)
        if self._have_before(i) or self._modal_before(i):
            return i + 1
        if w in ("was", "were", "had"):
            if w == "had" and nw == "been":
                pass
            elif nw in _PARTICIPLES or (nw.endswith("ed") and nw not in _NAMING_PARTICIPLES) or \
                    (nw.endswith("en") and len(nw) > 4 and nw not in ("often", "seven", "eleven")):
                return i + 1
            elif nw.endswith("ing") and (nw in _NOT_STATE_ING or len(nw) <= 4):
                return i + 1  # "I was thinking about X", "we were going to": no past state of X
            elif w == "had" and nw in ("to", "better"):
                return i + 1
        stops = {STRONG, SOFT, PRESENT, PRESVERB, CLAUSE_AND}
        bwd = (3, {STRONG, SOFT, AND, PRESENT}) if w in ("was", "were") else None
        self._add("past", i, i + 1, order="fwd_then_bwd" if bwd else "fwd", fwd=(8, stops), bwd=bwd,
                  meta={"tense": True})
        return i + 1

    # -------------------------------------------------------------- attachment
    def attach(self) -> dict[int, list[_Op]]:
        """mention start -> the operators attached to it (cancelled ones excluded)."""
        # negations first: they may cancel a change verb they govern ("never left X")
        for op in sorted(self.ops, key=lambda o: (not o.cancels, o.start)):
            if op.kind == "label":
                continue
            if op.cancels and op.fwd:
                hit = self.scan_fwd(op.end, op.fwd[0], op.fwd[1], cancels=True)
                if hit and hit[0] == "op":
                    self.op_starts[hit[1]].cancelled = True
                    op.cancelled = True
                elif hit and hit[0] == "change-verb":
                    op.cancelled = True  # "didn't leave X": the change is denied, X stands
        out: dict[int, list[_Op]] = {}
        for op in self.ops:
            if op.cancelled:
                continue
            if op.kind == "label":
                for a in self.mentions:
                    if a >= op.meta["after"]:
                        out.setdefault(a, []).append(op)
                continue
            target = self._target(op)
            if target is not None:
                for a in self._same_value_run(target):
                    out.setdefault(a, []).append(op)
        return out

    def _same_value_run(self, target: int) -> list[int]:
        """The target and the other mentions of the same value in its clause, with no other value or strong
        boundary between them ("Kvalvika  I am staying in Kvalvika until 14 March": one stay, one bound)."""
        kind = self.mentions[target][0]
        run = [target]
        for step in (-1, 1):
            i = target + step
            while 0 <= i < self.v.n:
                if i in self.mentions:
                    if self.mentions[i][0] != kind:
                        break
                    run.append(i)
                elif self._stop(i, {STRONG}):
                    break
                i += step
        return run

    def _target(self, op: _Op) -> int | None:
        order = op.order
        if order == "bwd_then_fwd":
            hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
            if hit:
                return hit[1]
            if op.meta.get("fronted") or op.meta.get("adjectival"):
                hit = self.scan_fwd(op.fwd_from if op.fwd_from is not None else op.end, op.fwd[0], op.fwd[1])
                return hit[1] if hit else None
            return None
        if order in ("fwd", "fwd_then_bwd"):
            hit = self.scan_fwd(op.end, op.fwd[0], op.fwd[1])
            if hit:
                return hit[1]
            if order == "fwd_then_bwd":
                if self._current_ahead(op.end):
                    return None  # "Quillmere, formerly of the Tarrowick area": it belongs ahead, not behind
                hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
                return hit[1] if hit else None
            return None
        if order == "bwd":
            hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
            return hit[1] if hit else None
        return None

    def _current_ahead(self, i: int) -> bool:
        """Is the next value after token i, before a strong boundary, the current one? Then a qualifier whose
        forward search stopped short is about that value and does not look back to a stale one."""
        while i < self.v.n:
            if i in self.mentions:
                return self.mentions[i][0] == "current"
            if self._stop(i, {STRONG}):
                return False
            i += 1
        return False


# ------------------------------------------------------------------------------- records and tables

def _object_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of {...} objects, innermost last, tolerant of broken JSON."""
    spans, stack, in_str, esc = [], [], False, False
    for k, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            stack.append(k)
        elif ch == "}" and stack:
            spans.append((stack.pop(), k + 1))
    return spans


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.casefold())


def _date_like(value: str) -> bool:
    s = value.strip().strip("\"'").casefold()
    if not s or s in _OPEN_END or s in ("none", "null", "present", "-", "—"):
        return False
    return bool(re.search(r"\d", s)) or any(m in _SUBTOKEN_RE.findall(s) for m in _MONTHS | _RELATIVE_DAYS)


def _record_pairs(obj_text: str) -> list[tuple[str, object]]:
    try:
        data = json.loads(obj_text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        return [(k, v) for k, v in data.items() if not isinstance(v, (dict, list))]
    pairs = []
    for m in re.finditer(r"""["']?([A-Za-z][\w \-]{0,40}?)["']?\s*[:=]\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^,}\n]*)""",
                         obj_text):
        raw = m.group(2).strip()
        val: object = raw[1:-1] if raw[:1] in "\"'" else raw
        if isinstance(val, str) and val.casefold() in ("true", "false"):
            val = val.casefold() == "true"
        pairs.append((m.group(1), val))
    return pairs


def _record_qualifier(pairs: list[tuple[str, object]], stale: str | None = None) -> str | None:
    for key, val in pairs:
        k = _norm_key(key)
        if stale and isinstance(val, str) and _contains(val, stale) and \
                any(part in _LABEL_QUAL for part in _SUBTOKEN_RE.findall(key.casefold().replace("_", " "))):
            return f"{key}: {val}"  # {"previous_gym": "X"}
        sval = val.strip() if isinstance(val, str) else val
        if k in _STATUS_KEYS and isinstance(sval, str) and sval.casefold() in _NOT_CURRENT_VALUES:
            return f"{key}: {sval}"
        if k in _LINK_KEYS and isinstance(sval, str) and sval and sval.casefold() not in ("none", "null"):
            return f"{key}: {sval}"
        if k in _END_KEYS and k != "to" and isinstance(sval, str) and _date_like(sval):
            return f"{key}: {sval}"
        if k in _FALSE_MEANS_OLD and sval is False:
            return f"{key}: false"
        if k in _TRUE_MEANS_OLD and sval is True:
            return f"{key}: true"
    return None


def _table_rows(text: str) -> dict[int, str]:
    """Character offset of each markdown table data row's start -> the row's qualifier, when it has one."""
    lines = text.splitlines(keepends=True)
    offs, pos = [], 0
    for ln in lines:
        offs.append(pos)
        pos += len(ln)
    out: dict[int, str] = {}
    k = 0
    while k < len(lines):
        if lines[k].strip().startswith("|") and k + 1 < len(lines) and \
                re.fullmatch(r"\s*\|?[\s:\-|]+\|?\s*", lines[k + 1]) and "-" in lines[k + 1]:
            header = [_norm_key(c) for c in lines[k].strip().strip("|").split("|")]
            r = k + 2
            while r < len(lines) and lines[r].strip().startswith("|"):
                cells = [c.strip() for c in lines[r].strip().strip("|").split("|")]
                for h, c in zip(header, cells):
                    if h in _TABLE_END and c and c.casefold() not in _OPEN_END and c not in ("-", "—", "–"):
                        out[offs[r]] = f"{h}: {c}"
                        break
                    if h in _STATUS_KEYS and c.casefold() in _NOT_CURRENT_VALUES:
                        out[offs[r]] = f"{h}: {c}"
                        break
                out.setdefault(offs[r], "")
                r += 1
            k = r
        else:
            k += 1
    return out


# ------------------------------------------------------------------------------- the judgement

def _value_spans(view: _View, value: str | None) -> list[tuple[int, int]]:
    if not value:
        return []
    want = _subtokens(value)
    if not want:
        return []
    subs: list[tuple[str, int]] = []
    for i, t in enumerate(view.t):
        if t.word:
            subs.extend((s, i) for s in _SUBTOKEN_RE.findall(t.low))
    n = len(want)
    spans = []
    for k in range(len(subs) - n + 1):
        if [s for s, _ in subs[k:k + n]] == want:
            spans.append((subs[k][1], subs[k + n - 1][1] + 1))
    return spans


def _contains(text: str, value: str) -> bool:
    want, have = _subtokens(value), _subtokens(text)
    n = len(want)
    return bool(want) and any(have[i:i + n] == want for i in range(len(have) - n + 1))


def judge_hygiene(stale: str, current: str | None, text: str) -> tuple[str, str]:
    """(verdict, reason) for one judge request: absent, qualified or unqualified."""
    if not _subtokens(stale or ""):
        return "absent", "the stale value has no letters or digits to look for"
    if not _contains(text, stale):
        return "absent", "the stale value does not appear"
    toks = _tokenize(text)
    objects = _object_spans(text)
    tables = _table_rows(text)
    table_starts = sorted(tables)
    qualified: list[str] = []
    bare: list[str] = []
    seen = inside_current = 0
    record_cache: dict[tuple[int, int], str | None] = {}
    for idx in _sentences(toks):
        view = _View(toks, idx)
        stale_spans = _value_spans(view, stale)
        if not stale_spans:
            continue
        cur_spans = [s for s in _value_spans(view, current)
                     if not any(a <= s[0] and s[1] <= b and (b - a) >= (s[1] - s[0]) and (a, b) != s
                                for a, b in stale_spans)] if current else []
        analysis = _Analysis(view, stale_spans, cur_spans)
        attached = analysis.attach()
        sentence = view.text(0, view.n)
        inside_current += sum(1 for a, _ in stale_spans if analysis.mentions.get(a, ("",))[0] != "stale")
        for a, (kind, b) in sorted(analysis.mentions.items()):
            if kind != "stale":
                continue
            seen += 1
            char = view.t[a].start
            why = None
            rec = [s for s in objects if s[0] <= char < s[1]]
            if rec:
                inner = min(rec, key=lambda s: s[1] - s[0])
                if inner not in record_cache:
                    record_cache[inner] = _record_qualifier(_record_pairs(text[inner[0]:inner[1]]), stale)
                if record_cache[inner]:
                    why = f"its record says {record_cache[inner]}"
            if why is None and table_starts:
                k = bisect.bisect_right(table_starts, char)
                row = table_starts[k - 1] if k else None
                if row is not None and tables.get(row) and "\n" not in text[row:char]:
                    why = f"its table row says {tables[row]}"
            if why is None and a in attached:
                op = attached[a][0]
                why = f"{op.kind} qualifier {op.phrase!r}"
            if why:
                qualified.append(f"{why} in {sentence[:160]!r}")
            else:
                bare.append(sentence)
    if seen == 0 and inside_current:
        return "absent", "the stale value appears only inside the current value"
    if seen == 0:  # found as tokens, but split across units: never call that absent
        return "unqualified", "the stale value appears without any qualifier attached to it"
    if bare:
        more = f" (and {len(bare) - 1} more)" if len(bare) > 1 else ""
        return "unqualified", f"presented as current, no qualifier attached: {bare[0][:200]!r}{more}"
    return "qualified", f"every mention ({seen}) is qualified; first: {qualified[0][:300]}"


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
