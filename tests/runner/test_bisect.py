"""``perfgate bisect``: the search's decisions on literal levels; searches over generated
histories of 32+ commits (real git, the engine's timing pass and statistics over simulated
workers: :mod:`testkit.sim_bisect`); and the command end to end on a real repository."""

from __future__ import annotations

import json
import math

import pytest

from runner import results as results_mod
from runner.errors import UserError
from runner.pipeline.bisect import bisect as plan
from runner.pipeline.bisect.bisect import Bisection, Level, classify
from runner.pipeline.bisect.bisect_run import BisectRequest, bisect, first_parent_range
from testkit.gitrepo import git
from testkit.sim_bisect import BENCH, SimComparer, make_history

TARGET = Level(1.05, 1.03, 1.07)


# -- the decisions --------------------------------------------------------------------------------------

@pytest.mark.parametrize("level, expected", [
    (Level(1.001, 0.995, 1.007), "before"),       # holds no change, below the midpoint
    (Level(1.049, 1.04, 1.058), "after"),         # meets the regression, above the midpoint
    (Level(1.025, 1.012, 1.038), "undecided"),    # holds the midpoint: measure again
    (Level(1.09, 1.12, 1.14), "beyond"),          # past the target and its margin
    (Level(0.93, 0.92, 0.94), "opposite"),        # faster than good, beyond the band
    (Level(0.995, 0.99, 0.999), "before"),        # a hair faster: inside the band, not a step
])
def test_a_level_is_placed_by_its_interval_against_no_change_and_the_regression(level, expected):
    assert classify(level, TARGET) == expected


def test_a_level_between_no_change_and_the_regression_is_a_step_of_its_own():
    total = Level(1.17, 1.14, 1.21)
    assert classify(Level(1.08, 1.063, 1.105), total) == "partial"
    # the same point with an interval that reaches the band of no change says nothing of a step
    assert classify(Level(1.08, 1.005, 1.16), total) in ("undecided", "before", "after")


def test_the_point_estimate_alone_never_decides():
    # a point at the regression whose interval also holds the midpoint is not "after"
    assert classify(Level(1.05, 1.01, 1.09), TARGET) == "undecided"


def test_an_improvement_is_bisected_the_same_way_turned_around():
    faster = Level(0.8, 0.78, 0.82)
    assert classify(Level(0.81, 0.79, 0.83), faster) == "after"
    assert classify(Level(1.0, 0.98, 1.02), faster) == "before"


def test_step_threshold_is_the_geometric_midpoint():
    assert plan.step_threshold(Level(1.21, 1.2, 1.22)) == pytest.approx(0.1)
    assert plan.step_threshold(Level(1 / 1.21, 0.8, 0.85)) == pytest.approx(0.1)


def test_step_pairs_scale_with_the_square_of_the_precision_wanted():
    wide = Level(1.05, 1.01, 1.09)                     # half-width ≈ 0.038, step 0.049
    pairs = plan.step_pairs(4, wide, wide, min_pairs=2, max_pairs=32)
    assert pairs == math.ceil(4 * (wide.half_width / (plan.PRECISION * wide.log)) ** 2)
    assert plan.step_pairs(4, Level(2.0, 1.9, 2.1), Level(2.0, 1.9, 2.1), 2, 32) == 4   # never fewer than the first
    assert plan.step_pairs(4, Level(1.01, 0.9, 1.2), Level(1.01, 0.9, 1.2), 2, 32) == 32  # capped


def test_the_clearest_regression_is_followed():
    entries = [{"name": "a", "change": {"ratio": 1.3, "ci_low": 1.01, "ci_high": 1.6, "verdict": "regression"}},
               {"name": "b", "change": {"ratio": 1.1, "ci_low": 1.08, "ci_high": 1.12, "verdict": "regression"}},
               {"name": "c", "change": {"ratio": 0.7, "ci_low": 0.6, "ci_high": 0.8, "verdict": "improvement"}},
               {"name": "d", "change": {"ratio": None, "ci_low": None, "ci_high": None, "verdict": "failed"}}]
    assert plan.choose_benchmark(entries) == ("b", Level(1.1, 1.08, 1.12))
    assert plan.choose_benchmark(entries[2:]) is None


