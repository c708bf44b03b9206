"""The target repository's configuration: ``[tool.perfgate]`` or ``perfgate.toml``.

Keys and defaults are the contract in DESIGN.md ("Target repository configuration"), plus the
sampling and isolation knobs documented on :class:`Config`. Command-line flags override the file. Unknown keys and wrong types are
:class:`~runner.errors.ConfigError` naming the key and the file.

The settings of a compare are a policy (thresholds, ``alpha``, what is benchmarked and how it is
installed), so they come from the base revision, or from a file the caller names, never from
the head under test: :func:`head_changes` lists what the head would have changed, for the report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import ConfigError
from .config_values import check_webhook_url, is_fraction, parse_runners, parse_selection
from .selection import Rules as SelectionRules



def suite_names() -> tuple[str, ...]:
    """The values of the key ``suite``: ``auto`` and every registered benchmark convention
    (:data:`runner.conventions.REGISTRY`; "auto" tries them in its order, runner.pipeline.suites)."""
    from . import conventions

    return ("auto", *conventions.names())

#: The values of the key ``device`` (and of ``--device`` and the Action's input ``device``).
DEVICES = ("auto", "cpu", "cuda")
#: Host allocator presets of the workers (key ``allocator``; runner.pipeline.conditions applies them).
ALLOCATORS = ("steady", "system", "jemalloc", "tcmalloc")


@dataclass(frozen=True)
class Config:
    """Settings of one compare.

    Attributes:
        benchmarks: directory of ``bench_*.py`` files, relative to the repository root (for asv:
            the ``benchmark_dir`` of ``asv.conf.json`` wins; for pytest-benchmark: the tests).
        suite: the benchmarks' convention: ``auto`` (the default: detected), ``perfgate`` (bench_*
            factories), ``asv``, ``pytest-benchmark``, ``triton`` (perf_report / do_bench scripts),
            ``torch-timer`` (torch.utils.benchmark.Timer scripts) or ``command`` (a command printing its
            own measurements); :func:`suite_names`.
        command: for ``suite = "command"`` (and chosen by ``auto`` when set): a shell command, built by
            ``install``, printing Google Benchmark, nvbench or github-action-benchmark JSON; ``{out}``
            in it is a file it writes the JSON to, else its standard output is read
            (runner.conventions.command).
        command_format: the JSON ``command`` prints: ``auto`` (Google Benchmark or nvbench, told by
            their shape), ``googlebenchmark``, ``nvbench``, ``customSmallerIsBetter`` or
            ``customBiggerIsBetter`` (github-action-benchmark's; bigger-is-better values such as
            tokens/s are compared as such).
        install: shell command run in each revision's fresh venv ("" = none: the worktree root,
            and ``src/`` if present, go first on the worker's ``sys.path``).
        device: ``auto`` | ``cpu`` | ``cuda``.
        threshold: practical significance, fraction of the base time (0.02 = 2 %).
        fail_threshold: a regression beyond this fraction fails the check / ``--fail-on-regression``.
        memory_threshold: a peak-memory change beyond this fraction of base's peak is a memory
            verdict (``regression``/``improvement``; runner.measures).
        fail_on_memory_regression: a memory regression fails the check run and
            ``--fail-on-regression`` as a time regression beyond ``fail_threshold`` does.
        max_time: seconds budget of one compare: from its start to results.json (worker start,
            warm-up, timing, profiling), the ``install`` command's own time excluded.
        label: the PR label that triggers the App.
        alpha: family-wise level of one benchmark's sequential test (see runner.stats).
        min_rounds: rounds (base+head pairs) before the first look.
        max_rounds: sets the last look: ``max_rounds // pair_rounds`` process pairs, after which an
            undecided benchmark stays ``inconclusive`` (pairs of cheap or slow rounds may take more
            rounds than ``pair_rounds``, runner.pipeline.schedule).
        pair_rounds: rounds each fresh pair of worker processes takes before the next pair
            starts (see runner.stats: the process pair is the unit of replication).
        min_sample_time: seconds one sample lasts at least; the inner loop count is calibrated
            to it. 0 (the default) = by device, :data:`AUTO_SAMPLE_TIME`: 2 ms on a CPU, 20 ms on a
            GPU (see :meth:`Config.sample_time` and evaluation/RESULTS.md, "Sample duration").
        cold_cache: flush the GPU L2 cache before every timed call (CUDA only).
        timeout: seconds a set-up or one sample may take before the worker is killed.
        profile: run the profiling pass after timing.
        process_noise: floor of the standard deviation of the process pairs' estimates of the
            log-ratio (0.003 ≈ 0.3 %): what processes may differ by in ways no pair shows; see
            runner.stats.blocked_estimate and evaluation/RESULTS.md.
        min_process_pairs: fresh worker pairs a benchmark must have run in before any verdict
            (see runner.stats.decide). One pair cannot tell a code change from a process-level
            offset; the t interval of 2 pairs (1 degree of freedom) is valid but wide, so at the
            first look only a change far beyond the pairs' spread is decided — a 10× or 1000×
            regression in two pairs, seconds, instead of minutes.
        allocator: host allocator of both workers: ``system`` (glibc as a user's process finds
            it, the default), ``steady`` (glibc with fixed thresholds:
            runner.pipeline.conditions.GLIBC_STEADY), ``jemalloc`` or ``tcmalloc``
            (``LD_PRELOAD``; the library must be installed). ``steady`` was the default until real
            pull requests showed what it costs (evaluation/RESULTS_real_prs.md): it keeps freed
            blocks on the heap, so a base that allocates large temporaries on every call paid no
            page faults in the workers and did in the user's process — PRs that remove such
            temporaries read smaller (torchmetrics #1493: −41 % against ×0.12) or in the wrong
            direction (PyG #8035: −1.3 % against +29 %).
        cuda_alloc_conf: ``PYTORCH_CUDA_ALLOC_CONF`` for both workers ("" = the environment's,
            else torch's default).
        cpus: CPUs both workers are pinned to: ``auto`` (all but the first, keeping torch's default
            thread count where the machine is big enough, else reduced and said so), ``all`` (no
            pinning) or a list like ``"2,3"``; see runner.pipeline.conditions.plan_cpus.
        threads: intra-op threads of both workers; 0 = torch's default (capped by the CPUs).
        lock_clocks: on a CUDA GPU, lock the SM and memory clocks for the timing pass and
            restore them after (NVML's locked clocks as ``nvidia-smi -lgc/-lmc`` set them, when
            the runner is root; else application clocks as ``nvidia-smi -ac``, where
            ``nvidia-smi -acp UNRESTRICTED`` allows them). Off by default: clocks are a property of
            the runner, which its owner may have set already. Where they cannot be locked the
            rounds the GPU throttled or whose clock moved are left out either way
            (runner.pipeline.clocks, runner.pipeline.telemetry.disturbed_rounds).
        lock_clocks_mhz: the SM clock to lock to; 0 = the GPU's default application clock (a
            clock it sustains under load).
        runners: the App's runner groups, one per GPU model (``[runners.h100] labels =
            ["self-hosted", "h100"]``): ``((name, (label, ...)), ...)`` in the file's order. A
            labelled PR is measured on each group, and each group's results are a history series
            of their own; empty (the default): one run on the workflow's own runners.
        regression_webhook: where the App posts one message per regression found on the default
            branch (Slack-compatible JSON, ``{"text": ...}``): an ``https://`` URL; "" = none.
            Read from the default branch only; the App refuses an address on its own network
            (``bot.app.notify``).
        selection: ``[selection]``: run only the benchmarks a pull request can affect
            (:class:`runner.selection.Rules`: ``enabled``, ``always``, ``full_run``, ``ignore``);
            read from the base branch like every other key.
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
    max_time: float = 900.0
    label: str = "performance"
    alpha: float = 0.05
    min_rounds: int = 16
    max_rounds: int = 256
    pair_rounds: int = 8
    min_sample_time: float = 0.0
    cold_cache: bool = False
    timeout: float = 300.0
    profile: bool = True
    process_noise: float = 0.003
    min_process_pairs: int = 2
    allocator: str = "system"
    cuda_alloc_conf: str = ""
    cpus: str = "auto"
    threads: int = 0
    lock_clocks: bool = False
    lock_clocks_mhz: int = 0
    runners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    regression_webhook: str = ""
    selection: SelectionRules = SelectionRules()

    def sample_time(self, device: str | None) -> float:
        """Seconds one sample lasts at least on ``device`` (``cpu``, ``cuda``, ``cuda:N``):
        ``min_sample_time`` when set, else :data:`AUTO_SAMPLE_TIME` for the device."""
        if self.min_sample_time > 0:
            return float(self.min_sample_time)
        return AUTO_SAMPLE_TIME["cuda" if str(device or "").startswith("cuda") else "cpu"]

    def override(self, **values: Any) -> "Config":
        """A copy with the given non-None values replaced (command-line flags), validated."""
        given = {k: v for k, v in values.items() if v is not None}
        cfg = replace(self, **given)
        _check_values(cfg, "the command line")
        return cfg


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
    "min_rounds": (int,), "max_rounds": (int,), "pair_rounds": (int,), "cold_cache": (bool,), "profile": (bool,),
    "allocator": (str,), "cuda_alloc_conf": (str,), "cpus": (str,), "threads": (int,),
    "lock_clocks": (bool,), "lock_clocks_mhz": (int,), "runners": (dict,), "regression_webhook": (str,),
    "selection": (dict,),
}

