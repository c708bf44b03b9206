"""The asv convention: asv (airspeed velocity) benchmark suites as they are, measured with perfgate's sampler.

Detection (parent side): an ``asv.conf.json`` at the root, in the configured ``benchmarks``
directory, or one directory down (numpy and pandas keep it in ``benchmarks/`` and ``asv_bench/``),
with its ``benchmark_dir`` (default ``benchmarks``, relative to the file, as asv reads it).

Discovery follows asv's own rules (``asv_runner.discovery`` and ``asv_runner.benchmarks._base``):
the benchmark directory is imported as a package (its parent goes first on ``sys.path``) and
every module and sub-package in it is walked; a benchmark is a module-level function or a method
of a (non-abstract) class whose name matches one of asv's types (:data:`KINDS`). Each is run
as asv defines it:

- ``time_*``/``Time*``: timed by perfgate's sampler;
- ``peakmem_*``: the peak resident set of the process while the set-ups and one call run
  (:class:`runner.conventions.process_memory.PeakResident`; asv reads the process's
  ``ru_maxrss``), in bytes, one value per fresh process;
- ``mem_*``: the deep size of the object the call returns
  (:func:`runner.conventions.process_memory.deep_sizeof`; asv uses pympler's ``asizeof``), bytes;
- ``track_*``: the number the call returns, in its ``unit`` attribute (asv's default ``unit``);
- ``timeraw_*``: not run (listed as skipped: it times code in a new interpreter).

The three measured types are cases that measure themselves (``measures: "self"``, one run per
process and side, :mod:`runner.pipeline.timing.measured`); ``peakmem_*`` and ``mem_*`` carry
``measure: "memory"`` (compared as memory: :func:`runner.measures.memory_change`,
``memory_threshold``), a ``track_*`` value is compared as any reported value, larger being worse as
asv reads it. Their attributes are looked up on the function first, then the class instance, then
the module:

- ``params`` (a list of lists → their product; a single flat list → one parameter) and
  ``param_names`` (missing names become ``param1``, ``param2``... as in asv);
- ``setup`` and ``teardown`` on every level (module, class, function attribute; names compared
  without case), all of them run — setups module first, teardowns function first — with the
  parameter values as arguments;
- ``setup_cache``: called once per worker process (asv: once per environment, pickled), its
  return value passed as the first argument of the setups, the benchmark and the teardowns;
- ``timeout``: seconds one set-up or one sample may take (in place of the config's ``timeout``);
- skips: ``NotImplementedError`` raised by a setup skips that combination, ``skip_params``
  (``asv_runner.benchmarks.mark.skip_for_params``) skips the listed value tuples, and
  ``skip_benchmark`` drops the function, as asv does;
- ``benchmark_name`` renames a benchmark, as in asv.

``number``, ``repeat``, ``rounds``, ``sample_time``, ``warmup_time``, ``min_run_count`` and
``processes`` are ignored: perfgate's sampler and its process pairs own them.

Names are asv's (``module.Class.time_method``, the module relative to the benchmark directory)
with the parameter values in parentheses, each written by :func:`runner.conventions.base.param_label`
(stable across processes: ``time_mm(256, torch.float32)``).

The pure helpers (:func:`kind_of`, :func:`normalize_params`, :func:`labelled_combos`,
:func:`case_name`, :func:`module_name`) live in :mod:`runner.conventions.asv_names` and import no suite; :func:`collect` and :func:`prepare`
import the suite and so run only inside a worker.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from .base import Prepared, Reading, Skipped, Suite, format_error, listing
from .asv_conf import find_asv_conf, read_asv_conf
from .asv_names import (NOT_RUN, SELF_MEASURED, case_name, kind_of, labelled_combos, module_name,
                        normalize_params, self_measured_fields, track_value)
from .process_memory import PeakResident, deep_sizeof

# -- worker side: import and run ----------------------------------------------------------------
def _import_package(root: Path):
    """Import the benchmark directory ``root`` as the package ``root.name`` (asv's way: its parent
    goes first on ``sys.path``), dropping a same-named package imported from elsewhere."""
    package = root.name
    loaded = sys.modules.get(package)
    paths = [str(Path(p).resolve()) for p in getattr(loaded, "__path__", [])] if loaded else []
    if loaded is not None and str(root.resolve()) not in paths:
        for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
            del sys.modules[key]
    parent = str(root.resolve().parent)
    if parent not in sys.path[:1]:
        sys.path.insert(0, parent)
    importlib.invalidate_caches()
    return importlib.import_module(package)


def _walk_modules(root: Path) -> tuple[list[tuple[str, Any]], list[dict]]:
    """``([(rel_file, module), ...], errors)``: the package ``root`` and every module below it
    (asv's ``disc_modules``); a module that fails to import is an error of its file alone."""
    found: list[tuple[str, Any]] = []
    errors: list[dict] = []
    try:
        top = _import_package(root)
    except BaseException as exc:  # noqa: BLE001 - a broken package must not stop the compare
        return [], [{"file": "__init__.py", "error": format_error(exc)}]

    def rel(module) -> str:
        path = Path(getattr(module, "__file__", None) or root / "__init__.py").resolve()
        try:
            return path.relative_to(root.resolve()).as_posix()
        except ValueError:
            return path.name

    def walk(module) -> None:
        found.append((rel(module), module))
        for info in pkgutil.iter_modules(getattr(module, "__path__", None) or [], module.__name__ + "."):
            try:
                sub = importlib.import_module(info.name)
            except BaseException as exc:  # noqa: BLE001
                suffix = "/__init__.py" if info.ispkg else ".py"
                errors.append({"file": info.name.split(".", 1)[1].replace(".", "/") + suffix,
                               "error": format_error(exc)})
                continue
            walk(sub)

    walk(top)
    return found, errors


def _attrs(sources: list, name: str, ignore_case: bool = False) -> list:
    """The attribute ``name`` of every source that has one (not None), in order (asv's
    ``_get_all_attrs``; with ``ignore_case``, names compared without case).

    Raises:
        ValueError: a source has two attributes of that name in different case.
    """
    out = []
    for source in sources:
        if ignore_case:
            vals = [getattr(source, key) for key in dir(source) if key.lower() == name.lower()]
            if len(vals) > 1:
                raise ValueError(f"{getattr(source, '__name__', source)!s} has several {name} functions")
            val = vals[0] if vals else None
        else:
            val = getattr(source, name, None)
        if val is not None:
            out.append(val)
    return out


def _first(sources: list, name: str, default: Any = None) -> Any:
    found = _attrs(sources, name)
    return found[0] if found else default


def _benchmarks(module) -> list[tuple[str, str, Callable, list]]:
    """``(attr_path, kind, func, sources)`` of every benchmark asv finds in ``module`` (names not
    starting with ``_``; classes instantiated, as asv does)."""
    out = []
    for attr, value in list(vars(module).items()):
        if attr.startswith("_"):
            continue
        if inspect.isclass(value) and not inspect.isabstract(value):
            members = [(n, m) for n, m in inspect.getmembers(value) if inspect.isfunction(m) or inspect.ismethod(m)]
            if not any(kind_of(getattr(m, "benchmark_name", n).split(".")[-1]) for n, m in members):
                continue
            instance = value()
            for name, member in members:
                found = _benchmark(f"{attr}.{name}", getattr(instance, name), [instance, module], member)
                if found:
                    out.append(found)
        elif inspect.isfunction(value):
            found = _benchmark(attr, value, [module], value)
            if found:
                out.append(found)
    return out


def _benchmark(attr_path: str, func: Callable, owners: list, raw: Callable):
    if getattr(raw, "skip_benchmark", False):
        return None
    kind = kind_of(getattr(raw, "benchmark_name", attr_path.split(".")[-1]).split(".")[-1])
    return (attr_path, kind, func, [func, *owners]) if kind else None


def _bench_name(module, attr_path: str, func: Callable) -> str:
    custom = getattr(func, "benchmark_name", None)
    if custom:
        return str(custom)
    return ".".join(module.__name__.split(".", 1)[1:] + [attr_path])


def _combos(sources: list) -> list[tuple[dict[str, str], tuple]]:
    params, names = normalize_params(_first(sources, "params", []), _first(sources, "param_names", []))
    return labelled_combos(params, names)


def _skipped_by_params(sources: list, values: tuple) -> bool:
    """asv's ``skip_params``: the value tuple is listed (compared with ``==``)."""
    for entry in _first(sources, "skip_params", []) or []:
        try:
            if tuple(entry) == values:
                return True
        except Exception:  # noqa: BLE001 - values whose == is not a bool (arrays) never match
            continue
    return False


def collect(directory: str | Path) -> dict:
    """Import the asv suite in ``directory`` (worker side) and list its benchmarks.

    Returns:
        ``{benchmarks, errors, skipped}``: benchmarks are ``{name, file, func, params, suite,
        timeout?}`` (``func`` the attribute path in the module, ``file`` relative to
        ``directory``); errors ``{file, error}`` for modules that failed to import and benchmarks
        whose params are malformed; skipped ``{name, file, reason}`` for benchmarks perfgate does
        not run (asv's ``timeraw_*``, ``skip_params``).
    """
    root = Path(directory)
    modules, errors = _walk_modules(root)
    cases: list[dict] = []
    skipped: list[dict] = []
    for rel, module in modules:
        try:
            benchmarks = _benchmarks(module)
        except BaseException as exc:  # noqa: BLE001 - a class that cannot be instantiated
            errors.append({"file": rel, "error": format_error(exc)})
            continue
        for attr_path, kind, func, sources in benchmarks:
            name = _bench_name(module, attr_path, func)
            if kind in NOT_RUN:
                skipped.append({"name": name, "file": rel, "reason": NOT_RUN[kind]})
                continue
            try:
                combos = _combos(sources)
            except TypeError as exc:
                errors.append({"file": rel, "error": f"{name}: {exc}"})
                continue
            timeout = _first(sources, "timeout")
            for labels, values in combos:
                case = {"name": case_name(name, labels), "file": rel, "func": attr_path, "params": labels,
                        "suite": "asv", "family": name}
                if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
                    case["timeout"] = float(timeout)
                if kind in SELF_MEASURED:
                    case.update(self_measured_fields(kind, case["name"], _first(sources, "unit")))
                if _skipped_by_params(sources, values):
                    skipped.append({"name": case["name"], "file": rel, "reason": "skip_params"})
                else:
                    cases.append(case)
    return listing(cases, errors, skipped)


def _self_measure(kind: str, call: Callable[[], Any], name: str, unit: str,
                  resident: PeakResident | None) -> Callable[[], dict]:
    """One run of an asv benchmark of a self-measured type → ``{name: Reading}`` (see the module docstring)."""

    def measure() -> dict:
        result = call()
        if kind == "peakmem":
            value = float(resident.peak_bytes())
        elif kind == "mem":
            value = float(deep_sizeof(result))
        else:
            value = track_value(result, name)
        return {name: Reading((value,), unit=unit)}

    return measure


def prepare(directory: str | Path, file: str, attr_path: str, name: str) -> Prepared:
    """Set up the asv benchmark case ``name`` (worker side): ``setup_cache`` once, every setup with
    the case's values, and the callable perfgate times — the benchmark with the values applied —
    or, for asv's ``peakmem_*``, ``mem_*`` and ``track_*``, the ``measure`` that runs it once and
    reports its value (the resident set's peak is watched from before the set-ups, as asv counts them).

    Raises:
        LookupError: the benchmark or that parameter combination is not in ``file`` on this revision.
        Skipped: a setup raised ``NotImplementedError`` (asv's skip), or ``skip_params`` lists it.
    """
    module, owner, func = _locate(Path(directory), file, attr_path)
    sources = [func, owner] + ([module] if owner is not module else [])
    bench_name = _bench_name(module, attr_path, func)
    values = next((v for labels, v in _combos(sources) if case_name(bench_name, labels) == name),
                  None)
    if values is None:
        raise LookupError(f"{name} is not among the params of {attr_path} in {file} "
                          "on this revision")
    if _skipped_by_params(sources, values):
        raise Skipped(f"{name}: in skip_params")
    kind = kind_of(bench_name.split(".")[-1]) or kind_of(attr_path.rpartition(".")[2])
    resident = None
    if kind == "peakmem":
        resident = PeakResident()
        resident.start()
    teardowns = _attrs(sources, "teardown", ignore_case=True)
    args = _set_up(sources, values, name)

    def teardown() -> None:
        for down in teardowns:
            down(*args)

    call = functools.partial(func, *args)
    if kind in SELF_MEASURED:
        fields = self_measured_fields(kind, name, _first(sources, "unit"))
        measure = _self_measure(kind, call, name, fields["unit"], resident)
        return Prepared(teardown=teardown, measure=measure)
    return Prepared(call, teardown)


def _locate(root: Path, file: str, attr_path: str) -> tuple[Any, Any, Callable]:
    """``(module, owner, benchmark)``: the module of ``file`` imported as asv does, a new instance
    of the benchmark's class (the module for a function) and the benchmark, a callable.

    Raises:
        LookupError: the class or the benchmark is not in ``file`` on this revision.
    """
    _import_package(root)
    module = importlib.import_module(module_name(root.name, file))
    owner: Any = module
    head, _, leaf = attr_path.rpartition(".")
    if head:
        klass = getattr(module, head, None)
        if not inspect.isclass(klass):
            raise LookupError(f"{head} is not a class in {file} on this revision")
        owner = klass()
    func = getattr(owner, leaf, None)
    if not callable(func):
        raise LookupError(f"{attr_path} is not defined in {file} on this revision")
    return module, owner, func


def _set_up(sources: list, values: tuple, name: str) -> tuple:
    """Run a case's set-ups as asv does: ``setup_cache`` once (after the module's parameter-free
    setups), then every setup, module first, with the case's ``values`` (and the cache first,
    where there is one); returns those arguments, the benchmark's and its teardowns'.

    Raises:
        Skipped: a setup raised ``NotImplementedError`` (asv's skip).
    """
    setups = _attrs(sources, "setup", ignore_case=True)[::-1]
    setup_cache = _first(sources, "setup_cache")
    args = values
    if setup_cache is not None:
        for setup in setups:
            if _parameter_free(setup):
                setup()
        cache = setup_cache()
        if cache is not None:
            args = (cache, *values)
    try:
        for setup in setups:
            setup(*args)
    except NotImplementedError as exc:
        raise Skipped(f"{name}: setup raised NotImplementedError{f': {exc}' if str(exc) else ''}") from None
    return args


def _parameter_free(setup: Callable) -> bool:
    """A module-level setup callable without arguments (asv runs those before ``setup_cache``)."""
    if inspect.ismethod(setup):
        return False
    try:
        inspect.signature(setup).bind()
    except (TypeError, ValueError):
        return False
    return True


class AsvConvention:
    """asv suites (see the module docstring)."""

    name = "asv"
    looked_for = "asv time_*, peakmem_*, mem_* or track_* functions or methods"
    options: tuple[str, ...] = ()

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """The ``benchmark_dir`` of the revision's ``asv.conf.json`` (:func:`find_asv_conf`); None without one.

        Raises:
            UserError: an ``asv.conf.json`` that is not JSON, or whose ``benchmark_dir`` leaves the
                repository.
        """
        conf_path = find_asv_conf(root, benchmarks)
        if conf_path is None:
            return None
        where = conf_path.relative_to(root).as_posix()
        conf = read_asv_conf(conf_path.read_text(encoding="utf-8", errors="replace"), where)
        bench_dir = conf.get("benchmark_dir", "benchmarks")
        if not isinstance(bench_dir, str) or not bench_dir:
            raise UserError(f"{where}: benchmark_dir must be a directory name")
        target = (conf_path.parent / bench_dir).resolve()
        if not target.is_relative_to(root.resolve()):
            raise UserError(f"{where}: benchmark_dir {bench_dir!r} is outside the repository")
        return Suite(self.name, target.relative_to(root.resolve()).as_posix())

    def collect(self, directory: Path, options: dict) -> dict:
        """The asv suite in ``directory`` (:func:`collect`)."""
        return collect(directory)

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        """:func:`prepare` of the case (asv has no device: the suite decides where it runs)."""
        return prepare(case["dir"], case["file"], case["func"], case["name"])


CONVENTION = AsvConvention()
