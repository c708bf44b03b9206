"""Lists a page at a time (``?page=&limit=``, ``bot.web.paging``) on a real database: the run
list, the repository's benchmarks, the series API, a benchmark's PR points and the alerts;
pages are disjoint and complete, ``limit`` is cut to the maximum, bad values are a 400."""

from __future__ import annotations

import pytest

from bot import create_app
from bot.web import paging
from tests.history.factory import compare_doc, run_doc

REPO = "acme/kernels"
NAMES = [f"bench_{c}" for c in "abcdefg"]  # 7 benchmarks
PR_POINTS = 9
RUNS = 11


@pytest.fixture(scope="module")
def app(module_database_url):
    from bot.app.store import store as app_store
    from bot.app.core.facts import RunInfo
    from bot.history import store as history_store

    app = create_app({"DATABASE_URL": module_database_url, "TESTING": "1", "PERFGATE_READ_ACCESS": "all"})
    db = app.extensions["perfgate"]["db"]
    with db.session() as s, s.begin():
        for i in range(3):
            history_store.add_result(s, run_doc(i, {name: 1e-3 for name in NAMES}))
        for i in range(PR_POINTS):
            pr = {"number": 100 + i, "url": f"https://github.com/{REPO}/pull/{100 + i}"}
            history_store.add_result(s, compare_doc(10 + i, NAMES[0], 1e-3, 1.1e-3, pr=pr))
        for i in range(RUNS):
            app_store.insert_run(s, RunInfo(key=f"run{i:02d}", repository=REPO, installation_id=1,
                                            kind="pr", trigger="label", head_sha=f"{i:040x}",
                                            base_sha="0" * 40, pr_number=i))
    yield app
    db.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


def _walk(client, url: str, items) -> list:
    """Every item of every page, following ``next`` from ``url``; asserts pages are disjoint."""
    seen, pages = [], 0
    while url:
        body = client.get(url).get_json()
        page = items(body)
        assert page and not set(map(str, page)) & set(map(str, seen))
        seen += page
        pages += 1
        url = body["next"]
        assert pages < 20
    return seen


def test_the_series_api_pages_through_every_benchmark(client):
    first = client.get(f"/api/{REPO}/series?limit=3").get_json()
    assert [s["benchmark"] for s in first["series"]] == NAMES[:3] and first["previous"] is None
    assert first["next"] == f"/api/{REPO}/series?page=2&limit=3" and first["page"] == 1 and first["limit"] == 3
    names = _walk(client, f"/api/{REPO}/series?limit=3", lambda b: [s["benchmark"] for s in b["series"]])
    assert names == NAMES
    last = client.get(f"/api/{REPO}/series?limit=3&page=3").get_json()
    assert last["next"] is None and last["previous"] == f"/api/{REPO}/series?page=2&limit=3"


def test_the_overview_pages_benchmarks_but_counts_every_change_point(client):
    names = _walk(client, f"/api/{REPO}?limit=2", lambda b: [x["name"] for x in b["benchmarks"]])
    assert names == NAMES
    one = client.get(f"/api/{REPO}?limit=2&page=2").get_json()
    assert "alert_accuracy" in one and "recent_change_points" in one


def test_a_benchmarks_pr_points_come_newest_first_a_page_at_a_time(client):
    url = f"/api/{REPO}/bench/{NAMES[0]}?limit=4"
    pages = []
    while url:
        body = client.get(url).get_json()
        pages.append([p["pr_number"] for p in body["pr_points"]])
        assert len(body["series"]) == 1  # the series is whole on every page (the chart draws it)
        url = body["next"]
    assert pages == [[105, 106, 107, 108], [101, 102, 103, 104], [100]]  # each page oldest first


def test_the_run_list_pages_through_every_run(client):
    keys = []
    for number in (1, 2, 3):
        html = client.get(f"/?limit=5&page={number}").get_data(as_text=True)
        keys.append([f"run{i:02d}" for i in range(RUNS) if f"/runs/run{i:02d}" in html])
        assert ('rel="next"' in html) == (number < 3) and ('rel="prev"' in html) == (number > 1)
    assert keys == [[f"run{i:02d}" for i in range(10, 5, -1)][::-1], [f"run{i:02d}" for i in range(1, 6)], ["run00"]]
    assert "No runs on this page" in client.get("/?limit=5&page=4").get_data(as_text=True)


