"""perfgate's own convention: ``bench_*.py`` files, ``bench_*`` factories, ``params`` products, names.

A benchmark file needs no import of perfgate::

    def bench_layer_norm(device, rows=4096):
        x = torch.randn(rows, 1024, device=device)
        ln = torch.nn.LayerNorm(1024, device=device)
        return lambda: ln(x)          # the zero-argument callable that is timed

    bench_layer_norm.params = {"rows": [1024, 4096]}

gives ``bench_layer_norm[rows=1024]`` and ``bench_layer_norm[rows=4096]``. ``device`` is optional:
a factory without a ``device`` parameter (``def bench_x():``, ``def bench_x(n=8):``) is called
without it; one whose first parameter has another name and no default gets the device there. A
factory of the wrong shape (it cannot be called so, or returns no zero-argument callable) fails
with one line naming this convention (:class:`runner.conventions.base.BenchmarkShapeError`). The pure
helpers (products, names) run anywhere; :meth:`PerfgateConvention.collect` and ``prepare`` import
files and so run only inside a worker process.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from .base import BenchmarkShapeError, Prepared, Suite, case_name, format_error, listing, param_label, \
    python_files, read_text


def labelled_combos(params: dict[str, Iterable[Any]] | None) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """:func:`expand_params` with each combination's labels: ``[(labels, values), ...]``.

    Raises:
        TypeError: as :func:`expand_params`.
    """
    combos = expand_params(params)
    if combos == [{}]:
        return [({}, {})]
    positions = {key: {id(v): i for i, v in enumerate(vals)} for key, vals in (params or {}).items()}
    out = []
    for values in combos:
        labels = {k: param_label(v, positions[k].get(id(v))) for k, v in values.items()}
        out.append((labels, values))
    return out


def expand_params(params: dict[str, Iterable[Any]] | None) -> list[dict[str, Any]]:
    """Cartesian product of a ``params`` mapping: ``{"a": [1, 2], "b": ["x"]}`` →
    ``[{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]``; ``None``/``{}`` → ``[{}]``.

    Raises:
        TypeError: ``params`` is not a mapping of names to non-string iterables.
    """
    if not params:
        return [{}]
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of name -> list of values, got {type(params).__name__}")
    keys = list(params)
    values = []
    for key in keys:
        vals = params[key]
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
            raise TypeError(f"params[{key!r}] must be a list of values, got {vals!r}")
        values.append(list(vals))
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def bench_files(directory: str | Path) -> list[Path]:
    """The ``bench_*.py`` files under ``directory`` (recursively), sorted."""
    return python_files(Path(directory), "bench_*.py")


def import_file(path: Path):
    """Import a benchmark file as its own module (a unique name, so sides and files never clash)."""
    name = "perfgate_bench_" + "_".join(path.with_suffix("").parts[-3:]).replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def collect(directory: str | Path) -> tuple[list[dict], list[dict]]:
    """Import every benchmark file under ``directory`` (worker side) and list its cases.

    Returns:
        ``(cases, errors)``: cases are ``{name, file, func, params, family}`` (``file`` relative to
        ``directory``, ``params`` the labels of the values, :func:`param_label`, ``family`` the
        function); errors are ``{file, error}`` for files that failed to import or whose
        ``params`` are malformed.
    """
    root = Path(directory)
    cases: list[dict] = []
    errors: list[dict] = []
    for path in bench_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            module = import_file(path)
        except BaseException as exc:  # noqa: BLE001 - a broken file must not stop discovery
            errors.append({"file": rel, "error": format_error(exc)})
            continue
        for attr in sorted(vars(module)):
            func = getattr(module, attr)
            if not attr.startswith("bench_") or not callable(func):
                continue
            if getattr(func, "__module__", module.__name__) != module.__name__:
                continue  # imported from elsewhere
            try:
                combos = labelled_combos(getattr(func, "params", None))
            except TypeError as exc:
                errors.append({"file": rel, "error": f"{attr}: {exc}"})
                continue
            for labels, _ in combos:
                cases.append({"name": case_name(attr, labels), "file": rel, "func": attr, "params": labels,
                              "family": attr})
    return cases, errors


def resolve_case(module, func_name: str, name: str, file: str):
    """The benchmark function and the parameter values of the case called ``name`` in ``module``.

    Parameter values never cross the process boundary (a dtype or a function is not JSON): the
    parent names a case, and the worker finds its values again in the file it imported, on its
    own revision.

    Raises:
        LookupError: the function, or that parameter combination, is not defined in ``file`` on
            this revision (the compare records the benchmark as ``new`` or ``failed``).
    """
    func = getattr(module, func_name, None)
    if func is None or not callable(func):
        raise LookupError(f"{func_name} is not defined in {file} on this revision")
    for labels, values in labelled_combos(getattr(func, "params", None)):
        if case_name(func_name, labels) == name:
            return func, values
    raise LookupError(f"{name} is not among the params of {func_name} in {file} on this revision")


#: What a factory's error says the convention is (one line, README "Benchmarks").
SHAPE = ("perfgate's bench_* convention calls each bench_* function with its params (and `device` when it "
         "takes one) and times the zero-argument callable it returns, e.g. `return lambda: model(x)`")


def call_factory(func: Callable, name: str, device: str, params: dict[str, Any]) -> Callable[[], Any]:
    """Call the ``bench_*`` factory ``func`` for the case ``name`` and return the callable to time.

    ``params`` go as keywords; the device goes to a parameter called ``device``, else to a first
    positional parameter that has no default and is not a param (``def bench_x(dev, n)``), else
    nowhere (``def bench_x():`` is called without it).

    Raises:
        BenchmarkShapeError: ``func`` cannot be called so, or returns something other than a
            zero-argument callable (one line, naming the convention).
    """
    args: list[Any] = []
    kwargs = dict(params)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin or C callable: call it the classic way
        signature = None
        args = [device]
    if signature is not None:
        parameters = list(signature.parameters.values())
        if "device" in signature.parameters and "device" not in params:
            kwargs["device"] = device
        elif parameters and parameters[0].name not in params and parameters[0].default is inspect.Parameter.empty \
                and parameters[0].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            args = [device]
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise BenchmarkShapeError(f"{name}: {func.__name__}{signature} cannot be called with "
                                      f"{_call_text(args, kwargs)} ({exc}); {SHAPE}") from None
    fn = func(*args, **kwargs)
    if not callable(fn):
        hint = " (did it run the work itself instead of returning it?)" if fn is None else ""
        raise BenchmarkShapeError(f"{name}: {func.__name__} returned {type(fn).__name__}, not a callable{hint}; {SHAPE}")
    try:
        inspect.signature(fn).bind()
    except TypeError:
        raise BenchmarkShapeError(f"{name}: {func.__name__} returned a callable that needs arguments "
                                  f"({getattr(fn, '__qualname__', type(fn).__name__)}{inspect.signature(fn)}); {SHAPE}") \
            from None
    except ValueError:  # no signature to read (a builtin): trust it
        pass
    return fn


def _call_text(args: list, kwargs: dict) -> str:
    parts = ["device" for _ in args] + [f"{k}=" + ("device" if k == "device" else "…") for k in kwargs]
    return f"({', '.join(parts)})"


#: A top-level ``def bench_*(`` (a factory), and a script that measures itself (another convention).
_FACTORY = re.compile(r"^def\s+bench_\w+\s*\(", re.M)
_SELF_TIMED = re.compile(r"\b(?:do_bench|perf_report|blocked_autorange|adaptive_autorange)\b|\bTimer\s*\(")


class PerfgateConvention:
    """perfgate's ``bench_*`` convention (see the module docstring): the default when no other
    convention claims a revision."""

    name = "perfgate"
    looked_for = "bench_*.py files with bench_* functions"
    options: tuple[str, ...] = ()

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """The configured directory when one of its ``bench_*.py`` files defines a ``bench_*``
        function and does not time itself (``do_bench``, ``perf_report``, a ``Timer``)."""
        for path in bench_files(root / benchmarks) if (root / benchmarks).is_dir() else []:
            text = read_text(path)
            if _FACTORY.search(text) and not _SELF_TIMED.search(text):
                return Suite(self.name, benchmarks)
        return None

    def collect(self, directory: Path, options: dict) -> dict:
        """The ``bench_*`` cases under ``directory`` (:func:`collect`)."""
        cases, errors = collect(directory)
        return listing(cases, errors)

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        """Import the case's file on this revision, find its values by name, call its factory
        (:func:`call_factory`)."""
        module = import_file(Path(case["dir"]) / case["file"])
        func, params = resolve_case(module, case["func"], case["name"], case["file"])
        return Prepared(call_factory(func, case["name"], device, params))


CONVENTION = PerfgateConvention()
