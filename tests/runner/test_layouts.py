"""Memory layouts (runner.pipeline.machine.layouts): each side's fork servers, one per layout, each
started with its own environment pad; process pairs rotate over them; pairs that share a layout
count as one replicate. Pure parts here, the real fork servers in one compare (real git, real
workers)."""

from __future__ import annotations

import json

import pytest

from runner.cli.main import main
from runner.pipeline.timing import evidence
from runner.pipeline.machine import layouts
from runner.pipeline.timing.entries import benchmark_entry
from testkit.gitrepo import make_repo
from testkit.sim_workers import SideModel

from .test_timing_pass import _run


def test_each_layout_pads_the_environment_to_a_length_of_its_own_per_side():
    one, two = layouts.layout_env(1, 7), layouts.layout_env(2, 7)
    assert one == layouts.layout_env(1, 7)  # a side's seed fixes its layouts for the compare
    assert len(one[layouts.PAD_VARIABLE]) != len(two[layouts.PAD_VARIABLE])
    assert len(one[layouts.PAD_VARIABLE]) != len(layouts.layout_env(1, 8)[layouts.PAD_VARIABLE])  # the other side
    assert all(16 <= len(env[layouts.PAD_VARIABLE]) < layouts.PAD_MAX for env in (one, two, layouts.layout_env(0, 7)))
    assert [layouts.of_pair(j) for j in range(layouts.LAYOUTS + 2)] == [*range(layouts.LAYOUTS), 0, 1]


def test_pairs_that_share_a_layout_count_as_one_replicate():
    blocks = [(0.1, 0.01, 8), (0.3, 0.02, 8), (-0.2, 0.01, 8)]
    assert evidence.by_layout(blocks, [0, 1, 2]) == blocks
    grouped = evidence.by_layout(blocks, [0, 1, 0])
    assert grouped[0] == (pytest.approx(-0.05), pytest.approx((0.01 ** 2 + 0.01 ** 2) ** 0.5 / 2), 16)
    assert grouped[1] == (0.3, 0.02, 8)


@pytest.mark.parametrize("seed", range(4))
def test_a_layout_effect_becomes_spread_not_a_verdict(seed, monkeypatch):
    # identical code whose speed depends on the fork server's layout (±30 %, drawn per layout and
    # side): the kornia case. In one layout a side, every pair agrees on an offset.
    model = dict(layout_sd=0.3)
    _, (state,), _, _ = _run({"b": (SideModel(1e-3, **model), SideModel(1e-3, **model))}, max_time=120.0, seed=seed)
    assert state.verdict in ("unchanged", "inconclusive")
    assert len(set(state.block_layouts)) > 1
    # one server a side and its pairs counted as independent replicates, as before
    monkeypatch.setattr(layouts, "LAYOUTS", 1)
    monkeypatch.setattr(evidence, "by_layout", lambda blocks, layout_of: list(blocks))
    _, (state,), _, _ = _run({"b": (SideModel(1e-3, **model), SideModel(1e-3, **model))}, max_time=120.0, seed=seed)
    assert state.verdict in ("regression", "improvement")  # what one layout a side says


RECORDS_LAYOUT = """
    import os

    def bench_records_its_layout(device):
        with open({path!r}, "a") as fh:
            fh.write(os.environ.get("PERFGATE_LAYOUT", "0") + " " + str(len(os.environ.get("PERFGATE_LAYOUT_PAD", ""))) + "\\n")
        return lambda: sum(range(3000))
"""


@pytest.mark.slow
def test_process_pairs_rotate_over_fork_servers_each_with_its_own_pad(tmp_path):
    log = tmp_path / "layouts.txt"
    files = {"benchmarks/bench_layout.py": RECORDS_LAYOUT.format(path=str(log)),
             "perfgate.toml": "min_sample_time = 0.002\nmax_time = 25\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    (bench,) = doc["benchmarks"]
    pairs = bench["change"]["pairs"]
    assert [p["layout"] for p in pairs] == [layouts.of_pair(j) for j in range(len(pairs))]
    assert len(pairs) >= 2
    # every set-up ran in its pair's layout, each side with that layout's pad of its own
    seen = [tuple(map(int, line.split())) for line in log.read_text().split("\n") if line]
    pads = {layout: {pad for got, pad in seen if got == layout} for layout in {p["layout"] for p in pairs}}
    assert all(1 <= len(p) <= 2 and 0 not in p for p in pads.values())
    assert len(set().union(*pads.values())) > 2
    # both sides entered every pair's rounds after the same calls, warmed up
    assert all(p["warmup"]["calls"]["base"] == p["warmup"]["calls"]["head"] for p in pairs)
    assert "servers per side" in doc["environment"]["worker"]["isolation"]
