"""The static pass: every Triton kernel a change touches, compiled for each target arch on both
sides, read and compared (the shell around :mod:`runner.kernels.plan`, :mod:`.compile`,
:mod:`.cache` and :mod:`.table`).

It reads two checked-out trees (the compare's worktrees, or those ``perfgate kernels`` makes),
never a GPU. The section it returns is results.json's ``kernels`` (runner/schema/results-v1.json).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

from . import cache
from .compile import run_jobs
from .plan import diff_kernels, jobs_for, module_name, read_side, same_machine_code
from .table import findings, rows

#: Target architectures when the configuration names none and no GPU is present.
DEFAULT_ARCHS = ["sm_80", "sm_90"]
#: Folders never read for kernels.
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox"}


def triton_version() -> str | None:
    """The installed Triton's version, or None (without importing it)."""
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def archs_for(configured: list[str] | None, gpu_capability: str | None) -> list[str]:
    """The configured ``gpu_arch``, else the runner's GPU (``"9.0"`` → ``["sm_90"]``), else
    :data:`DEFAULT_ARCHS`."""
    if configured:
        return list(configured)
    if gpu_capability:
        return ["sm_" + gpu_capability.replace(".", "")]
    return list(DEFAULT_ARCHS)


def not_run(why: str, archs: list[str]) -> dict:
    """The section when the static pass did not run, saying why."""
    return {"ran": False, "why_not": why, "archs": archs, "kernels": [], "findings": []}


#: CUDA C++ sources: not compiled here (``nvcc --resource-usage`` would read them; not done).
_CUDA = (".cu", ".cuh")
CUDA_WHY_NOT = ("CUDA C++ sources are not compiled by the static pass (only Triton kernels are); "
                "their registers and spills are not reported")