@pytest.mark.parametrize("subject, pr", [("Merge pull request #812 from octo/fast-path", 812),
                                         ("Fuse the norm kernels (#4311)", 4311), ("Fix #12 in the docs", None),
                                         ("", None)])
def test_the_pull_request_is_read_from_a_first_parent_subject(subject, pr):
    assert plan.pr_of(subject) == pr


def test_the_search_halves_the_range_and_reuses_known_levels():
    good, bad = Level(1.0, 0.99, 1.01), TARGET
    search = Bisection(8, TARGET, levels={7: bad})
    assert search.next() == 3
    assert search.record(3, good) == "before"
    assert search.next() == 5
    assert search.record(5, bad) == "after"
    assert search.next() == 4
    assert search.record(4, bad) == "after"
    assert search.next() is None and search.suspects == [4]
    # a second search over the same range re-reads what was measured, measuring nothing
    again = Bisection(8, TARGET, levels=dict(search.levels))
    assert again.next() is None and again.suspects == [4]
    assert again.outcomes == {3: "before", 5: "after", 4: "after"}


def test_a_commit_that_cannot_be_measured_is_skipped_as_git_bisect_skip_does():
    search = Bisection(4, TARGET, levels={3: TARGET})
    assert search.next() == 1
    assert search.record(1, None, "install failed") == "skipped"
    assert search.next() == 0          # the nearest other one
    assert search.record(0, Level(1.0, 0.99, 1.01)) == "before"
    assert search.next() == 2
    assert search.record(2, TARGET) == "after"
    assert search.suspects == [1, 2] and search.skipped == {1: "install failed"}


def test_an_undecided_commit_is_measured_again_then_skipped():
    search = Bisection(3, TARGET, levels={2: TARGET})
    index = search.next()
    vague = Level(1.03, 1.0, 1.06)
    assert search.record(index, vague) == "again"
    assert search.record(index, vague) == "skipped"
    assert "held" in search.skipped[index]


def test_worst_case_compares():
    assert [plan.worst_case_compares(n) for n in (1, 2, 32, 33)] == [1, 2, 6, 7]


# -- generated histories: real git, the engine's statistics over simulated workers -----------------------

def _bisect(history, tmp_path, **kwargs) -> tuple[dict, SimComparer]:
    comparer = SimComparer(history.path, seed=kwargs.pop("seed", 3))
    doc = bisect(BisectRequest(repo=str(history.path), good=history.shas[0], bad=history.shas[-1],
                               out=tmp_path / "out", **kwargs), comparer=comparer)
    return doc, comparer


@pytest.fixture(scope="module")
def five_percent(tmp_path_factory):
    """40 commits after good; commit 23 makes the benchmark 5 % slower; noise everywhere."""
    costs = [1e-3] * 23 + [1.05e-3] * 18
    tmp = tmp_path_factory.mktemp("five")
    history = make_history(tmp / "repo", costs)
    doc, comparer = _bisect(history, tmp)
    return history, doc, comparer, tmp / "out"


def test_a_five_percent_regression_is_named_within_log2_n_plus_two_compares(five_percent):
    history, doc, comparer, _ = five_percent
    section = doc["bisect"]
    n = len(history.shas) - 1
    assert n >= 32 and section["commits"] == n
    assert section["status"] == "found" and section["culprit"]["sha"] == history.shas[23]
    assert section["culprit"]["pr"] == 123 and section["benchmark"] == BENCH
    assert section["culprit"]["ci_low"] > 1.0 and not section["more_than_one_step"]
    assert section["budget"]["compares"] == len(comparer.calls) <= math.ceil(math.log2(n)) + 2
    # every compare is a paired compare against good, and the steps ask for the midpoint
    assert {base for base, _, _ in comparer.calls} == {history.shas[0]}
    assert comparer.calls[0][2]["threshold"] == 0.0 and comparer.calls[0][2]["alpha"] == 0.01
    assert all(o["threshold"] == pytest.approx(plan.step_threshold(Level.of(doc["benchmarks"][0]["change"])))
               for _, _, o in comparer.calls[1:])
    # the budget is each compare's, and the total is reported
    assert section["budget"]["spent_s"] == pytest.approx(sum(c["seconds"] for c in section["compares"]), abs=0.01)


