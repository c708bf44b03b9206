"""Real repositories' benchmark scripts, run as they are by the conventions that read them.

A benchmark, not a test: for each project it takes the benchmark scripts from a snapshot of the
repository (a checkout or a bare git directory, as the ``fetch`` tool brings it: nothing fetched is
kept in this repository), makes a one-commit git repository of them, and runs the real ``perfgate
run`` with the project's convention; it prints what was listed, measured, skipped and failed.

The scripts run unmodified. On a machine without a GPU only what needs one is replaced, by small
stand-ins this script writes beside them: the projects' own CUDA/Triton packages (``liger_kernel``,
``sgl_kernel``, ``transformer_engine``) by the same operations written in torch, and, for scripts that
put their tensors on ``"cuda"`` themselves, a shim imported by those stand-ins that creates them on
the CPU (``torch.randn(..., device="cuda")``, ``.to("cuda")``, ``torch.cuda.synchronize``). On a GPU
(``--gpu``) nothing is replaced: the projects' packages must be installed.

- **Liger-Kernel** (``benchmark/scripts/``, Triton ``do_bench`` in ``utils.py`` called from
  ``main()`` over a loop of providers, modes and sizes): ``benchmark_rms_norm.py``,
  ``benchmark_layer_norm.py``;
- **sglang** (``sgl-kernel/benchmark/``, ``perf_report`` grids whose ``x_vals`` ``main()`` fills in,
  ``do_bench_cudagraph``): ``bench_rmsnorm.py``;
- **TransformerEngine** (``benchmarks/linear/``, ``torch.utils.benchmark.Timer``): listed only on a
  CPU (its one case is a 16384×4096×4096 GEMM, 32 times, forward and backward).

Usage::

    python evaluation/real_conventions.py --liger PATH --sglang PATH [--te PATH] [--max-time 120]
    python evaluation/real_conventions.py --smoke   # the tests' fixture scripts, nothing read from elsewhere (CI)

The last line: ``liger_listed=.. liger_measured=.. liger_skipped=.. liger_failed=.. sglang_listed=.. ...``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from io import BytesIO
from pathlib import Path

from harness import ROOT, perfgate  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import commit, git  # noqa: E402

#: Creates tensors the scripts put on "cuda" on the CPU instead; imported by the stand-ins.
CPU_SHIM = '''
"""Tensors a script puts on "cuda" are made on the CPU (a machine without a GPU; evaluation only)."""
import functools

import torch


def _cpu(device):
    return "cpu" if device is not None and str(device).startswith("cuda") else device


def _factory(fn):
    @functools.wraps(fn)
    def make(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return fn(*args, **kwargs)
    return make


def _mover(fn):
    @functools.wraps(fn)
    def move(self, *args, **kwargs):
        args = tuple(_cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return fn(self, *args, **kwargs)
    return move


if not getattr(torch, "_perfgate_cpu_shim", False):
    torch._perfgate_cpu_shim = True
    for _name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "tensor", "randn_like",
                  "zeros_like", "ones_like", "empty_like", "rand_like", "full_like", "linspace", "eye", "randperm"):
        setattr(torch, _name, _factory(getattr(torch, _name)))
    torch.Tensor.to = _mover(torch.Tensor.to)
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.to = _mover(torch.nn.Module.to)
    torch.nn.Module.cuda = lambda self, *a, **k: self
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.nvtx.range_push = lambda *a, **k: None
    torch.cuda.nvtx.range_pop = lambda *a, **k: None
    # what a device module answers about memory, for scripts that size their sweeps by it
    torch.cpu.empty_cache = lambda: None
    torch.cpu.max_memory_allocated = lambda *a: 256 * 2**20
    torch.cpu.reset_peak_memory_stats = lambda *a: None
    torch.cpu.memory = type("memory", (), {"reset_peak_memory_stats": staticmethod(lambda *a: None)})
    torch.cpu.get_device_name = lambda *a: "cpu"
'''

NORMS = '''
import torch


def rms_norm(x, weight, eps):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight


class LigerRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6, **_):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.variance_epsilon)


class LigerLayerNorm(torch.nn.LayerNorm):
    def __init__(self, hidden_size, eps=1e-6, **_):
        super().__init__(hidden_size, eps=eps)
'''

#: Stand-ins per project: file → text (written at the snapshot repository's root).
STAND_INS = {
    "liger": {
        "_cpu_shim.py": CPU_SHIM,
        "liger_kernel/__init__.py": "import _cpu_shim  # noqa: F401\n",
        "liger_kernel/utils.py": "def infer_device():\n    return 'cpu'\n\n\ndef get_total_gpu_memory():\n"
                                 "    return 3  # GB: sweeps sized for a CPU\n",
        "liger_kernel/transformers/__init__.py": "",
        "liger_kernel/_norms.py": NORMS,
        "liger_kernel/transformers/rms_norm.py": "from liger_kernel._norms import LigerRMSNorm  # noqa: F401\n",
        "liger_kernel/transformers/layer_norm.py": "from liger_kernel._norms import LigerLayerNorm  # noqa: F401\n",
        "liger_kernel-0.0.0+cpu.dist-info/METADATA": "Metadata-Version: 2.1\nName: liger-kernel\nVersion: 0.0.0+cpu\n",
    },
    "sglang": {
        "_cpu_shim.py": CPU_SHIM,
        "sgl_kernel/__init__.py": textwrap.dedent('''
            import _cpu_shim  # noqa: F401
            import torch


            def rmsnorm(x, weight, eps, out=None, enable_pdl=None):
                variance = x.float().pow(2).mean(-1, keepdim=True)
                result = (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight
                return out.copy_(result) if out is not None else result


            def fused_add_rmsnorm(x, residual, weight, eps, enable_pdl=None):
                residual.add_(x)
                x.copy_(rmsnorm(residual, weight, eps))
        '''),
        "sgl_kernel/utils.py": "def is_arch_support_pdl():\n    return False\n",
    },
    "te": {
        "_cpu_shim.py": CPU_SHIM,
        "transformer_engine/__init__.py": "import _cpu_shim  # noqa: F401\n",
        "transformer_engine/pytorch/__init__.py": "",
        "transformer_engine/pytorch/module.py": textwrap.dedent('''
            import torch


            class Linear(torch.nn.Linear):
                def __init__(self, in_features, out_features, bias=True, params_dtype=None, **_):
                    super().__init__(in_features, out_features, bias=bias, dtype=params_dtype)

                def forward(self, x, is_first_microbatch=None):
                    return super().forward(x)
        '''),
        "transformer_engine/common/__init__.py": "",
        "transformer_engine/common/recipe.py": "class Float8BlockScaling: pass\nclass MXFP8BlockScaling: pass\n"
                                               "class NVFP4BlockScaling: pass\n",
        "transformer_engine/pytorch/quantization.py": textwrap.dedent('''
            import contextlib


            def autocast(enabled=True, recipe=None):
                return contextlib.nullcontext()


            class FP8GlobalStateManager:
                @staticmethod
                def is_mxfp8_available():
                    return False, "no GPU"

                @staticmethod
                def is_fp8_block_scaling_available():
                    return False, "no GPU"

                @staticmethod
                def is_nvfp4_available():
                    return False, "no GPU"
        '''),
    },
}

#: name → (folder in the repository, scripts taken, convention, --filter of what is measured, list only on a CPU)
PROJECTS = {
    "liger": ("benchmark/scripts", ("benchmark_rms_norm.py", "benchmark_layer_norm.py", "utils.py",
                                    "benchmark_model_configs.py"), "triton", "*kernel_operation_mode=forward*", False),
    "sglang": ("sgl-kernel/benchmark", ("bench_rmsnorm.py",), "triton", "*seq_len=64*", False),
    "te": ("benchmarks/linear", ("benchmark_linear.py",), "torch-timer", None, True),
}

#: The smoke: the tests' fixture scripts (both script conventions), nothing read from elsewhere.
SMOKE = {
    "triton_fixture": ("tests/fixtures/suites/scripts_example", "triton", ("bench_grid.py", "benchmark_loop.py",
                                                                       "utils.py"), "triton", "*Lib*", False),
    "timer_fixture": ("tests/fixtures/suites/scripts_example", "timer", ("benchmark_labelled.py",), "torch-timer",
                      "*n=256*", False),
}


def read_snapshot(snapshot: Path, folder: str, names: tuple[str, ...], into: Path) -> None:
    """Copy ``folder/names`` of a snapshot (a checkout, or a bare git directory: ``git archive``) to
    the same place under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    if (snapshot / "objects").is_dir() and (snapshot / "HEAD").is_file():
        archive = subprocess.run(["git", f"--git-dir={snapshot}", "archive", "HEAD", *[f"{folder}/{n}" for n in names]],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
        return
    for name in names:
        target = into / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(snapshot / folder / name, target)


def make_repository(root: Path, folder: str, suite: str, stand_ins: dict[str, str]) -> None:
    """Stand-ins at the root, a perfgate.toml naming the convention and folder, one commit."""
    config = (f'suite = "{suite}"\nbenchmarks = "{folder}"\nprofile = false\n'
              'min_sample_time = 0.005\n')
    git(root, "init", "-q")
    commit(root, {**stand_ins, "perfgate.toml": config}, "snapshot")


def listing(root: Path, folder: str, suite: str) -> dict:
    """The convention's listing of the folder, in a fresh interpreter at the repository's root (as a worker)."""
    code = ("import json, sys; sys.path[:0] = ['.']; from runner.worker.child import list_suite; "
            f"print('PERFGATE-LISTING' + json.dumps(list_suite({str(root / folder)!r}, {suite!r})))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(root)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("PERFGATE-LISTING")), None)
    if line is None:
        return {"benchmarks": [], "errors": [{"file": folder, "error": proc.stderr[-1500:]}], "skipped": []}
    return json.loads(line[len("PERFGATE-LISTING"):])


def run(root: Path, pattern: str | None, max_time: float, out: Path) -> dict:
    """``perfgate run`` of the repository's HEAD (its perfgate.toml); results.json, or ``{error}``."""
    outcome = perfgate("run", "--repo", str(root), "--rev", "HEAD", "--max-time", str(max_time),
                       *(["--filter", pattern] if pattern else []), out=out)
    if outcome.doc is None:
        return {"error": (outcome.stderr or outcome.stdout)[-1500:]}
    return outcome.doc


def evaluate(name: str, root: Path, folder: str, suite: str, pattern: str | None, list_only: bool,
             max_time: float, out: Path) -> dict:
    """List and (unless ``list_only``) measure one project; prints the details, returns the counts."""
    found = listing(root, folder, suite)
    print(f"\n== {name} ({suite}, {folder}): {len(found['benchmarks'])} case(s) listed, "
          f"{len(found['skipped'])} skipped, {len(found['errors'])} file error(s)")
    for case in found["benchmarks"][:6]:
        print(f"   {case['name']}")
    for skip in found["skipped"][:3]:
        print(f"   skipped {skip['name']}: {skip['reason'][:200]}")
    for error in found["errors"][:3]:
        print(f"   error {error['file']}: {error['error'].splitlines()[-1][:200] if error['error'] else ''}")
    counts = {"listed": len(found["benchmarks"]), "measured": 0, "skipped": len(found["skipped"]),
              "failed": len(found["errors"])}
    if list_only or not found["benchmarks"]:
        return counts
    doc = run(root, pattern, max_time, out / name)
    if "error" in doc:
        print(f"   perfgate run failed: {doc['error']}")
        counts["failed"] += 1
        return counts
    measured = [b for b in doc["benchmarks"] if (b.get("head") or {}).get("median") and not b["head"].get("error")]
    failed = [b for b in doc["benchmarks"] if (b.get("head") or {}).get("error")]
    counts.update(measured=len(measured), failed=counts["failed"] + len(failed))
    print(f"   perfgate run (--filter {pattern!r}): {len(measured)} measured, {len(failed)} failed, "
          f"{len(doc['settings'].get('skipped') or [])} skipped")
    for bench in measured[:6]:
        print(f"   {bench['name']}: median {bench['head']['median'] * 1e6:.1f} µs over {len(bench['head']['samples'])} samples")
    for bench in failed[:3]:
        print(f"   FAILED {bench['name']}: {bench['head']['error'].splitlines()[-1][:200]}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--liger", type=Path, help="a snapshot of linkedin/Liger-Kernel (checkout or git directory)")
    parser.add_argument("--sglang", type=Path, help="a snapshot of sgl-project/sglang (at least sgl-kernel/benchmark/)")
    parser.add_argument("--te", type=Path, help="a snapshot of NVIDIA/TransformerEngine")
    parser.add_argument("--gpu", action="store_true", help="use the projects' own packages (installed), no stand-ins")
    parser.add_argument("--max-time", type=float, default=120.0)
    parser.add_argument("--smoke", action="store_true", help="the tests' fixture scripts, a few seconds each (CI)")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="perfgate-real-conventions-") as tmp:
        tmp = Path(tmp)
        if args.smoke:
            for name, (fixture, folder, names, suite, pattern, list_only) in SMOKE.items():
                root = tmp / name
                read_snapshot(ROOT / fixture, folder, names, root)
                shutil.copyfile(ROOT / fixture / "kernels.py", root / "kernels.py")
                make_repository(root, folder, suite, {})
                results[name] = evaluate(name, root, folder, suite, pattern, list_only, 5.0, tmp / "out")
        for name, snapshot in (("liger", args.liger), ("sglang", args.sglang), ("te", args.te)):
            if snapshot is None:
                continue
            folder, names, suite, pattern, list_only = PROJECTS[name]
            root = tmp / name
            read_snapshot(snapshot, folder, names, root)
            make_repository(root, folder, suite, {} if args.gpu else STAND_INS[name])
            results[name] = evaluate(name, root, folder, suite, pattern, list_only and not args.gpu, args.max_time,
                                     tmp / "out")
    if not results:
        parser.error("name at least one snapshot (--liger, --sglang, --te) or --smoke")
    print("\n" + " ".join(f"{name}_{key}={value}" for name, counts in results.items() for key, value in counts.items()))
    return 0 if all(c["listed"] and (c["measured"] or c["listed"]) for c in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
