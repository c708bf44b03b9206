"""``python -m runner.kernels.worker``: compile Triton kernels for a target GPU, one JSON job a
line on stdin, one JSON answer a line on stdout (the process :mod:`runner.kernels.compile`
starts, so that a hanging or crashing compiler costs one kernel, not the run).

A job: ``{id, paths (sys.path entries, first), module (dotted name) or file, kernel, signature,
constexprs, aligned (argument indices: 16-byte aligned pointers, ints divisible by 16: Triton's
``tt.divisibility``), num_warps, num_stages, arch ("sm_90")}``.
An answer: ``{id, ok, seconds, ...}``: with ``ok`` the cubin's ``sha256``, ``usage`` (cuobjdump's
resource usage, read by :func:`runner.kernels.usage.resource_usage`), ``sass``
(:func:`runner.kernels.usage.sass_counts`), ``shared_dynamic`` (Triton's ``metadata.shared``,
bytes); else ``error`` (the compiler's message, or why the module did not import) and ``stage``
(``import`` or ``compile``); either with ``loaded: "source"`` and ``import_error`` where the
kernel came from its file reduced to its Triton code because its module did not import.

Nothing is launched and no GPU is needed: ``triton.compile`` with an explicit
``GPUTarget("cuda", capability, 32)`` runs the whole pipeline down to ptxas's cubin. The target's
module is imported (the kernel's globals are its module's), with whatever it prints sent to
stderr so that stdout stays the answers'. A module that does not import here (a package that
wants a GPU at import, a CUDA extension, a dependency not installed: unsloth, flash-attention)
is not the end: the kernel's own file, reduced to its triton imports, its triton-decorated
functions and its ``tl.constexpr`` globals (:func:`runner.kernels.find.triton_only`), is run
instead; a kernel that reads something else of its module (a helper imported from a sibling
file) then fails to compile, with the compiler's message.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

#: Characters of a compiler message kept.
MESSAGE_CHARS = 1500
#: Modules (or files) that did not import in this worker → why: tried once, not per job.
_FAILED: dict[str, str] = {}


def _module(job: dict):
    for p in reversed(job["paths"]):
        if p not in sys.path:
            sys.path.insert(0, p)
    if job.get("module"):
        return importlib.import_module(job["module"])
    name = "_perfgate_kernel_" + hashlib.sha256(job["file"].encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, job["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _reduced(job: dict):
    """The kernel's file run reduced to its Triton code (:func:`runner.kernels.find.triton_only`)
    as a module of its own, compiled under the file's own path: the kernel's line numbers are
    the file's, and Triton reads the function's text from the file, which is left untouched (a
    compare's worktree runs the benchmarks after)."""
    from .find import triton_only

    name = "_perfgate_reduced_" + hashlib.sha256(job["file"].encode()).hexdigest()[:12]
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__file__ = job["file"]
        code = compile(triton_only(Path(job["file"]).read_text("utf-8")), job["file"], "exec")
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)  # noqa: S102 - the target's own Triton code
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


class NotLoaded(Exception):
    """A kernel neither its module's import nor its reduced source gives."""


def _kernel(job: dict) -> tuple[object, dict]:
    """The kernel object and how it was loaded: ``{}`` imported as its package does; where that
    import fails, ``{loaded: "source", import_error}`` from its file reduced to its Triton code
    (:func:`_reduced`).

    Raises:
        NotLoaded: neither gives it (the message names both failures).
    """
    where = job.get("module") or job["file"]
    first = _FAILED.get(where)
    if first is None:
        try:
            module = _module(job)
        except BaseException as exc:  # the target's import: anything may fail there
            first = _FAILED[where] = f"{type(exc).__name__}: {exc}"
        else:
            return getattr(module, job["kernel"]), {}
    try:
        fn = getattr(_reduced(job), job["kernel"])
    except BaseException as exc:
        raise NotLoaded(f"{first}; from its source reduced to its Triton code: "
                        f"{type(exc).__name__}: {exc}") from None
    return fn, {"loaded": "source", "import_error": first[:MESSAGE_CHARS]}


#: Seconds cuobjdump or nvdisasm may take on one cubin: under the job's own limit
#: (:data:`runner.kernels.compile.JOB_TIMEOUT`, 180 s), which then decides. At 60 s, nvdisasm
#: on one of Liger #1208's DyT cubins ran past it on a 2-CPU machine running two other
#: evaluations, and the job was lost as a crash.
TOOL_TIMEOUT = 150


def _dtype(value):
    """``"tl.float16"`` → ``triton.language.float16`` (a dtype constexpr travels by name)."""
    import triton.language as tl

    if isinstance(value, str) and value.startswith("tl.") and hasattr(tl, value[3:]):
        return getattr(tl, value[3:])
    return value


def _tool(name: str) -> str:
    import triton
    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def _compile(job: dict) -> dict:
    try:  # the target's module first: what it does on import is its own (it may hang or die)
        fn, loaded = _kernel(job)
    except BaseException as exc:  # the target's module: anything may fail there
        why = str(exc) if isinstance(exc, NotLoaded) else f"{type(exc).__name__}: {exc}"
        return {"ok": False, "stage": "import", "error": why[:MESSAGE_CHARS]}
    answer = _compiled(fn, job)
    return {**answer, **loaded}


def _compiled(fn, job: dict) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    from .usage import resource_usage, sass_counts
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):
        fn = fn.fn  # Autotuner, Heuristics: the JITFunction they wrap
    attrs = {(i,): [["tt.divisibility", 16]] for i in job["aligned"]}
    constexprs = {k: _dtype(v) for k, v in job["constexprs"].items()}
    src = ASTSource(fn, job["signature"], constexprs=constexprs, attrs=attrs)
    target = GPUTarget("cuda", int(job["arch"].removeprefix("sm_")), 32)
    try:
        compiled = triton.compile(src, target=target, options={
            "num_warps": job["num_warps"], "num_stages": job["num_stages"]})
    except BaseException as exc:
        return {"ok": False, "stage": "compile",
                "error": f"{type(exc).__name__}: {exc}"[-MESSAGE_CHARS:]}
    cubin = compiled.asm["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        usage = subprocess.run([_tool("cuobjdump"), "--dump-resource-usage", fh.name],
                               capture_output=True, text=True, timeout=TOOL_TIMEOUT).stdout
        sass = subprocess.run([_tool("nvdisasm"), "-c", fh.name], capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT).stdout
    return {"ok": True, "sha256": hashlib.sha256(cubin).hexdigest(),
            "usage": resource_usage(usage, compiled.metadata.name), "sass": sass_counts(sass),
            "shared_dynamic": int(compiled.metadata.shared), "name": compiled.metadata.name}


def main() -> int:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the target's code prints goes to stderr
    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.monotonic()
        answer = _compile(job)
        answer.update(id=job["id"], seconds=round(time.monotonic() - t0, 3))
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
