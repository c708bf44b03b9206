"""runner.selection: which benchmarks a change can affect (pure), and its [selection] config."""

from __future__ import annotations

import pytest

from runner import config
from runner.errors import ConfigError
from runner.selection import (ALWAYS, CHANGED, FORCED, FULL, NOT_AFFECTED, OWN_FILE, UNMAPPED, Rules, matches,
                              misses, path_matches, record, select)

BENCHES = [("bench_norm[rows=1]", "benchmarks/bench_norm.py"), ("bench_norm[rows=2]", "benchmarks/bench_norm.py"),
           ("bench_attn", "benchmarks/bench_attn.py"), ("bench_loss", "benchmarks/bench_loss.py")]
MAP = {"sha": "a" * 40, "benchmarks": {
    "bench_norm[rows=1]": ["benchmarks/bench_norm.py", "lib/norm.py", "lib/common.py"],
    "bench_norm[rows=2]": ["benchmarks/bench_norm.py", "lib/norm.py", "lib/common.py"],
    "bench_attn": ["benchmarks/bench_attn.py", "lib/attn.py", "lib/common.py"],
    "bench_loss": ["benchmarks/bench_loss.py", "lib/loss.py"]}}


def plan_for(changed, code_map=MAP, rules=Rules(), **kw):
    return select(BENCHES, changed, code_map, rules, bench_dir="benchmarks", **kw)


def test_one_module_changed_runs_only_the_benchmarks_that_execute_it():
    plan = plan_for(["lib/attn.py"])
    assert plan.full_run is None
    assert plan.selected == ["bench_attn"]
    assert {c.name: c.reason for c in plan.choices}["bench_loss"] == NOT_AFFECTED
    assert plan.choices[2].reason == CHANGED and "lib/attn.py" in plan.choices[2].detail


def test_a_shared_utility_skips_nothing_that_executes_it():
    assert plan_for(["lib/common.py"]).selected == ["bench_norm[rows=1]", "bench_norm[rows=2]", "bench_attn"]


def test_a_benchmarks_own_file_runs_it():
    plan = plan_for(["benchmarks/bench_loss.py"])
    assert plan.selected == ["bench_loss"] and plan.choices[3].reason == OWN_FILE


@pytest.mark.parametrize("path", ["csrc/kernel.cu", "src/ops.cpp", "include/x.h", "setup.py", "pyproject.toml",
                                  "CMakeLists.txt", "requirements.txt", "ci/requirements-gpu.txt", "uv.lock",
                                  "perfgate.toml", "benchmarks/conftest.py", "asv.conf.json",
                                  "benchmarks/common.py", "lib/table.json", "lib/_C.so", ".conda/meta.yaml",
                                  ".devcontainer/Dockerfile",
                                  # torchmetrics' dependabot bumps (its last 50 commits): pins in a folder
                                  "requirements/_tests.txt", "requirements/typing.txt", "requirements/base.txt",
                                  "ci/requirements/gpu.txt", "dev-requirements.txt"])
def test_what_the_map_cannot_see_runs_everything(path):
    plan = plan_for(["lib/attn.py", path])
    assert plan.full_run and path in plan.full_run
    assert plan.skipped == [] and {c.reason for c in plan.choices} == {FULL}


@pytest.mark.parametrize("path", ["README.md", "docs/api/norm.rst", "docs/conf.py", ".github/workflows/tests.yml",
                                  "LICENSE", "assets/logo.png", "tests/test_norm.py", "docs/requirements.txt",
                                  ".azure/gpu-tests.yml", "docs/Makefile"])
def test_inert_files_and_unmapped_python_affect_nothing(path):
    plan = plan_for([path])
    assert plan.full_run is None and plan.selected == []


def test_perfgates_own_workflow_and_full_run_patterns_win_over_inert_folders():
    assert plan_for([".github/workflows/perfgate.yml"]).full_run
    assert plan_for(["docs/bench_data.json"], rules=Rules(full_run=("docs/bench_data.json",))).full_run


