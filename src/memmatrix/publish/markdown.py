"""Text from a system reaching a page: escaped, never interpreted.

An adapter's error message, a reason quoting what a system answered, a finding, a case id or a folder name may hold
anything: HTML (``<script>``, ``<img onerror>``), Markdown links (``[click](javascript:...)``), backticks that end a
code span, a ``|`` that ends a table cell. The Markdown report and the job summary put every such text through
``md`` (inline) or ``code`` (a code span), so a page shows it as text.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_\[\]|!])")


def md(text) -> str:
    """``text`` as inline Markdown text: HTML characters as entities, Markdown punctuation escaped, one line."""
    s = " ".join(str(text).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", s)


def code(text) -> str:
    """``text`` as an inline code span that nothing in it can end (a fence longer than any run of backticks)."""
    s = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
