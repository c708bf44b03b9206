"""The static pass with real Triton: real kernels compiled for sm_80/sm_90 without a GPU, in a
real git repository made here (base and head commits), through ``perfgate kernels``.

The kernels are written here (this project's own, MIT): a vector add, a row normalisation whose
``BLOCK=8192, num_warps=1`` launch holds 8192/32 fp32 values a thread live across a reduction
(255 registers and a spilled stack on sm_80 and sm_90; ``BLOCK=1024`` needs 80 and no stack),
and a matmul tile (slow lane) whose 256x256x64 fp16 variant spills on sm_90.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from runner.cli.main import main
from runner.kernels.analysis import analyse
from testkit.gitrepo import make_repo

triton = pytest.importorskip("triton")

OPS = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def norm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=m, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(out_ptr + tl.program_id(0) * n + offs, x / s, mask=m)


def add(x, y, out):
    add_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)


def norm(x, out):
    norm_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024, num_warps=1)
'''


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PERFGATE_KERNEL_CACHE", str(folder))
    return folder


def _repo(tmp_path: Path, head_ops: str) -> Path:
    return make_repo(tmp_path / "repo", {"lib/__init__.py": "", "lib/ops.py": OPS},
                     {"lib/ops.py": head_ops})


@pytest.mark.slow
def test_kernels_command_reports_the_spill_head_brought(tmp_path, cache, capsys):
    repo = _repo(tmp_path, OPS.replace("BLOCK=1024, num_warps=1", "BLOCK=8192, num_warps=1"))
    out = tmp_path / "kernels.json"
    argv = ["kernels", "--repo", str(repo), "--base", "base", "--head", "head", "--arch", "sm_80",
            "--arch", "sm_90", "--json", str(out)]
    t0 = time.monotonic()
    assert main(argv) == 0
    first_s = time.monotonic() - t0
    section = json.loads(out.read_text())
    assert section["unchanged"] == 1  # add_kernel: neither its source nor its launch changed
    (kernel,) = section["kernels"]
    assert (kernel["name"], kernel["changed"], kernel["why"]) == (
        "norm_kernel", True, ["specialisations", "launch site"])
    rows = {r["arch"]: r for r in kernel["rows"]}
    for arch in ("sm_80", "sm_90"):
        base, head = rows[arch]["base"], rows[arch]["head"]
        assert base["stack"] == 0 and head["stack"] > 0 and head["registers"] == 255
        assert head["local_stores"] > 0 and base["local_stores"] == 0
        assert head["occupancy"]["blocks"] < base["occupancy"]["blocks"]
        assert rows[arch]["worse"] == ["registers", "spills", "occupancy"]
        assert rows[arch]["how"] == "launch site" and not rows[arch]["identical"]
    (finding,) = section["findings"]
    # the pointers' dtype and n are guessed (alike on both sides): the finding says so
    assert finding["summary"].startswith(
        "at a guessed specialisation (x_ptr, out_ptr, n guessed, alike on both sides; the real "
        "launch may compile otherwise), head's `norm_kernel` uses 255 registers/thread and spills")
    printed = capsys.readouterr().out
    assert "norm_kernel: changed: true (specialisations, launch site)" in printed
    assert section["jobs"] == {"compiled": 4, "cached": 0, "failed": 0, "skipped": 0}
    t0 = time.monotonic()
    assert main(argv) == 0  # a rerun compiles nothing
    again = json.loads(out.read_text())
    assert again["jobs"]["cached"] == 4 and again["kernels"] == section["kernels"]
    print(f"first run {first_s:.2f} s, cached rerun {time.monotonic() - t0:.2f} s")


@pytest.mark.slow
def test_a_head_that_no_longer_compiles_is_a_finding(tmp_path, cache, monkeypatch):
    """And base's numbers are a hand compile's, to the cubin's hash (about 6 s: two compiles
    and Triton imported here too)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    base, head = tmp_path / "base", tmp_path / "head"
    # head's own source, not base's: both sides' modules are named lib.ops (a worker a side)
    broken = OPS.replace("* BLOCK + tl.arange(0, BLOCK)", "* BLOCK + tl.arange(0, BLOCK - 1)")
    assert broken != OPS
    for root, text in ((base, OPS), (head, broken)):
        (root / "lib").mkdir(parents=True)
        (root / "lib" / "__init__.py").write_text("")
        (root / "lib" / "ops.py").write_text(text)
    section = analyse({"base": base, "head": head}, ["sm_80"])
    (kernel,) = section["kernels"]
    (row,) = kernel["rows"]
    assert row["base"]["registers"] > 0 and row["head"]["stage"] == "compile"
    assert "power of 2" in row["head"]["error"]
    (finding,) = section["findings"]
    assert finding["worse"] == ["does not compile"]
    assert finding["summary"].startswith("at a guessed specialisation (x_ptr, y_ptr, out_ptr, n")
    assert "head's `add_kernel` no longer compiles on sm_80" in finding["summary"]
    assert row["base"] == {**row["base"], **_hand_compile(base / "lib" / "ops.py", "sm_80")}


