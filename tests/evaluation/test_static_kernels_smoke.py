"""evaluation/static_kernels_hand.py, the hand check of issue 49, on a tiny kernel of our own
(tests/fixtures/static_kernels/tiny_kernel.py): it compiles for sm_90 with no GPU, cuobjdump and
ptxas's own log agree on registers and stack, and the source loader (the product's reduction,
runner.kernels.find.triton_only) keeps line numbers."""

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


def test_the_source_loader_keeps_kernels_and_line_numbers():
    from runner.kernels.find import triton_only  # the product's, which the hand check uses

    text = FIXTURE.read_text()
    reduced = triton_only(text)
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


def test_the_comparison_reads_the_products_json_and_counts_misses():
    """evaluation/static_kernels.py's adapter and counts on a product answer of the shape
    ``perfgate kernels --json`` writes (``kernels[].rows[]``, a side's ``spec`` label)."""
    compare = _load(ROOT / "evaluation" / "static_kernels.py", "static_kernels_smoke")
    side = {"registers": 56, "stack": 0, "shared_dynamic": 32, "sha256": "a" * 64}
    payload = {"kernels": [
        {"name": "k1", "path": "ops/a.py", "changed": True, "why": ["source"],
         "rows": [{"spec": "BLOCK_SIZE=4096 num_warps=8 num_stages=3", "arch": "sm_90",
                   "base": side, "head": dict(side, registers=60)}]},
        {"name": "k2", "path": "ops/a.py", "changed": True, "why": ["launch"],
         "rows": [{"spec": "num_warps=4 num_stages=3", "arch": "sm_90", "base": None,
                   "head": side}]},
    ]}
    rows = compare.product_rows(payload)
    assert rows[0]["specs"]["head"] == {"constexprs": {"BLOCK_SIZE": "4096"}, "num_warps": 8,
                                        "num_stages": 3, "pointers": "*fp32", "types": {}}
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
    # the hand check compiled bf16 pointers, the product fp32 ones (its label says nothing):
    # not the same specialisation, so not compared; a row labelled `*bf16` is
    bf16 = {"id": "c", "kernels": [{"name": "k1", "config": "x", "ptr_type": "*bf16"}]}
    assert compare.numbers("c", hand, rows, bf16)["hand_rows_without_twin"] == 2
    payload["kernels"][0]["rows"][0]["spec"] += " *bf16"
    assert compare.numbers("c", hand, compare.product_rows(payload), bf16)["agree"] == 1
    # findings against the hand check's growths, by kernel and arch: k1 grew in both (named)
    rows[0]["worse"] = ["registers"]
    rows[1]["worse"] = ["registers"]  # the product alone: unconfirmed
    hand.append(dict(hand[0], kernel="k9", arch="sm_80"))
    hand.append(dict(hand[1], kernel="k9", arch="sm_80", stack=16))
    assert compare.findings_vs_hand("c", hand, rows) == {
        "named": ["k1 sm_90"], "missed": ["k9 sm_80"], "unconfirmed": ["k2 sm_90: registers"],
        "withheld": []}
    # a row withheld (base and head guessed differently) is not named: k1's growth is missed
    rows[0]["withheld"] = rows[1]["withheld"] = "not a finding: base and head were guessed ..."
    assert compare.findings_vs_hand("c", hand, rows) == {
        "named": [], "missed": ["k1 sm_90", "k9 sm_80"], "unconfirmed": [],
        "withheld": ["k1 sm_90: a growth in the hand check", "k2 sm_90: no growth in the hand "
                     "check"]}


def test_the_products_compile_worker_equals_the_hand_check_on_one_specialisation(
        hand, tmp_path, monkeypatch):
    """evaluation/static_kernels_same_spec.py's worker: the product's compile path
    (runner.kernels.worker) at the hand check's specialisation gives the hand check's registers,
    stack and shared memory (unaligned pointers, as the hand check compiles)."""
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    copy = tmp_path / "tiny_kernel_same.py"
    shutil.copy(FIXTURE, copy)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT / "evaluation"))
    same = _load(ROOT / "evaluation" / "static_kernels_same_spec.py", "static_same_spec_smoke")
    spec = {"name": "tiny_scaled_add", "module": "tiny_kernel_same", "ptr_type": "*fp32",
            "types": {"alpha": "fp32"}, "constexprs": {"BLOCK": 1024, "USE_ALPHA": True},
            "num_warps": 4, "archs": [90]}
    [row] = same.worker([spec])
    kernel = _load(copy, "tiny_kernel_same_hand").tiny_scaled_add
    mine = hand.compile_one(kernel, spec, 90, str(tmp_path))
    assert row["plain"] == {"regs": mine["regs"], "stack": mine["stack"],
                            "shared": mine["meta_shared"]}


