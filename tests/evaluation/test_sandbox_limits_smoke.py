"""evaluation/sandbox_limits.py at its smoke size (one A/A round of 12 s a side, then each limit
reached at a small value), so the script CI never ran cannot go stale: a training step in the
sandbox under the default limits finishes as outside it, with the same verdicts, and a fork bomb,
a 100 GiB write and a hang each end with their own limit's line, naming the benchmark or phase."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[2] / "evaluation" / "sandbox_limits.py"


def test_the_training_step_is_unaffected_and_each_limit_ends_with_its_line(tmp_path):
    written, raw = tmp_path / "RESULTS.md", tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--write", str(written),
                           "--json", str(raw)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(raw.read_text())
    where = {row["where"]: row for row in rows["aa"]}
    assert {row["status"] for row in rows["aa"]} == {0}, rows["aa"]
    names = {"bench_mlp_train_step", "bench_conv_train_step"}
    assert set(where["sandbox"]["benchmarks"]) == set(where["outside"]["benchmarks"]) == names
    for side in where.values():
        assert not [w for w in side["warnings"] if "sandbox's" in w]  # no limit reached
        for bench in side["benchmarks"].values():  # at 12 s a loaded machine may run out of
            if bench["verdict"] == "failed":       # budget (either side): never a limit's error
                assert "time budget" in bench["error"], bench
            else:
                assert bench["verdict"] in ("unchanged", "inconclusive") and bench["head"] > 0
    assert "4096 processes" in where["sandbox"]["limits"]  # the defaults
    reached = {row["probe"]: row for row in rows["limits"]}
    bomb, fill, hang = reached["fork bomb"], reached["100 GiB write"], reached["hang"]
    assert bomb["status"] == 2 and "process limit (256 processes" in bomb["error"]
    assert "'bench_probe' was measured on head" in bomb["error"]
    assert "scratch-space limit (256 MiB" in (fill["error"] or fill["warning"])
    assert "'bench_probe' was measured on head" in (fill["error"] or fill["warning"])
    assert hang["status"] == 2 and hang["stopped"] == "deadline"
    assert "wall-time limit (15 s" in hang["error"] and "head's benchmark files" in hang["error"]
    assert "| fork bomb |" in written.read_text()
