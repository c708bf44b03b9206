"""What every benchmark convention shares: the protocol, the cases it lists, what set-up returns.

A *convention* is how a repository writes its benchmarks (perfgate's ``bench_*`` factories, an
asv suite, pytest-benchmark tests, Triton ``perf_report``/``do_bench`` scripts, ``torch.utils.
benchmark.Timer`` scripts, a command printing Google Benchmark JSON). Each is one module of
:mod:`runner.conventions` holding one object that satisfies :class:`Convention`, registered in
one table (:data:`runner.conventions.REGISTRY`). Its two halves run in two processes:

* **parent side** — :meth:`Convention.detect`: does the revision checked out at ``root`` use this
  convention, and where are its benchmarks? It reads files (text, JSON, :mod:`ast`), never imports
  or runs them;
* **worker side** — :meth:`Convention.collect` lists the cases (it may import and run the target's
  code: only ever inside a worker process) and :meth:`Convention.prepare` sets one case up and
  returns a :class:`Prepared`: the zero-argument callable perfgate's sampler times, or, for a
  benchmark that measures itself, a ``measure`` callable that runs it once and returns its
  :class:`Reading` per benchmark name.

Module level of every convention imports the standard library only (the parent imports the
registry to detect; ``tests/test_layers.py`` checks that no torch, pytest or triton comes with it).
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

#: A case listed by a convention: ``{name, file, func, params, suite, family?, timeout?, measures?,
#: group?, ...}``. ``name`` is unique in the listing and stable across processes and revisions;
#: ``params`` maps each parameter's name to its label (:func:`param_label`), in the order the
#: benchmark declares them; ``family`` names the parametrised family the case belongs to (the
#: function, the grid); ``measures: "self"`` marks a case whose numbers the benchmark reports
#: itself, measured one run per ``group`` (all cases of a group come from one run). The parent
#: hands the case back, as listed, with every ``setup`` request: a convention may keep there what
#: it needs to find the case again.
Case = dict

#: Directions of a measure: ``smaller`` is better (times, bytes), ``bigger`` is better (throughput).
DIRECTIONS = ("smaller", "bigger")


class Skipped(Exception):
    """A benchmark case its own suite skips on this revision (asv: ``NotImplementedError`` from a
    setup; pytest: a skip); reported as skipped, not failed. The message says why."""


class BenchmarkShapeError(Exception):
    """A benchmark that does not have the shape its convention asks for (a ``bench_*`` function that
    returns no callable, or cannot be called as the convention calls it). The message is one line
    naming the convention; the worker reports it without a traceback."""


@dataclass(frozen=True)
class Reading:
    """What a benchmark that measures itself reported for one benchmark name in one run.

    Attributes:
        values: its repetitions in this run (at least one), in ``unit``: seconds for times (a
            convention converts ``ns``/``us``/``ms`` to seconds), else the unit as reported
            (``tokens/s``, ``GB/s``, ``MB``).
        unit: ``s`` for times, else the reported unit.
        direction: ``smaller`` or ``bigger`` (which way is better, :data:`DIRECTIONS`).
    """

    values: tuple[float, ...]
    unit: str = "s"
    direction: str = "smaller"


@dataclass
class Prepared:
    """A benchmark case set up in a worker.

    Exactly one of:

    * ``fn``: the zero-argument callable perfgate's sampler times (calibration, warm-up, samples);
    * ``measure``: for a benchmark that measures itself, one run of it → ``{name: Reading}`` for
      every benchmark name that run reports (one run = one sample set per side).

    ``teardown`` (or None) runs when the worker process ends. ``cold_cache``: how the benchmark's
    own harness times ``fn``, the timer's default where the configuration leaves it to the
    convention (``cold_cache = "auto"``): True for a call handed to ``triton.testing.do_bench``
    (an L2 flush before every call), None where the convention has no timing of its own (warm).
    """

    fn: Callable[[], Any] | None = None
    teardown: Callable[[], None] | None = None
    measure: Callable[[], Mapping[str, Reading]] | None = None
    cold_cache: bool | None = None


@dataclass(frozen=True)
class Suite:
    """A revision's benchmarks: ``kind`` (a convention's name) and the directory the worker lists,
    relative to the revision's root (``/``-separated; ``.`` for the root itself)."""

    kind: str
    directory: str


