"""Where a worker process's compilers keep what they compiled: Triton's cache and torch.compile's.

Two needs pull apart (GPU review #23):

* torch.compile's cold compile is measured (:class:`runner.worker.measures.CompileWatch`: the
  first call's compile seconds, base vs head over process pairs), so every process compiles cold:
  an empty ``TORCHINDUCTOR_CACHE_DIR`` of its own (inductor's FX-graph, AOTAutograd and autotuning
  caches, and dynamo's profile-guided dynamic shapes). With a shared one, a second process's first
  call read what the first compiled, and its compile time and even its recompilations (dynamic
  shapes remembered) depended on which processes ran before.
* A Triton kernel the benchmark's own code launches (the ``triton`` convention's scripts, a
  benchmark calling a ``@triton.jit`` kernel) is compiled on its first launch, each autotuning
  config of it too. With an empty Triton cache in every process, every child of a side compiled
  every kernel again, and a suite of hand-written kernels spent its budget on set-ups. So Triton's
  cache is the side's: the parent makes one folder per side for the compare
  (:mod:`runner.pipeline.timing.workers`), a side's later processes find there what its first
  compiled, and base and head never share one (neither reads what the other compiled).

How both hold at once: the side's folder is ``TRITON_HOME`` (Triton 3's default cache is
``$TRITON_HOME/.triton/cache``) and ``TRITON_CACHE_DIR`` is left unset, because inductor puts its
own Triton kernels in ``TRITON_CACHE_DIR`` where it is set and else in its cache folder
(``torch._inductor.runtime.cache_dir_utils.triton_cache_dir``), the process's fresh one. A Triton
older than 3 has no ``TRITON_HOME`` (its cache would be the user's home, both sides'): there every
process gets an empty ``TRITON_CACHE_DIR`` of its own, as before. Triton's dump and override
folders follow ``TRITON_HOME`` too: where the runner does not name them they stay where they were
(``~/.triton/dump``, ``~/.triton/override``), so a kernel override the runner keeps still applies.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from importlib import metadata

#: The first Triton major version whose default cache folder follows ``TRITON_HOME``.
TRITON_HOME_SINCE = 3


def cache_env(side: str | None, fresh: str, triton_version: str | None,
              environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The compile caches' variables of one worker process (None: unset): ``fresh`` (the process's
    empty folder) for torch.compile, ``side`` (the side's folder for the compare, None: none) as
    Triton's home where the installed Triton (``triton_version``, None: none) follows it, else a
    Triton cache under ``fresh``; ``environ`` the process's (its home, and the dump and override
    folders it names)."""
    environ = {} if environ is None else environ
    env: dict[str, str | None] = {"TORCHINDUCTOR_CACHE_DIR": fresh}
    major = (triton_version or "0").split(".")[0]
    if side and major.isdigit() and int(major) >= TRITON_HOME_SINCE:
        env.update(TRITON_HOME=side, TRITON_CACHE_DIR=None)
        home = environ.get("TRITON_HOME") or environ.get("HOME") or "~"
        for name, folder in (("TRITON_DUMP_DIR", "dump"), ("TRITON_OVERRIDE_DIR", "override")):
            if not environ.get(name):
                env[name] = os.path.join(home, ".triton", folder)
    else:
        env["TRITON_CACHE_DIR"] = os.path.join(fresh, "triton")
    return env


def _triton_version() -> str | None:
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def isolate_compile_caches(side: str | None = None) -> str | None:
    """Give this process an empty torch.compile cache of its own and the side's Triton cache
    (:func:`cache_env`; ``side``: the folder the parent made for this side, None: none). Returns
    the process's folder (remove it with :func:`remove_compile_caches`), None where no temporary
    directory can be made."""
    try:
        path = tempfile.mkdtemp(prefix="perfgate-compile-")
    except OSError:
        return None
    for name, value in cache_env(side, path, _triton_version(), os.environ).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return path


def remove_compile_caches(path: str | None) -> None:
    """Remove a directory :func:`isolate_compile_caches` made (errors ignored)."""
    if path:
        shutil.rmtree(path, ignore_errors=True)
