"""The judge's lexicon: the words and shapes a qualifier is made of (dates, negations, change verbs, labels)."""

from __future__ import annotations

import re


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