def _tree(root: Path) -> tuple[dict[str, str], set[str], dict[str, bytes]]:
    """The Python files under ``root`` that mention triton (relative path → text), the
    folders holding an ``__init__.py`` and the CUDA C++ sources (relative path → bytes)."""
    files, packages, cuda = {}, set(), {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        rel = Path(folder).relative_to(root).as_posix()
        if "__init__.py" in names and rel != ".":
            packages.add(rel)
        for n in names:
            if n.endswith(_CUDA):
                try:
                    cuda[n if rel == "." else f"{rel}/{n}"] = (Path(folder) / n).read_bytes()
                except OSError:
                    continue
            if n.endswith(".py"):
                try:
                    text = (Path(folder) / n).read_text("utf-8", errors="replace")
                except OSError:
                    continue
                if "triton" in text:
                    files[n if rel == "." else f"{rel}/{n}"] = text
    return files, packages, cuda


def _where(root: Path, paths: list[str], packages: set[str]) -> dict[str, dict]:
    out = {}
    for p in paths:
        module, top = module_name(p, packages)
        src = [str(root / "src")] if (root / "src").is_dir() else []
        out[p] = {"paths": [str(root / top) if top else str(root), *src, str(root)],
                  "module": module, "file": str(root / p)}
    return out


def _by_kernel(records: list[dict], root: Path) -> dict[tuple[str, str], list[dict]]:
    """Captured launches (runner.kernels.capture) by ``(repository-relative path, kernel)``;
    a launch of a file outside ``root`` (an installed package's) is left out."""
    out: dict[tuple[str, str], list[dict]] = {}
    base = Path(root).resolve()
    for r in records:
        path = Path(r["file"]).resolve()
        if base in path.parents:
            out.setdefault((path.relative_to(base).as_posix(), r["kernel"]), []).append(r)
    return out


def _answers(jobs: list[dict], sides: list[str], version: str, root: Path, *, python: str,
             deadline: float) -> tuple[dict[str, dict], list[dict]]:
    """Every job's answer, from the cache or compiled now (a worker a side), and the jobs
    that were compiled: ``({job id: answer}, [job])``. Fresh answers are cached as they arrive."""
    answers, todo = {}, []
    for job in jobs:
        job["cache"] = cache.key(job["fingerprint"], job, job["arch"], version)
        hit = cache.get(root, job["cache"])
        if hit is not None:
            answers[job["id"]] = hit
        else:
            todo.append(job)
    fresh: dict[str, dict] = {}
    names = {job["id"]: job["cache"] for job in todo}

    def keep(job_id: str, answer: dict) -> None:  # cached as it arrives
        cache.put(root, names[job_id], answer)

    for side in sides:  # a worker a side: both sides' modules have the same names
        batch = [j for j in todo if j["id"].startswith(f"{side}|")]
        if batch:
            with tempfile.TemporaryDirectory(prefix="perfgate-triton-") as triton_cache:
                fresh.update(run_jobs(batch, Path(triton_cache), python=python,
                                      deadline=deadline, on_answer=keep))
    for job in todo:
        answers[job["id"]] = fresh[job["id"]]
    return answers, todo


def analyse(trees: dict[str, Path], archs: list[str], *, deadline: float = float("inf"),
            python: str = sys.executable, cache_dir: Path | None = None,
            captured: dict[str, list[dict]] | None = None,
            announce: Callable[[], None] | None = None) -> dict:
    """results.json's ``kernels`` section for ``trees`` (``{"base": dir, "head": dir}``):
    ``{ran, why_not, triton, archs, seconds, jobs: {compiled, cached, failed, skipped},
    unchanged, errors, kernels: [...], findings: [...], same_code: {path: why}, cuda_sources:
    {changed, why_not}}`` (``same_code``:
    :func:`runner.kernels.plan.same_machine_code`, what the selection may skip); ``not_run``
    without Triton. ``captured``: each side's launch records
    (:func:`runner.kernels.capture.run`). ``announce`` is called before the first compile, only
    where a changed kernel has jobs (a tree without Triton kernels compiles none; issue 47)."""
    version = triton_version()
    if version is None:
        return not_run("Triton is not installed (pip install 'perfgate[kernels]')", archs)
    t0 = time.monotonic()
    read, where, errors, texts, cuda = {}, {}, {}, {}, {}
    for side, root in trees.items():
        files, packages, cuda[side] = _tree(Path(root))
        texts[side] = files
        read[side] = read_side(files)
        where[side] = _where(Path(root), list(files), packages)
        errors.update({f"{side}:{p}": e for p, e in read[side]["errors"].items()})
    launches = {side: _by_kernel(records, trees[side])
                for side, records in (captured or {}).items()}
    kernels = diff_kernels(read["base"], read["head"], launches)
    listed = [k for k in kernels if k["status"] != "unchanged"]
    jobs = jobs_for(listed, archs, where)
    if jobs and announce is not None:
        announce()
    answers, todo = _answers(jobs, list(trees), version, cache_dir or cache.folder(),
                             python=python, deadline=deadline)
    for k in listed:
        k["changed"] = True
        k["rows"] = rows(k, archs, answers)
        del k["specs"], k["fingerprints"]
    stages = [answers[j["id"]].get("stage") for j in todo]
    return {"ran": True, "why_not": None, "triton": version, "archs": archs,
            "seconds": round(time.monotonic() - t0, 2),
            "jobs": {"compiled": sum(s in (None, "compile") for s in stages),
                     "cached": len(jobs) - len(todo),
                     "failed": sum(not a.get("ok") and a.get("stage") != "skipped"
                                   for a in answers.values()),
                     "skipped": stages.count("skipped")},
            "unchanged": len(kernels) - len(listed), "errors": errors, "kernels": listed,
            "findings": findings(listed), "same_code": same_machine_code(listed, texts),
            "cuda_sources": cuda_changes(cuda.get("base", {}), cuda.get("head", {}))}


def cuda_changes(base: dict[str, bytes], head: dict[str, bytes]) -> dict:
    """``{changed: [paths], why_not}``: the CUDA C++ sources that differ between the sides, not
    analysed (:data:`CUDA_WHY_NOT`)."""
    changed = sorted(p for p in base.keys() | head.keys() if base.get(p) != head.get(p))
    return {"changed": changed, "why_not": CUDA_WHY_NOT}
