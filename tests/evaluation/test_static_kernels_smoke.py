"""evaluation/static_kernels_hand.py, the hand check of issue 49, on a tiny kernel of our own
(tests/fixtures/static_kernels/tiny_kernel.py): it compiles for sm_90 with no GPU, cuobjdump and
ptxas's own log agree on registers and stack, and the source loader keeps line numbers."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "static_kernels" / "tiny_kernel.py"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hand():
    return _load(ROOT / "evaluation" / "static_kernels_hand.py", "static_kernels_hand_smoke")


def test_the_signature_follows_the_launch_rules(hand):
    kernel = _load(FIXTURE, "tiny_kernel_sig").tiny_scaled_add
    spec = {"ptr_type": "*fp16", "constexprs": {"BLOCK": 256, "USE_ALPHA": True, "y_ptr": "None"}}
    signature, constexprs = hand.build_signature(kernel, spec)
    assert signature == {"x_ptr": "*fp16", "y_ptr": "constexpr", "out_ptr": "*fp16", "n": "i32",
                         "alpha": "i32", "BLOCK": "constexpr", "USE_ALPHA": "constexpr"}
    assert constexprs == {"y_ptr": None, "BLOCK": 256, "USE_ALPHA": True}
    # a float given for a plain argument is a runtime scalar: fp32 as eager Triton, fp64 as Inductor
    inductor = dict(spec, constexprs=dict(spec["constexprs"], alpha=0.5), float_type="fp64")
    assert hand.build_signature(kernel, inductor)[0]["alpha"] == "fp64"


def test_the_source_loader_keeps_kernels_and_line_numbers(hand):
    text = FIXTURE.read_text()
    reduced = hand._triton_only(text)
    assert len(reduced.splitlines()) == len(text.splitlines())
    assert "UNUSED_HOST_VALUE" not in reduced and "SCALE: tl.constexpr" in reduced
    for number, line in enumerate(reduced.splitlines()):
        assert line in ("", text.splitlines()[number])


def test_a_tiny_kernel_compiles_for_sm_90_and_the_tools_agree(hand, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9's default, said (as the worker does)
    copy = tmp_path / "tiny_kernel.py"
    shutil.copy(FIXTURE, copy)
    kernel = _load(copy, "tiny_kernel_compile").tiny_scaled_add
    spec = {"ptr_type": "*fp32", "types": {"alpha": "fp32"},
            "constexprs": {"BLOCK": 1024, "USE_ALPHA": True}, "num_warps": 4}
    row = hand.compile_one(kernel, spec, 90, str(tmp_path))
    assert "error" not in row, row
    assert row["regs"] > 0
    # cuobjdump's REG/STACK are ptxas's own numbers (the driver's n_regs come from the same)
    assert (row["regs"], row["stack"]) == (row["ptxas_regs"], row["ptxas_stack"])
    assert row["spill_stores"] == row["spill_loads"] == row["local"] == 0
    # Triton asks for dynamic shared memory at launch; the cubin declares no static shared memory
    assert row["shared_static"] == 0 and row["meta_shared"] >= 0
    assert len(row["cubin_sha256"]) == len(row["sass_sha256"]) == 64
    # a second compile of the same specialisation is cold again (ptxas ran: its log was read)
    again = hand.compile_one(kernel, spec, 90, str(tmp_path))
    assert again["ptxas_regs"] == row["ptxas_regs"] and again["sass_sha256"] == row["sass_sha256"]


def test_the_comparison_reads_the_expected_shape_and_counts_misses(tmp_path):
    """evaluation/static_kernels.py's adapter and counts on a made-up product answer; and its
    exit 2 while `runner.cli kernels` does not exist."""
    compare = _load(ROOT / "evaluation" / "static_kernels.py", "static_kernels_smoke")
    side = {"registers": 56, "stack_bytes": 0, "shared_bytes": 32, "cubin_sha256": "a" * 64}
    payload = {"kernels": [
        {"name": "k1", "file": "ops/a.py", "arch": "sm_90", "changed": True,
         "config": {"num_warps": 8, "num_stages": 3, "constexprs": {"BLOCK_SIZE": 4096}},
         "base": side, "head": dict(side, registers=60)},
        {"name": "k2", "file": "ops/a.py", "arch": "sm_90", "changed": True, "config": {},
         "base": None, "head": side},
    ]}
    rows = compare.product_rows(payload)
    case = {"id": "c", "kernels_changed": ["ops/a.py::k1", "ops/b.py::k3 (new)"]}
    found = compare.detection(case, rows)
    assert found["misses"] == ["ops/b.py::k3"] and found["false_changed"] == ["ops/a.py::k2"]
    hand = [{"case": "c", "kernel": "k1", "arch": "sm_90", "side": side_name, "config": "x",
             "num_warps": 8, "num_stages": 3, "constexprs": {"BLOCK_SIZE": 4096},
             "regs": regs, "stack": 0, "meta_shared": 32}
            for side_name, regs in (("base", 56), ("head", 61))]
    numbers = compare.numbers("c", hand, rows)
    assert numbers["agree"] == 1 and len(numbers["differ"]) == 1
    assert numbers["differ"][0]["product"]["regs"] == 60
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT))
    if not compare.command_exists(env):
        assert compare.main(["--mirrors", str(tmp_path), "--hand", str(tmp_path / "none")]) == 2
