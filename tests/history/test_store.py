"""bot.history.store on a real database (SQLite and PostgreSQL; the tests start a throwaway PostgreSQL when it is installed)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sqlalchemy import func, select

from bot.history import reads as history_reads
from bot.history import store as history_store
from bot.history.points import fingerprint_of, parse_time
from bot.history.series import carry_forward, classify_alerts, fingerprint_changes
from bot.history.tables import BenchmarkPoint, ChangePointRow, Result
from runner.errors import UserError
from tests.history.factory import compare_doc, environment, run_doc, sha, when


def _add_runs(session, levels, *, start=0, env=None, bench="bench_mm[n=1024]", salt="a"):
    for i, level in enumerate(levels, start):
        history_store.add_result(session, run_doc(i, {bench: level}, env=env, salt=salt))


def test_run_results_build_a_series_with_its_change_point(db):
    levels = [1e-3] * 12 + [1.1e-3] * 12
    with db.session() as s, s.begin():
        _add_runs(s, levels)
    with db.session() as s:
        (series,) = history_reads.load_series(s, "acme/kernels")
        assert series.benchmark == "bench_mm[n=1024]"
        assert len(series.points) == 24
        assert [p.sha for p in series.points] == [sha(i) for i in range(24)]
        (cp,) = series.change_points
        assert abs(cp.index - 12) <= 1 and cp.ratio == pytest.approx(1.1, rel=0.02)
        assert cp.sha == series.points[cp.index].sha and cp.prev_sha == series.points[cp.index - 1].sha
        assert series.points[0].time.tzinfo is not None
        assert series.fingerprint["label"].startswith("NVIDIA H200")


def test_same_document_twice_is_stored_once(db):
    doc = run_doc(0, {"a": 1e-3})
    with db.session() as s, s.begin():
        first = history_store.add_result(s, doc)
        again = history_store.add_result(s, copy.deepcopy(doc))
    assert first.created and not again.created and again.result_id == first.result_id
    with db.session() as s:
        assert s.scalar(select(func.count(Result.id))) == 1


def test_document_roundtrips_verbatim(db):
    doc = run_doc(0, {"a": 1e-3}, run_url="https://github.com/acme/kernels/actions/runs/1")
    with db.session() as s, s.begin():
        rid = history_store.add_result(s, doc).result_id
    with db.session() as s:
        row = s.get(Result, rid)
        assert row.document == doc and row.kind == "run" and row.run_url.endswith("/runs/1")


def test_pr_results_are_side_points_linked_to_their_pr(db):
    pr = {"number": 42, "url": "https://github.com/acme/kernels/pull/42", "title": "Fuse the epilogue"}
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 8)
        out = history_store.add_result(s, compare_doc(20, "bench_mm[n=1024]", 1e-3, 1.08e-3, pr=pr))
        assert out.kind == "compare" and out.series == []
    with db.session() as s:
        (series,) = history_reads.load_series(s, "acme/kernels")
        assert len(series.points) == 8  # the PR head is not part of the series
        (side,) = history_reads.load_side_points(s, "acme/kernels", "bench_mm[n=1024]")
        assert (side.kind, side.pr_number, side.pr_url, side.verdict) == ("pr", 42, pr["url"], "regression")
        assert s.get(Result, out.result_id).pull_request.title == "Fuse the epilogue"


def test_fingerprint_change_starts_a_new_series_and_is_never_a_change_point(db):
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 10)
        _add_runs(s, [1.5e-3] * 10, start=10, env=environment(driver="560.1"))
    with db.session() as s:
        old, new = history_reads.load_series(s, "acme/kernels")
        assert (len(old.points), len(new.points)) == (10, 10)
        assert old.change_points == [] and new.change_points == []
        assert old.fingerprint["key"] != new.fingerprint["key"]
        changes = fingerprint_changes(old.points + new.points)
        assert [c["sha"] for c in changes] == [sha(10)]


def test_out_of_order_point_triggers_full_recomputation(db):
    rng = np.random.default_rng(0)
    levels = [1e-3] * 10 + [1.2e-3] * 10
    docs = [run_doc(i, {"a": v}, rng=rng) for i, v in enumerate(levels)]
    with db.session() as s, s.begin():
        for doc in docs[:9] + docs[10:]:
            history_store.add_result(s, doc)
        history_store.add_result(s, docs[9])  # arrives late, lands in the middle
    with db.session() as s:
        (series,) = history_reads.load_series(s, "acme/kernels")
        assert [p.sha for p in series.points] == [sha(i) for i in range(20)]
        assert [c.index for c in series.change_points] == [10]
        rows = s.scalars(select(ChangePointRow)).all()
        assert [(r.position, r.sha) for r in rows] == [(10, sha(10))]


def test_change_point_names_the_prs_merged_in_its_range(db):
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 10 + [1.15e-3] * 10)
        repo = history_reads.get_repository(s, "acme/kernels")
        history_store.record_pull_request(s, repo, 7, url="https://github.com/acme/kernels/pull/7",
                                          merge_sha=sha(10), title="Fuse bias and GELU")
        history_store.record_pull_request(s, repo, 8, merged_at=parse_time(when(3)))
    with db.session() as s:
        (series,) = history_reads.load_series(s, "acme/kernels")
        (cp,) = series.change_points
        assert cp.index == 10
        assert [p["number"] for p in cp.prs] == [7]


def test_accepts_and_alert_classification(db):
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 10 + [1.2e-3] * 10)
        repo = history_reads.get_repository(s, "acme/kernels")
        history_store.record_pull_request(s, repo, 5, merge_sha=sha(10))
        row = history_store.record_accept(s, "acme/kernels", user="octocat", pr_number=5, reason="needed for fp8")
        assert row.id and row.created_at.tzinfo is not None
    with db.session() as s:
        assert [(a["pr_number"], a["benchmark"], a["user"])
                for a in history_reads.accepts_of(s, "acme/kernels")] == [(5, None, "octocat")]
        series = history_reads.load_series(s, "acme/kernels")
        alerts = classify_alerts(series, history_reads.accepts_of(s, "acme/kernels"))
        assert [(a["status"], a["by"]) for a in alerts] == [("accepted", "octocat")]
    with db.session() as s, s.begin(), pytest.raises(UserError):
        history_store.record_accept(s, "acme/kernels", user="x")


def test_regression_history_notes_for_the_pr_comment(db):
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 12, bench="a")
    doc_small = compare_doc(30, "a", 1e-3, 1.003e-3, verdict="regression")
    doc_big = compare_doc(31, "a", 1e-3, 1.3e-3)
    with db.session() as s:
        (small,) = history_reads.regression_history_notes(s, "acme/kernels", doc_small,
                                                          "https://perf.example")
        (big,) = history_reads.regression_history_notes(s, "acme/kernels", doc_big, None)
        other_env = compare_doc(32, "a", 1e-3, 1.3e-3, env=environment(gpu="NVIDIA L4"))
        (unknown,) = history_reads.regression_history_notes(s, "acme/kernels", other_env, None)
    assert small["url"] == "https://perf.example/acme/kernels/bench/a"
    assert small["within_noise"] is True and big["within_noise"] is False
    assert big["url"] == "/acme/kernels/bench/a"
    assert unknown["within_noise"] is None


def test_bad_repository_names_are_user_errors(db):
    doc = run_doc(0, {"a": 1e-3})
    doc["repository"] = "/home/me/src/kernels"
    with db.session() as s, s.begin():
        with pytest.raises(UserError, match="--repository"):
            history_store.add_result(s, doc)
        out = history_store.add_result(s, doc, "me/kernels")
        assert out.repository == "me/kernels"
        with pytest.raises(UserError):
            history_store.add_result(s, doc, "not a repo")


def test_invalid_document_is_rejected_before_storing(db):
    doc = run_doc(0, {"a": 1e-3})
    del doc["summary"]
    with db.session() as s, s.begin():
        with pytest.raises(UserError, match="invalid results.json"):
            history_store.add_result(s, doc)
    with db.session() as s:
        assert s.scalar(select(func.count(BenchmarkPoint.id))) == 0


def test_history_reply_markdown_for_the_slash_command(db):
    with db.session() as s, s.begin():
        _add_runs(s, [1e-3] * 6, bench="bench_ln[rows=1024]")
        _add_runs(s, [1e-3] * 6, bench="bench_mm")
    with db.session() as s:
        one = history_reads.history_reply_markdown(s, "acme/kernels", "bench_ln",
                                                   "https://perf.example")
        none = history_reads.history_reply_markdown(s, "acme/kernels", "zzz", None)
    assert "bench_ln[rows=1024]" in one and "bench_mm" not in one and "| 6 | none |" in one
    assert none == "No history stored for `zzz` yet."


def _with_memory(doc: dict, peak: int) -> dict:
    """``doc`` with each head's peak memory measured in two processes (``peak`` bytes each)."""
    for bench in doc["benchmarks"]:
        bench["head"]["memory"] = {"kind": "cuda", "peak_bytes": peak, "reserved_bytes": None,
                                   "tensor_bytes": None, "python_bytes": None, "rss_bytes": None,
                                   "processes": [peak, peak]}
    return doc


