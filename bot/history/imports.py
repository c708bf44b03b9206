"""Results of the tools a team used before perfgate, as perfgate ``run`` documents, so
``perfgate history add`` keeps their history (pure: dicts in, results.json documents out).

- **pytest-benchmark** ``--benchmark-save``/``--benchmark-json`` files (format of
  pytest-benchmark 3–5: ``machine_info``, ``commit_info``, ``benchmarks[].stats``): one
  document per file; each benchmark's median per call (``stats.median``, seconds), with the
  per-round samples when the file has them (``--benchmark-save-data``); names are the node ids
  (``fullname``), as perfgate names pytest-benchmark tests.
- **Google Benchmark**, **nvbench** and **github-action-benchmark** custom JSON
  (:mod:`runner.formats`): one document per file, each benchmark's repetitions as its samples
  (seconds; a ``customBiggerIsBetter`` value in its unit, bigger is better), names and params as
  the ``command`` convention gives them; the machine from Google Benchmark's ``context`` or
  nvbench's first device.
- **asv** result files (``results/<machine>/<commit>-<env>.json``, asv's format version 2 with
  ``result_columns``): one document per file; ``time_*`` benchmarks only (asv stores other
  kinds in other units); the ``result`` column (asv's median) per parameter combination, with
  the ``samples`` column when asv recorded them; names as perfgate names asv benchmarks,
  ``module.Class.time_x(2, float)`` (asv stores ``repr`` of each value: quotes and
  ``<class '…'>`` are taken off).

The machine goes into ``environment`` (CPU brand, Python, the machine's name as the runner
label), so each machine gets its own series, as perfgate's own runs do. No interval is
invented: without samples a point has none.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from typing import Any

from runner import formats, results


def is_pytest_benchmark(doc: Any) -> bool:
    """Does ``doc`` look like a pytest-benchmark JSON file?"""
    return isinstance(doc, dict) and "machine_info" in doc and isinstance(doc.get("benchmarks"), list)


def is_measured(doc: Any) -> bool:
    """Does ``doc`` look like Google Benchmark, nvbench or github-action-benchmark custom JSON?"""
    return formats.sniff(doc) is not None


def from_measured(doc: Any, repository: str, fmt: str = "auto") -> dict:
    """One perfgate ``run`` document from the JSON a benchmark that measures itself printed
    (``fmt``: one of :data:`runner.formats.FORMATS`; a custom JSON needs its direction named).

    Raises:
        ValueError: not that format, or nothing measured in it (:class:`runner.formats.FormatError`).
    """
    found = formats.parse(doc, fmt)
    environment: dict = {"device": "cpu", "cpu": None, "python": None}
    created = None
    if isinstance(doc, dict) and isinstance(doc.get("context"), dict):
        context = doc["context"]
        environment.update(cpu=f"{context.get('num_cpus', '?')} CPU(s) at {context.get('mhz_per_cpu', '?')} MHz",
                           runner_label=context.get("host_name"))
        created = context.get("date") if isinstance(context.get("date"), str) else None
    elif isinstance(doc, dict) and isinstance(doc.get("devices"), list) and doc["devices"]:
        device = doc["devices"][0] if isinstance(doc["devices"][0], dict) else {}
        environment.update(device="cuda", device_name=device.get("name"))
    entries = [results.benchmark(r.name, None, base=None, head=_side(None, list(r.values)), change=None,
                                 family=r.family, params=r.params, unit=r.unit, direction=r.direction) for r in found]
    return _run_document(repository, None, None, created, environment, entries, formats.sniff(doc) or fmt)


def is_asv_result(doc: Any) -> bool:
    """Does ``doc`` look like one asv result file (format version 2)?"""
    return isinstance(doc, dict) and "result_columns" in doc and isinstance(doc.get("results"), dict)


def _run_document(repository: str, sha: str | None, ref: str | None, created_at: str | None,
                  environment: dict, benchmarks: list[dict], source: str) -> dict:
    # The document's required settings are perfgate's decision parameters, which an imported
    # run never used (a run decides nothing): perfgate's defaults, marked as imported.
    from runner.config import Config

    defaults = Config()
    settings = {"threshold": defaults.threshold, "alpha": defaults.alpha, "min_rounds": defaults.min_rounds,
                "max_time": defaults.max_time, "imported_from": source}
    environment = {"device_name": None, "torch": None, "cuda": None, "driver": None, "platform": None,
                   "telemetry": None, **environment}
    doc = results.new_results(repository=repository, base=None, head={"ref": ref or sha, "sha": sha},
                              environment=environment, settings=settings, benchmarks=benchmarks, kind="run")
    if created_at:
        doc["created_at"] = created_at
    return doc


def _side(median: float | None, samples: list[float] | None) -> dict:
    entry = results.side(samples or [])
    if not samples and median is not None:
        entry["median"] = float(median)
    return entry


def from_pytest_benchmark(doc: dict, repository: str) -> dict:
    """One perfgate ``run`` document from a pytest-benchmark JSON file.

    Raises:
        ValueError: the file has no benchmark with a median time.
    """
    machine = doc.get("machine_info") or {}
    commit = doc.get("commit_info") or {}
    cpu = (machine.get("cpu") or {}).get("brand_raw") or machine.get("processor") or machine.get("machine")
    environment = {"device": "cpu", "cpu": cpu, "python": machine.get("python_version"),
                   "runner_label": machine.get("node"),
                   "platform": " ".join(str(machine[k]) for k in ("system", "release") if machine.get(k)) or None}
    entries = []
    for bench in doc.get("benchmarks") or []:
        stats = bench.get("stats") or {}
        if not isinstance(stats.get("median"), (int, float)):
            continue
        data = stats.get("data") if isinstance(stats.get("data"), list) else None
        name = str(bench.get("fullname") or bench.get("name"))
        entries.append(results.measured(name, name.split("::", 1)[0] if "::" in name else None,
                                        _side(stats["median"], data)))
    if not entries:
        raise ValueError("no benchmark with a median time in this pytest-benchmark file")
    return _run_document(repository, commit.get("id"), commit.get("branch"),
                         commit.get("time") or doc.get("datetime"), environment, entries, "pytest-benchmark")


def _asv_value(text: Any) -> str:
    """An asv parameter as stored (its ``repr``) → perfgate's label: ``'a'`` → ``a``,
    ``<class 'float'>`` → ``float``."""
    value = str(text)
    match = re.fullmatch(r"<class '(?:[\w.]+\.)?(\w+)'>", value)
    if match:
        return match.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def from_asv_result(doc: dict, repository: str, machine: dict | None = None) -> dict:
    """One perfgate ``run`` document from an asv result file (``machine``: its ``machine.json``).

    Raises:
        ValueError: the file is not asv's format version 2, or has no ``time_*`` result.
    """
    columns = doc.get("result_columns") or []
    if doc.get("version") != 2 or "result" not in columns:
        raise ValueError("not an asv result file of format version 2 (asv 0.5 or later)")
    at = {name: i for i, name in enumerate(columns)}
    machine = machine or {}
    environment = {"device": "cpu", "cpu": machine.get("cpu"), "platform": machine.get("os"),
                   "python": (doc.get("params") or {}).get("python") or doc.get("python"),
                   "runner_label": machine.get("machine") or (doc.get("params") or {}).get("machine")}
    entries = []
    for name, row in sorted(doc["results"].items()):
        if not name.rsplit(".", 1)[-1].startswith("time_") or not isinstance(row, list):
            continue
        column = lambda key: row[at[key]] if key in at and at[key] < len(row) else None  # noqa: E731
        values, params, samples = column("result"), column("params") or [], column("samples")
        if values is None:
            continue
        combos = list(itertools.product(*params)) if params else [()]
        if not isinstance(values, list):
            values = [values]
        for i, combo in enumerate(combos):
            median = values[i] if i < len(values) else None
            if not isinstance(median, (int, float)) or median != median:  # None or NaN: failed or skipped
                continue
            label = f"{name}({', '.join(_asv_value(v) for v in combo)})" if combo else name
            runs = samples[i] if isinstance(samples, list) and i < len(samples) and isinstance(samples[i], list) \
                else None
            entries.append(results.measured(label, None, _side(median, runs)))
    if not entries:
        raise ValueError("no time_* result in this asv result file")
    created = None
    if isinstance(doc.get("date"), (int, float)):
        created = _dt.datetime.fromtimestamp(doc["date"] / 1000, _dt.timezone.utc).isoformat()
    return _run_document(repository, doc.get("commit_hash"), None, created, environment, entries, "asv")