def _hand_compile(path: Path, arch: str) -> dict:
    """add_kernel compiled here, outside perfgate, as its launch site asks (BLOCK=1024, Triton's
    default 4 warps and 3 stages, 16-byte aligned pointers), read with the wheel's cuobjdump."""
    import hashlib
    import importlib.util
    import subprocess

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("hand_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                 "BLOCK": "constexpr"}
    src = ASTSource(module.add_kernel, signature, constexprs={"BLOCK": 1024},
                    attrs={(i,): [["tt.divisibility", 16]] for i in range(3)})
    compiled = triton.compile(src, target=GPUTarget("cuda", int(arch[3:]), 32),
                              options={"num_warps": 4, "num_stages": 3})
    cubin = path.parent / "hand.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    text = subprocess.run([str(tool), "--dump-resource-usage", str(cubin)], capture_output=True,
                          text=True, check=True).stdout
    fields = dict(f.split(":") for f in text.split("Function add_kernel:")[1].split()[:4])
    return {"registers": int(fields["REG"]), "stack": int(fields["STACK"]),
            "shared_static": int(fields["SHARED"]), "local": int(fields["LOCAL"]),
            "shared_dynamic": compiled.metadata.shared,
            "sha256": hashlib.sha256(compiled.asm["cubin"]).hexdigest()}


def test_a_kernel_neither_imported_nor_loaded_from_its_triton_code_costs_itself_only(
        tmp_path, cache):
    base, head = tmp_path / "base", tmp_path / "head"
    # head's module does not import, and its reduced source fails too: a constexpr global made
    # of a plain one (SIZE is not Triton code: blanked)
    head_text = OPS.replace("BLOCK=1024)", "BLOCK=2048)") + (
        "\nimport no_such_module_xyz\nSIZE = 64\nDEFAULT: tl.constexpr = tl.constexpr(SIZE)\n")
    for root, text in ((base, OPS), (head, head_text)):
        (root / "k").mkdir(parents=True)
        (root / "k" / "ops.py").write_text(text)  # not a package: imported from its file
    section = analyse({"base": base, "head": head}, ["sm_90"])
    (row,) = section["kernels"][0]["rows"]
    assert row["base"]["registers"] > 0 and "loaded" not in row["base"]
    assert row["head"]["stage"] == "import"
    assert "No module named 'no_such_module_xyz'" in row["head"]["error"]
    assert "reduced to its Triton code: NameError: name 'SIZE' is not defined" in (
        row["head"]["error"])
    assert section["findings"] == [] and section["jobs"]["failed"] == 1


def test_a_package_that_does_not_import_is_compiled_from_its_kernels_triton_code(
        tmp_path, cache):
    """unsloth wants a GPU at import, flash-attention its CUDA extension: the kernel's own file,
    reduced to its Triton code, compiles to what importing it would give."""
    base, head = tmp_path / "base", tmp_path / "head"
    for root, text in ((base, OPS), (head, OPS.replace("BLOCK=1024)", "BLOCK=2048)"))):
        (root / "lib").mkdir(parents=True)
        (root / "lib" / "__init__.py").write_text(
            "import no_such_gpu_module  # raises ImportError here\n")
        (root / "lib" / "ops.py").write_text(text)
    section = analyse({"base": base, "head": head}, ["sm_80"])
    (kernel,) = [k for k in section["kernels"] if k["name"] == "add_kernel"]
    (row,) = kernel["rows"]
    for side in ("base", "head"):
        assert row[side]["loaded"] == "source" and row[side]["registers"] > 0
        assert row[side]["import_error"] == (
            "ModuleNotFoundError: No module named 'no_such_gpu_module'")
    assert section["jobs"]["failed"] == 0
    # the same resources as the file imported and compiled by hand (not the cubin's hash: the
    # in-process compile may be Triton's cached cubin of another test's file, another line table)
    hand = _hand_compile(base / "lib" / "ops.py", "sm_80")
    del hand["sha256"]
    assert row["base"] == {**row["base"], **hand}
    assert (base / "lib" / "ops.py").read_text() == OPS  # the file itself is left as it was
    from runner.kernels.words import lines
    assert ("  head: loaded from its source reduced to its Triton code (triton imports, "
            "@triton.jit functions, tl.constexpr globals): its module did not import: "
            "ModuleNotFoundError: No module named 'no_such_gpu_module'") in lines(section)


