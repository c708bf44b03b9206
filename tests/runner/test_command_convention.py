"""Benchmarks that measure themselves: the JSON formats (Google Benchmark, nvbench,
github-action-benchmark), the command convention, and real compares — a tiny C++ Google Benchmark
program built by the revision's ``install`` (when g++ and libbenchmark-dev are here; else a script
printing the same JSON), and a bigger-is-better throughput."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner import formats
from runner import results as results_mod
from runner.config import parse_table
from runner.conventions import command
from runner.errors import ConfigError
from runner.pipeline import suites
from testkit.gitrepo import make_repo

GBENCH = {
    "context": {"date": "2026-12-01T10:00:00+00:00", "host_name": "runner-1", "num_cpus": 2, "mhz_per_cpu": 2400,
                "library_version": "v1.7.1"},
    "benchmarks": [
        {"name": "BM_copy/N:1024", "run_name": "BM_copy/N:1024", "run_type": "iteration", "repetitions": 2,
         "repetition_index": 0, "real_time": 120.0, "cpu_time": 119.0, "time_unit": "ns"},
        {"name": "BM_copy/N:1024", "run_name": "BM_copy/N:1024", "run_type": "iteration", "repetitions": 2,
         "repetition_index": 1, "real_time": 130.0, "cpu_time": 129.0, "time_unit": "ns"},
        {"name": "BM_copy/N:1024_mean", "run_name": "BM_copy/N:1024", "run_type": "aggregate",
         "aggregate_name": "mean", "real_time": 125.0, "time_unit": "ns"},
        {"name": "BM_sort/8/real_time_median", "run_name": "BM_sort/8/real_time", "run_type": "aggregate",
         "aggregate_name": "median", "real_time": 2.5, "time_unit": "ms"},
        {"name": "BM_broken", "run_name": "BM_broken", "run_type": "iteration", "error_occurred": True,
         "error_message": "no device", "real_time": 0, "time_unit": "ns"},
    ],
}

NVBENCH = {"benchmarks": [{"name": "copy", "states": [
    {"name": "Device=0 T=I32 N=2^20", "device": 0, "is_skipped": False,
     "axis_values": [{"name": "T", "type": "type", "value": "I32"}, {"name": "N", "type": "int64", "value": "1048576"}],
     "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "0.00125"}]},
                   {"tag": "nv/cold/time/cpu/mean", "data": [{"name": "value", "type": "float64", "value": "0.002"}]}]},
    {"name": "Device=0 T=I64 N=2^20", "device": 0, "is_skipped": True, "axis_values": [], "summaries": []}]}]}

CUSTOM = [{"name": "decode", "unit": "tokens/s", "value": 5120.5}, {"name": "decode", "unit": "tokens/s", "value": 5000},
          {"name": "load", "unit": "ms", "value": 12.0, "range": "± 1"}]


def test_google_benchmark_json_gives_repetitions_in_seconds_and_params_from_names():
    found = {r.name: r for r in formats.parse(GBENCH)}
    assert set(found) == {"BM_copy/N:1024", "BM_sort/8/real_time"}  # the failed one left out
    assert found["BM_copy/N:1024"].values == pytest.approx((120e-9, 130e-9))
    assert found["BM_copy/N:1024"].family == "BM_copy" and found["BM_copy/N:1024"].params == {"N": "1024"}
    assert found["BM_sort/8/real_time"].values == pytest.approx((2.5e-3,))  # only its median was printed
    assert formats.split_name("BM_x/8/threads:2/min_time:0.1") == ("BM_x", {"arg0": "8", "threads": "2"})


def test_nvbench_json_gives_each_state_its_gpu_time():
    (only,) = formats.parse(NVBENCH)
    assert only.name == "copy[T=I32,N=1048576]" and only.values == (0.00125,) and only.unit == "s"
    assert only.family == "copy" and only.params == {"T": "I32", "N": "1048576"}


def test_custom_json_needs_its_direction_named_and_keeps_other_units():
    with pytest.raises(formats.FormatError, match="set command_format to customSmallerIsBetter or customBiggerIsBetter"):
        formats.parse(CUSTOM)
    bigger = {r.name: r for r in formats.parse(CUSTOM, "customBiggerIsBetter")}
    assert bigger["decode"].values == (5120.5, 5000.0) and bigger["decode"].unit == "tokens/s"
    assert bigger["decode"].direction == "bigger"
    smaller = {r.name: r for r in formats.parse(CUSTOM, "customSmallerIsBetter")}
    assert smaller["load"].values == pytest.approx((0.012,)) and smaller["load"].unit == "s"
    with pytest.raises(formats.FormatError, match="not nvbench output"):
        formats.parse(GBENCH, "nvbench")


def test_output_with_lines_before_its_json_and_output_without_any():
    assert formats.load_json("building...\nrunning 2 benchmarks\n" + json.dumps(GBENCH))["context"]["num_cpus"] == 2
    with pytest.raises(formats.FormatError, match="it is empty"):
        formats.load_json("")
    with pytest.raises(formats.FormatError, match="no JSON document"):
        formats.load_json("Segmentation fault")


def test_the_command_is_configured_detected_and_run(tmp_path):
    assert parse_table({"suite": "command", "command": "./bench"}, "p.toml").command == "./bench"
    with pytest.raises(ConfigError, match='suite = "command" needs `command`'):
        parse_table({"suite": "command"}, "p.toml")
    with pytest.raises(ConfigError, match="command_format must be one of"):
        parse_table({"command_format": "csv"}, "p.toml")
    cfg = parse_table({"command": "echo"}, "p.toml")
    assert suites.detect(tmp_path, "auto", "benchmarks", cfg) == suites.Suite("command", ".")
    assert suites.options("command", cfg) == {"command": "echo", "command_format": "auto"}
    (tmp_path / "gbench.json").write_text(json.dumps(GBENCH))
    listing = command.CONVENTION.collect(tmp_path, {"command": f"cat {tmp_path / 'gbench.json'}"})
    assert [c["name"] for c in listing["benchmarks"]] == ["BM_copy/N:1024", "BM_sort/8/real_time"]
    assert all(c["measures"] == "self" and c["group"] == "command" for c in listing["benchmarks"])
    prepared = command.CONVENTION.prepare(listing["benchmarks"][0], "cpu",
                                          {"command": f"cp {tmp_path / 'gbench.json'} {{out}}"})
    assert prepared.fn is None and prepared.measure()["BM_copy/N:1024"].values == pytest.approx((120e-9, 130e-9))
    failed = command.CONVENTION.collect(tmp_path, {"command": "echo broken >&2; exit 3"})
    assert failed["benchmarks"] == [] and "exited with status 3:\nbroken" in failed["errors"][0]["error"]


# -- real compares --------------------------------------------------------------------------------
BENCH_CC = """\
#include <benchmark/benchmark.h>

