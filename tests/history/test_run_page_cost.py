"""The run page's cost is bounded whatever the stored document holds: the plots draw a bounded
number of rounds, and the report of a stored result is rendered once per process (its banner,
the run's current state, put in on each request)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import select

from bot import create_app
from runner import report
from runner.report.plots import MAX_DRAWN, paired_plot_svg
from runner.report.templating import PAGE_DRAWN
from runner.results import side as side_result
from tests.history.factory import compare_doc


def _big_doc(benchmarks: int, samples: int) -> dict:
    doc = compare_doc(1, "bench_0", 1e-3, 1.1e-3)
    rng = np.random.default_rng(0)
    template = doc["benchmarks"][0]
    doc["benchmarks"] = [dict(json.loads(json.dumps(template)), name=f"bench_{b}",
                              base=side_result(list(1e-3 * np.exp(rng.normal(0, .01, samples)))),
                              head=side_result(list(1.1e-3 * np.exp(rng.normal(0, .01, samples)))))
                         for b in range(benchmarks)]
    return doc


def test_a_plot_draws_at_most_its_share_of_rounds():
    base, head = [1e-3 * (1 + i % 7 / 100) for i in range(5000)], [1.1e-3] * 5000
    svg = str(paired_plot_svg(base, head, 0.02))
    assert svg.count('class="b"') == MAX_DRAWN and svg.count('class="h"') == MAX_DRAWN
    assert svg.count('class="pair"') == MAX_DRAWN and svg.count('class="r"') == MAX_DRAWN
    assert f"{MAX_DRAWN} of 5000 rounds drawn" in svg
    small = str(paired_plot_svg(base[:40], head[:40], 0.02, most=20))
    assert small.count('class="b"') == 20 and "20 of 40 rounds drawn" in small
    assert "rounds drawn" not in str(paired_plot_svg(base[:40], head[:40], 0.02))


def test_the_html_report_shares_a_bounded_number_of_rounds_among_its_benchmarks():
    page = report.render(_big_doc(400, 300), "html")
    assert page.count('<circle class="b"') == 400 * max(20, PAGE_DRAWN // 400)
    assert len(page) < 8_000_000  # 40 MB before the bound


@pytest.fixture
def app(module_database_url):
    from bot.app.store import store as app_store
    from bot.app.core.facts import RunInfo
    from bot.app.store.tables import Run
    from bot.history import store as history_store

    app = create_app({"DATABASE_URL": module_database_url, "TESTING": "1", "PERFGATE_READ_ACCESS": "all"})
    db = app.extensions["perfgate"]["db"]
    with db.session() as s, s.begin():
        stored = history_store.add_result(s, _big_doc(3, 2000))
        app_store.insert_run(s, RunInfo(key="big", repository="acme/kernels", installation_id=1,
                                        kind="pr", trigger="label", head_sha="1" * 40,
                                        base_sha="0" * 40, pr_number=1))
        s.scalar(select(Run).where(Run.key == "big")).result_id = stored.result_id
    yield app
    db.dispose()


def test_the_run_page_renders_a_stored_report_once_and_its_banner_each_time(app, monkeypatch):
    from bot.app.store.tables import Run

    calls = []
    real = report.render
    monkeypatch.setattr(report, "render", lambda *a, **k: calls.append(1) or real(*a, **k))
    client = app.test_client()
    first = client.get("/runs/big").get_data(as_text=True)
    assert "bench_2" in first and "queued" in first and "perfgate:run-banner" not in first
    with app.extensions["perfgate"]["db"].session() as s, s.begin():
        s.scalar(select(Run).where(Run.key == "big")).status = "completed"
    second = client.get("/runs/big").get_data(as_text=True)
    assert calls == [1]  # rendered once
    assert "completed" in second and second.count("bench_2") == first.count("bench_2")
    assert "perfgate:run-banner" not in second
