"""The static site (``memmatrix report --html``) and the Markdown report, drawn from one data model.

The fast tests render committed results and read the files; the browser test opens the site of every committed
result in headless Chromium as a person would: the overview, a click on a FAIL cell, the case page with the
transcript lines behind it. It needs Debian's chromium and chromium-driver (no browser is downloaded at test
time) and is skipped without them, unless MEMMATRIX_TEST_ENABLE names ``browser`` (``.ci/run``), where a missing
browser fails."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.common.canon import read_text, stored_transcript
from memmatrix.common.config import Config
from memmatrix.publish.report import render
from memmatrix.publish.site import LINE_CHARS, write_site
from memmatrix.evidence.verify import find_results

CONFIG = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})
CHROMIUM, DRIVER = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"


def systems_in(root: Path) -> set[str]:
    return {json.loads(p.read_text())["stamp"]["system"]["name"] for p in find_results([root])}


def test_the_markdown_report_titles_every_section_apart_names_columns_once_and_ends_open():
    text = render([ROOT / "results" / "deletion"], config=CONFIG)
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert len(heads) >= 3 and len(heads) == len(set(heads)), heads
    assert any("cases breadth-2.0.0" in h for h in heads) and any("cases 1.2.0" in h for h in heads)
    assert text.count("Columns: ") == 1  # one legend for the deletion protocol, under its first section
    assert text.endswith("\n\n")  # Markdown appended after it (a job summary) is not swallowed by its last block


@pytest.fixture(scope="module")
def writepath_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    write_site([ROOT / "results" / "writepath"], out, CONFIG)
    return out


def test_the_site_has_a_row_per_run_and_a_page_per_run_and_case(writepath_site):
    index = (writepath_site / "index.html").read_text()
    results = find_results([ROOT / "results" / "writepath"])
    assert index.count('<tr class="run"') == len(results)
    runs = [d for d in (writepath_site / "runs").iterdir() if d.is_dir()]
    assert len(runs) == len(results)
    for d in runs:
        page = (d / "index.html").read_text()
        assert "<h2>Capabilities</h2>" in page and "<caption>latency per adapter operation (ms)</caption>" in page
    unsupported = [(p, op, c["reason"]) for p in results
                   for op, c in json.loads(p.read_text())["capabilities"]["operations"].items()
                   if c["support"] == "unsupported"]
    assert unsupported  # every UNSUPPORTED operation's reason is on its run's page
    pages = "".join((d / "index.html").read_text() for d in runs)
    from markupsafe import escape  # as the templates escape it
    assert [why for _, _, why in unsupported if str(escape(why)) not in pages] == []
    cases = sum(len(json.loads(p.read_text())["cases"]) for p in results)
    assert sum(len(list(d.glob("*.html"))) - 1 for d in runs) == cases


def test_a_case_page_quotes_the_transcript_lines_by_their_number_in_the_committed_file(writepath_site):
    result = next(p for p in find_results([ROOT / "results" / "writepath"]) if "/mem0/" in p.as_posix())
    r = json.loads(result.read_text())
    lines = read_text(stored_transcript(result.parent, "transcript")).splitlines()
    case = next(c for c in r["cases"] if any(cell["verdict"] == "FAIL" for cell in c["cells"]))
    page = next((writepath_site / "runs").glob(f"writepath-mem0-{r['stamp']['system']['version']}-embedded-*"))
    html = (page / f"{case['id']}.html").read_text()
    quoted = re.findall(r'<li value="(\d+)" class="line"[^>]*><span class="what">[^<]*</span><br><code>(.*?)</code>',
                        html, re.S)
    assert quoted
    import html as h
    for n, text in quoted:
        assert h.unescape(text) == lines[int(n) - 1][:LINE_CHARS]
        assert json.loads(lines[int(n) - 1]).get("case") == case["id"]


def test_no_page_loads_anything_from_elsewhere(writepath_site):
    for page in writepath_site.rglob("*.html"):
        text = page.read_text()
        assert "default-src 'self'" in text
        assert not re.search(r'(?:src|href)="(?:https?:)?//', text), page


# ------------------------------------------------------------------------------------------- in a real browser
def _browser_or_skip():
    enabled = "browser" in os.environ.get("MEMMATRIX_TEST_ENABLE", "")
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).is_file()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[test]')")
    if missing:
        why = f"no browser to drive: {', '.join(missing)} (Debian: apt-get install chromium chromium-driver)"
        if enabled:
            pytest.fail(why + "; MEMMATRIX_TEST_ENABLE names browser, so it must run")
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-quic", "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chrome')}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=DRIVER))
    yield driver
    driver.quit()


@pytest.mark.browser
def test_the_committed_matrix_in_a_browser_from_overview_to_the_transcript_lines(browser, tmp_path):
    from selenium.webdriver.common.by import By
    site = tmp_path / "site"
    index = write_site([ROOT / "results"], site, CONFIG)
    browser.get(index.as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.run")
    assert {r.get_attribute("data-system") for r in rows} == systems_in(ROOT / "results")
    assert len(rows) == len(find_results([ROOT / "results"]))
    shots = Path(os.environ.get("MEMMATRIX_ARTIFACTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shots / "report-overview.png"))

    browser.find_element(By.CSS_SELECTOR, "td.v-FAIL a").click()  # a FAIL cell of the overview: its run's cases
    assert "/runs/" in browser.current_url and "#step-" in browser.current_url
    step = browser.current_url.rsplit("#step-", 1)[1]
    heads = [th.get_attribute("id") for th in browser.find_elements(By.CSS_SELECTOR, "table.cases th[id]")]
    column = heads.index(f"step-{step}") + 3  # nth-child counts from 1, and case and shape come first
    fail = browser.find_element(By.CSS_SELECTOR, f"table.cases tr td:nth-child({column}).v-FAIL a")
    fail.click()  # that step's FAIL cell of one case: the case page, at the cell
    assert browser.current_url.endswith(f"#cell-{step}")
    cell = browser.find_element(By.ID, f"cell-{step}")
    assert "FAIL" in cell.find_element(By.CSS_SELECTOR, ".verdict").text
    assert cell.find_element(By.CSS_SELECTOR, ".reason").text
    cell.find_element(By.CSS_SELECTOR, ".evidence a").click()  # the transcript lines behind it
    op = browser.find_element(By.ID, browser.current_url.rsplit("#", 1)[1])
    lines = op.find_elements(By.CSS_SELECTOR, "li.line")
    assert lines and all(li.is_displayed() for li in lines[:3])
    assert lines[0].get_attribute("value").isdigit() and '"kind"' in lines[0].text
    browser.save_screenshot(str(shots / "report-case.png"))

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    asked = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in asked if m.get("method") == "Network.requestWillBeSent"]
    ours = [u for u in urls if u.startswith("file://")]
    assert any(u.endswith("site.css") for u in ours) and any(u.endswith("/index.html") for u in ours)
    # nothing left the machine: every request was for a file, or the browser's own pages (its new tab)
    assert [u for u in urls if not u.startswith(("file://", "chrome://", "chrome-untrusted://", "about:", "data:"))] == []


def test_the_overview_marks_judged_cells_and_the_oracles_unanswered_calls(tmp_path):
    import shutil as sh
    src = ROOT / "results" / "contradiction" / "mem0" / "2.2.1" / "embedded"
    run = tmp_path / "results" / "contradiction" / "mem0" / "2.2.1" / "embedded"
    sh.copytree(src, run)
    r = json.loads((run / "result.json").read_text())
    assert any(c.get("method") == "judged" for case in r["cases"] for c in case["cells"])
    r["cost"]["total"]["unmatched"] = 3  # as a run whose oracle left three calls unanswered would say
    (run / "result.json").write_text(json.dumps(r))
    index = write_site([tmp_path / "results"], tmp_path / "site", CONFIG).read_text()
    assert '<sup title="judged">j</sup>' in index
    assert "⚠ 3" in index and "did not answer 3 model call(s)" in index


def test_the_releases_page_reads_a_cells_history_down_its_column(tmp_path):
    index = write_site([ROOT / "results" / "contradiction" / "mem0"], tmp_path / "site", CONFIG)
    page = (index.parent / "timeline.html").read_text()
    section = page.split("<h2>mem0 · contradiction · embedded · cases 1.3.0</h2>", 1)[1].split("</section>", 1)[0]
    shown = re.findall(r'<tr class="release"><td><a href="runs/[^"]+/index.html">([^<]+)</a>', section)
    from memmatrix.common.releases import version_key
    committed = {p.parent.parent.name for p in find_results([ROOT / "results" / "contradiction" / "mem0"])
                 if p.parent.name == "embedded"}
    assert shown == sorted(committed, key=version_key) and len(shown) > 10