static long work(long n) {
  long total = 0;
  for (long i = 0; i < n; ++i) { total += i * i % 7; benchmark::DoNotOptimize(total); }
  return total;
}

static const long SCALE = 1;

static void BM_scaled(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(work(state.range(0) * SCALE));
}
BENCHMARK(BM_scaled)->ArgName("N")->Arg(20000);

static void BM_same(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(work(20000));
}
BENCHMARK(BM_same);

BENCHMARK_MAIN();
"""

#: The same program's output, from Python: where no C++ compiler or libbenchmark-dev is installed.
BENCH_PY = """\
import json, time

SCALE = 1

def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total

def measure(n):
    t0 = time.perf_counter_ns()
    for _ in range(20):
        work(n)
    return (time.perf_counter_ns() - t0) / 20

rows = []
for name, n in (("BM_scaled/N:2000", 2000 * SCALE), ("BM_same", 2000)):
    for rep in range(3):
        rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetition_index": rep,
                     "real_time": measure(n), "cpu_time": 0, "time_unit": "ns"})
print(json.dumps({"context": {"num_cpus": 1}, "benchmarks": rows}))
"""


def _has_google_benchmark() -> bool:
    return shutil.which("g++") is not None and Path("/usr/include/benchmark/benchmark.h").is_file()


def _build(source: str, into: Path) -> None:
    """Compile the program (``g++``, the system's libbenchmark) to ``into``."""
    (into.parent / "bench.cc").write_text(source)
    subprocess.run(["g++", "-O1", "-std=c++17", str(into.parent / "bench.cc"), "-o", str(into), "-lbenchmark",
                    "-lpthread"], check=True, capture_output=True)


@pytest.mark.slow
def test_compare_a_google_benchmark_program(tmp_path):
    """The program is built here, once per side, and committed: the revision's ``install`` would
    build it the same way, but its fresh venv costs more than the rest of this test."""
    from runner.cli.main import main

    if _has_google_benchmark():  # the real thing (.ci/run installs libbenchmark-dev)
        for side, scale in (("base", 1), ("head", 3)):
            (tmp_path / side).mkdir()
            _build(BENCH_CC.replace("SCALE = 1;", f"SCALE = {scale};"), tmp_path / side / "bench")
        source = {"bench.cc": BENCH_CC, "bench": (tmp_path / "base" / "bench").read_bytes()}
        changed = {"bench": (tmp_path / "head" / "bench").read_bytes()}
        settings = 'command = "./bench --benchmark_format=json --benchmark_repetitions=3 --benchmark_min_time=0.02"\n'
    else:
        source, changed = {"bench.py": BENCH_PY}, {"bench.py": BENCH_PY.replace("SCALE = 1", "SCALE = 3")}
        settings = f'command = "{sys.executable} bench.py"\n'
    config = f"[tool.perfgate]\n{settings}max_time = 60\nmax_rounds = 48\nprofile = false\n"
    repo = make_repo(tmp_path / "repo", {**source, "pyproject.toml": config}, changed)
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out), "--quiet"]) == 0
    doc = results_mod.load(out / "results.json")
    assert doc["settings"]["suite"] == "command"
    verdicts = {b["name"].split("/")[0]: b["change"]["verdict"] for b in doc["benchmarks"]}
    # BM_same's verdict is not asserted: base and head are two builds of the program, whose code
    # layouts differ, so its code is not the same on both sides (a fresh clone once read it changed)
    assert verdicts["BM_scaled"] == "regression" and verdicts["BM_same"] in results_mod.PAIRED
    scaled = next(b for b in doc["benchmarks"] if b["name"].startswith("BM_scaled"))
    assert scaled["family"] == "BM_scaled" and scaled["params"] == {"N": "20000" if _has_google_benchmark() else "2000"}
    assert scaled["change"]["process_pairs"] >= 2 and len(scaled["base"]["samples"]) >= 2 * 3  # 3 repetitions a run
    assert 2.0 < scaled["change"]["ratio"] < 4.5  # three times the work