def test_the_hand_check_at_captured_launches_compiles_what_a_script_launches(tmp_path):
    """evaluation/static_kernels_captured.py on a repository of our own: a script launches the
    tiny kernel with CPU tensors (nothing runs: the stand-in driver), base at BLOCK=128 and head
    at BLOCK=4096 with one warp, so head's launch needs more registers: the hand check pairs
    the two launches, compiles both for sm_80 and sm_90, and shows the growth; the product's
    rows are then judged against it (``static_kernels.py --captured``)."""
    import sys

    from testkit.gitrepo import make_repo

    captured = _load(ROOT / "evaluation" / "static_kernels_captured.py", "captured_smoke")
    compare = _load(ROOT / "evaluation" / "static_kernels.py", "static_kernels_smoke2")
    script = ("import torch\nfrom pkg.tiny_kernel import tiny_scaled_add\n"
              "x = torch.zeros(8192)\n"
              "tiny_scaled_add[(1,)](x, x, torch.empty_like(x), 8192, 2.0, BLOCK={}, "
              "USE_ALPHA=True, num_warps={})\n")
    repo = make_repo(tmp_path / "repo", {"src/pkg/__init__.py": "",
                                         "src/pkg/tiny_kernel.py": FIXTURE.read_text(),
                                         "launch.py": script.format(128, 4)},
                     {"launch.py": script.format(4096, 1)})
    case = {"id": "tiny", "base": "base", "head": "head", "capture": f"{sys.executable} launch.py"}
    result = captured.check_case(case, repo, tmp_path / "scratch", timeout=600)
    assert result["launches"] == {"base": 1, "head": 1}
    by_arch = {r["arch"]: r for r in result["rows"]}
    assert sorted(by_arch) == ["sm_80", "sm_90"]
    assert all(r["head"]["regs"] > r["base"]["regs"] for r in by_arch.values())
    assert result["grew"] == ["tiny_scaled_add sm_80", "tiny_scaled_add sm_90"]
    # a product that compiled the same launches with the same numbers: named, equal
    label = "BLOCK={} USE_ALPHA=True num_warps={} num_stages=3"
    rows = compare.product_rows({"kernels": [{"name": "tiny_scaled_add", "path": "p",
                                              "changed": True, "rows": [
        {"spec": f"{label.format(128, 4)} → {label.format(4096, 1)}", "arch": arch,
         "worse": ["registers"], "base": {"registers": r["base"]["regs"], "stack": 0,
                                          "shared_dynamic": 0},
         "head": {"registers": r["head"]["regs"], "stack": 0, "shared_dynamic": 0}}
        for arch, r in by_arch.items()]}]})
    judged = compare.versus_captured(result, rows)
    assert (judged["agree"], judged["differ"]) == (4, [])
    assert judged["growths"]["named"] == ["tiny_scaled_add sm_80", "tiny_scaled_add sm_90"]


def test_the_launch_script_calls_the_repositorys_launcher_with_unsloth_zoo_stood_in(tmp_path):
    """evaluation/static_kernels/launch.py fp8, in a tree whose ``unsloth/kernels/fp8.py``
    imports the three ``unsloth_zoo`` names as unsloth's does and records the call it gets."""
    import subprocess
    import sys

    kernels = tmp_path / "unsloth" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "fp8.py").write_text(
        "import json\n"
        "from unsloth_zoo.utils import Version\n"
        "from unsloth_zoo.log import logger\n"
        "from unsloth_zoo.temporary_patches.common import torch_compile\n"
        "def weight_dequant_block(x, s, block_size=128, dtype=None):\n"
        "    print(json.dumps([str(x.dtype), list(x.shape), list(s.shape), block_size,\n"
        "                      str(dtype), Version('1.2') > Version('1.10')]))\n")
    script = ROOT / "evaluation" / "static_kernels" / "launch.py"
    done = subprocess.run([sys.executable, str(script), "fp8"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        '["torch.float8_e4m3fn", [4096, 4096], [32, 32], 128, "torch.bfloat16", false]')
    unknown = subprocess.run([sys.executable, str(script), "matmul"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600)
    assert unknown.returncode == 1 and "unknown launch 'matmul'" in unknown.stderr