def test_no_map_for_the_base_runs_everything():
    plan = plan_for(["lib/attn.py"], code_map=None)
    assert plan.full_run == "no code map exists for the base" and plan.skipped == []


def test_a_blind_map_runs_everything():
    blind = {"benchmarks": {n: [f] for n, f in BENCHES}}  # the library ran from outside the checkout
    assert "outside the benchmarks" in plan_for(["lib/attn.py"], code_map=blind).full_run


def test_a_benchmark_without_map_entry_runs():
    partial = {"benchmarks": {k: v for k, v in MAP["benchmarks"].items() if k != "bench_loss"},
               "unmapped": {"bench_loss": "budget"}}
    plan = plan_for(["lib/attn.py"], code_map=partial)
    assert plan.selected == ["bench_attn", "bench_loss"]
    assert plan.choices[3].reason == UNMAPPED and plan.choices[3].detail == "budget"


def test_always_list_and_forced_misses_run():
    plan = plan_for(["lib/attn.py"], rules=Rules(always=("bench_norm*",)), forced={"bench_loss": "miss at abc"})
    reasons = {c.name: c.reason for c in plan.choices}
    assert reasons == {"bench_norm[rows=1]": ALWAYS, "bench_norm[rows=2]": ALWAYS, "bench_attn": CHANGED,
                       "bench_loss": FORCED}


def test_config_patterns_add_full_runs_and_inert_paths():
    assert plan_for(["kernels/fast.triton"]).full_run  # not Python: unseen by default
    assert plan_for(["kernels/fast.triton"], rules=Rules(ignore=("kernels/*",))).full_run is None
    assert plan_for(["lib/attn.py"], rules=Rules(full_run=("lib/attn.py",))).full_run


def test_no_change_runs_nothing():
    plan = plan_for([])
    assert plan.full_run is None and plan.selected == []


def test_path_globs():
    assert path_matches("a/b/c.cu", ["*.cu"]) and path_matches("docs/x/y.md", ["docs/*"])
    assert path_matches("docs/x/y.py", ["docs/"]) and not path_matches("mydocs/y.py", ["docs/*"])
    assert not path_matches("a/setup.py.bak", ["setup.py"])
    assert matches("bench_norm[rows=1]", "bench_norm*") and matches("x.y", "x") and not matches("abc", "d*")


def test_record_counts_and_carries_the_last_values():
    plan = plan_for(["lib/attn.py"])
    rec = record(plan, mode="affected", map_sha="a" * 40,
                 last={"bench_loss": {"sha": "b" * 40, "median": 0.01, "unit": "s"}},
                 files=dict(BENCHES))
    assert rec["run"] == 1 and rec["run_reasons"] == {CHANGED: 1} and rec["changed"] == ["lib/attn.py"]
    assert [s["name"] for s in rec["skipped"]] == ["bench_norm[rows=1]", "bench_norm[rows=2]", "bench_loss"]
    assert rec["skipped"][2]["last"]["sha"] == "b" * 40 and "last" not in rec["skipped"][0]
    assert rec["skipped"][0]["file"] == "benchmarks/bench_norm.py"


def test_misses_are_skipped_benchmarks_that_changed_afterwards():
    got = misses({"bench_loss": "#12", "bench_attn": "#12"}, {"bench_loss": "regression", "bench_attn": "unchanged"})
    assert list(got) == ["bench_loss"] and "#12" in got["bench_loss"]
    forced = plan_for(["lib/attn.py"], forced=got)
    assert "bench_loss" in forced.selected


def test_selection_config_table():
    cfg, _ = config.from_texts({"perfgate.toml": '[selection]\nenabled = true\nalways = ["bench_a*"]\n'
                                                 'full_run = ["csrc/*"]\nignore = ["notes/*"]\n'})
    assert cfg.selection == Rules(True, ("bench_a*",), ("csrc/*",), ("notes/*",))
    assert config.Config().selection == Rules()
    for bad, words in (('selection = 1', "must be a table"), ('[selection]\nenable = true', "no key 'enable'"),
                       ('[selection]\nenabled = "yes"', "true or false"), ('[selection]\nalways = "x"', "list")):
        with pytest.raises(ConfigError, match=words):
            config.from_texts({"perfgate.toml": bad})