def test_peak_memory_is_a_series_of_its_own_with_its_own_change_points(db):
    """A memory step (8 → 12 MiB) at the 12th run while the time stays level: the memory series
    has the change point, the time series none, and every time view is as it was."""
    bench = "bench_mm[n=1024]"
    with db.session() as s, s.begin():
        for i in range(24):
            outcome = history_store.add_result(s, _with_memory(run_doc(i, {bench: 1e-3}), (8 if i < 12 else 12) << 20))
        assert outcome.points == 2 and outcome.series == outcome.memory_series == [(bench, outcome.series[0][1])]
    with db.session() as s:
        (time_series,) = history_reads.load_series(s, "acme/kernels")
        assert time_series.measure == "time" and time_series.change_points == []
        assert all(p.value == pytest.approx(1e-3, rel=0.05) for p in time_series.points)
        (memory,) = history_reads.load_series(s, "acme/kernels", measure="memory")
        assert memory.measure == "memory" and len(memory.points) == 24
        assert memory.points[0].value == 8 << 20 and (memory.points[0].ci_low, memory.points[0].ci_high) == (8 << 20, 8 << 20)
        (cp,) = memory.change_points
        assert cp.index == 12 and cp.ratio == pytest.approx(1.5) and cp.sha == sha(12)
        assert history_reads.benchmark_names(s, "acme/kernels") == [bench]
        # alerts are the time series' alone
        assert history_reads.load_change_points(s, "acme/kernels") == []
        assert s.scalar(select(func.count()).select_from(ChangePointRow)) == 1


