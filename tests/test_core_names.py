"""The core names no system: adding one never needs a change under src/memmatrix.

Every folder under systems/ is a system name. A name is a mention wherever it stands as a whole word,
case-folded, in src/memmatrix: in a comment, a string or docstring, or as an identifier. Python's own
grammar is the one thing told apart, by position, never by place: an attribute after a dot
(``lines.append``) is a member of some other object, an argparse ``action=`` value is argparse's word,
and an option string (``--append``) is the command line's. Nothing else is allowed.
"""

from __future__ import annotations

import io
import re
import tokenize

from conftest import ROOT

CORE = ROOT / "src" / "memmatrix"
SYSTEMS = sorted(p.name for p in (ROOT / "systems").iterdir() if p.is_dir() and not p.name.startswith("."))


def _pattern(names) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])", re.I)


def mentions(text: str, names) -> list[tuple[int, str]]:
    """(line, token) of every mention of a name in Python source ``text``."""
    word = _pattern(names)
    found = []
    prev: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        last = prev[-1].string if prev else ""
        keyword = prev[-2].string if len(prev) > 1 and last == "=" else ""
        if tok.type == tokenize.NAME and last != "." and word.fullmatch(tok.string):
            found.append((tok.start[0], tok.string))
        elif tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and keyword != "action"
                                              and not re.fullmatch(r"[rbuf]*['\"]--[\w-]+['\"]", tok.string, re.I)):
            found += [(tok.start[0] + tok.string[:m.start()].count("\n"), m.group(0)) for m in word.finditer(tok.string)]
        elif getattr(tokenize, "FSTRING_MIDDLE", None) == tok.type:
            found += [(tok.start[0], m.group(0)) for m in word.finditer(tok.string)]
        prev.append(tok)
    return found


def test_the_systems_folder_names_the_systems():
    assert {"mem0", "graphiti", "reference", "notes", "append"} <= set(SYSTEMS)


def test_the_rule_finds_mentions_and_only_mentions():
    """So that the test below can fail: every way a name can sneak in is caught."""
    src = ('"""Like Mem0 does."""\n'
           'import mem0\n'
           'x = {"graphiti": 1}  # as Graphiti gathers\n'
           'lines.append(3)\n'
           'p.add_argument("--append", action="append", help="append to the file")\n'
           'f"{x} for notes"\n')
    assert mentions(src, ["mem0", "graphiti", "append", "notes"]) == [
        (1, "Mem0"), (2, "mem0"), (3, "graphiti"), (3, "Graphiti"), (5, "append"), (6, "notes")]


def test_the_core_names_no_system():
    found = [f"{path.relative_to(ROOT)}:{line}: {token}"
             for path in sorted(CORE.rglob("*")) if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".txt")
             for line, token in (mentions(path.read_text(encoding="utf-8"), SYSTEMS) if path.suffix == ".py" else
                                 [(text[:m.start()].count("\n") + 1, m.group(0))
                                  for text in [path.read_text(encoding="utf-8")]
                                  for m in _pattern(SYSTEMS).finditer(text)])]
    assert found == [], "the core names a system; say it generically:\n" + "\n".join(found)