def test_the_document_is_the_first_compare_with_the_search_and_its_report(five_percent):
    history, doc, comparer, out = five_percent
    stored = results_mod.load(out / "results.json")  # valid against the schema, bisect section included
    assert stored["bisect"]["culprit"]["sha"] == history.shas[23]
    assert stored["base"]["sha"] == history.shas[0] and stored["head"]["sha"] == history.shas[-1]
    assert len(list((out / "compares").iterdir())) == len(comparer.calls)
    from runner.report import render  # report.md is the command's (perfgate bisect, below)

    assert not (out / "report.md").exists()
    report = render(stored, "md")
    assert report.startswith("<!-- perfgate -->")
    assert f"the regression came with `{history.shas[23][:12]}` (#123)" in report
    page = render(stored, "html")  # the run page (the App's) shows the search too
    assert "Bisect: the regression came with" in page and history.shas[23] in page and "(#123)" in page



def test_the_command_writes_the_searchs_report(five_percent, tmp_path, monkeypatch):
    from runner.cli.main import main
    from runner.pipeline.bisect import bisect_run
    from runner.report import render

    _, doc, _, _ = five_percent
    monkeypatch.setattr(bisect_run, "bisect", lambda req, progress=None, say=None: doc)
    out = tmp_path / "cli"
    out.mkdir()
    assert main(["bisect", "--repo", str(tmp_path), "--good", "a", "--bad", "b",
                 "--benchmark", BENCH, "--out", str(out), "--quiet"]) == 0
    assert (out / "report.md").read_text("utf-8") == render(doc, "md")
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]  # results.json is the engine's

def test_two_regressions_are_both_named_and_said_to_be_more_than_one_step(tmp_path):
    costs = [1e-3] * 9 + [1.08e-3] * 12 + [1.1664e-3] * 14     # +8 % at 9, +8 % more at 21
    history = make_history(tmp_path / "repo", costs)
    doc, _ = _bisect(history, tmp_path)
    section = doc["bisect"]
    assert section["more_than_one_step"] is True
    assert [s["sha"] for s in section["steps"]] == [history.shas[9], history.shas[21]]
    assert [round(s["step_ratio"], 1) for s in section["steps"]] == [1.1, 1.1]
    assert any("more than one step" in n for n in section["notes"])
    assert section["culprit"]["sha"] == history.shas[21]


def test_a_commit_that_fails_to_build_is_skipped_and_the_culprit_still_named(tmp_path):
    costs = [1e-3] * 30 + [1.05e-3] * 5
    history = make_history(tmp_path / "repo", costs, broken=(17,), fails=(25,))
    doc, comparer = _bisect(history, tmp_path)
    section = doc["bisect"]
    skipped = {c["sha"]: c for c in section["compares"] if c["outcome"] == "skipped"}
    assert history.shas[17] in skipped and "install command failed" in skipped[history.shas[17]]["problem"]
    assert history.shas[25] in skipped and "cannot be set up" in skipped[history.shas[25]]["problem"]
    assert section["status"] == "found" and section["culprit"]["sha"] == history.shas[30]
    assert any(n.startswith("skipped ") for n in section["notes"])


def test_skipped_neighbours_leave_the_culprit_among_suspects(tmp_path):
    costs = [1e-3] * 5 + [1.3e-3] * 3
    history = make_history(tmp_path / "repo", costs, broken=(4,))
    doc, _ = _bisect(history, tmp_path)
    section = doc["bisect"]
    assert section["status"] == "ambiguous" and section["culprit"] is None
    assert [s["sha"] for s in section["suspects"]] == [history.shas[4], history.shas[5]]


def test_no_regression_between_good_and_bad_is_said_so(tmp_path):
    history = make_history(tmp_path / "repo", [1e-3] * 3)
    doc, comparer = _bisect(history, tmp_path, seed=1)  # (the first compare's level is 1 %: seeds can differ)
    assert doc["bisect"]["status"] == "no-regression" and doc["bisect"]["culprit"] is None
    assert len(comparer.calls) == 1


