"""``perfgate history add`` keeps a team's history from the tools it used before: real result
files of asv and pytest-benchmark (tests/fixtures/imports) become perfgate ``run`` documents and
series, per machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.history.imports import from_asv_result, from_pytest_benchmark
from runner import results as results_schema
from runner.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
ASV = FIXTURES / "asv_results"
PYTEST_FILES = sorted((FIXTURES / "pytest_benchmark").glob("*.json"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PERFGATE_HOME", str(tmp_path / "home"))
    return tmp_path


def test_a_pytest_benchmark_file_is_a_run_of_its_commit():
    raw = json.loads(PYTEST_FILES[0].read_text())
    doc = results_schema.validate(from_pytest_benchmark(raw, "acme/kernels"))
    assert doc["kind"] == "run" and doc["head"]["sha"] == raw["commit_info"]["id"]
    medians = {b["name"]: b["head"]["median"] for b in doc["benchmarks"]}
    assert medians == {b["fullname"]: b["stats"]["median"] for b in raw["benchmarks"]}
    assert doc["environment"]["cpu"] == raw["machine_info"]["cpu"]["brand_raw"]
    assert all(b["head"].get("ci_low") is None for b in doc["benchmarks"])  # no samples saved: no interval


def test_an_asv_result_keeps_asvs_median_and_samples():
    machine = json.loads((ASV / "peers" / "machine.json").read_text())
    path = next((ASV / "peers").glob("637d4af3-*.json"))
    raw = json.loads(path.read_text())
    doc = results_schema.validate(from_asv_result(raw, "acme/kernels", machine))
    assert doc["head"]["sha"] == raw["commit_hash"] and doc["environment"]["runner_label"] == "peers"
    mm = next(b for b in doc["benchmarks"] if b["name"] == "benchmarks.Peers.time_cpu_mm")
    assert mm["head"]["median"] == raw["results"]["benchmarks.Peers.time_cpu_mm"][0][0]
    assert len(mm["head"]["samples"]) == 5 and mm["head"]["ci_low"] <= mm["head"]["median"] <= mm["head"]["ci_high"]


def test_asv_parameters_are_named_as_perfgate_names_them():
    raw = {"version": 2, "commit_hash": "a" * 40, "date": 1796066583000,
           "result_columns": ["result", "params", "samples"],
           "results": {"bench.Sort.time_sort": [[1e-3, float("nan"), 2e-3, None],
                                                [["10", "1000"], ["'quick'", "<class 'float'>"]], None],
                       "bench.peakmem_sort": [[1024.0], [], None]}}
    doc = from_asv_result(raw, "acme/kernels")
    assert [(b["name"], b["head"]["median"]) for b in doc["benchmarks"]] == [
        ("bench.Sort.time_sort(10, quick)", 1e-3), ("bench.Sort.time_sort(1000, quick)", 2e-3)]


def test_history_add_imports_a_whole_asv_directory_and_pytest_benchmark_files(home, capsys):
    assert main(["history", "add", str(ASV), "--repository", "acme/kernels"]) == 0
    for path in PYTEST_FILES:
        assert main(["history", "add", str(path), "--repository", "acme/kernels"]) == 0
    out = capsys.readouterr().out
    assert out.count("stored") == 4 and "3 benchmark points" in out
    assert main(["history", "add", str(PYTEST_FILES[0]), "--repository", "acme/kernels"]) == 0
    assert "already stored" in capsys.readouterr().out

    assert main(["history", "show", "--json"]) == 0
    series = json.loads(capsys.readouterr().out)["series"]
    names = {s["benchmark"] for s in series}
    assert {"benchmarks.Peers.time_cpu_mm", "bench_pytest/test_peers.py::test_cpu_mm"} <= names
    assert all(len(s["points"]) == 2 for s in series)  # two commits of each tool


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "x.json", "{}"), "is not"),
    (lambda d: (d / "x.json", "not json"), "is not JSON"),
])
def test_bad_input_is_one_line(home, capsys, make, message):
    path, text = make(home)
    path.write_text(text)
    assert main(["history", "add", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_import_needs_a_repository(home, capsys):
    assert main(["history", "add", str(PYTEST_FILES[0])]) == 2
    assert "--repository OWNER/NAME" in capsys.readouterr().err
    assert main(["history", "add", str(home), "--repository", "acme/kernels"]) == 2
    assert "not an asv results directory" in capsys.readouterr().err


GBENCH = {"context": {"date": "2026-11-30T08:00:00+00:00", "host_name": "gpu-runner-3", "num_cpus": 16,
                      "mhz_per_cpu": 3000},
          "benchmarks": [{"name": "BM_copy/N:1024", "run_name": "BM_copy/N:1024", "run_type": "iteration",
                          "real_time": t, "cpu_time": t, "time_unit": "us"} for t in (10.0, 11.0, 12.0)]}

CUSTOM = [{"name": "decode", "unit": "tokens/s", "value": 4000.0}, {"name": "decode", "unit": "tokens/s", "value": 5000.0},
          {"name": "vram", "unit": "MB", "value": 812.0}]


def test_google_benchmark_json_is_a_run_of_seconds_per_iteration():
    from bot.history.points import points_of
    from bot.history.imports import from_measured

    doc = results_schema.validate(from_measured(GBENCH, "acme/kernels"))
    (entry,) = doc["benchmarks"]
    assert entry["name"] == "BM_copy/N:1024" and entry["head"]["samples"] == pytest.approx([10e-6, 11e-6, 12e-6])
    assert entry["family"] == "BM_copy" and entry["params"] == {"N": "1024"}
    assert doc["environment"]["runner_label"] == "gpu-runner-3" and doc["created_at"].startswith("2026-11-30")
    assert [p.value for p in points_of(doc)] == pytest.approx([11e-6])


def test_a_bigger_is_better_throughput_is_kept_as_time_per_unit_and_other_units_are_left_out():
    from bot.history.points import points_of
    from bot.history.imports import from_measured

    doc = results_schema.validate(from_measured(CUSTOM, "acme/llm", "customBiggerIsBetter"))
    assert {b["name"]: b["direction"] for b in doc["benchmarks"]} == {"decode": "bigger", "vram": "bigger"}
    (point,) = points_of(doc)  # vram (MB) is no time: the report shows it, the history does not
    assert point.benchmark == "decode" and point.value == pytest.approx(1 / 4500.0)  # seconds per token
    with pytest.raises(ValueError, match="set command_format"):
        from_measured(CUSTOM, "acme/llm")


def test_history_add_reads_these_formats_and_names_a_custom_jsons_direction(home, capsys):
    (home / "gbench.json").write_text(json.dumps(GBENCH))
    (home / "custom.json").write_text(json.dumps(CUSTOM))
    assert main(["history", "add", str(home / "gbench.json"), "--repository", "acme/kernels"]) == 0
    assert main(["history", "add", str(home / "custom.json"), "--repository", "acme/kernels"]) == 2
    first = capsys.readouterr()
    assert "stored" in first.out and "customBiggerIsBetter" in first.err and "Traceback" not in first.err
    assert main(["history", "add", str(home / "custom.json"), "--repository", "acme/kernels",
                 "--format", "customBiggerIsBetter"]) == 0
    assert "1 benchmark point," in capsys.readouterr().out