def test_tracer_lists_the_repository_files_that_ran(tmp_path, monkeypatch):
    import sys
    import threading

    from runner.worker import tracing
    from runner.worker.tracing import PROFILER, SETTRACE, _settrace_files, trace_files

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "used.py").write_text("def f():\n    return 1\n")
    (pkg / "unused.py").write_text("def g():\n    return 2\n")
    (pkg / "lazy.py").write_text("X = 1\n")  # a module body run by an import inside the call
    (pkg / "in_thread.py").write_text("def h():\n    return 3\n")
    (pkg / "gen.py").write_text("def items():\n    yield 1\n    yield 2\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import pkg.gen
        import pkg.in_thread
        import pkg.unused  # noqa: F401 - imported, never called: not in the map
        import pkg.used

        files, tool = trace_files(lambda: pkg.used.f(), str(tmp_path))
        assert files == ["pkg/used.py"] and tool == PROFILER
        assert sys.getprofile() is None and threading.getprofile() is None  # the profiler is stopped

        def everything():
            pkg.used.f()
            __import__("pkg.lazy")
            list(pkg.gen.items())
            worker = threading.Thread(target=pkg.in_thread.h)
            worker.start()
            worker.join()

        assert trace_files(everything, str(tmp_path))[0] == ["pkg/gen.py", "pkg/in_thread.py", "pkg/lazy.py",
                                                             "pkg/used.py"]
        assert _settrace_files(lambda: pkg.used.f(), str(tmp_path.resolve())) == ["pkg/used.py"]
        with pytest.raises(ZeroDivisionError):
            trace_files(lambda: 1 / 0, str(tmp_path))
        assert sys.getprofile() is None  # the tracer is stopped after a failure too

        class Held:  # Python 3.12+ refuses a second profiler: the call-event tracer does the job
            def __init__(self, **options):
                pass

            def enable(self):
                raise ValueError("Another profiling tool is already active")

        monkeypatch.setattr(tracing.cProfile, "Profile", Held)
        assert trace_files(lambda: pkg.used.f(), str(tmp_path)) == (["pkg/used.py"], SETTRACE)
        assert sys.gettrace() is None
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("pkg", "pkg.used", "pkg.unused", "pkg.lazy", "pkg.in_thread", "pkg.gen"):
            sys.modules.pop(name, None)


def test_report_says_how_many_ran_were_skipped_and_why():
    from runner.report.view import selection_view

    rec = record(plan_for(["lib/attn.py"]), mode="affected", map_sha="a" * 40,
                 last={"bench_loss": {"sha": "b" * 40, "median": 0.0125, "unit": "s"}}, files=dict(BENCHES))
    view = selection_view(rec, limit=2)
    assert view["note"].startswith("Ran 1 of 4 benchmark(s)") and "3 not affected" in view["note"]
    assert "1 file(s) changed; code map of aaaaaaaaaaaa" in view["note"]
    assert view["rows"][0] == {"name": "bench_norm[rows=1]", "text": "not affected (not measured in this run)",
                               "value": ""}
    assert view["more"] == 1
    full = selection_view(record(plan_for(["csrc/k.cu"]), mode="affected", map_sha=None))
    assert full["note"].startswith("All 4 benchmark(s) run: csrc/k.cu changed") and full["rows"] == []
    last = selection_view(rec)["rows"][2]
    assert last["text"] == "not affected (last measured at bbbbbbbbbbbb)" and last["value"]
    assert selection_view(None) is None


def test_a_prs_path_in_the_report_is_inert_text():
    from runner.report import render
    from runner.results import new_results, validate
    from tests.history.factory import environment

    evil = "docs2/[click](https://evil.example)<img src=x>.cu"
    rec = record(plan_for([evil]), mode="affected", map_sha="a" * 40)
    doc = new_results(repository="o/r", base={"ref": "b", "sha": "a" * 40}, head={"ref": "h", "sha": "b" * 40},
                      environment=environment(device="cpu"), settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 4,
                                                               "max_time": 10}, benchmarks=[], selection=rec)
    validate(doc)
    md, html = render(doc, "md"), render(doc, "html")
    assert "](https://evil" not in md and "<img" not in md and "\\[click\\]" in md
    assert "<img src=x>" not in html and "&lt;img src=x&gt;" in html