def _check_values(cfg: Config, where: str) -> None:
    if cfg.suite not in suite_names():
        raise ConfigError(f"{where}: suite must be one of {', '.join(suite_names())} (got {cfg.suite!r})")
    from .formats import FORMATS

    if cfg.command_format not in FORMATS:
        raise ConfigError(f"{where}: command_format must be one of {', '.join(FORMATS)} (got {cfg.command_format!r})")
    if cfg.suite == "command" and not cfg.command.strip():
        raise ConfigError(f"{where}: suite = \"command\" needs `command`, the command that prints the measurements")
    if cfg.device not in DEVICES:
        raise ConfigError(f"{where}: device must be one of {', '.join(DEVICES)} (got {cfg.device!r})")
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
    if cfg.allocator not in ALLOCATORS:
        raise ConfigError(f"{where}: allocator must be one of {', '.join(ALLOCATORS)} (got {cfg.allocator!r})")


def parse_table(table: dict, where: str) -> Config:
    """Build a :class:`Config` from a TOML table (pure).

    Raises:
        ConfigError: unknown key, wrong type or out-of-range value; the message names the key
            and ``where`` (the file).
    """
    known = {f.name for f in fields(Config)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {', '.join(sorted(known))})")
        if key == "runners":
            values[key] = parse_runners(value, where)
            continue
        if key == "selection":
            values[key] = parse_selection(value, where)
            continue
        expected = _TYPES[key]
        # bool is an int in Python: reject true/false for numeric keys, and numbers for bool keys.
        if isinstance(value, bool) and bool not in expected or not isinstance(value, expected):
            names = " or ".join("number" if t in (int, float) else t.__name__ for t in expected)
            names = "number" if expected == (int, float) else names
            raise ConfigError(f"{where}: key {key!r} must be a {names}, got {type(value).__name__} {value!r}")
        values[key] = float(value) if float in expected else value
    cfg = Config(**values)
    _check_values(cfg, where)
    check_webhook_url(cfg.regression_webhook, where)
    return cfg


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


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _raw_table(root: Path) -> dict | None:
    """The perfgate table of the repository at ``root`` as written, unvalidated ({} without
    one); None when the file is not valid TOML."""
    try:
        for name in (n for n in CONFIG_FILES if (root / n).is_file()):
            if name != "pyproject.toml":
                return _read_toml(root / name)
            table = _read_toml(root / name).get("tool", {}).get("perfgate", {})
            return table if isinstance(table, dict) else None
    except ConfigError:
        return None
    return {}


def head_changes(base: str | Path, head: str | Path) -> list[str]:
    """Keys whose value the head revision's configuration sets differently from the base's
    (added, removed or changed; sorted). ``["*"]`` when the head's file is not valid TOML."""
    base_table, head_table = _raw_table(Path(base)) or {}, _raw_table(Path(head))
    if head_table is None:
        return ["*"]
    return sorted(k for k in set(base_table) | set(head_table) if base_table.get(k) != head_table.get(k))
