"""The torch.utils.benchmark convention: ``Timer`` scripts run as they are.

The scripts of flash-attention (``benchmarks/benchmark_flash_attention.py`` through
``flash_attn.utils.benchmark``), TransformerEngine (``benchmarks/linear/benchmark_linear.py``) and
xformers build ``torch.utils.benchmark.Timer(stmt, setup, globals=…, label=…, sub_label=…,
description=…)`` objects and call ``timeit``, ``blocked_autorange``, ``adaptive_autorange`` or
``autorange`` on them (and hand the measurements to ``Compare``). Each such call is a case: the
script runs as ``__main__`` (:mod:`runner.conventions.capture`), the call is captured, and perfgate's
sampler times the Timer's ``stmt`` — its ``setup`` run once in a copy of its ``globals``, then the
statement executed in that namespace per timed call, as ``timeit`` does — in the paired workers.
The call's own ``number``, ``min_run_time`` and the Timer's ``num_threads`` belong to perfgate's
sampler and conditions and are ignored; while listing, the call returns a ``Measurement`` of the
nominal time, so ``Compare`` and printing go on.

Names: ``label[sub_label=…,description=…]`` from the Timer's ``label``, ``sub_label`` and
``description`` (``Compare``'s table, rows and columns), else the script's name with the
parameters that tell its calls apart (:mod:`runner.conventions.capture`). A C++ Timer
(``language="c++"``) is skipped with the reason.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from . import capture
from .base import Skipped
from .replay import Measured

#: A script that times with torch.utils.benchmark (its text), or through a helper module that does.
USES = re.compile(r"torch\.utils\.benchmark|\bbenchmark\.Timer\b|\b(?:blocked|adaptive)_autorange\b"
                  r"|utils\.benchmark\s+import")

#: The Timer methods that measure (each call is a case).
METHODS = ("timeit", "blocked_autorange", "adaptive_autorange", "autorange")


#: A label that is itself ``key=value`` pairs (``n=4096`` or ``m=8, n=4096``).
_PAIRS = re.compile(r"^\s*[A-Za-z_]\w*\s*=\s*[^,=]+(?:,\s*[A-Za-z_]\w*\s*=\s*[^,=]+)*\s*$")


def timer_names(timer: Any) -> tuple[str | None, dict[str, str]]:
    """``(family, given params)`` of a Timer: its ``label`` (None: the script's name), and its
    ``sub_label`` and ``description`` where set — a ``sub_label`` or ``description`` written as
    ``key=value`` pairs (``n=4096``) gives those keys instead."""
    spec = getattr(timer, "_task_spec", None)
    given: dict[str, str] = {}
    for key in ("sub_label", "description"):
        text = getattr(spec, key, None)
        if not text:
            continue
        if _PAIRS.match(str(text)):
            for pair in str(text).split(","):
                k, _, v = pair.partition("=")
                given[k.strip()] = v.strip()
        else:
            given[key] = str(text)
    label = getattr(spec, "label", None)
    return (str(label) if label else None), given


def stmt_callable(timer: Any) -> Callable[[], Any]:
    """The Timer's statement as a zero-argument callable: ``setup`` run once in a copy of the
    Timer's globals, the statement executed in that namespace on every call (``timeit``'s
    semantics: names the statement assigns stay visible to the next call).

    Raises:
        Skipped: a C++ Timer.
    """
    language = getattr(timer, "_language", None)
    if "CPP" in str(language).upper():
        raise Skipped("a C++ torch.utils.benchmark.Timer statement is not run by perfgate")
    spec = timer._task_spec
    namespace = dict(getattr(timer, "_globals", None) or {})
    exec(compile(spec.setup or "pass", "<Timer setup>", "exec"), namespace)  # noqa: S102 - the target's own code
    code = compile(spec.stmt or "pass", "<Timer stmt>", "exec")

    def stmt() -> None:
        exec(code, namespace)  # noqa: S102

    return stmt


def _captured(original: Callable) -> Callable:
    """A Timer method that hands the Timer to the active recorder, else measures as usual."""

    def measure(self, *args, **kwargs):
        recorder = capture.ACTIVE
        if recorder is None:
            return original(self, *args, **kwargs)
        family, given = timer_names(self)
        recorder.measuring_call(family, given, _Deferred(self))
        from torch.utils.benchmark.utils.common import Measurement

        return Measurement(number_per_run=1, raw_times=[capture.NOMINAL_MS * 1e-3], task_spec=self._task_spec)

    measure.__perfgate__ = True
    measure.__wrapped__ = original
    return measure


class _Deferred:
    """A Timer's statement, built only when it is the case being set up (a listing never runs
    ``setup``)."""

    def __init__(self, timer: Any):
        self.timer = timer
        self._fn: Callable[[], Any] | None = None

    def __call__(self) -> Any:
        if self._fn is None:
            self._fn = stmt_callable(self.timer)
        return self._fn()


def install() -> None:
    """Make ``torch.utils.benchmark.Timer``'s measuring methods capture (idempotent).

    Raises:
        RuntimeError: torch is not installed where the worker runs.
    """
    try:
        from torch.utils.benchmark.utils.timer import Timer
    except ImportError as exc:
        raise RuntimeError(f"the torch-timer convention needs torch in the benchmark environment ({exc})") from None
    for name in METHODS:
        method = getattr(Timer, name, None)
        if method is not None and not getattr(method, "__perfgate__", False):
            setattr(Timer, name, _captured(method))


class TorchTimerConvention(capture.ScriptConvention):
    """``torch.utils.benchmark.Timer`` scripts (see the module docstring)."""

    name = "torch-timer"
    looked_for = "bench*.py / benchmark*.py scripts that measure with torch.utils.benchmark.Timer"
    uses = USES

    def install(self) -> None:
        """:func:`install`."""
        install()

    def callables(self, measured: Measured) -> Measured:
        """The captured Timer as its statement (:func:`stmt_callable`)."""
        measured.fns = [stmt_callable(fn.timer) if isinstance(fn, _Deferred) else fn for fn in measured.fns]
        return measured


CONVENTION = TorchTimerConvention()