class _Runs:
    """One side's worker for a benchmark that measures itself: every ``sample`` is one run reporting
    three repetitions of each benchmark, its value × a factor per run and per repetition (simulated,
    seeded), so the pass's decisions run as in a compare without processes."""

    def __init__(self, values: dict[str, tuple[float, str, str]], seed: int):
        import random

        self.values, self.rng, self.children_started, self.runs = values, random.Random(seed), 0, 0

    def end_child(self) -> None:
        pass

    def request(self, cmd: str, timeout: float | None = None, **fields) -> dict:
        if cmd == "setup":
            self.children_started += 1
            return {"ok": True, "self_measured": True, "number": 1}
        self.runs += 1
        run = self.rng.lognormvariate(0, 0.004)
        return {"ok": True, "samples": [], "readings": {
            name: {"values": [value * run * self.rng.lognormvariate(0, 0.005) for _ in range(3)], "unit": unit,
                   "direction": direction} for name, (value, unit, direction) in self.values.items()}}


def _measured_pass(base: dict, head: dict, seed: int = 1):
    from runner.config import Config
    from runner.pipeline.timing.measured import MeasuredPass, entry
    from runner.pipeline.timing.benchstate import BenchState
    from runner.pipeline.timing.timing import TimingPass

    from testkit.sim_workers import SimClock

    workers = {"base": _Runs(base, seed), "head": _Runs(head, seed + 1)}
    timing = TimingPass(workers, Config(max_rounds=64), {"base": "/b", "head": "/h"}, clock=SimClock())
    states = [BenchState(case={"name": name, "file": None, "func": name, "measures": "self", "group": "command",
                               "unit": unit, "direction": direction})
              for name, (_, unit, direction) in head.items()]
    MeasuredPass(timing).run(states, end=float("inf"))
    timing.finalize(states)
    return {s.name: entry(s, timing.ci_level) for s in states}, workers


def test_self_measured_runs_are_paired_and_a_falling_throughput_is_a_regression():
    base = {"decode": (5000.0, "tokens/s", "bigger"), "prefill": (2e-3, "s", "smaller"), "load": (0.5, "s", "smaller")}
    head = {"decode": (4000.0, "tokens/s", "bigger"), "prefill": (1e-3, "s", "smaller"), "load": (0.5, "s", "smaller")}
    entries, workers = _measured_pass(base, head)
    decode, prefill, load = entries["decode"], entries["prefill"], entries["load"]
    assert decode["change"]["verdict"] == "regression" and decode["change"]["ratio"] == pytest.approx(1.25, rel=0.02)
    assert decode["direction"] == "bigger" and decode["unit"] == "tokens/s"
    assert decode["base"]["median"] == pytest.approx(5000, rel=0.03) and decode["head"]["median"] < 4100  # in tokens/s
    assert prefill["change"]["verdict"] == "improvement" and "direction" not in prefill
    assert load["change"]["verdict"] == "unchanged"
    assert workers["base"].runs == workers["head"].runs >= 2  # one run per side and round, paired
    assert [p["rounds"] for p in decode["change"]["pairs"]] == [3] * decode["change"]["process_pairs"]
    from runner.environment import capture

    results_mod.validate(results_mod.new_results(repository="r", base={"ref": "a", "sha": None},
                                                 head={"ref": "b", "sha": None}, environment=capture({}, None),
                                                 settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 16,
                                                           "max_time": 1.0}, benchmarks=list(entries.values())))


def test_a_benchmark_the_base_run_does_not_report_is_new():
    entries, _ = _measured_pass({"old": (1e-3, "s", "smaller")},
                                {"old": (1e-3, "s", "smaller"), "added": (2e-3, "s", "smaller")})
    assert entries["added"]["change"]["verdict"] == "new" and entries["added"]["head"]["samples"]
    assert entries["old"]["change"]["verdict"] in ("unchanged", "inconclusive")