def test_an_improvement_the_first_compare_measured_is_said_not_dropped(tmp_path):
    # issue 47: asked for a slowdown, the bisect measured a speed-up and said nothing of it
    history = make_history(tmp_path / "repo", [1e-3] * 3 + [0.7e-3] * 3)
    doc, comparer = _bisect(history, tmp_path)
    section = doc["bisect"]
    assert section["status"] == "no-regression" and len(comparer.calls) == 1
    faster = [n for n in section["notes"] if n.startswith("faster at bad than at good: ")]
    assert len(faster) == 1 and "-30" in faster[0]


def test_the_range_is_the_first_parent_line(tmp_path):
    root = tmp_path / "repo"
    history = make_history(root, [1e-3] * 3)
    git(root, "checkout", "-q", "-b", "side", history.shas[1])
    (root / "side.txt").write_text("x")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side work")
    side = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge pull request #7 from octo/side", "side")
    merge = git(root, "rev-parse", "HEAD")
    commits = first_parent_range(root, history.shas[0], merge)
    assert [c.sha for c in commits] == history.shas[1:] + [merge]
    assert commits[-1].pr == 7
    with pytest.raises(UserError, match="first-parent"):
        first_parent_range(root, side, merge)
    with pytest.raises(UserError, match="not an ancestor"):
        first_parent_range(root, merge, history.shas[1])
    with pytest.raises(UserError, match="same commit"):
        first_parent_range(root, merge, merge)


# -- the command, end to end ---------------------------------------------------------------------------------

BENCH_FILE = """\
import pathlib

N = int((pathlib.Path(__file__).parent.parent / "cost.txt").read_text())


def spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


def bench_work(device):
    return lambda: spin(N)
"""


@pytest.mark.slow
def test_perfgate_bisect_names_the_commit_on_a_real_repository(tmp_path, capsys):
    from runner.cli.main import main

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "bench_w.py").write_text(BENCH_FILE)
    (root / "pyproject.toml").write_text("[tool.perfgate]\nmax_time = 30\nprofile = false\nmin_sample_time = 0.002\n"
                                         "pair_rounds = 4\nmin_rounds = 8\nmax_rounds = 64\n")
    for cost, subject in ((20000, "good"), (40000, "Use the slow loop (#12)"), (40000, "Docs")):
        (root / "cost.txt").write_text(str(cost))
        (root / "README").write_text(subject)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", subject)
    slow = git(root, "rev-parse", "HEAD~1")
    out = tmp_path / "out"
    code = main(["bisect", "--repo", str(root), "--good", "HEAD~2", "--bad", "HEAD", "--benchmark", "bench_work",
                 "--out", str(out), "--quiet"])
    assert code == 0
    doc = results_mod.load(out / "results.json")
    section = doc["bisect"]
    assert section["status"] == "found" and section["culprit"]["sha"] == slow and section["culprit"]["pr"] == 12
    # two compares unless noise left a step undecided once (then it is measured again)
    assert 2 <= len(section["compares"]) == len(list((out / "compares").iterdir())) <= 3
    assert f"culprit: {slow} Use the slow loop (#12)" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "### Bisect: the regression came with" in report and "(#12)" in report
    assert json.loads((out / "compares" / sorted(p.name for p in (out / "compares").iterdir())[1] /
                       "results.json").read_text())["settings"]["threshold"] > 0


def test_a_compare_that_stopped_unchanged_is_before_the_midpoint():
    """The step's compare tests unchanged on its equivalence interval (runner.stats.decide): a
    commit whose 98 % interval lies below the midpoint is ``before`` even where its 99 % one
    reaches past it, and a document without the equivalence interval is read as before."""
    change = {"ratio": 1.012, "ci_low": 1.0, "ci_high": 1.026, "eq_low": 1.003, "eq_high": 1.022}
    level = Level.of(change)
    assert (level.eq_low, level.eq_high) == (1.003, 1.022)
    assert classify(level, TARGET) == "before"
    older = Level.of({k: v for k, v in change.items() if not k.startswith("eq_")})
    assert older.eq_low is None and classify(older, TARGET) == "undecided"