def test_the_first_calls_compile_time_is_a_series_of_its_own(db):
    """A benchmark compiling under torch.compile: its cold compile seconds (0.5 s, then 0.8 s from
    the 12th run) are the ``compile`` series, with the step as its change point; time is untouched."""
    bench = "bench_mm[n=1024]"
    with db.session() as s, s.begin():
        for i in range(24):
            doc = run_doc(i, {bench: 1e-3})
            seconds = 0.5 if i < 12 else 0.8
            doc["benchmarks"][0]["head"]["compile"] = {
                "processes": 3, "graphs": 1, "compile_s": seconds, "recompile_s": 0.0, "graph_break_count": 0,
                "recompile_count": 0, "graph_breaks": [], "recompiles": [],
                "compile_s_values": [seconds * 0.98, seconds, seconds * 1.02]}
            outcome = history_store.add_result(s, doc)
        assert outcome.compile_series == outcome.series and outcome.memory_series == []
    with db.session() as s:
        (compiled,) = history_reads.load_series(s, "acme/kernels", measure="compile")
        assert compiled.measure == "compile" and len(compiled.points) == 24
        assert (compiled.points[0].ci_low, compiled.points[0].value, compiled.points[0].ci_high) == \
            pytest.approx((0.49, 0.5, 0.51))
        (cp,) = compiled.change_points
        assert cp.index == 12 and cp.ratio == pytest.approx(1.6)
        (time_series,) = history_reads.load_series(s, "acme/kernels")
        assert time_series.change_points == []


def test_skipped_benchmarks_carry_their_last_default_branch_value_forward(db):
    """A selecting compare's skipped benchmarks get the newest main value of the same environment."""
    from tests.history.factory import compare_doc, run_doc, sha

    with db.session() as s, s.begin():
        history_store.add_result(s, run_doc(1, {"bench_a": 1.0e-3, "bench_b": 2.0e-3}))
        history_store.add_result(s, run_doc(2, {"bench_a": 1.1e-3}))
        history_store.add_result(s, run_doc(3, {"bench_a": 9.0}, env=factory_env_other()))
    doc = compare_doc(4, "bench_c", 1e-3, 1e-3)
    doc["selection"] = {"mode": "affected", "run": 1, "skipped": [{"name": "bench_a", "reason": "not affected"},
                                                                  {"name": "bench_b", "reason": "not affected"},
                                                                  {"name": "bench_new", "reason": "not affected"}]}
    key = fingerprint_of(doc["environment"]).key
    with db.session() as s:
        latest = history_reads.latest_main_points(s, "acme/kernels",
                                                  ["bench_a", "bench_b", "bench_new"], key)
    got = carry_forward(doc, latest)
    last = {e["name"]: e.get("last") for e in got["selection"]["skipped"]}
    assert last["bench_a"]["sha"] == sha(2) and abs(last["bench_a"]["median"] - 1.1e-3) < 1e-4
    assert last["bench_b"]["sha"] == sha(1) and last["bench_new"] is None
    assert "last" not in doc["selection"]["skipped"][0]  # pure: the input is unchanged
    from runner.results import validate

    validate(got)


