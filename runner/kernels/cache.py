"""The compile cache on disk: one JSON file per (kernel fingerprint, specialisation, arch, Triton
version), so that a rerun over the same kernels compiles nothing.

The folder: ``$PERFGATE_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/perfgate/kernels``, else
``~/.cache/perfgate/kernels``. An unreadable entry is a miss; a write that fails is ignored (the
cache only saves time). Kept: compiled results and compiler errors (both follow from the key),
a result from a kernel's source reduced to its Triton code too (the same kernel's code; its
answer says so); not kept: an import failure, a timeout, or a compiler error of a kernel loaded
from its reduced source (they depend on the machine: where the module imports, it may compile).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

#: Bumped when what an entry holds changes.
VERSION = 2


def folder() -> Path:
    """Where entries live (see the module's docstring)."""
    if os.environ.get("PERFGATE_KERNEL_CACHE"):
        return Path(os.environ["PERFGATE_KERNEL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfgate" / "kernels"


def key(fingerprint: str, spec: dict, arch: str, triton_version: str) -> str:
    """The entry's name: a SHA-256 over what decides the cubin."""
    core = {k: spec[k] for k in ("signature", "constexprs", "num_warps", "num_stages", "aligned")}
    text = json.dumps([VERSION, fingerprint, core, arch, triton_version], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def get(root: Path, name: str) -> dict | None:
    """The stored answer, or None."""
    try:
        return json.loads((root / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def put(root: Path, name: str, answer: dict) -> None:
    """Store ``answer`` when it follows from the key alone (a result, or a compiler error of a
    kernel imported as its package does)."""
    if not (answer.get("ok") or (answer.get("stage") == "compile"
                                 and answer.get("loaded") != "source")):
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f"{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(answer))
        tmp.replace(root / f"{name}.json")
    except OSError:
        pass
