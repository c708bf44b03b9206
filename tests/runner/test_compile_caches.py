"""Where a worker process's compilers keep what they compiled (runner.worker.caches, GPU review
#23): a side's processes share one Triton cache for the compare, base and head never one; a
torch.compile keeps its own cold caches in every process. Pure parts here, a real Triton in a
subprocess, and one real compare whose benchmark compiles a real Triton kernel (no GPU needed:
``triton.compile`` for an explicit sm_90 target)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.worker import caches
from testkit.gitrepo import make_repo


def test_a_side_folder_becomes_tritons_home_and_torch_compile_keeps_a_fresh_cache():
    env = caches.cache_env("/side", "/fresh", "3.9.0", {"HOME": "/home/ci"})
    # Triton's own default cache ($TRITON_HOME/.triton/cache) is the side's; TRITON_CACHE_DIR left
    # unset, so that inductor puts its kernels in its own (fresh) cache; Triton's dump and
    # override folders stay where they were
    assert env == {"TORCHINDUCTOR_CACHE_DIR": "/fresh", "TRITON_HOME": "/side",
                   "TRITON_CACHE_DIR": None, "TRITON_DUMP_DIR": "/home/ci/.triton/dump",
                   "TRITON_OVERRIDE_DIR": "/home/ci/.triton/override"}
    named = {"HOME": "/home/ci", "TRITON_OVERRIDE_DIR": "/mine"}
    assert "TRITON_OVERRIDE_DIR" not in caches.cache_env("/side", "/fresh", "3.9.0", named)


def test_without_a_side_folder_or_with_a_triton_before_triton_home_every_process_is_cold():
    fresh = {"TORCHINDUCTOR_CACHE_DIR": "/fresh",
             "TRITON_CACHE_DIR": os.path.join("/fresh", "triton")}
    assert caches.cache_env(None, "/fresh", "3.9.0") == fresh
    assert caches.cache_env("/side", "/fresh", "2.3.1") == fresh  # TRITON_HOME unknown there
    assert caches.cache_env("/side", "/fresh", None) == fresh  # no Triton installed


_PROBE = """
import json, os, sys
from runner.worker import caches
side = sys.argv[1]
seen = []
for _ in range(2):
    fresh = caches.isolate_compile_caches(side)
    import triton
    from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    seen.append({"fresh": fresh, "triton": triton.knobs.cache.dir, "inductor": triton_cache_dir(0)})
print(json.dumps(seen))
"""


def test_real_triton_reads_the_side_folder_and_inductor_its_process_own(tmp_path):
    side = tmp_path / "side"
    side.mkdir()
    # the runner's own TRITON_CACHE_DIR is not used
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "runners-own")}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(side)], capture_output=True, text=True,
                         env=env, check=True, cwd=Path(__file__).resolve().parents[2])
    first, second = json.loads(out.stdout.strip().splitlines()[-1])
    try:
        assert first["triton"] == second["triton"] == str(side / ".triton" / "cache")
        assert first["fresh"] != second["fresh"]
        for one in (first, second):
            # torch.compile's kernels: cold, the process's own
            assert one["inductor"].startswith(one["fresh"])
    finally:
        for one in (first, second):
            caches.remove_compile_caches(one["fresh"])


COMPILES_A_KERNEL = """
    import os
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource


    @triton.jit
    def add(x, y, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(x + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


    def bench_compiles(device):
        folder = triton.knobs.cache.dir
        before = len(os.listdir(folder)) if os.path.isdir(folder) else 0
        source = ASTSource(add, {{"x": "*fp32", "y": "*fp32", "n": "i32"}},
                           constexprs={{"BLOCK": 1024}})
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
        compiled = len(os.listdir(folder)) > before
        with open({path!r}, "a") as fh:
            fh.write(f"{side} {{os.getpid()}} {{folder}} {{compiled}}\\n")
        return lambda: sum(range(3000))
"""


@pytest.mark.slow
def test_a_sides_processes_reuse_one_triton_cache_and_the_sides_never_share_one(tmp_path):
    from runner.cli.main import main

    log = tmp_path / "compiles.txt"
    files = {"benchmarks/bench_kernel.py": COMPILES_A_KERNEL.format(path=str(log), side="base"),
             "perfgate.toml": "min_sample_time = 0.002\nmax_time = 20\n"}
    head = {"benchmarks/bench_kernel.py": COMPILES_A_KERNEL.format(path=str(log), side="head")}
    repo = make_repo(tmp_path / "repo", files, head)
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--out", str(out), "--no-profile", "--quiet"]) == 0
    (bench,) = json.loads((out / "results.json").read_text())["benchmarks"]
    assert bench["change"]["process_pairs"] >= 2
    rows = [line.split() for line in log.read_text().splitlines() if line]
    by_side = {side: [(pid, folder, compiled) for s, pid, folder, compiled in rows if s == side]
               for side in ("base", "head")}
    assert all(len({pid for pid, _, _ in seen}) >= 2 for seen in by_side.values())
    folders = {side: {folder for _, folder, _ in seen} for side, seen in by_side.items()}
    assert all(len(f) == 1 for f in folders.values())  # every process of a side: one folder
    assert folders["base"].isdisjoint(folders["head"])  # the same kernel: head compiled its own
    for seen in by_side.values():  # compiled by a side's first process; its others found it there
        assert [compiled for _, _, compiled in seen] == ["True"] + ["False"] * (len(seen) - 1)
    assert not any(Path(f).exists() for f in folders["base"] | folders["head"])  # removed after
