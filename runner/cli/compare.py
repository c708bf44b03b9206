"""Handlers of ``perfgate compare``, ``perfgate run`` and ``perfgate report`` (thin shell).

Progress goes to standard error through rich; the verdict table to standard output.
"""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path

from .. import config as config_mod
from .. import gate
from .. import results as results_mod
from ..errors import EXIT_REGRESSION, UserError
from ..report.escape import term
from ..report import print_table, render
from ..report.formats import written
from ..report.render import write_reports


class RichProgress:
    """A :class:`runner.pipeline.timing.pairs.Progress` that draws a rich progress bar on standard
    error."""

    def __init__(self, quiet: bool = False):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.quiet = quiet
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                            TimeElapsedColumn(), console=self.console, transient=True, disable=quiet)
        self.task = None

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        self.bar.__exit__(*exc)

    def phase(self, text: str) -> None:
        if not self.quiet:
            self.console.print(f"[dim]perfgate:[/] {term(text)}", highlight=False)

    def start(self, total: int) -> None:
        self.task = self.bar.add_task("timing", total=total)

    def benchmark(self, index: int, name: str) -> None:
        self.bar.update(self.task, description=f"{term(name)}: set-up")

    def rounds(self, name: str, rounds: int, estimate) -> None:
        text = f"{term(name)}: {rounds} rounds"
        if estimate is not None:
            text += f", {100 * (estimate.ratio - 1):+.1f} % \\[{100 * (estimate.ci_low - 1):+.1f}, {100 * (estimate.ci_high - 1):+.1f}]"
        self.bar.update(self.task, description=text)

    def finished(self, name: str, verdict: str) -> None:
        self.bar.advance(self.task)
        if not self.quiet:
            self.bar.console.print(f"  {term(name)}: {verdict}", highlight=False)


def default_out(kind: str = "") -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(".perfgate") / (f"{kind}-{stamp}" if kind else stamp)


def overrides_from_args(args) -> dict:
    """Command-line values that override the target's configuration (None = not given)."""
    return {
        "device": getattr(args, "device", None), "threshold": getattr(args, "threshold", None),
        "alpha": getattr(args, "alpha", None), "max_time": getattr(args, "max_time", None),
        "min_rounds": getattr(args, "min_rounds", None), "min_sample_time": getattr(args, "min_sample_time", None),
        "cold_cache": getattr(args, "cold_cache", None), "timeout": getattr(args, "timeout", None),
        "profile": getattr(args, "profile", None),
    }


def compare_and_show(req, *, quiet: bool = False, reports: bool = True) -> dict:
    """Run one compare (:func:`runner.pipeline.compare.compare`) with a progress bar, write its
    reports beside ``results.json`` (unless not ``reports``) and print the table; returns the
    results document."""
    from rich.console import Console

    from ..pipeline.compare import compare

    with RichProgress(quiet=quiet) as progress:
        doc = compare(req, progress)
    if reports:
        write_reports(doc, req.out)
    print_table(doc, Console())
    files = ", ".join(str(req.out / str(fmt.file)) for fmt in written())
    print(f"results: {req.out / 'results.json'}" + (f"  report: {files}" if reports else ""),
          file=sys.stderr)
    return doc


def main_compare(args) -> int:
    from ..intent.claims_cli import read_body_file
    from ..pipeline.compare import CompareRequest, PullRequestText

    overrides = overrides_from_args(args)
    if overrides["min_rounds"] is not None and overrides["min_rounds"] < 2:
        raise UserError("--min-rounds must be at least 2")
    out = Path(args.out) if args.out else default_out()
    labels = [s.strip() for s in (args.labels or "").split(",") if s.strip()]
    req = CompareRequest(repo=args.repo, base=args.base, head=args.head, config=None, out=out,
                         benchmarks=args.benchmarks, filter=args.filter,
                         pr=PullRequestText(args.title or "", args.body or read_body_file(
                             getattr(args, "body_file", None)), labels),
                         config_overrides=overrides, config_file=args.config,
                         affected=getattr(args, "affected", None), map_file=getattr(args, "map_file", None),
                         force_run=list(getattr(args, "force_run", None) or []))
    if req.map_file and req.affected is False:
        raise UserError("--map is for --affected; --all measures every benchmark")
    doc = compare_and_show(req, quiet=args.quiet, reports=getattr(args, "reports", True))
    if args.fail_on_regression:
        fail_threshold = doc["settings"].get("fail_threshold", config_mod.Config.fail_threshold)
        on_memory = bool(doc["settings"].get("fail_on_memory_regression"))
        on_output = bool(doc["settings"].get("fail_on_output_change"))
        tripped = gate.gate_failures(doc, fail_threshold, on_memory, on_output)
        broken = {id(b) for b in gate.broken_by_head(doc)}
        changed = {id(b) for b in gate.output_changes(doc)} if on_output else set()
        regressed = {id(b) for b in gate.regressions_beyond(doc, fail_threshold)
                     + (gate.memory_regressions(doc) if on_memory else [])}
        slower = [b["name"] for b in tripped if id(b) in regressed]
        if slower:
            what = f"regression beyond {fail_threshold:.0%}" + (" or memory regression" if on_memory else "")
            print(f"perfgate: {what} in: {term(', '.join(slower), markup=False)}", file=sys.stderr)
        if broken:
            names = ", ".join(b["name"] for b in tripped if id(b) in broken)
            print(f"perfgate: runs on base, fails on head: {term(names, markup=False)}",
                  file=sys.stderr)
        if changed:
            names = ", ".join(b["name"] for b in tripped if id(b) in changed)
            print(f"perfgate: head changes the result of: {term(names, markup=False)}",
                  file=sys.stderr)
        if tripped:
            return EXIT_REGRESSION
    return 0


def main_run(args) -> int:
    from ..pipeline.run import run_single

    out = Path(args.out) if args.out else default_out("run")
    with RichProgress(quiet=args.quiet) as progress:
        doc = run_single(args.repo, args.rev, out, benchmarks=args.benchmarks, filter=args.filter,
                         overrides=overrides_from_args(args), progress=progress, config_file=args.config,
                         code_map=getattr(args, "code_map", True))
    write_reports(doc, out, ("md",))
    from rich.console import Console

    print_table(doc, Console())
    print(f"results: {out / 'results.json'}", file=sys.stderr)
    return 0


def main_report(args) -> int:
    doc = results_mod.load(args.results)
    text = render(doc, args.format)
    if args.output:
        Path(args.output).write_text(text, "utf-8")
    else:
        sys.stdout.write(text)
    return 0
