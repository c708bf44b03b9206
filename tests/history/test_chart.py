"""bot.history.chart: the geometry of the server-side SVG chart."""

from __future__ import annotations

import datetime as dt


from bot.history import chart
from bot.history.series import ChangePoint, Point, Series

T = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def pt(i, value, **kw):
    return Point(sha=f"{i:040x}", time=T + dt.timedelta(hours=i), value=value, ci_low=value * 0.99,
                 ci_high=value * 1.01, **kw)


def test_nice_ticks_and_units():
    assert chart.nice_ticks(0.93, 1.17) == [0.95, 1.0, 1.05, 1.1, 1.15]
    assert chart.nice_ticks(0, 10) == [0, 2.5, 5, 7.5, 10]
    assert chart.nice_ticks(1, 1) == [1]
    assert chart.unit_for(0.0012) == ("ms", 1e-3)
    assert chart.unit_for(3.0) == ("s", 1.0)
    assert chart.unit_for(5e-10) == ("ns", 1e-9)


def test_empty_chart():
    assert chart.bench_chart([], [], [])["empty"] is True


def test_geometry_of_series_change_points_pr_and_fingerprint_markers():
    a = Series("b", {"key": "A", "label": "gpu A"},
               [pt(i, 1e-3 if i < 5 else 1.2e-3) for i in range(10)])
    a.change_points = [ChangePoint(index=5, sha=a.points[5].sha, prev_sha=a.points[4].sha,
                                   before=1e-3, after=1.2e-3, ratio=1.2, p_value=0.001,
                                   prs=({"number": 3},))]
    b = Series("b", {"key": "B", "label": "gpu B"},
               [pt(i, 0.8e-3, fingerprint="B") for i in range(10, 14)])
    pr = pt(7, 1.3e-3, kind="pr", pr_number=9, pr_url="https://github.com/o/r/pull/9", ratio=1.1, verdict="regression")
    shapes = chart.bench_chart([a, b], [pr], [{"time": b.points[0].time, "sha": b.points[0].sha,
                                               "fingerprint": "B", "previous": "A"}])
    assert shapes["unit"] == "ms" and not shapes["empty"]
    xs = [p["x"] for p in shapes["series"][0]["points"]]
    assert xs == sorted(xs) and len(shapes["series"]) == 2
    (cp,) = shapes["change_points"]
    assert xs[4] < cp["x"] < xs[5] and cp["cls"] == "regression" and "PRs #3" in cp["title"]
    (prm,) = shapes["pr_points"]
    assert xs[7] < prm["x"] < shapes["series"][0]["points"][8]["x"]  # slotted in time order
    assert prm["y"] < min(p["y"] for p in shapes["series"][0]["points"])  # slowest: drawn highest
    assert "PR #9" in prm["title"] and prm["url"].endswith("/pull/9")
    (fc,) = shapes["fingerprint_changes"]
    assert xs[-1] < fc["x"] < shapes["series"][1]["points"][0]["x"]
    assert "gpu B" in fc["title"] and "gpu A" in fc["title"]
    # the band is the CI: upper edge then lower edge back, one vertex per point each
    assert len(shapes["series"][0]["band"].split()) == 20
    labels = [t["label"] for t in shapes["y_ticks"]]
    assert labels and all(float(x) > 0 for x in labels)


def test_a_memory_chart_reads_bytes():
    mib = 1024 * 1024
    s = Series("b", {"key": "A", "label": "cpu"},
               [pt(i, (1.3 if i < 5 else 2.6) * mib) for i in range(10)])
    s.change_points = [ChangePoint(index=5, sha=s.points[5].sha, prev_sha=s.points[4].sha,
                                   before=1.3 * mib, after=2.6 * mib, ratio=2.0, p_value=0.001,
                                   prs=())]
    shapes = chart.bench_chart([s], [], [], measure="memory")
    assert shapes["unit"] == "MiB" and shapes["axis"] == "peak memory" and shapes["measure"] == "memory"
    assert "2.6 MiB" in shapes["series"][0]["points"][-1]["title"]
    (cp,) = shapes["change_points"]
    assert cp["label"] == "2× larger" and "1.3 MiB → 2.6 MiB" in cp["title"]
    assert chart.unit_for(512.0, chart.MEASURE_AXES["memory"][1]) == ("B", 1.0)
    assert chart.bench_chart([], [], [], measure="memory")["unit"] == "B"
