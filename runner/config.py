"""The target repository's configuration: ``[tool.perfgate]`` or ``perfgate.toml``.

The keys are :class:`Config`'s fields, documented in README ("Configuration"); command-line
flags override the file. Unknown keys and wrong types are :class:`~runner.errors.ConfigError`
naming the key and the file. The keys of :data:`INTERNALS` are deprecated: read and honoured for
one more release, each with a message (:attr:`Config.deprecated`).

The settings of a compare are a policy (thresholds, ``alpha``, what is benchmarked and how it is
installed), so they come from the base revision, or from a file the caller names, never from
the head under test: :func:`head_changes` lists what the head would have changed, for the report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from . import stats
from .errors import ConfigError
from .config_values import (check_webhook_url, is_fraction, parse_gpu_arch, parse_runners,
                            parse_selection)
from .selection import Rules as SelectionRules


def suite_names() -> tuple[str, ...]:
    """The values of the key ``suite``: ``auto`` and every registered benchmark convention
    (:data:`runner.conventions.REGISTRY`; "auto" tries them in its order, runner.pipeline.suites)."""
    from . import conventions

    return ("auto", *conventions.names())

#: The values of the key ``device`` (and of ``--device`` and the Action's input ``device``).
DEVICES = ("auto", "cpu", "cuda")
#: Host allocator presets of the workers (key ``allocator``; why ``fresh`` is the default and
#: what each costs: runner.pipeline.machine.conditions.GLIBC_FRESH and GLIBC_STEADY).
ALLOCATORS = ("fresh", "system", "steady", "jemalloc", "tcmalloc")

#: Keys that are internals now, constants where their concept lives: deprecated, still read and
#: honoured for this release, ignored from the next. Key → (whose internal, what to do instead).
INTERNALS = {
    "process_noise": ("the statistics (runner.stats.PROCESS_NOISE)", "remove it"),
    "min_process_pairs": ("the statistics (runner.stats.MIN_PROCESS_PAIRS)", "remove it"),
    "pair_rounds": ("the statistics (runner.stats.PAIR_ROUNDS)", "remove it"),
    "max_rounds": ("the statistics (runner.stats.MAX_ROUNDS)", "remove it"),
    "lock_clocks_mhz": ("the clock lock (runner.pipeline.machine.clock_plan.LOCK_SM_MHZ)",
                        "remove it: a locked run locks the GPU's default application clock"),
    "cuda_alloc_conf": ("the workers' environment "
                        "(runner.pipeline.machine.conditions.CUDA_ALLOC_CONF)",
                        "remove it, and export PYTORCH_CUDA_ALLOC_CONF on the runner instead: both "
                        "workers inherit it"),
}


@dataclass(frozen=True)
class Config:
    """Settings of one compare. Each field but ``deprecated`` is a key of the file; ``perfgate
    init`` writes these descriptions into the perfgate.toml it makes (README has the details).

    Attributes:
        benchmarks: directory of the benchmarks, relative to the repository root.
        suite: the benchmarks' convention: ``auto`` (detected), ``perfgate``, ``asv``,
            ``pytest-benchmark``, ``triton``, ``torch-timer`` or ``command``.
        command: for ``suite = "command"``: a shell command printing its measurements as JSON
            (``{out}`` in it: a file it writes them to).
        command_format: the JSON ``command`` prints: ``auto``, ``googlebenchmark``, ``nvbench``,
            ``customSmallerIsBetter`` or ``customBiggerIsBetter`` (runner.formats).
        install: shell command run in each revision's fresh venv ("" = none).
        device: ``auto``, ``cpu`` or ``cuda``.
        threshold: practical significance, a fraction of the base time (0.02 = 2 %).
        fail_threshold: a regression beyond this fraction fails the check, ``--fail-on-regression``.
        memory_threshold: a peak-memory change beyond this fraction of base's is a memory verdict.
        fail_on_memory_regression: a memory regression fails as a time regression does.
        fail_on_output_change: a head that changes a benchmark's result fails
        (runner.outputs.verdict).
        max_time: seconds budget of one compare, the ``install`` command's own time excluded.
        label: the PR label that triggers the App.
        alpha: family-wise level of one benchmark's sequential test (runner.stats).
        min_rounds: rounds (base+head pairs) before the first look.
        min_sample_time: seconds one sample lasts at least; 0 = by device: 2 ms on a CPU, 20 ms
            on a GPU.
        cold_cache: flush the GPU L2 cache before every timed call (CUDA only): ``true``,
            ``false`` or ``auto`` (as the convention's own harness times: on for the calls a script
            hands to ``triton.testing.do_bench``, off elsewhere).
        timeout: seconds a set-up or one sample may take before the worker is killed.
        profile: run the profiling pass after timing.
        allocator: host allocator of both workers: ``fresh``, ``system``, ``steady``,
            ``jemalloc`` or ``tcmalloc`` (runner.pipeline.machine.conditions.allocator_env).
        cpus: CPUs both workers are pinned to: ``auto``, ``all`` or a list like ``"2,3"``.
        threads: intra-op threads of both workers; 0 = torch's default (capped by the CPUs).
        lock_clocks: lock a CUDA GPU's clocks for the timing pass where allowed, restore them after
            (off by default: the clocks are the runner's owner's to set).
        runners: the App's runner groups, ``((name, (label, ...)), ...)`` in the file's order.
        regression_webhook: an ``https://`` address for the App's messages about regressions on the
            default branch; "" = none.
        selection: ``[selection]``: run only what a pull request can affect (selection.Rules).
        gpu_arch: what runner.kernels compiles for (``["sm_90"]``; empty: the GPU, or sm_80+sm_90).
        max_rounds: deprecated key (:data:`INTERNALS`), default ``stats.MAX_ROUNDS``.
        pair_rounds: deprecated key (:data:`INTERNALS`), default ``stats.PAIR_ROUNDS``.
        process_noise: deprecated key (:data:`INTERNALS`), default ``stats.PROCESS_NOISE``.
        min_process_pairs: deprecated key (:data:`INTERNALS`), default ``stats.MIN_PROCESS_PAIRS``.
        lock_clocks_mhz: deprecated key (:data:`INTERNALS`), default ``clock_plan.LOCK_SM_MHZ``.
        cuda_alloc_conf: deprecated key (:data:`INTERNALS`), default ``conditions.CUDA_ALLOC_CONF``.
        deprecated: not a key: key → message, for each key of :data:`INTERNALS` the file sets.
    """

    benchmarks: str = "benchmarks"
    suite: str = "auto"
    command: str = ""
    command_format: str = "auto"
    install: str = ""
    device: str = "auto"
    threshold: float = 0.02
    fail_threshold: float = 0.05
    memory_threshold: float = 0.05
    fail_on_memory_regression: bool = False
    fail_on_output_change: bool = False
    max_time: float = 900.0
    label: str = "performance"
    alpha: float = 0.05
    min_rounds: int = 16
    min_sample_time: float = 0.0
    cold_cache: bool | str = "auto"
    timeout: float = 300.0
    profile: bool = True
    allocator: str = "fresh"
    cpus: str = "auto"
    threads: int = 0
    lock_clocks: bool = False
    runners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    regression_webhook: str = ""
    selection: SelectionRules = SelectionRules()
    gpu_arch: tuple[str, ...] = ()
    max_rounds: int = stats.MAX_ROUNDS
    pair_rounds: int = stats.PAIR_ROUNDS
    process_noise: float = stats.PROCESS_NOISE
    min_process_pairs: int = stats.MIN_PROCESS_PAIRS
    lock_clocks_mhz: int = 0  # runner.pipeline.machine.clock_plan.LOCK_SM_MHZ (a test ties them)
    # runner.pipeline.machine.conditions.CUDA_ALLOC_CONF (a test ties them)
    cuda_alloc_conf: str = ""
    deprecated: Mapping[str, str] = field(default_factory=dict, compare=False)

    def sample_time(self, device: str | None) -> float:
        """Seconds one sample lasts at least on ``device`` (``cpu``, ``cuda``, ``cuda:N``):
        ``min_sample_time`` when set, else :data:`AUTO_SAMPLE_TIME` for the device."""
        if self.min_sample_time > 0:
            return float(self.min_sample_time)
        return AUTO_SAMPLE_TIME["cuda" if str(device or "").startswith("cuda") else "cpu"]

    def timer_cold_cache(self) -> bool | None:
        """``cold_cache`` as the worker takes it: None for ``auto`` (the convention's own timing,
        :attr:`runner.conventions.base.Prepared.cold_cache`)."""
        return None if self.cold_cache == "auto" else bool(self.cold_cache)

    def override(self, **values: Any) -> "Config":
        """A copy with the given non-None values replaced (command-line flags), validated."""
        given = {k: v for k, v in values.items() if v is not None}
        cfg = replace(self, **given)
        _check_values(cfg, "the command line")
        return cfg


#: The keys of the file: every field of :class:`Config` but ``deprecated``.
KEYS = tuple(f.name for f in fields(Config) if f.name != "deprecated")

#: ``min_sample_time`` by device when it is 0 (auto), seconds.
#:
#: CPU, 2 ms: on shared 2-vCPU VMs the noise of one round's ratio is 8–19 % whatever the sample's
#: length from 0.5 to 50 ms (the host's interference comes in bursts of a few milliseconds that
#: the guest cannot see: no steal, no context switch), so what narrows an interval is rounds per
#: second; an A/A compare of 8 identical benchmarks: 1 of 8 ``unchanged`` in 154 s with 20 ms
#: samples, 8 of 8 in 22 s with 2 ms samples and 32 rounds per pair (evaluation/RESULTS.md). GPU,
#: 20 ms: CUDA-event resolution (~0.5 µs) and the device synchronisation that ends each sample
#: (5–20 µs) stay below 0.1 %; not yet re-measured on a GPU.
AUTO_SAMPLE_TIME = {"cpu": 0.002, "cuda": 0.02}


_TYPES: dict[str, tuple[type, ...]] = {
    "benchmarks": (str,), "suite": (str,), "command": (str,), "command_format": (str,), "install": (str,), "device": (str,), "label": (str,),
    "threshold": (int, float), "fail_threshold": (int, float), "max_time": (int, float),
    "memory_threshold": (int, float), "fail_on_memory_regression": (bool,),
    "alpha": (int, float), "min_sample_time": (int, float), "timeout": (int, float),
    "process_noise": (int, float), "min_process_pairs": (int,),
    "min_rounds": (int,), "max_rounds": (int,), "pair_rounds": (int,), "profile": (bool,),
    "cold_cache": (bool, str),
    "allocator": (str,), "cuda_alloc_conf": (str,), "cpus": (str,), "threads": (int,),
    "lock_clocks": (bool,), "lock_clocks_mhz": (int,), "runners": (dict,), "regression_webhook": (str,),
    "selection": (dict,), "fail_on_output_change": (bool,), "gpu_arch": (list,),
}
_PARSED = {"runners": parse_runners, "selection": parse_selection, "gpu_arch": parse_gpu_arch}


def _check_values(cfg: Config, where: str) -> None:
    if cfg.suite not in suite_names():
        raise ConfigError(f"{where}: suite must be one of {', '.join(suite_names())} (got {cfg.suite!r})")
    from .formats import FORMATS

    if cfg.command_format not in FORMATS:
        raise ConfigError(f"{where}: command_format must be one of {', '.join(FORMATS)} (got {cfg.command_format!r})")
    if cfg.suite == "command" and not cfg.command.strip():
        raise ConfigError(f"{where}: suite = \"command\" needs `command`, the command that prints the measurements")
    if cfg.device not in DEVICES:
        raise ConfigError(f"{where}: device must be one of {', '.join(DEVICES)} "
                          f"(got {cfg.device!r})")
    for key in ("threshold", "fail_threshold", "memory_threshold"):
        if not is_fraction(getattr(cfg, key)):
            raise ConfigError(f"{where}: {key} must be a fraction in [0, 1), e.g. 0.02 for 2 % (got {getattr(cfg, key)!r})")
    if not is_fraction(cfg.alpha, zero=False):
        raise ConfigError(f"{where}: alpha must be in (0, 1) (got {cfg.alpha!r})")
    if cfg.min_process_pairs < 1:
        raise ConfigError(f"{where}: min_process_pairs must be at least 1 (got {cfg.min_process_pairs})")
    if not is_fraction(cfg.process_noise):
        raise ConfigError(f"{where}: process_noise must be a fraction in [0, 1) (got {cfg.process_noise!r})")
    for key in ("max_time", "timeout"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{where}: {key} must be > 0 seconds (got {getattr(cfg, key)!r})")
    if cfg.min_sample_time < 0:
        raise ConfigError(f"{where}: min_sample_time must be >= 0 seconds (0 = by device) "
                          f"(got {cfg.min_sample_time!r})")
    if cfg.min_rounds < 2:
        raise ConfigError(f"{where}: min_rounds must be at least 2 (got {cfg.min_rounds})")
    if cfg.max_rounds < cfg.min_rounds:
        raise ConfigError(f"{where}: max_rounds ({cfg.max_rounds}) must be >= min_rounds ({cfg.min_rounds})")
    if cfg.pair_rounds < 2:
        raise ConfigError(f"{where}: pair_rounds must be at least 2 (got {cfg.pair_rounds})")
    if cfg.max_rounds < cfg.min_process_pairs * cfg.pair_rounds:
        raise ConfigError(f"{where}: max_rounds ({cfg.max_rounds}) must be at least min_process_pairs × pair_rounds "
                          f"({cfg.min_process_pairs} × {cfg.pair_rounds} = {cfg.min_process_pairs * cfg.pair_rounds}), "
                          "or no benchmark can ever get a verdict")
    if cfg.threads < 0:
        raise ConfigError(f"{where}: threads must be >= 0 (0 = torch's default), got {cfg.threads}")
    if cfg.lock_clocks_mhz < 0:
        raise ConfigError(f"{where}: lock_clocks_mhz must be >= 0 (0 = the GPU's default application clock), "
                          f"got {cfg.lock_clocks_mhz}")
    if isinstance(cfg.cold_cache, str) and cfg.cold_cache != "auto":
        raise ConfigError(f'{where}: cold_cache must be true, false or "auto" '
                          f'(got {cfg.cold_cache!r})')
    if cfg.allocator not in ALLOCATORS:
        raise ConfigError(f"{where}: allocator must be one of {', '.join(ALLOCATORS)} (got {cfg.allocator!r})")


def parse_table(table: dict, where: str) -> Config:
    """Build a :class:`Config` from a TOML table (pure); a key of :data:`INTERNALS` is honoured
    and gets its message in :attr:`Config.deprecated` (:func:`deprecations`).

    Raises:
        ConfigError: unknown key, wrong type or out-of-range value; the message names the key
            and ``where`` (the file).
    """
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            documented = sorted(set(KEYS) - set(INTERNALS))
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {', '.join(documented)})")
        if key in _PARSED:  # tables and lists, read by runner.config_values
            values[key] = _PARSED[key](value, where)
            continue
        expected = _TYPES[key]
        # bool is an int in Python: reject true/false for numeric keys, and numbers for bool keys.
        if isinstance(value, bool) and bool not in expected or not isinstance(value, expected):
            names = " or ".join("number" if t in (int, float) else t.__name__ for t in expected)
            names = "number" if expected == (int, float) else names
            raise ConfigError(f"{where}: key {key!r} must be a {names}, got {type(value).__name__} {value!r}")
        values[key] = float(value) if float in expected else value
    cfg = Config(**values, deprecated=deprecations(values, where))
    _check_values(cfg, where)
    check_webhook_url(cfg.regression_webhook, where)
    return cfg


def deprecations(table: Mapping[str, Any], where: str) -> dict[str, str]:
    """Key → message for each key of :data:`INTERNALS` that ``table`` (a file's keys) sets, in
    that order (pure); ``where`` names the file. The message says the value is still used."""
    return {key: f"`{key}` in {where} is an internal of {whose} and is deprecated: this release "
                 f"still honours its value ({table[key]!r}), the next ignores it; {todo}"
            for key, (whose, todo) in INTERNALS.items() if key in table}


#: The files that may hold the configuration, the one that wins first: ``perfgate.toml`` (its
#: top-level keys), then ``pyproject.toml`` (its ``[tool.perfgate]`` table).
CONFIG_FILES = ("perfgate.toml", "pyproject.toml")


def from_texts(texts: Mapping[str, str | None], where: str | None = None) -> tuple[Config, str | None]:
    """The configuration held by the texts of :data:`CONFIG_FILES` (pure: the caller reads them,
    from a worktree or through GitHub's API).

    Args:
        texts: ``{"perfgate.toml": text or None, "pyproject.toml": text or None}`` (None or
            missing: no such file).
        where: the folder (or ``repo@ref``) the files are in, for messages and the returned source.
    Returns:
        ``(config, source)``: ``perfgate.toml`` wins over ``[tool.perfgate]``; with neither, the
        defaults and None.
    Raises:
        ConfigError: a file that is not TOML, or a bad key (named, with the file).
    """
    for name in CONFIG_FILES:
        text = texts.get(name)
        if text is None:
            continue
        source = str(Path(where) / name) if where else name
        config = _from_text(name, text, source)
        if config is not None:
            return config, source
    return Config(), None


def _from_text(kind: str, text: str, source: str) -> Config | None:
    """The configuration in one file's text (``kind``: ``pyproject.toml`` reads
    ``[tool.perfgate]``, anything else the top level); None: a pyproject.toml without the table."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    if kind != "pyproject.toml":
        return parse_table(data, source)
    tool = data.get("tool")
    table = tool.get("perfgate") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.perfgate] must be a table")
    return parse_table(table, f"{source} [tool.perfgate]")


def load(repo: str | Path) -> tuple[Config, str | None]:
    """Read the configuration of the repository (or worktree) at ``repo`` (:func:`from_texts`).

    Returns:
        ``(config, source)`` where ``source`` is the file read, or None.

    Raises:
        ConfigError: a file that is not TOML, or a bad key (named, with the file).
    """
    root = Path(repo)
    return from_texts({name: _read_text(root / name) for name in CONFIG_FILES}, str(root))


def load_file(path: str | Path) -> Config:
    """Read a ``perfgate.toml`` (top-level keys) or a ``pyproject.toml`` (``[tool.perfgate]``).

    Raises:
        ConfigError: missing file, not TOML, or a bad key (named, with the file).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--config {path}: no such file")
    return _from_text(path.name, _read_text(path), str(path)) or Config()


def _read_text(path: Path) -> str | None:
    """The text of ``path``; None when it is not a file.

    Raises:
        ConfigError: it cannot be read.
    """
    if not path.is_file():
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
