"""The dashboard pages and the JSON API through Flask's test client, on a real database."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from bot import create_app
from tests.history.factory import BENCH, populate


@pytest.fixture(scope="module")
def app(module_database_url):
    app = create_app({"DATABASE_URL": module_database_url, "TESTING": "1", "PERFGATE_PUBLIC_URL": "https://perf.example/"})
    db = app.extensions["perfgate"]["db"]
    with db.session() as s, s.begin():
        populate(s)
    yield app
    db.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


def test_healthz(client, app):
    resp = client.get("/healthz")
    assert resp.status_code == 200 and resp.json == {"status": "ok", "database": "ok"}
    assert app.extensions["perfgate"]["settings"].public_url == "https://perf.example"


def test_repository_page_lists_benchmarks_change_points_and_accuracy(client):
    resp = client.get("/acme/kernels")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert f'href="/acme/kernels/bench/{quote(BENCH, safe="")}"' in html
    assert "bench_matmul[n=1024]" in html
    assert "+15." in html  # the regression change point
    assert 'href="https://github.com/acme/kernels/pull/101">#101</a>' in html
    assert '<span class="badge reverted">reverted</span>' in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_bench_page_draws_the_chart(client):
    resp = client.get(f"/acme/kernels/bench/{quote(BENCH, safe='')}")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert html.count('<g class="series"') == 2                      # two fingerprints
    assert html.count('<g class="change-point regression">') == 1
    assert html.count('<g class="change-point improvement">') == 1
    assert html.count('<g class="pr-point') == 2
    assert html.count('<g class="fingerprint-change">') == 1
    assert 'class="ci-band"' in html and "<title>commit " in html and "<title>PR #101" in html
    assert "driver 560.35" in html


def test_unknown_repository_and_benchmark_are_404(client):
    assert client.get("/acme/nothing").status_code == 404
    assert client.get("/acme/kernels/bench/nope").status_code == 404
    assert client.get("/api/acme/nothing").status_code == 404
    assert client.get("/api/acme/kernels/bench/nope").status_code == 404


def test_api_overview(client):
    doc = client.get("/api/acme/kernels").json
    assert doc["repository"] == "acme/kernels"
    names = [b["name"] for b in doc["benchmarks"]]
    assert names == [BENCH, "bench_matmul[n=1024]"]
    ln = doc["benchmarks"][0]
    assert len(ln["series"]) == 2 and ln["latest_pr"]["number"] == 103
    assert ln["series"][0]["latest_change"]["ratio"] < 1
    acc = doc["alert_accuracy"]
    assert acc["flagged"] == 1 and acc["reverted"] == 1 and acc["accuracy"] == 1.0
    cps = doc["recent_change_points"]
    assert {c["status"] for c in cps} == {"reverted", "improvement"}
    assert [p["number"] for p in next(c for c in cps if c["ratio"] > 1)["prs"]] == [101]


def test_api_bench_and_series_and_alerts(client):
    doc = client.get(f"/api/acme/kernels/bench/{quote(BENCH, safe='')}").json
    assert doc["benchmark"] == BENCH
    first = doc["series"][0]
    assert [c["index"] for c in first["change_points"]] == pytest.approx([12, 24], abs=1)
    assert first["change_points"][0]["prs"][0]["number"] == 101
    assert [p["pr_number"] for p in doc["pr_points"]] == [101, 103]
    assert len(doc["fingerprint_changes"]) == 1
    series = client.get("/api/acme/kernels/series").json["series"]
    assert len(series) == 4
    alerts = client.get("/api/acme/kernels/alerts").json
    assert [a["status"] for a in alerts["alerts"]] == ["reverted"]
    assert doc["measure"] == "time" and first["measure"] == "time"


def test_api_bench_gives_the_memory_series_when_asked(client):
    # the populated history has no memory measured: an empty answer, and a measure it does not know is refused
    assert client.get(f"/api/acme/kernels/bench/{quote(BENCH, safe='')}?measure=memory").status_code == 404
    bad = client.get(f"/api/acme/kernels/bench/{quote(BENCH, safe='')}?measure=joules")
    assert bad.status_code == 400 and "time, memory" in bad.json["error"]


def test_create_app_reads_the_environment_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    app = create_app()
    monkeypatch.setenv("DATABASE_URL", "sqlite:////nonexistent/elsewhere.db")
    assert app.test_client().get("/healthz").status_code == 200
    assert (tmp_path / "env.db").is_file()
    app.extensions["perfgate"]["db"].dispose()
