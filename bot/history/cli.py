"""``perfgate history add`` and ``perfgate history show`` (on the App's storage).

The database is ``DATABASE_URL``, else the SQLite file ``$PERFGATE_HOME/perfgate.db``
(``PERFGATE_HOME`` defaults to ``~/.local/share/perfgate``); it is upgraded to the newest
schema first. Handlers take the ``argparse.Namespace`` of ``runner.cli.main`` and return the exit
status; bad input raises ``UserError`` (one line, exit 2).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Mapping, TextIO

from runner import results as results_schema
from runner.errors import UserError
from runner.report.escape import term
from runner.report.units import fmt_bytes, fmt_change, fmt_growth, fmt_time

from .. import db as dbmod
from . import imports
from . import reads as history_reads
from . import store as history_store
from .points import is_repository_name, iso
from .series import Series
from .texts import series_json


def documents_of(path: str | Path, repository: str | None, fmt: str = "auto") -> list[tuple[str, dict]]:
    """The results documents at ``path``, each validated (schema_version 1) and with a label
    for messages: a perfgate results.json, a pytest-benchmark JSON file, Google Benchmark,
    nvbench or github-action-benchmark custom JSON (``fmt`` names a custom JSON's direction:
    ``customSmallerIsBetter`` or ``customBiggerIsBetter``), an asv result file, or an asv results
    directory (``results/``: every ``<machine>/*.json`` beside a ``machine.json``). Imported
    documents (:mod:`bot.history.imports`) belong to ``repository``.

    Raises:
        UserError: unreadable or unrecognised input, or an import without ``--repository``.
    """
    path = Path(path)
    if path.is_dir():
        files = [(f, m) for m in sorted(path.glob("*/machine.json")) for f in sorted(m.parent.glob("*.json"))
                 if f.name != "machine.json"]
        if not files:
            raise UserError(f"{path}: not an asv results directory (no <machine>/machine.json in it)")
        return [(str(f), _imported(f, _read_json(f), repository, _read_json(m))) for f, m in files]
    doc = _read_json(path)
    if imports.is_measured(doc):
        return [(str(path), _imported(path, doc, repository, None, fmt))]
    if imports.is_pytest_benchmark(doc) or imports.is_asv_result(doc):
        machine = path.parent / "machine.json"
        return [(str(path), _imported(path, doc, repository, _read_json(machine) if machine.is_file() else None))]
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise UserError(f"{path} is not a perfgate results.json, a pytest-benchmark, Google Benchmark, nvbench or "
                        "github-action-benchmark JSON file or an asv result file")
    return [(str(path), results_schema.validate(doc))]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not JSON: {exc}") from None


def _imported(path: Path, doc: dict, repository: str | None, machine: dict | None, fmt: str = "auto") -> dict:
    if not repository:
        raise UserError(f"{path} comes from another tool and names no repository: pass --repository OWNER/NAME")
    try:
        if imports.is_measured(doc):
            converted = imports.from_measured(doc, repository, fmt)
        elif imports.is_pytest_benchmark(doc):
            converted = imports.from_pytest_benchmark(doc, repository)
        else:
            converted = imports.from_asv_result(doc, repository, machine)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    return results_schema.validate(converted)


