"""bot.history.points, series and texts: fingerprints, points, noise, PR placement, alerts, JSON
and Markdown shapes."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.history.points import fingerprint_of, is_repository_name, points_of
from bot.history.series import (ChangePoint, Point, Series, alert_accuracy, classify_alerts,
                                fingerprint_changes, historical_noise, prs_merged_between,
                                within_noise)
from bot.history.texts import (bench_url, history_table_markdown, regression_note, series_json,
                               series_named)
from runner.report.units import fmt_change, fmt_time
from tests.history.factory import compare_doc, environment, run_doc

T = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def hours(h: float) -> dt.datetime:
    return T + dt.timedelta(hours=h)


def test_fingerprint_separates_every_field_and_is_stable():
    base = fingerprint_of(environment())
    assert base.key == fingerprint_of(environment()).key
    assert len(base.key) == 16
    for change in ({"gpu": "NVIDIA A100"}, {"driver": "555.1"}, {"cuda": "12.6"}, {"torch": "2.6.0"},
                   {"runner": "gpu-b"}):
        assert fingerprint_of(environment(**change)).key != base.key, change
    # python or platform are not part of it
    env = environment()
    env["python"] = "3.12.1"
    assert fingerprint_of(env).key == base.key
    assert base.label == "NVIDIA H200 · driver 550.54 · CUDA 12.4 · torch 2.5.1 · gpu-h200"


def test_cpu_fingerprint_uses_the_cpu_and_runner_may_be_an_object():
    env = environment(device="cpu", gpu="Intel Xeon", driver=None, cuda=None)
    env["runner_label"] = None
    env["runner"] = {"label": "cpu-small"}
    fp = fingerprint_of(env)
    assert fp.gpu == "cpu: AMD EPYC"
    assert fp.runner_label == "cpu-small"


def test_points_of_run_result_are_main_with_their_ci():
    doc = run_doc(1, {"a": 1e-3, "b": 2e-3})
    points = points_of(doc)
    assert [(p.benchmark, p.kind) for p in points] == [("a", "main"), ("b", "main")]
    head = doc["benchmarks"][0]["head"]
    assert points[0].value == head["median"]
    assert (points[0].ci_low, points[0].ci_high) == (head["ci_low"], head["ci_high"])
    assert points[0].sha == doc["head"]["sha"] and points[0].ratio is None


def test_points_of_compare_result_pr_or_compare_with_the_stored_ci():
    doc = compare_doc(3, "a", 1e-3, 1.1e-3, pr={"number": 7, "url": "https://github.com/acme/kernels/pull/7"})
    (p,) = points_of(doc)
    assert p.kind == "pr" and p.verdict == "regression" and p.ratio == pytest.approx(1.1, rel=0.02)
    head = doc["benchmarks"][0]["head"]
    assert (p.ci_low, p.ci_high) == (head["ci_low"], head["ci_high"])
    assert p.ci_low <= p.value <= p.ci_high
    (q,) = points_of(compare_doc(3, "a", 1e-3, 1e-3))
    assert q.kind == "compare"


def test_a_point_without_a_stored_interval_shows_none_never_a_recomputed_one():
    doc = run_doc(1, {"a": 1e-3})
    del doc["benchmarks"][0]["head"]["ci_low"], doc["benchmarks"][0]["head"]["ci_high"]
    (p,) = points_of(doc)
    assert p.value == doc["benchmarks"][0]["head"]["median"] and (p.ci_low, p.ci_high) == (None, None)


def test_failed_benchmarks_give_no_point():
    doc = run_doc(1, {"a": 1e-3})
    doc["benchmarks"][0]["head"]["error"] = "RuntimeError: CUDA out of memory"
    assert points_of(doc) == []


def test_historical_noise_skips_pairs_across_change_points():
    values = [1.0, 1.01, 0.99, 1.0, 1.02, 2.0, 2.01, 1.99, 2.0]
    noise, pairs = historical_noise(values, [5])
    assert pairs == 7 and noise < 0.03
    noise_all, _ = historical_noise(values, [])
    assert noise_all > 0.3


def test_within_noise():
    points = [Point(sha=str(i), time=hours(i), value=v)
              for i, v in enumerate([1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99])]
    series = Series("a", {"key": "k"}, points)
    wide = within_noise(1.03, series)
    assert wide["within_noise"] is True and 0.04 < wide["noise"] < 0.08
    assert within_noise(1.20, series)["within_noise"] is False
    assert within_noise(1.2, Series("a", {}, points[:3]))["within_noise"] is None
    assert within_noise(None, series)["within_noise"] is None


def test_prs_merged_between_by_sha_and_by_time():
    prs = [
        {"number": 1, "merge_sha": "m1", "merged_at": hours(0.5)},        # merge SHA is the point
        {"number": 2, "merge_sha": None, "merged_at": hours(1.5)},        # merged within the range
        {"number": 3, "merge_sha": None, "merged_at": hours(3)},          # after
        {"number": 4, "head_sha": "m1", "merged_at": None},               # rebase merge: head SHA
        {"number": 5, "merge_sha": None, "merged_at": None},              # unknown
    ]
    got = prs_merged_between(prs, "p0", "m1", hours(1), hours(2))
    assert [p["number"] for p in got] == [1, 2, 4]


def test_fingerprint_changes_mark_first_appearance_only():
    pts = [Point(sha=f"s{i}", time=hours(i), value=1.0, fingerprint=fp)
           for i, fp in enumerate(["A", "A", "B", "A", "B", "C"])]
    got = fingerprint_changes(pts)
    assert [(c["sha"], c["fingerprint"], c["previous"]) for c in got] == [("s2", "B", "A"), ("s5", "C", "B")]


def _series(change_points, name="a", key="k"):
    pts = [Point(sha=f"s{i}", time=hours(i), value=1.0) for i in range(30)]
    return Series(name, {"key": key, "label": "L"}, pts, change_points)


def _cp(index, before, after, prs=()):
    return ChangePoint(index=index, sha=f"s{index}", prev_sha=f"s{index - 1}", before=before,
                       after=after, ratio=after / before, p_value=0.001, time=hours(index),
                       prev_time=hours(index - 1), prs=tuple(prs))


def test_classify_alerts_and_accuracy():
    fixed = _series([_cp(5, 1.0, 1.2), _cp(10, 1.2, 1.01)], name="fixed")
    reverted = _series([_cp(5, 1.0, 1.2), _cp(10, 1.2, 1.0, prs=[{"number": 9, "title": 'Revert "fuse"'}])],
                       name="reverted")
    accepted = _series([_cp(5, 1.0, 1.3, prs=[{"number": 4, "title": "fuse"}])], name="accepted")
    accepted_all = _series([_cp(5, 1.0, 1.3, prs=[{"number": 4, "title": "fuse"}])], name="accepted2")
    still_slow = _series([_cp(5, 1.0, 1.2), _cp(10, 1.2, 1.1)], name="open")
    improvement_only = _series([_cp(5, 1.0, 0.8)], name="faster")
    accepts = [{"pr_number": 4, "benchmark": "accepted", "user": "maint"},
               {"pr_number": 4, "benchmark": None, "user": "lead"},
               {"pr_number": 99, "benchmark": None, "user": "x"}]
    alerts = classify_alerts([fixed, reverted, accepted, accepted_all, still_slow,
                              improvement_only], accepts)
    status = {a["benchmark"]: a["status"] for a in alerts}
    assert status == {"fixed": "fixed", "reverted": "reverted", "accepted": "accepted", "accepted2": "accepted",
                      "open": "open"}
    assert next(a for a in alerts if a["benchmark"] == "accepted")["by"] == "maint"
    acc = alert_accuracy(alerts)
    assert acc == {"flagged": 5, "fixed": 1, "reverted": 1, "accepted": 2, "open": 1, "accuracy": pytest.approx(0.8)}
    assert alert_accuracy([])["accuracy"] is None


def test_series_json_has_exactly_the_documented_keys():
    s = _series([_cp(5, 1.0, 1.2)])
    doc = series_json(s)
    assert set(doc) == {"benchmark", "measure", "unit", "fingerprint", "points", "change_points"}
    assert (doc["measure"], doc["unit"]) == ("time", "s")
    assert set(doc["points"][0]) == {"sha", "time", "value", "ci_low", "ci_high"}
    assert doc["points"][0]["time"] == "2026-03-01T00:00:00Z"
    assert doc["change_points"] == [{"index": 5, "sha": "s5", "before": 1.0, "after": 1.2, "ratio": pytest.approx(1.2)}]
    detailed = series_json(s, detailed=True)
    assert detailed["change_points"][0]["commit_range"] == "s4..s5"


def test_history_table_markdown():
    s = _series([_cp(5, 1e-3, 1.2e-3, prs=[{"number": 12}])], name="bench_ln[rows=4096]")
    text = history_table_markdown([s], repository="acme/kernels",
                                  public_url="https://perf.example/")
    assert "| [`bench_ln[rows=4096]`](https://perf.example/acme/kernels/bench/bench_ln%5Brows%3D4096%5D) |" in text
    assert "+20.0 % at `s5` (#12)" in text
    assert text.endswith("Full history: https://perf.example/acme/kernels")
    assert history_table_markdown([], repository="a/b", public_url=None, benchmark="x") == \
        "No history stored for `x` yet."


def test_formatting():
    assert fmt_time(0.0123) == "12.3 ms"
    assert fmt_time(2.5e-6) == "2.5 µs"
    assert fmt_time(None) == "–"
    assert fmt_time(0.00099996) == "1 ms"
    assert fmt_change(1.05) == "+5.0 %"
    assert fmt_change(0.968) == "-3.2 %"
    assert is_repository_name("acme/kernels") and not is_repository_name("/tmp/repo")


def test_an_accept_covers_the_merged_pr_only_at_the_head_it_was_given_for():
    """/perf accept at head A, then the PR is pushed to B and merged: B's regression is not
    accepted (security review F8)."""
    merged_at_b = [{"number": 4, "title": "fuse", "head_sha": "B" * 40}]
    series = [_series([_cp(5, 1.0, 2.5, prs=merged_at_b)], name="norm")]
    at_a = [{"pr_number": 4, "sha": "A" * 40, "benchmark": "norm", "user": "maint"}]
    at_b = [{"pr_number": 4, "sha": "B" * 40, "benchmark": "norm", "user": "maint"}]
    other_bench = [{"pr_number": 4, "sha": "B" * 40, "benchmark": "softmax", "user": "maint"}]
    assert [a["status"] for a in classify_alerts(series, at_a)] == ["open"]
    assert [a["status"] for a in classify_alerts(series, other_bench)] == ["open"]
    assert ([(a["status"], a["by"]) for a in classify_alerts(series, at_b)]
            == [("accepted", "maint")])
    # the merged head comes with the PR into the change point's range
    prs = [{"number": 4, "merge_sha": "m1", "head_sha": "B" * 40, "merged_at": None}]
    assert prs_merged_between(prs, "p0", "m1", hours(1), hours(2))[0]["head_sha"] == "B" * 40


def test_the_series_perf_history_shows_and_a_regression_note():
    """``/perf history BENCH``: the exact name, else names containing it, all without one; the PR
    comment's note: the history link and the noise verdict of the regressed benchmark's series."""
    series = [Series(name, {"key": "k"}, []) for name in ("mm", "mm_large", "conv")]
    assert [s.benchmark for s in series_named(series, "mm")] == ["mm"]
    assert [s.benchmark for s in series_named(series, "m_")] == ["mm_large"]
    assert series_named(series, None) == series and series_named(series, "nope") == []
    note = regression_note("o/r", "mm", 1.2, None, "https://perf.example")
    assert note["benchmark"] == "mm" and note["ratio"] == 1.2 and note["within_noise"] is None
    assert note["url"] == bench_url("https://perf.example", "o/r", "mm")