def test_the_repository_page_links_the_next_page_of_benchmarks(client):
    html = client.get(f"/{REPO}?limit=4").get_data(as_text=True)
    assert f'href="/{REPO}?page=2&amp;limit=4"' in html and NAMES[3] in html and NAMES[4] not in html
    html = client.get(f"/{REPO}?limit=4&page=2").get_data(as_text=True)
    assert 'rel="next"' not in html and NAMES[4] in html and NAMES[3] not in html


def test_alerts_come_a_page_at_a_time(client):
    body = client.get(f"/api/{REPO}/alerts?limit=1").get_json()
    assert body["page"] == 1 and body["limit"] == 1 and len(body["alerts"]) <= 1 and "alert_accuracy" in body


#: Values every paged route refuses, and those routes.
BAD_PAGING = ["page=0", "page=-1", "page=abc", "limit=0", "limit=1.5", "page=", "page=%EF%BC%91",
              f"page={paging.MAX_PAGE + 1}"]
PAGED_ROUTES = ["/", f"/{REPO}", f"/{REPO}/bench/{NAMES[0]}", f"/api/{REPO}", f"/api/{REPO}/series",
                f"/api/{REPO}/bench/{NAMES[0]}", f"/api/{REPO}/alerts"]


def test_bad_paging_values_are_a_400(client):
    """One table: every bad value on every paged route is a 400, the API's saying what it must
    be."""
    wrong = []
    for path in PAGED_ROUTES:
        for query in BAD_PAGING:
            response = client.get(f"{path}?{query}")
            said = response.get_json()["error"] if path.startswith("/api/") else "must be"
            if response.status_code != 400 or "must be" not in said:
                wrong.append((path, query, response.status_code))
    assert wrong == []


def test_the_limit_is_cut_to_the_maximum(client):
    body = client.get(f"/api/{REPO}/series?limit=100000").get_json()
    assert body["limit"] == paging.MAX_LIMIT and len(body["series"]) == len(NAMES) and body["next"] is None


def test_a_page_is_cut_from_one_row_more_than_it_shows():
    page = paging.Page(number=2, limit=3)
    assert page.offset == 3
    assert page.cut([1, 2, 3, 4]) == ([1, 2, 3], True) and page.cut([1, 2, 3]) == ([1, 2, 3], False)
    assert page.slice(list(range(10))) == ([3, 4, 5], True) and paging.Page(4, 3).slice(list(range(10))) == ([9], False)
    assert paging.parse({}) == paging.Page(1, paging.DEFAULT_LIMIT)
    with pytest.raises(paging.PagingError, match=r"\?page="):
        paging.parse({"page": "0"})


def test_the_overview_from_newest_points_and_cached_change_points_equals_the_whole_series_one(database_url):
    """The repository page reads the newest point of each series, the newest PR point of each
    benchmark and the cached change points; it must say what the whole series say."""
    from bot.db import open_database
    from bot.history import reads as history_reads
    from bot.history.series import classify_alerts
    from bot.history.texts import repository_overview
    from tests.history.factory import populate

    db = open_database(database_url)
    with db.session() as s, s.begin():
        populate(s)
    with db.session() as s:
        accepts = history_reads.accepts_of(s, REPO)
        whole = history_reads.load_series(s, REPO)
        expected = repository_overview(whole, history_reads.load_side_points(s, REPO),
                                       classify_alerts(whole, accepts))
        names = history_reads.benchmark_names(s, REPO)
        series, counts = history_reads.latest_of_series(s, REPO, names)
        changes = history_reads.load_change_points(s, REPO)
        got = repository_overview(series, history_reads.latest_pr_points(s, REPO, names),
                                  classify_alerts(changes, accepts), change_series=changes,
                                  point_counts=counts)
    db.dispose()
    assert expected["recent_change_points"] and any(b["latest_pr"] for b in expected["benchmarks"])
    assert expected["alert_accuracy"]["flagged"] > 0
    assert got == expected