def main_add(args, *, env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """``perfgate history add PATH [--repository OWNER/NAME] [--format F]``: a perfgate results.json,
    or the results of asv (a result file or a whole ``results/`` directory), pytest-benchmark,
    Google Benchmark, nvbench or github-action-benchmark (a JSON file) — see :mod:`bot.history.imports`.

    Prints one line per document: what was stored and the change points of the updated series.
    """
    out = out or sys.stdout
    repository = getattr(args, "repository", None)
    found = documents_of(args.results, repository, getattr(args, "format", None) or "auto")
    database = dbmod.open_from_environment(os.environ if env is None else env)
    try:
        for label, doc in found:
            _add_one(database, label, doc, history_store.resolve_repository_name(doc, repository), out)
    finally:
        database.dispose()
    return 0


def _add_one(database, label: str, doc: dict, name: str, out: TextIO) -> None:
    with database.session() as session, session.begin():
        outcome = history_store.add_result(session, doc, name, validated=True)  # by documents_of
        if not outcome.created:
            print(f"already stored: {label} is result #{outcome.result_id} of {name}", file=out)
            return
        series = [s for s in history_reads.load_series(session, name)
                  if (s.benchmark, s.fingerprint.get("key")) in set(outcome.series)]
    kind = "run" if outcome.kind == "run" else "compare"
    print(f"stored {label} ({kind}) as result #{outcome.result_id} of {name}: "
          f"{outcome.points} benchmark point{'s' if outcome.points != 1 else ''}, "
          f"{len(outcome.series)} series updated", file=out)
    for s in series:
        if s.change_points:
            last = s.change_points[-1]
            print(term(f"  {s.benchmark}: latest change point {fmt_change(last.ratio)} "
                       f"at {last.commit_range}", markup=False), file=out)


def _pick_repository(session, requested: str | None, url: str) -> str:
    if requested:
        if not is_repository_name(requested):
            raise UserError(f"--repository {requested!r} is not of the form OWNER/NAME")
        return requested
    names = history_reads.list_repositories(session)
    if not names:
        raise UserError(f"no results stored yet in {dbmod.display_url(url)}; add one with: perfgate history add RESULTS.json")
    if len(names) > 1:
        raise UserError(f"several repositories are stored ({', '.join(names)}); pick one with --repository OWNER/NAME")
    return names[0]


def _select(series: list, bench: str | None) -> list:
    """Exact benchmark name, else every benchmark whose name contains ``bench``."""
    if not bench:
        return series
    exact = [s for s in series if s.benchmark == bench]
    return exact or [s for s in series if bench in s.benchmark]


def main_show(args, *, env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """``perfgate history show [--repository OWNER/NAME] [BENCH] [--json] [--measure time|memory|compile]``.

    ``--json`` prints ``{series: [{benchmark, measure, unit, fingerprint, points: [{sha, time,
    value, ci_low, ci_high}], change_points: [{index, sha, before, after, ratio}]}]}`` (values in
    seconds per call; bytes for ``--measure memory``; the first call's compile seconds for
    ``--measure compile``; time ISO-8601 UTC, ratio after/before); otherwise a table per series.

    Raises:
        UserError: no repository to show, or ``BENCH`` matches nothing.
    """
    out = out or sys.stdout
    database = dbmod.open_from_environment(os.environ if env is None else env)
    try:
        with database.session() as session:
            name = _pick_repository(session, getattr(args, "repository", None), database.url)
            measure = getattr(args, "measure", None) or "time"
            series = _select(history_reads.load_series(session, name, measure=measure),
                             getattr(args, "bench", None))
    finally:
        database.dispose()
    if args.bench and not series:
        raise UserError(f"no history for a benchmark {args.bench!r} in {name}")
    if getattr(args, "json", False):
        print(json.dumps({"series": [series_json(s) for s in series]}, indent=1), file=out)
        return 0
    if not series:
        print(f"{name}: no default-branch history yet (store `perfgate run` results with `perfgate history add`)",
              file=out)
        return 0
    for s in series:
        print(term(render_series_text(s), markup=False), file=out)
    return 0


def render_series_text(series: Series, last: int = 10) -> str:
    """A series as plain text: header, the ``last`` points, the change points (times, or sizes
    for a memory series)."""
    fmt = fmt_bytes if series.measure == "memory" else fmt_time
    fmt_ratio = fmt_growth if series.measure == "memory" else fmt_change
    what = {"memory": "  peak memory", "compile": "  compile time"}.get(series.measure, "")
    lines = [f"{series.benchmark}{what}  [{series.fingerprint.get('label')}]  {len(series.points)} points"]
    cut = {c.index for c in series.change_points}
    start = max(0, len(series.points) - last)
    if start:
        lines.append(f"  ... {start} earlier points")
    for i, p in enumerate(series.points[start:], start):
        mark = "  <- change point" if i in cut else ""
        ci = (f"  [{fmt(p.ci_low)}, {fmt(p.ci_high)}]"
              if p.ci_low is not None and p.ci_high is not None else "")
        lines.append(f"  {iso(p.time)}  {(p.sha or '?')[:12]:12}  {fmt(p.value):>10}{ci}{mark}")
    if series.change_points:
        lines.append("  change points:")
        for c in series.change_points:
            prs = " ".join(f"#{p['number']}" for p in c.prs)
            lines.append(f"    {c.commit_range}  {fmt(c.before)} -> {fmt(c.after)}"
                         f"  {fmt_ratio(c.ratio)}  (p = {c.p_value:.3g}){'  PRs ' + prs if prs else ''}")
    else:
        lines.append("  no change points")
    return "\n".join(lines)
