"""compare --affected and perfgate run's code map, end to end: real git, real workers, real tracer."""

from __future__ import annotations

import json

import pytest

from runner.cli.main import main
from runner.results import load
from testkit.gitrepo import make_repo

pytestmark = pytest.mark.slow

BASE = {
    "mylib/__init__.py": "",
    "mylib/norm.py": "from .common import spin\n\ndef norm():\n    return spin(3000)\n",
    "mylib/attn.py": "from .common import spin\n\ndef attn():\n    return spin(3000)\n",
    "mylib/common.py": "def spin(n):\n    return sum(i * i % 7 for i in range(n))\n",
    "benchmarks/bench_lib.py": """
        from mylib.norm import norm
        from mylib.attn import attn

        def bench_norm(device):
            return norm

        def bench_attn(device):
            return attn
    """,
    "perfgate.toml": "min_sample_time = 0.002\nmax_time = 20\nmin_rounds = 4\npair_rounds = 4\nmax_rounds = 8\n"
                     "[selection]\nenabled = true\n",
}


def compare(repo, out, *extra):
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet", *extra]) == 0
    return json.loads((out / "results.json").read_text())


def test_a_pr_touching_one_module_measures_only_its_benchmark(tmp_path):
    repo = make_repo(tmp_path / "repo", BASE, {"mylib/attn.py": BASE["mylib/attn.py"].replace("3000", "3300")})
    doc = compare(repo, tmp_path / "out")  # the config enables selection
    assert [b["name"] for b in doc["benchmarks"]] == ["bench_attn"]
    sel = doc["selection"]
    assert sel["mode"] == "affected" and sel["run"] == 1 and sel["full_run"] is None
    assert [s["name"] for s in sel["skipped"]] == ["bench_norm"] and sel["changed"] == ["mylib/attn.py"]
    cmap = doc["code_map"]["benchmarks"]
    assert {"mylib/norm.py", "mylib/common.py", "benchmarks/bench_lib.py"} <= set(cmap["bench_norm"])
    assert "mylib/attn.py" not in cmap["bench_norm"]
    assert doc["code_map"]["tool"] == "cProfile"
    load(tmp_path / "out" / "results.json")  # valid against the schema
    # the report says what was carried forward
    assert main(["report", str(tmp_path / "out" / "results.json"), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "bench_norm" in text and "not affected" in text


def test_a_shared_utility_or_native_change_skips_nothing_and_all_overrides(tmp_path):
    repo = make_repo(tmp_path / "repo", BASE, {"mylib/common.py": BASE["mylib/common.py"] + "\n# touched\n",
                                               "csrc/k.cu": "// kernel\n"})
    doc = compare(repo, tmp_path / "out")
    assert sorted(b["name"] for b in doc["benchmarks"]) == ["bench_attn", "bench_norm"]
    assert "csrc/k.cu" in doc["selection"]["full_run"] and doc["selection"]["skipped"] == []
    doc = compare(repo, tmp_path / "out_all", "--all")
    assert doc["selection"]["mode"] == "all" and "code_map" not in doc and len(doc["benchmarks"]) == 2


def test_run_records_the_map_and_compare_carries_its_values_forward(tmp_path):
    repo = make_repo(tmp_path / "repo", BASE, {"mylib/attn.py": BASE["mylib/attn.py"].replace("3000", "3300")})
    assert main(["run", "--repo", str(repo), "--rev", "base", "--out", str(tmp_path / "run"), "--quiet",
                 "--max-time", "10"]) == 0
    run_doc = load(tmp_path / "run" / "results.json")
    assert set(run_doc["code_map"]["benchmarks"]) == {"bench_norm", "bench_attn"}
    doc = compare(repo, tmp_path / "out", "--affected", "--map", str(tmp_path / "run" / "results.json"))
    (skipped,) = doc["selection"]["skipped"]
    assert skipped["name"] == "bench_norm" and skipped["last"]["sha"] == run_doc["head"]["sha"]
    assert skipped["last"]["median"] > 0 and "code_map" not in doc


def test_map_without_affected_is_a_usage_error(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", BASE, {"README.md": "x\n"})
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--all", "--map", "x.json",
                 "--quiet"]) == 2
    assert "--map is for --affected" in capsys.readouterr().err


def test_a_change_that_affects_nothing_measures_nothing_and_passes(tmp_path):
    repo = make_repo(tmp_path / "repo", BASE, {"README.md": "docs only\n"})
    doc = compare(repo, tmp_path / "out", "--fail-on-regression")
    assert doc["benchmarks"] == [] and doc["selection"]["run"] == 0
    assert sorted(s["name"] for s in doc["selection"]["skipped"]) == ["bench_attn", "bench_norm"]


def test_force_run_measures_a_skipped_benchmark_as_a_selection_miss(tmp_path):
    repo = make_repo(tmp_path / "repo", BASE, {"mylib/attn.py": BASE["mylib/attn.py"].replace("3000", "3300")})
    doc = compare(repo, tmp_path / "out", "--force-run", "bench_norm*")
    assert sorted(b["name"] for b in doc["benchmarks"]) == ["bench_attn", "bench_norm"]
    assert doc["selection"]["run_reasons"] == {"executes changed code": 1, "selection miss": 1}