def factory_env_other():
    from tests.history.factory import environment

    return environment(gpu="NVIDIA A100", runner="gpu-a100")


def _dispatched_inputs(db, kind: str) -> dict:
    """The inputs ``bot.app.job.runs`` dispatches a new run of ``kind`` with (to a GitHub that
    records them)."""
    from types import SimpleNamespace

    from bot.app.job import runs
    from bot.app.store import store as app_store
    from bot.app.core.facts import RunInfo
    from tests.history.factory import sha

    sent = []
    dispatched = SimpleNamespace(run_id=1, html_url=None)
    client = SimpleNamespace(
        dispatch_workflow=lambda repo, workflow, ref, inputs: sent.append(inputs) or dispatched)
    rt = SimpleNamespace(db=db, settings=SimpleNamespace(workflow="perfgate.yml"),
                         github_link=lambda url: None)
    spec = RunInfo(key=kind, repository="acme/kernels", kind=kind, trigger="t", head_sha=sha(9),
                   base_sha=sha(8), workflow_ref="main")
    with db.session() as s, s.begin():
        app_store.insert_run(s, spec)
    runs._dispatch(rt, client, spec, 1, None)
    return sent[0]


def test_selection_misses_from_the_stored_rows(db):
    """The executor's shell: a tracked regression whose culprit is a merged PR that skipped the
    benchmark forces it in the next PR compares (bot.app.job.runs.selection_misses)."""
    from types import SimpleNamespace

    from bot.app.store import store as app_store
    from bot.app.core.actions import RegressionSpec
    from bot.app.job.runs import selection_misses as _selection_misses
    from tests.history.factory import compare_doc, sha

    doc = compare_doc(5, "bench_attn", 1e-3, 1e-3, pr={"number": 12, "url": "https://github.com/acme/kernels/pull/12"})
    doc["selection"] = {"mode": "affected", "run": 1, "skipped": [{"name": "bench_loss", "reason": "not affected"}]}
    with db.session() as s, s.begin():
        history_store.add_result(s, doc)
        repo = history_reads.get_repository(s, "acme/kernels")
        history_store.record_pull_request(s, repo, 12, merge_sha=sha(7))
        for bench in ("bench_loss", "bench_attn"):
            app_store.insert_regression(s, RegressionSpec(key=f"r-{bench}", repository="acme/kernels",
                                                          installation_id=1, benchmark=bench, good_sha=sha(6),
                                                          bad_sha=sha(8), trigger="changepoint"))
            app_store.update_regression(s, f"r-{bench}", status="found", culprit_sha=sha(7))
    rt = SimpleNamespace(db=db)
    with db.session() as s:
        assert history_reads.latest_pr_document(s, "acme/kernels", 12)["selection"]["run"] == 1
        assert history_reads.latest_pr_document(s, "acme/kernels", 99) is None
    assert _selection_misses(rt, "acme/kernels") == ("bench_loss",)
    assert _dispatched_inputs(db, "pr")["force-run"] == '["bench_loss"]'  # a PR compare runs it
    assert "force-run" not in _dispatched_inputs(db, "history")  # the default branch: all of them
    with db.session() as s, s.begin():
        app_store.update_regression(s, "r-bench_loss", status="closed")
    assert _selection_misses(rt, "acme/kernels") == ()


def test_a_series_is_in_commit_order_so_a_backfill_draws_no_false_slowdown(db):
    # issue 47: commits 10..19 measured first (1.0 ms), then their older commits 0..9 backfilled
    # (1.2 ms: the code was slower before commit 10). In measurement order that read as a slowdown
    # after commit 19; in commit order it is the improvement commit 10 brought.
    rng = np.random.default_rng(0)
    docs = {i: run_doc(i if i >= 10 else 30 + i, {"a": 1.2e-3 if i < 10 else 1e-3}, rng=rng)
            for i in range(20)}
    for i, doc in docs.items():
        doc["head"]["sha"], doc["head"]["committed_at"] = sha(i, "c"), when(i)
    with db.session() as s, s.begin():
        for i in list(range(10, 20)) + list(range(10)):
            history_store.add_result(s, docs[i])
    with db.session() as s:
        (series,) = history_reads.load_series(s, "acme/kernels")
        assert [p.sha for p in series.points] == [sha(i, "c") for i in range(20)]
        (cp,) = series.change_points
        assert cp.sha == sha(10, "c") and cp.ratio < 1
        assert series.points[0].time == parse_time(when(0))
