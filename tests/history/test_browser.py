"""Headless Chromium loads the benchmark page from a running server with a real SQLite
database and checks that the chart and its markers are drawn; a screenshot is saved under
tests/history/artifacts/ (git-ignored).

Needs Debian's ``chromium`` and ``chromium-driver`` (/usr/bin/chromium, /usr/bin/chromedriver)
and the Python package ``selenium``; skipped with the reason when either is missing.
No browser is downloaded (Selenium Manager is bypassed by naming the driver).
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.history.factory import BENCH, PEAKMEM, populate, populate_memory

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def _skip_reason() -> str | None:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        return "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs the Python package selenium (pip install selenium)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _serving(tmp_path, fill):
    """A running server over a SQLite database ``fill`` wrote: yields its URL."""
    from werkzeug.serving import make_server

    from bot import create_app

    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'perfgate.db'}"})
    db = app.extensions["perfgate"]["db"]
    with db.session() as s, s.begin():
        fill(s)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=10)
    db.dispose()


@pytest.fixture
def server(tmp_path):
    yield from _serving(tmp_path, populate)


@pytest.fixture
def memory_server(tmp_path):
    yield from _serving(tmp_path, populate_memory)


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1280,1000", f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def test_bench_page_draws_chart_and_change_points(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/acme/kernels/bench/{quote(BENCH, safe='')}")
    assert BENCH in browser.title
    chart = browser.find_element(By.CSS_SELECTOR, "svg#history-chart")
    assert chart.size["width"] > 600 and chart.size["height"] > 200  # laid out, not collapsed

    series = chart.find_elements(By.CSS_SELECTOR, "g.series")
    assert len(series) == 2
    points = chart.find_elements(By.CSS_SELECTOR, "g.series circle.point")
    assert len(points) == 42
    assert all(p.size["width"] > 0 for p in points[:5])
    band = chart.find_element(By.CSS_SELECTOR, "polygon.ci-band")
    assert band.size["width"] > 100

    regressions = chart.find_elements(By.CSS_SELECTOR, "g.change-point.regression line")
    improvements = chart.find_elements(By.CSS_SELECTOR, "g.change-point.improvement line")
    assert len(regressions) == 1 and len(improvements) == 1
    assert regressions[0].size["height"] > 200  # spans the plot
    # the regression marker is drawn left of the fix, as in time
    assert regressions[0].location["x"] < improvements[0].location["x"]
    title = regressions[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert "PRs #101" in title and "+15" in title

    assert len(chart.find_elements(By.CSS_SELECTOR, "g.pr-point path")) == 2
    assert len(chart.find_elements(By.CSS_SELECTOR, "g.fingerprint-change line")) == 1

    # nothing was fetched from anywhere but the server itself
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(name.startswith(server) for name in resources)

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "bench_page.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_bench_page_draws_the_memory_series_where_there_is_one(memory_server, browser):
    from selenium.webdriver.common.by import By

    # a timed benchmark whose memory was measured: its time chart and a peak-memory chart below it
    browser.get(f"{memory_server}/acme/kernels/bench/{quote(BENCH, safe='')}")
    time_chart = browser.find_element(By.CSS_SELECTOR, "svg#history-chart")
    memory_chart = browser.find_element(By.CSS_SELECTOR, "svg#memory-chart")
    assert memory_chart.size["height"] > 200 and memory_chart.location["y"] > time_chart.location["y"]
    assert len(memory_chart.find_elements(By.CSS_SELECTOR, "g.series circle.point")) == 20
    assert "peak memory (MiB)" in memory_chart.find_element(By.CSS_SELECTOR, "g.axes").text

    # an asv peakmem_ benchmark: memory only, its doubling a change point drawn in bytes
    browser.get(f"{memory_server}/acme/kernels/bench/{quote(PEAKMEM, safe='')}")
    assert not browser.find_elements(By.CSS_SELECTOR, "svg#history-chart")
    chart = browser.find_element(By.CSS_SELECTOR, "svg#memory-chart")
    points = chart.find_elements(By.CSS_SELECTOR, "g.series circle.point")
    assert len(points) == 20
    assert "MiB" in points[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    regressions = chart.find_elements(By.CSS_SELECTOR, "g.change-point.regression line")
    assert len(regressions) == 1
    assert "1.3 MiB → 2.5 MiB" in regressions[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "bench_memory_page.png"))


def test_repository_page_renders(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/acme/kernels")
    rows = browser.find_elements(By.CSS_SELECTOR, "table#benchmarks tbody tr")
    assert len(rows) == 4  # two benchmarks × two environments
    assert browser.find_element(By.ID, "alert-accuracy").text.count("1") >= 2
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "repository_page.png"))


def test_the_content_security_policy_blocks_scripts_but_not_the_pages(server, browser):
    from selenium.webdriver.common.by import By

    for path in ("/acme/kernels", f"/acme/kernels/bench/{quote(BENCH, safe='')}"):
        browser.get(server + path)
        # the inline style sheet applies (style-src 'unsafe-inline'): the header's background
        header = browser.find_element(By.TAG_NAME, "header")
        assert header.value_of_css_property("background-color") == "rgba(246, 248, 250, 1)"
        assert not [e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]], path
    # a script injected into the page does not run, and the browser says why
    ran = browser.execute_script("var s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                                 "document.body.appendChild(s); return window.injected === 1;")
    assert ran is False
    assert any("Content Security Policy" in e["message"] for e in browser.get_log("browser"))
