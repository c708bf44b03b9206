"""Benchmark scripts as they are: run as ``__main__``, their measuring calls intercepted.

Scripts that time themselves (``triton.testing.do_bench``, ``perf_report`` grids,
``torch.utils.benchmark.Timer``) are not rewritten: a worker runs the script as ``python
script.py`` would (``__name__ == "__main__"``, ``sys.argv == [script]``, its folder first on
``sys.path``), with the measuring calls replaced by a :class:`Recorder` (the conventions
:mod:`runner.conventions.triton` and :mod:`runner.conventions.torch_timer` do the replacing):

* **listing** (:func:`list_script`): every measuring call is recorded with a name and answered with
  a nominal result (1 ms) without running what it was handed, so the script goes on to its next
  case; ``perf_report`` grids are listed point by point from their ``Benchmark`` without running
  anything;
* **set-up** (:func:`find_case`): the script runs again until it reaches the call of the case asked
  for; what that call was handed is captured (:class:`Measured`) and the script is stopped there
  (:class:`Stop`). perfgate's sampler then times it in the worker.

Names. A grid point is named as the grid's table names it: ``plot_name[N=4096,provider=triton]``
(its ``x_names``, then its ``line_arg`` with the line's name). A ``Timer`` with a label is named by
``label[sub_label=…,description=…]``. Any other call is named after the script
(``benchmark_rms_norm``) with the parameters that tell its calls apart: the arguments of the
functions on the call's stack that live in the benchmark directory (a dataclass or dict argument
by its fields), and the integer, string, boolean or dtype variables of argument-less functions and
of the script's top level (a loop's variables), keeping only those whose values differ between
the script's calls and dropping one that varies exactly as an earlier one does. The chosen keys
go with the case (``keys``) so the other revision names its calls the same way; a name that still
repeats gets ``#2``, ``#3`` in call order. A call that cannot be captured (it is not reached on
this revision) is :class:`LookupError`; a grid point whose function hands nothing to
``do_bench`` is skipped with the reason.

What the captured callable runs under: the grad mode and inference mode of the call are restored
for the timing (a function decorated ``@torch.no_grad()`` is timed without autograd, as the script
measured it); other context managers around the call (a stream, autocast) have exited by then.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path
from typing import Any, Callable

from .base import Named, Prepared, Skipped, Suite, case_name, format_error, listing, read_text
from .labels import (Call, benchmarks_of, frame_items, grid_family, grid_points, marks_in,
                     varying_keys)
from .replay import Measured, modes, timed_callable

#: The nominal time a measuring call returns while a script is listed or run up to its case (ms).
NOMINAL_MS = 1.0


class Stop(BaseException):
    """Raised into a script when the case being set up has been reached (a ``BaseException``, so
    a script's ``except Exception`` does not swallow it)."""


#: The recorder of the script now running in this process (None: measuring calls behave as usual).
ACTIVE: "Recorder | None" = None


class Recorder:
    """Intercepts the measuring calls of one script run (see the module docstring).

    Args:
        script: the script's path; ``directory``: the benchmark directory (frames of files under it
            give labels).
        target: None to list; else the case to find (as listed: ``family``, ``name``, ``keys``,
            ``kind``).
    """

    def __init__(self, script: Path, directory: Path, target: dict | None = None):
        self.script = str(script.resolve())
        self.directory = str(directory.resolve())
        self.target = target
        self.calls: list[Call] = []
        self.found: Measured | None = None
        self.collecting: Measured | None = None
        self.grids_run: set[int] = set()
        self.seen_target_family = False
        self._names = Named()
        self._inside: dict[str, bool] = {}

    # -- what the patched functions call --------------------------------------------------------------
    def measuring_call(self, family: str | None, given: dict[str, str], fn: Callable[[], Any],
                       graph: bool = False, depth: int = 2) -> None:
        """A measuring call (``do_bench``, a ``Timer`` method) handed ``fn``; ``family`` None: the
        script's own name. While a grid point is being collected, ``fn`` joins it; else the call is
        recorded (listing) or compared with the target (set-up: :class:`Stop` when it is the one)."""
        if self.collecting is not None:
            self.collecting.fns.append(fn)
            self.collecting.graphs.append(graph)
            return
        family = family or Path(self.script).stem
        frame = self.frame_labels(sys._getframe(depth))
        if self.target is None:
            self.calls.append(Call(family, dict(given), frame))
            return
        if family != self.target.get("family") or self.target.get("kind") == "grid":
            return
        self.seen_target_family = True
        keys = self.target.get("keys") or []
        params = {**given, **{k: frame.get(k, "?") for k in keys if k not in given}}
        if self._names.unique(case_name(family, params)) == self.target["name"]:
            self.found = Measured([fn], [graph], *modes())
            raise Stop()

    def grid(self, mark: Any, run_kwargs: dict) -> None:
        """A ``perf_report`` grid the script runs (``Mark.run``): its points are listed, or the
        target point's function is called with ``do_bench`` collecting (set-up)."""
        self.grids_run.add(id(mark))
        for bench in benchmarks_of(mark):
            family = grid_family(mark, bench)
            for given, kwargs in grid_points(bench):
                if self.target is None:
                    self.calls.append(Call(family, given, {}, grid=True))
                    continue
                if self.target.get("kind") != "grid" or family != self.target.get("family"):
                    continue
                self.seen_target_family = True
                if self._names.unique(case_name(family, given)) != self.target["name"]:
                    continue
                grad, inference, autocast = modes()
                self.collecting = Measured(grad_enabled=grad, inference=inference,
                                           autocast_dtype=autocast)
                try:
                    mark.fn(**kwargs, **dict(getattr(bench, "args", None) or {}), **run_kwargs)
                finally:
                    measured, self.collecting = self.collecting, None
                if not measured.fns:
                    raise Skipped(f"{self.target['name']}: its perf_report function handed nothing to "
                                  "triton.testing.do_bench (perfgate times the callables handed to it)")
                self.found = measured
                raise Stop()

    # -- labels ---------------------------------------------------------------------------------------
    def from_suite(self, frame: types.FrameType) -> bool:
        """Whether ``frame`` (a measuring call's caller) runs code of the benchmark directory: a
        library's own call — Triton's autotuner, inductor's benchmarker, which import ``do_bench``
        lazily and so get the captured one — is not the script's measuring call
        (GPU review #3)."""
        return self._ours(frame.f_code.co_filename)

    def _ours(self, filename: str) -> bool:
        hit = self._inside.get(filename)
        if hit is None:
            try:
                path = str(Path(filename).resolve())
            except (OSError, ValueError):
                path = filename
            hit = path == self.script or path.startswith(self.directory + os.sep)
            self._inside[filename] = hit
        return hit

    def frame_labels(self, frame: types.FrameType | None) -> dict[str, str]:
        """Candidate labels of a call: from the outermost frame of the script down to the call,
        the frames of files in the benchmark directory (module docstring)."""
        frames = []
        while frame is not None:
            if self._ours(frame.f_code.co_filename):
                frames.append(frame)
                if frame.f_code.co_name == "<module>" and self._ours(frame.f_code.co_filename) \
                        and str(Path(frame.f_code.co_filename).resolve()) == self.script:
                    break
            frame = frame.f_back
        labels: dict[str, str] = {}
        for f in reversed(frames):
            for key, label in frame_items(f):
                if key not in labels:
                    labels[key] = label
                elif labels[key] != label:
                    labels.setdefault(f"{f.f_code.co_name}.{key}", label)
        return labels

    # -- after a listing run --------------------------------------------------------------------------
    def cases(self, file: str, suite: str) -> list[dict]:
        """The listed cases of this script (``file`` relative to the benchmark directory)."""
        by_family: dict[str, list[Call]] = {}
        for call in self.calls:
            by_family.setdefault(call.family, []).append(call)
        out = []
        names = Named()
        for family, calls in by_family.items():
            keys = [] if all(c.grid for c in calls) else varying_keys(calls)
            for call in calls:
                params = {**call.given, **{k: call.frame.get(k, "?") for k in keys if k not in call.given}}
                out.append({"name": names.unique(case_name(family, params)), "file": file, "func": family,
                            "params": params, "family": family, "keys": keys, "suite": suite,
                            "kind": "grid" if call.grid else "call"})
        return out


# -- running a script ------------------------------------------------------------------------------
def run_script(path: Path, recorder: Recorder) -> tuple[dict, BaseException | None]:
    """Run ``path`` as ``python path`` would, with ``recorder`` active: ``(its globals, the
    exception it ended with or None)``. :class:`Stop` and ``SystemExit(0)`` are normal ends; the
    process's ``sys.argv``, ``sys.path``, ``__main__`` and working directory are restored."""
    global ACTIVE
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    module.__builtins__ = __builtins__
    saved = (list(sys.argv), list(sys.path), sys.modules.get("__main__"), os.getcwd())
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    sys.modules["__main__"] = module
    ACTIVE = recorder
    error: BaseException | None = None
    try:
        code = compile(path.read_bytes(), str(path), "exec")
        exec(code, module.__dict__)  # noqa: S102 - the benchmark script, inside a worker process
    except Stop:
        pass
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = exc
    except Skipped:
        raise
    except BaseException as exc:  # noqa: BLE001 - the script's failure is data
        if isinstance(exc, KeyboardInterrupt):
            raise
        error = exc
    finally:
        ACTIVE = None
        sys.argv[:] = saved[0]
        sys.path[:] = saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
        try:
            os.chdir(saved[3])
        except OSError:
            pass
    return module.__dict__, error


def list_script(path: Path, directory: Path, suite: str) -> tuple[list[dict], dict | None, dict | None]:
    """List one script's cases (worker side): ``(cases, error, skipped)``. ``error`` ``{file,
    error}`` when the script failed before its first case; ``skipped`` ``{name, file, reason}`` when
    it failed after some (its later cases are not listed) or measured nothing."""
    rel = path.relative_to(directory).as_posix()
    recorder = Recorder(path, directory)
    namespace, error = run_script(path, recorder)
    for mark in marks_in(namespace):
        if id(mark) not in recorder.grids_run:
            recorder.grid(mark, {})
    cases = recorder.cases(rel, suite)
    if error is not None and not cases:
        return [], {"file": rel, "error": format_error(error)}, None
    if error is not None:
        last = format_error(error, 1)
        return cases, None, {"name": rel, "file": rel,
                             "reason": f"the script stopped after {len(cases)} case(s) ({last}); later ones are not listed"}
    if not cases:
        return [], None, {"name": rel, "file": rel, "reason": "the script made no measuring call perfgate can capture"}
    return cases, None, None


def find_case(case: dict, directory: Path) -> Measured:
    """Run the case's script up to the case's measuring call (worker side) and return what it was
    handed.

    Raises:
        LookupError: the script does not reach that case on this revision.
        Skipped: the grid point hands nothing to ``do_bench``.
        RuntimeError: the script failed before reaching it (its traceback's last lines).
    """
    path = Path(directory) / case["file"]
    if not path.is_file():
        raise LookupError(f"{case['file']} does not exist on this revision")
    recorder = Recorder(path, Path(directory), target=case)
    namespace, error = run_script(path, recorder)
    if recorder.found is None and case.get("kind") == "grid":
        try:
            for mark in marks_in(namespace):
                if id(mark) not in recorder.grids_run:
                    recorder.grid(mark, {})
        except Stop:
            pass
    if recorder.found is not None:
        return recorder.found
    if error is not None:
        raise RuntimeError(f"{case['file']} failed before reaching {case['name']}:\n{format_error(error)}")
    raise LookupError(f"{case['name']} is not among the cases {case['file']} runs on this revision")


def script_files(directory: Path) -> list[Path]:
    """The benchmark scripts of a directory: ``bench*.py`` and ``benchmark*.py`` files, recursively."""
    from .base import python_files

    return sorted({*python_files(directory, "bench*.py"), *python_files(directory, "benchmark*.py")})


#: ``from X import`` / ``import X`` at the start of a line (the first module name).
_IMPORTS = re.compile(r"^\s*(?:from\s+([A-Za-z_]\w*)|import\s+([A-Za-z_]\w*))", re.M)


class ScriptConvention:
    """A convention of scripts that time themselves (Triton's, ``torch.utils.benchmark``'s): the
    scripts are the ``bench*.py`` / ``benchmark*.py`` files that use ``uses`` (:meth:`scripts`); ``install``
    puts the capturing measuring calls in place (worker side, idempotent). Subclasses set ``name``,
    ``looked_for``, ``uses`` and ``install``, and may adapt what a captured call hands over
    (:meth:`callables`)."""

    name = "scripts"
    looked_for = "bench*.py / benchmark*.py scripts that measure themselves"
    options: tuple[str, ...] = ()
    uses: Any = None

    def install(self) -> None:
        """Make this convention's measuring calls capture (worker side)."""
        raise NotImplementedError

    def callables(self, measured: Measured) -> Measured:
        """What a captured call hands over, made callable (as it is, by default)."""
        return measured

    def cold_cache(self, measured: Measured) -> bool | None:
        """Whether the script's own measuring call flushed the L2 cache before every call
        (:attr:`runner.conventions.base.Prepared.cold_cache`); None: its calls ran warm."""
        return None

    def scripts(self, directory: Path) -> list[Path]:
        """The scripts of ``directory`` that use this convention's measuring calls: their text
        matches ``uses``, or they import a module of the directory whose text does (Liger-Kernel's
        scripts call ``do_bench`` through their ``utils.py``)."""
        from .base import python_files

        helpers = {p.stem for p in python_files(directory, "*.py") if self.uses.search(read_text(p))}
        found = []
        for path in script_files(directory):
            text = read_text(path)
            imported = {m.group(1) or m.group(2) for m in _IMPORTS.finditer(text)}
            if self.uses.search(text) or imported & (helpers - {path.stem}):
                found.append(path)
        return found

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """The configured directory when it holds scripts of this convention (:meth:`scripts`)."""
        directory = root / benchmarks
        return Suite(self.name, benchmarks) if directory.is_dir() and self.scripts(directory) else None

    def collect(self, directory: Path, options: dict) -> dict:
        """Run every script that matches ``uses`` (worker side) and list what it measures
        (:func:`list_script` each)."""
        self.install()
        directory = Path(directory)
        cases, errors, skipped = [], [], []
        for path in self.scripts(directory):
            found, error, skip = list_script(path, directory, self.name)
            cases += found
            errors += [error] if error else []
            skipped += [skip] if skip else []
        return listing(cases, errors, skipped)

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        """Run the case's script up to its measuring call; time what that call was handed."""
        self.install()
        measured = self.callables(find_case(case, Path(case["dir"])))
        fn, teardown = timed_callable(measured, device)
        return Prepared(fn, teardown, cold_cache=self.cold_cache(measured))