MATMUL = '''
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, sam, sak, sbk, sbn, scm, scn,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK * sak
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))


def matmul(a, b, c):
    a = torch.empty((512, 512), dtype=torch.float16)
    b = torch.empty((512, 512), dtype=torch.float16)
    c = torch.empty((512, 512), dtype=torch.float16)
    mm[(2, 2)](a, b, c, 512, 512, 1, 512, 1, 512, 1, BM=64, BN=64, BK=64)
'''


@pytest.mark.slow
def test_a_256x256x64_fp16_tile_spills_on_sm_90(tmp_path, cache):
    """ptxas takes about a minute on it on a 2-CPU machine: the slow lane."""
    repo = make_repo(tmp_path / "repo", {"lib/__init__.py": "", "lib/ops.py": MATMUL},
                     {"lib/ops.py": MATMUL.replace("BM=64, BN=64", "BM=256, BN=256")})
    section = analyse_repo(repo)
    (kernel,) = [k for k in section["kernels"] if k["name"] == "mm"]
    (row,) = kernel["rows"]
    assert row["base"]["stack"] == 0 and row["head"]["stack"] > 0
    assert row["head"]["registers"] == 255 and row["how"] == "launch site"
    assert row["guessed"] == [] and row["head"]["shared_dynamic"] > row["base"]["shared_dynamic"]
    assert section["findings"][0]["worse"][:2] == ["registers", "spills"]


def analyse_repo(repo: Path) -> dict:
    """The static pass over the branches ``base`` and ``head`` of ``repo``, for sm_90."""
    from runner.pipeline.revisions import Checkouts
    from testkit.gitrepo import git

    with Checkouts(repo, repo / ".perfgate") as c:
        trees = {s: c.add(s, s, git(repo, "rev-parse", s)).path for s in ("base", "head")}
        return analyse(trees, ["sm_90"])


def test_without_triton_the_command_says_so(monkeypatch, capsys):
    import runner.cli.kernels as cli
    monkeypatch.setattr(cli, "triton_version", lambda: None)
    assert main(["kernels", "--base", "a", "--head", "b"]) == 2
    assert "Triton is not installed" in capsys.readouterr().err


def _compare_affected(tmp_path: Path, head_ops: str, base_ops: str = OPS) -> tuple[dict, Path]:
    """``perfgate compare --affected`` on a CPU (sm_90 configured) of a repository whose one
    benchmark imports the kernels' file (its code map sees it), ``lib/ops.py`` being
    ``base_ops`` then ``head_ops``: results.json and the output folder. ``perfgate kernels``
    fills the cache first (the compare's static pass gets 10 % of max_time, 3 s)."""
    work = "\n\ndef work():\n    return sum(range(2000))\n"
    bench = '''
        from lib import ops


        def bench_work(device):
            return lambda: ops.work()
    '''
    repo = make_repo(tmp_path / "repo", {"lib/__init__.py": "", "lib/ops.py": base_ops + work,
                                         "benchmarks/bench_k.py": bench,
                                         "perfgate.toml": 'gpu_arch = ["sm_90"]\nmax_time = 30\n'},
                     {"lib/ops.py": head_ops + work})
    assert main(["kernels", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--arch", "sm_90"]) == 0
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out",
                 str(out), "--no-profile", "--affected", "--quiet"]) == 0
    return json.loads((out / "results.json").read_text()), out