class Convention(Protocol):
    """One way of writing benchmarks (see the module docstring).

    Attributes:
        name: the config's ``suite`` value and ``settings.suite`` in results.json.
        looked_for: what the convention looks for, for "no benchmarks found (…)".
        options: the configuration keys (:class:`runner.config.Config` fields) its worker side
            needs; the parent sends their values as ``options`` with each ``list``/``setup``.
    """

    name: str
    looked_for: str
    options: tuple[str, ...]

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """Parent side: the :class:`Suite` when the revision at ``root`` uses this convention, with
        ``benchmarks`` the configured directory (relative) and ``cfg`` the
        :class:`runner.config.Config`; None when it does not. Reads files only.

        Raises:
            runner.errors.UserError: the convention's own configuration is broken (named).
        """

    def collect(self, directory: Path, options: dict) -> dict:
        """Worker side: ``{benchmarks: [Case], errors: [{file, error}], skipped: [{name, file,
        reason}]}`` for the benchmarks under ``directory``."""

    def prepare(self, case: Case, device: str, options: dict) -> Prepared:
        """Worker side: set ``case`` up on ``device`` (``cpu``, ``cuda``); ``case`` is as listed (on
        the head revision), with ``dir`` set to this side's benchmark directory.

        Raises:
            LookupError: the case is not defined on this revision (the compare calls it ``new``).
            Skipped: the suite skips it here.
            BenchmarkShapeError: the benchmark has the wrong shape (one line, no traceback).
        """


def listing(benchmarks: list | None = None, errors: list | None = None, skipped: list | None = None) -> dict:
    """A worker's listing ``{benchmarks, errors, skipped}`` (empty lists by default)."""
    return {"benchmarks": list(benchmarks or []), "errors": list(errors or []), "skipped": list(skipped or [])}


# -- names ---------------------------------------------------------------------------------------
def param_label(value: Any, position: int | None = None) -> str:
    """A parameter value as it appears in a benchmark name: stable across processes and sides.

    ``str()`` of a function or an object without its own ``__repr__`` carries a memory address
    (``<function silu at 0x7f…>``), which differs between processes, so it cannot name a
    benchmark on both sides (asv made the same choice). Rules: strings as they are; numbers,
    ``None`` and booleans by ``repr``; torch dtypes and devices by ``str`` (``torch.bfloat16``,
    ``cuda:0``); enum members ``Class.NAME``; functions, classes and other named callables by
    their qualified name (``gelu``, ``MyNorm``); tuples and lists element-wise; anything else by
    ``repr`` when that has no address, else its type name with ``#position`` in the list.
    """
    import enum

    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float, complex)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(param_label(v) for v in value)
        return f"({inner}{',' if len(value) == 1 and isinstance(value, tuple) else ''})" if isinstance(value, tuple) \
            else f"[{inner}]"
    module = type(value).__module__ or ""
    if module.startswith("torch") and type(value).__name__ in ("dtype", "device", "layout", "memory_format"):
        return str(value)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str) and (callable(value) or isinstance(value, type)):
        return name.replace("<locals>.", "")
    text = repr(value)
    if _ADDRESS.search(text):
        return f"{type(value).__name__}#{position if position is not None else 0}"
    return text


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def case_name(func: str, labels: Mapping[str, str]) -> str:
    """``bench_x`` or ``bench_x[a=1,b=fp16]`` from parameter labels (:func:`param_label`), keys
    in the order given."""
    if not labels:
        return func
    return f"{func}[{','.join(f'{k}={v}' for k, v in labels.items())}]"


# -- errors --------------------------------------------------------------------------------------
#: perfgate's own package: frames from here are left out of the tracebacks shown to users.
_OWN = str(Path(__file__).resolve().parents[1])


def format_error(exc: BaseException, limit: int = 8) -> str:
    """The last ``limit`` lines of a traceback without perfgate's own frames: the frames of the
    benchmark's code nearest the error and its message. A :class:`BenchmarkShapeError` (or an
    error raised by perfgate itself, with no frame of the benchmark's) is its message alone."""
    if isinstance(exc, BenchmarkShapeError):
        return str(exc)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not str(f.filename).startswith(_OWN)]
    lines = (["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []) \
        + traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).rstrip().splitlines()
    return "\n".join(text[-limit:])


# -- files ---------------------------------------------------------------------------------------
#: Folders never searched for benchmark files.
SKIP_DIRS = frozenset({"__pycache__", ".git", ".venv", "venv", "node_modules", "site-packages", "build", "dist"})


def python_files(directory: Path, pattern: str) -> list[Path]:
    """The ``pattern`` files (a glob like ``bench_*.py``) under ``directory``, recursively, sorted,
    outside :data:`SKIP_DIRS` and hidden folders."""
    root = Path(directory)
    return sorted(p for p in root.rglob(pattern)
                  if not any(part in SKIP_DIRS or part.startswith(".") for part in p.relative_to(root).parts[:-1]))


def read_text(path: Path) -> str:
    """A file's text ("" when it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class Named:
    """Names handed out in a listing, each once: :meth:`unique` appends ``#2``, ``#3`` to a repeat."""

    seen: dict[str, int] = field(default_factory=dict)

    def unique(self, name: str) -> str:
        """``name``, or ``name#k`` for its k-th appearance (k ≥ 2)."""
        count = self.seen.get(name, 0) + 1
        self.seen[name] = count
        return name if count == 1 else f"{name}#{count}"