HEAD_LISTING = {"benchmarks": [{"name": "bench_norm[rows=1]", "file": "bench_norm.py"},
                               {"name": "bench_attn", "file": "bench_attn.py"}],
                "errors": [{"file": "bench_bad.py", "error": "SyntaxError"}],
                "skipped": [{"name": "bench_gpu", "file": "bench_gpu.py", "reason": "needs a GPU"}]}
BASE_LISTING = {"benchmarks": [*HEAD_LISTING["benchmarks"],
                               {"name": "bench_old", "file": "bench_old.py"}],
                "errors": [], "skipped": []}


def test_a_listing_gives_the_cases_the_filter_and_names_select_and_base_only_ones_as_removed():
    from runner.selection import listed

    everything = listed(HEAD_LISTING, BASE_LISTING, None)
    assert [c["name"] for c in everything.cases] == ["bench_norm[rows=1]", "bench_attn"]
    assert everything.errors == HEAD_LISTING["errors"]
    assert [s["name"] for s in everything.skipped] == ["bench_gpu"]
    assert [c["name"] for c in everything.removed] == ["bench_old"]
    norm = listed(HEAD_LISTING, BASE_LISTING, "bench_norm*")
    assert [c["name"] for c in norm.cases] == ["bench_norm[rows=1]"]
    assert norm.errors == [] and norm.removed == []
    named = listed(HEAD_LISTING, BASE_LISTING, None, ["bench_attn"])
    assert [c["name"] for c in named.cases] == ["bench_attn"]
    assert named.skipped == [] and named.removed == []
    # one directory read by both sides (--benchmarks DIR), or no base listing: nothing is removed
    assert listed(HEAD_LISTING, BASE_LISTING, None, shared=True).removed == []
    assert listed(HEAD_LISTING, None, None).removed == []


def test_a_listing_that_leaves_nothing_is_a_user_error_that_says_what_there_is():
    from runner.selection import listed, nothing_listed

    everything = listed(HEAD_LISTING, None, None)
    assert nothing_listed(everything, HEAD_LISTING, None, "/b", "bench_*") is None
    why = nothing_listed(listed(HEAD_LISTING, None, "nope"), HEAD_LISTING, "nope", "/b", "bench_*")
    assert why == "no benchmark matches --filter 'nope' (there are: bench_norm[rows=1], bench_attn)"
    empty = {"benchmarks": [], "errors": [], "skipped": []}
    assert nothing_listed(listed(empty, None, None), empty, None, "/b", "bench_* files") == \
        "no benchmarks found in /b (bench_* files)"


@pytest.mark.parametrize("affected, enabled, selects", [(True, False, True), (None, True, True),
                                                        (None, False, False), (False, True, False)])
def test_a_compare_selects_as_asked_else_as_configured(affected, enabled, selects):
    from runner.selection import selecting, unselected

    assert selecting(affected, enabled) is selects
    if not selects:  # --all where the config enables selection is recorded; else nothing is
        assert (unselected(enabled, 3) or {}).get("mode") == ("all" if enabled else None)


def test_the_all_record_runs_everything_for_a_full_run():
    from runner.selection import unselected

    assert unselected(True, 3) == {"mode": "all", "map_sha": None,
                                   "full_run": "asked to run every benchmark (--all)",
                                   "changed": [], "changed_count": 0, "run": 3, "skipped": [],
                                   "run_reasons": {FULL: 3}}