@pytest.mark.slow
def test_a_compare_records_the_section_and_hints_the_benchmark_that_runs_the_kernel(
        tmp_path, cache):
    """Head's launch spills; the benchmark's verdict stays the timing's own, the hint beside it."""
    doc, out = _compare_affected(tmp_path, OPS.replace("BLOCK=1024, num_warps=1",
                                                       "BLOCK=8192, num_warps=1"))
    section = doc["kernels"]
    assert section["ran"] and section["archs"] == ["sm_90"]
    assert section["jobs"] == {"compiled": 0, "cached": 2, "failed": 0, "skipped": 0}
    assert [k["name"] for k in section["kernels"]] == ["norm_kernel"]
    (finding,) = section["findings"]
    (entry,) = doc["benchmarks"]
    assert entry["hints"][0]["kind"] == "register_pressure"
    assert entry["hints"][0]["summary"].startswith(finding["summary"])
    assert "uses 255 registers/thread" in (out / "report.md").read_text()


@pytest.mark.slow
def test_a_kernel_edit_that_compiles_alike_takes_no_benchmark_time(tmp_path, cache):
    """Head renames a kernel's local variable: the same cubins on sm_90, so the benchmark that
    runs that file is skipped, said as such."""
    known = OPS.replace("    add_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)",
                        "    x = torch.empty(4096, dtype=torch.float32)\n"
                        "    add_kernel[(1,)](x, x, x, 4097, BLOCK=1024)")  # nothing guessed
    renamed = known.replace("    m = offs < n\n    tl.store(out_ptr + offs, tl.load(x_ptr + offs, "
                            "mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)",
                            "    inside = offs < n\n    tl.store(out_ptr + offs, tl.load(x_ptr "
                            "+ offs, mask=inside) + tl.load(y_ptr + offs, mask=inside), "
                            "mask=inside)")
    assert known != OPS and renamed != known
    doc, out = _compare_affected(tmp_path, renamed, base_ops=known)
    assert list(doc["kernels"]["same_code"]) == ["lib/ops.py"]
    assert doc["selection"]["skipped"] == [{"name": "bench_work", "file": "benchmarks/bench_k.py",
                                            "reason": "same machine code"}]
    assert "same machine code (not measured in this run)" in (out / "report.md").read_text()


