"""The PR comment as a reviewer sees it: report.md rendered to HTML as GitHub renders Markdown
(CommonMark with tables and raw HTML: markdown-it-py), in a GitHub-like page of a comment's width,
opened in headless Chromium at a laptop's window; what the first screen shows is read from the
page's layout, and a screenshot is saved under tests/runner/artifacts/ (git-ignored).

Needs Debian's ``chromium`` and ``chromium-driver`` and the Python package ``selenium`` (the same
as tests/history/test_browser.py); skipped with the reason when either is missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner import report
from testkit.documents import full_document
from testkit.results_doc import bench, results_doc

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

#: A comment's column on github.com (px) and a laptop's window.
COMMENT_WIDTH, WINDOW = 780, (1280, 800)


def _skip_reason() -> str | None:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        return ("needs Debian's chromium and chromium-driver "
                "(apt-get install chromium chromium-driver)")
    try:
        import markdown_it  # noqa: F401
        import selenium  # noqa: F401
    except ImportError:
        return "needs the Python packages selenium and markdown-it-py (the dev extra)"
    return None


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")]


def _as_github_renders(markdown: str) -> str:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; \
margin: 0; }}
.comment {{ width: {COMMENT_WIDTH}px; margin: 16px auto; padding: 16px; \
border: 1px solid #d0d7de; }}
table {{ border-collapse: collapse; display: block; overflow: auto; }} \
td, th {{ border: 1px solid #d0d7de; padding: 6px 13px; }}
</style><div class="comment">{body}</div>"""


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


#: What the first screen shows: the visible text of each block whose top is inside the window.
_FIRST_SCREEN = """
const out = [];
for (const el of document.querySelectorAll('.comment > *, .comment details > summary')) {
  const box = el.getBoundingClientRect();
  if (box.height > 0 && box.top < window.innerHeight) \
out.push([el.tagName, el.innerText.slice(0, 4000)]);
}
return out;
"""


def _first_screen(browser, tmp_path, doc: dict, name: str) -> list[tuple[str, str]]:
    page = tmp_path / f"{name}.html"
    page.write_text(_as_github_renders(report.render(doc, "md", max_chars=report.COMMENT_LIMIT)))
    browser.get(page.as_uri())
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"comment_{name}.png"))
    return [tuple(x) for x in browser.execute_script(_FIRST_SCREEN)]


def test_the_first_screen_is_the_decision_and_what_changed(browser, tmp_path):
    shown = _first_screen(browser, tmp_path, full_document(), "full")
    tags = [tag for tag, _ in shown]
    # the gate's sentence first, then the table of what changed, then only collapsed sections
    assert tags[0] == "H2" and "gate" in shown[0][1]
    assert "TABLE" in tags[:4]
    opened = [text for tag, text in shown if tag == "DETAILS" and "\n" in text.strip()]
    assert not opened  # every section below the news is collapsed to its summary
    # methodology is one click away
    assert not any("Change = time per call" in text for _, text in shown)


def test_a_thousand_benchmarks_show_the_same_first_screen(browser, tmp_path):
    benches = [bench(f"test_module_{i:04d}[cpu-float32]",
                     ("regression", "unchanged", "inconclusive")[i % 3],
                     1.2 if i % 3 == 0 else 1.0) for i in range(1000)]
    shown = _first_screen(browser, tmp_path, results_doc(benches), "thousand")
    assert shown[0][0] == "H2" and "334 regressions beyond 5 %: gate fails" in shown[0][1]
    table = next(text for tag, text in shown if tag == "TABLE")
    assert table.count("regression") == 6  # six rows before the fold, the rest collapsed
    summaries = [text for tag, text in shown if tag == "SUMMARY"]
    assert any("328 more changed or failed" in s for s in summaries)


#: The numeric cells of report.html whose text takes more than one line (a value wrapped).
_WRAPPED_CELLS = """
const out = [];
for (const td of document.querySelectorAll('td.num')) {
  const range = document.createRange();
  range.selectNodeContents(td);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  if (tops.size > 1) out.push(td.innerText);
}
return out;
"""


def test_report_html_never_wraps_a_value(browser, tmp_path):
    # issue 47: in a narrow window "+3.1 %" read "+3.1" / "%" and "1.52×, 3.1×] slower" broke
    benches = [bench(f"bench_{i}", v, r) for i, (v, r) in enumerate(
        (("regression", 2.38), ("improvement", 0.123), ("regression", 1.031),
         ("inconclusive", 1.004), ("unchanged", 1.0)))]
    page = tmp_path / "report.html"
    page.write_text(report.render(results_doc(benches), "html"))
    browser.set_window_size(520, 800)
    browser.get(page.as_uri())
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "report_html_narrow.png"))
    assert browser.execute_script("return document.querySelectorAll('td.num').length") >= 25
    assert browser.execute_script(_WRAPPED_CELLS) == []
