"""Nothing from a system reaches a page raw: the Markdown report (also the Action's job summary) escapes adapter
text, and an Action output cannot be split into a second output by a line break in its value."""

import json
import re
import shutil

from conftest import ROOT
from memmatrix.ci.action import output
from memmatrix.publish.markdown import code, md
from memmatrix.publish.report import render

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
           "![x](https://evil.example/p.png)", "a | b", "`tick` ``"]


def test_md_leaves_no_tag_and_no_link():
    for text in HOSTILE:
        out = md(text)
        assert "<" not in out and ">" not in out, out
        assert "](" not in out.replace("\\](", ""), out   # a bracket that could close a link text is escaped
        assert "|" not in out.replace("\\|", ""), out


def test_code_cannot_be_ended_by_its_content():
    for text in ["a`b", "``x``", "`edge"]:
        out = code(text)
        fence = out[:len(out) - len(out.lstrip("`"))]
        assert out.endswith(fence) and fence not in out[len(fence):-len(fence)], out


def _hostile_result(tmp_path):
    run = tmp_path / "results" / "deletion" / "reference" / "1.0" / "embedded"
    shutil.copytree(ROOT / "results" / "deletion" / "reference" / "1.0" / "embedded", run)
    result = json.loads((run / "result.json").read_text())
    result["findings"] = list(HOSTILE)
    cell = result["cases"][0]["cells"][0]
    cell["verdict"], cell["reason"] = "ERROR", "adapter raised: " + HOSTILE[0] + " " + HOSTILE[2]
    result["cases"][0]["id"] = "case<img src=x onerror=alert(2)>"
    (run / "result.json").write_text(json.dumps(result))
    return run


def _outside_code_spans(page: str) -> str:
    """The page with its code spans removed (CommonMark shows a code span's content as text, tags and all)."""
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", page)


def test_the_report_escapes_what_a_system_said(tmp_path):
    page = render([_hostile_result(tmp_path)])
    assert "`case<img src=x onerror=alert(2)>`" in page  # a case id is shown in a code span
    prose = _outside_code_spans(page)
    assert "<script" not in prose and "<img" not in prose
    unescaped = re.sub(r"\\.", "", prose)  # a backslash-escaped bracket opens or closes no link
    assert "](javascript:" not in unescaped and "](https://evil" not in unescaped
    assert "\\[click\\](javascript:alert(1))" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as text, not dropped


def test_a_value_with_a_line_break_cannot_set_another_output(tmp_path, monkeypatch):
    out = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    output("plain", "one line")
    output("summary", "first\nverdict=PASS\nlast")
    lines = out.read_text().splitlines()
    assert lines[0] == "plain=one line"
    head = lines[1]
    assert head.startswith("summary<<ghadelimiter_")
    delimiter = head.split("<<", 1)[1]
    assert lines[2:5] == ["first", "verdict=PASS", "last"] and lines[5] == delimiter
    # read back as the runner does: heredoc blocks first, then key=value lines
    outputs, i = {}, 0
    while i < len(lines):
        if "<<" in lines[i]:
            key, d = lines[i].split("<<", 1)
            end = lines.index(d, i + 1)
            outputs[key] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            key, value = lines[i].split("=", 1)
            outputs[key] = value
            i += 1
    assert outputs == {"plain": "one line", "summary": "first\nverdict=PASS\nlast"}
