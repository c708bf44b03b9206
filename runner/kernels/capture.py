"""The launch capture: the specialisations a program's Triton launches ask for, recorded where
Triton decides to compile (``triton.knobs.runtime.jit_cache_hook``), one JSON line a compile in
the file ``$PERFGATE_TRITON_CAPTURE`` names (``perfgate kernels --capture CMD``).

Installed in the captured process by ``runner/kernels/site/sitecustomize.py``. With a CUDA GPU
the launches compile and run as usual (the hook only records). Without one, a stand-in driver
answers Triton's questions (the target: ``sm_<capability>``, device 0, stream 0) and the hook
answers "done", so nothing is compiled or launched: a program whose tensors live on the CPU
(a test that takes its device from the caller) gets through its launches on a machine with no GPU.
A launch under ``@triton.autotune`` asks the driver for a benchmarker to time its configs: the
stand-in's calls each config once and reports every config alike, so each config the autotuner
would try is captured at the launch's own argument types and values (and nothing is timed).
``torch.cuda.device(...)``, which launchers wrap launches in, selects nothing there.

A record: ``{file, kernel, signature: {name: type}, constexprs: {name: value}, num_warps,
num_stages, aligned: [argument indices]}`` (:func:`record`).
"""

from __future__ import annotations

import json
import os

#: The environment variable naming the file the captured launches are appended to.
ENV = "PERFGATE_TRITON_CAPTURE"
#: The capability the stand-in driver reports (the target of nothing: no compile happens).
STAND_IN_CAPABILITY = 90


def record(compile_kwargs: dict, arg_names: list[str], filename: str) -> dict:
    """One captured compile as a record (see the module's docstring) from the hook's
    ``compile`` argument, the kernel's parameter names and its source file (pure)."""
    attrs = (compile_kwargs.get("configs") or [{}])[0]
    values = {arg_names[k[0]]: _value(v) for k, v in compile_kwargs["constants"].items()
              if isinstance(k, tuple) and len(k) == 1}
    constexprs = {name: v for name, v in values.items() if v is not _UNSAID}
    return {"file": filename, "kernel": compile_kwargs.get("name") or "",
            "signature": dict(compile_kwargs["signature"]), "constexprs": constexprs,
            "num_warps": int(compile_kwargs["num_warps"]),
            "num_stages": int(compile_kwargs["num_stages"]),
            "aligned": sorted(k[0] for k, v in attrs.items()
                              if isinstance(k, tuple) and ["tt.divisibility", 16] in v)}


_UNSAID = object()


def _value(value):
    """A constexpr's value as JSON carries it: a number, a flag, a string, None (an optional
    argument left out, which Triton specialises as a constant), a Triton dtype by its name in
    ``triton.language`` (``tl.bfloat16``, as :mod:`runner.kernels.worker` reads it back);
    ``_UNSAID`` for anything else (a function, an object), which is not recorded."""
    if value is None or isinstance(value, (int, float, bool, str)):
        return value
    import triton.language as tl

    if type(value) is tl.dtype:
        name = next((a for a in dir(tl)
                     if type(getattr(tl, a)) is tl.dtype and getattr(tl, a) == value), None)
        if name is not None:
            return f"tl.{name}"
    return _UNSAID


class _StandIn:
    """The driver Triton asks for a target, a device and a stream where there is no GPU."""

    def __init__(self, capability: int):
        from triton.backends.compiler import GPUTarget
        self.target = GPUTarget("cuda", capability, 32)

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_benchmarker(self):
        """The autotuner's timer (``Autotuner.do_bench``): each config's call runs once, which
        the hook records (nothing is compiled or launched), and every config takes 1 ms."""
        def bench(kernel_call, quantiles=None, **_):
            kernel_call()
            return [1.0] * len(quantiles) if quantiles else 1.0
        return bench


class _NoDevice:
    """``torch.cuda.device(x.device.index)`` where there is no GPU: a CPU tensor's index is None,
    which torch refuses ("'<' not supported between 'NoneType' and 'int'"); selecting no device
    is what a launch with CPU tensors needs."""

    def __init__(self, device=None):
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def install(path: str) -> None:
    """Record every compile of this process into ``path``; without a GPU, compile and launch
    nothing (the stand-in driver)."""
    from triton import knobs
    from triton.runtime.driver import driver

    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        torch, gpu = None, False
    if not gpu:
        driver.set_active(_StandIn(STAND_IN_CAPABILITY))
        if torch is not None:  # launchers wrap launches in it: flash-attention's apply_rotary
            torch.cuda.device = _NoDevice

    def hook(*, fn, compile, **_):
        jit = fn.jit_function
        line = record({**compile, "name": jit.fn.__name__}, list(jit.arg_names),
                      os.path.abspath(jit.fn.__code__.co_filename))
        with open(path, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        return not gpu  # True: "compiled", so nothing is built or launched

    knobs.runtime.jit_cache_hook = hook


#: Seconds the captured command may run on one side.
CAPTURE_TIMEOUT = 600.0


def run(command: str, root, paths: list[str], timeout: float = CAPTURE_TIMEOUT) -> dict:
    """Run ``command`` (a shell command line) in the worktree ``root`` with the capture installed
    and ``paths`` first on its ``PYTHONPATH``: ``{records: [...], exit: status or None (it ran
    past ``timeout`` and was stopped), output: its last lines}``."""
    import signal
    import subprocess
    import tempfile
    from pathlib import Path

    from ..sandbox.child_env import child_environment

    site = Path(__file__).resolve().parent / "site"
    perfgate = str(Path(__file__).resolve().parents[2])
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        env = child_environment(**{ENV: out.name, "PYTHONPATH": os.pathsep.join(
            [str(site), *paths, perfgate])})
        proc = subprocess.Popen(command, shell=True, cwd=root, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            status = None
        lines = Path(out.name).read_text().splitlines()
    return {"records": [json.loads(x) for x in lines if x.strip()], "exit": status,
            "output": "\n".join((output or "").strip().splitlines()[-5:])}