def test_the_command_reads_the_base_s_gpu_arch_and_refuses_an_unknown_one(tmp_path, cache,
                                                                           capsys):
    repo = make_repo(tmp_path / "repo", {"lib/__init__.py": "", "lib/ops.py": OPS,
                                         "perfgate.toml": 'gpu_arch = ["sm_86"]\n'},
                     {"notes.md": "no kernel changed\n"})
    out = tmp_path / "k.json"
    assert main(["kernels", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--json", str(out)]) == 0
    section = json.loads(out.read_text())
    assert section["archs"] == ["sm_86"] and section["kernels"] == [] and section["unchanged"] == 2
    assert main(["kernels", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--arch", "sm_75"]) == 2
    assert "--arch sm_75: not one of sm_80, sm_86, sm_89, sm_90" in capsys.readouterr().err


@pytest.mark.slow
def test_a_crashing_or_hanging_compile_costs_its_job_only(tmp_path):
    """A worker that dies and one that hangs (8 s) each cost their job; the next job gets a fresh
    worker; a job not begun by the deadline is skipped."""
    from runner.kernels.compile import run_jobs

    def job(name: str, text: str) -> dict:
        (tmp_path / f"{name}.py").write_text(text)
        return {"id": name, "paths": [str(tmp_path)], "module": None,
                "file": str(tmp_path / f"{name}.py"), "kernel": "k", "signature": {},
                "constexprs": {}, "aligned": [], "num_warps": 4, "num_stages": 3,
                "arch": "sm_90"}

    jobs = [job("dies", "import os\nos._exit(3)\n"), job("hangs", "import time\ntime.sleep(60)\n"),
            job("missing", "import no_such_module_xyz\n")]
    answers = run_jobs(jobs, tmp_path / "triton", timeout=8)
    assert answers["dies"]["stage"] == "crash"
    assert answers["hangs"] == {"ok": False, "stage": "timeout",
                                "error": "the compiler ran past 8 s and was stopped"}
    assert answers["missing"]["stage"] == "import"
    assert "no_such_module_xyz" in answers["missing"]["error"]
    assert run_jobs(jobs[2:], tmp_path / "triton", deadline=0)["missing"]["stage"] == "skipped"


def test_a_captured_dtype_or_left_out_constexpr_is_kept_by_name():
    """Liger's ``X_dtype: tl.constexpr`` reaches the hook as a Triton dtype object and an optional
    pointer left out as None; dropping them (as the capture once did) left the kernel with no
    value for them, and every captured launch of Liger's rms_norm backward failed to compile
    ("'NoneType' object has no attribute 'scalar'"). A function value is not recorded."""
    import triton.language as tl

    from runner.kernels.capture import record
    from runner.kernels.worker import _dtype

    compile_kwargs = {"name": "k", "num_warps": 4, "num_stages": 3,
                      "signature": {"x_ptr": "*bf16", "X_dtype": "constexpr",
                                    "bias_ptr": "constexpr", "act": "constexpr"},
                      "constants": {(1,): tl.bfloat16, (2,): None, (3,): len}, "configs": [{}]}
    r = record(compile_kwargs, ["x_ptr", "X_dtype", "bias_ptr", "act"], "/repo/ops.py")
    assert r["constexprs"] == {"X_dtype": "tl.bfloat16", "bias_ptr": None}
    assert _dtype(r["constexprs"]["X_dtype"]) is tl.bfloat16  # what the worker compiles with


def _captured(tmp_path: Path, base: str, head: str, script: str) -> dict:
    """``perfgate kernels --capture "python launch.py" --arch sm_90`` on a repository whose
    ``lib/ops.py`` is ``base`` then ``head``: the JSON section it writes."""
    repo = make_repo(tmp_path / "repo", {"lib/__init__.py": "", "lib/ops.py": base,
                                         "launch.py": script}, {"lib/ops.py": head})
    out = tmp_path / "k.json"
    assert main(["kernels", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--arch", "sm_90", "--capture", f"{sys.executable} launch.py",
                 "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
def test_launches_captured_on_a_cpu_give_the_specialisations(tmp_path, cache):
    """``--capture``: a script launches the kernels with CPU tensors of fp16 (nothing compiles
    or runs: the stand-in driver) inside ``torch.cuda.device(x.device.index)``, as launchers do
    (a CPU tensor's index is None, which torch itself refuses); the kernels are specialised as
    launched (``how: launch``)."""
    script = '''
        import torch
        from lib import ops

        x = torch.zeros(4096, dtype=torch.float16)
        with torch.cuda.device(x.device.index):
            ops.add(x, x, torch.empty_like(x))
    '''
    head = OPS.replace("x.numel(), BLOCK=1024)", "x.numel(), BLOCK=2048)")
    section = _captured(tmp_path, OPS, head, script)
    launches = {side: c["launches"] for side, c in section["capture"].items()}
    assert launches == {"base": 1, "head": 1}
    (kernel,) = section["kernels"]
    (row,) = kernel["rows"]
    assert (kernel["name"], row["how"], row["guessed"]) == ("add_kernel", "launch", [])
    assert row["spec"] == ("BLOCK=1024 num_warps=4 num_stages=3 *fp16 → BLOCK=2048 num_warps=4 "
                           "num_stages=3 *fp16")
    assert row["base"]["registers"] > 0 and row["head"]["registers"] > 0


@pytest.mark.slow
def test_an_autotuned_launch_on_a_cpu_is_captured_in_every_config(tmp_path, cache):
    """Without a GPU the autotuner's benchmarker is the stand-in driver's: each config is called
    once, captured at the launch's own types and values (fp16 tensors, n = 3000 constant-folded
    where Triton would), so the rows are ``launch``, not configs read from source with guesses
    (Liger #1208's autotuned DyT kernels once captured 0 launches: the driver had no
    benchmarker)."""
    tuned = OPS.replace("@triton.jit\ndef add_kernel", "@triton.autotune(configs=[\n"
                        "    triton.Config({'BLOCK': 256}, num_warps=2),\n"
                        "    triton.Config({'BLOCK': 512}, num_warps=4)], key=['n'])\n"
                        "@triton.jit\ndef add_kernel")
    tuned = tuned.replace("x.numel(), BLOCK=1024)", "x.numel())")
    head = tuned.replace("m = offs < n", "m = (offs < n) & (offs >= 0)", 1)  # add_kernel's
    script = '''
        import torch
        from lib import ops

        x = torch.zeros(3000, dtype=torch.float16)
        ops.add(x, x, torch.empty_like(x))
    '''
    section = _captured(tmp_path, tuned, head, script)
    assert {side: c["launches"] for side, c in section["capture"].items()} == {
        "base": 3, "head": 3}  # two configs tried, then the one chosen again
    (kernel,) = section["kernels"]
    assert [(r["how"], r["guessed"], r["spec"]) for r in kernel["rows"]] == [
        ("launch", [], "BLOCK=256 num_warps=2 num_stages=3 *fp16"),
        ("launch", [], "BLOCK=512 num_warps=4 num_stages=3 *fp16")]


@pytest.mark.slow
def test_a_trace_s_register_pressure_gets_the_compiler_s_spill_where_the_static_pass_has_it(
        tmp_path, cache):
    """GPU review #18: Kineto exports no spills, so a trace's registers-up, occupancy-down,
    time-up is a correlation; for a Triton kernel the static pass compiled (real Triton, sm_90),
    the hint gains the compiler's registers and spill, and the certainty they bring."""
    from runner.kernels.table import CONFIDENCE, attach
    from runner.hints import evidence as hints
    from runner.profile import summaries as trace
    from testkit.synth import H100, repeat

    base, head = tmp_path / "base", tmp_path / "head"
    slow = OPS.replace("BLOCK=1024, num_warps=1", "BLOCK=8192, num_warps=1")
    for root, text in ((base, OPS), (head, slow)):
        (root / "lib").mkdir(parents=True)
        (root / "lib" / "__init__.py").write_text("")
        (root / "lib" / "ops.py").write_text(text)
    section = analyse({"base": base, "head": head}, ["sm_90"])
    (row,) = section["kernels"][0]["rows"]
    regs = row["base"]["registers"], row["head"]["registers"]
    # the trace of one norm_kernel launch per call, as Kineto writes it (Triton names the kernel
    # by its function), with the registers the compiler gave each side
    b, h = (trace.summarize(repeat(lambda t, r=r, us=us: t.kernel(
        "norm_kernel", dur=us, regs=r, grid=(4096, 1, 1), block=(32, 1, 1)), props=H100))
        for r, us in ((regs[0], 40), (regs[1], 90)))
    regression = {"ratio": 2.0, "ci_low": 1.9, "ci_high": 2.1, "p_value": 0.001,
                  "verdict": "regression"}
    found = [{k: v for k, v in x.items() if not k.startswith("_")}
             for x in hints.hints_for(regression, b, h)]
    assert found[0]["kind"] == "register_pressure" and found[0]["confidence"] < CONFIDENCE
    assert "nor whether it spills" in found[0]["summary"]
    entries = [{"name": "bench_norm", "hints": found}]
    attach(entries, section, None)
    (top, *_) = entries[0]["hints"]
    compiler = top["evidence"]["compiler"]
    assert compiler["arch"] == "sm_90" and compiler["head"]["spill_bytes"] > 0
    assert compiler["base"] == {"registers": regs[0], "spill_bytes": 0,
                                "blocks_per_sm": row["base"]["occupancy"]["blocks"]}
    assert f"head {regs[1]} registers/thread and spills" in top["summary"]
    assert top["confidence"] == CONFIDENCE
    assert sum(h["kind"] == "register_pressure" for h in entries[0]["hints"]) == 1


def test_the_compile_is_announced_only_where_there_are_changed_kernels(tmp_path, cache):
    """Issue 47: the demo (no Triton code) printed "compiling the changed Triton kernels"."""
    from types import SimpleNamespace

    from runner.pipeline.kernel_pass import kernel_pass

    class Progress:
        def __init__(self):
            self.said: list[str] = []

        def phase(self, text):
            self.said.append(text)

    def trees(name, base_text, head_text):
        for side, text in (("base", base_text), ("head", head_text)):
            (tmp_path / name / side / "lib").mkdir(parents=True)
            (tmp_path / name / side / "lib" / "ops.py").write_text(text)
        return {side: SimpleNamespace(path=tmp_path / name / side) for side in ("base", "head")}

    plain = Progress()
    section = kernel_pass((), 0.0, trees("plain", "x = 1\n", "x = 2\n"), {}, plain)
    assert section["kernels"] == [] and plain.said == []
    triton_code = Progress()
    changed = OPS.replace("x * x", "x * x * 2.0")
    assert changed != OPS
    section = kernel_pass(("sm_80",), 0.0, trees("triton", OPS, changed), {}, triton_code)
    assert section["kernels"] and triton_code.said == ["compiling the changed Triton kernels"]
