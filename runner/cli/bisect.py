"""Handler of ``perfgate bisect`` (thin shell over :mod:`runner.pipeline.bisect.bisect_run`; it
writes the search's ``report.md`` beside its ``results.json``).

One line per compare on standard error (progress of each compare under it, unless ``--quiet``);
the outcome on standard output: the culprit (its SHA, subject and pull request), or the commits it
may be, or why there is none.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..report.escape import term
from ..report.render import write_reports
from ..report.units import fmt_change, fmt_change_interval
from .compare import RichProgress, default_out, overrides_from_args


def main_bisect(args) -> int:
    from ..pipeline.bisect.bisect_run import MAX_COMPARES, BisectRequest, bisect

    out = Path(args.out) if args.out else default_out("bisect")
    req = BisectRequest(repo=args.repo, good=args.good, bad=args.bad, out=out, benchmark=args.benchmark,
                        benchmarks=args.benchmarks, config_file=args.config, overrides=overrides_from_args(args),
                        max_compares=args.max_compares or MAX_COMPARES)
    with RichProgress(quiet=args.quiet) as progress:
        def say(line: str) -> None:
            progress.console.print(f"[dim]perfgate:[/] {term(line)}", highlight=False)

        doc = bisect(req, progress=progress, say=say)
    write_reports(doc, out, ("md",))
    section = doc["bisect"]
    print(summary(section))
    print(f"results: {out / 'results.json'}  report: {out / 'report.md'}", file=sys.stderr)
    return 0


def summary(section: dict) -> str:
    """The outcome in a few plain lines (terminal text: control characters made visible)."""
    budget = section.get("budget") or {}
    tail = f"{budget.get('compares')} compares, {budget.get('spent_s', 0):.0f} s"
    if section.get("status") == "no-regression":
        return term(f"no regression between {section['good']['sha'][:12]} and {section['bad']['sha'][:12]} ({tail})",
                    markup=False)
    lines = []
    culprit = section.get("culprit")
    if culprit:
        lines.append(f"culprit: {culprit['sha']} {culprit.get('subject') or ''}")
        change, interval = fmt_change_interval(culprit.get("ratio"), culprit.get("ci_low"),
                                               culprit.get("ci_high"))
        lines.append(f"  {section.get('benchmark')}: {change} {interval} against good, "
                     f"{fmt_change(culprit.get('step_ratio'))} on its own")
    else:
        lines.append(f"the regression came with one of ({section.get('status')}):")
        lines += [f"  {c['sha']} {c.get('subject') or ''}" for c in section.get("suspects") or []]
    if section.get("more_than_one_step") and len(section.get("steps") or []) > 1:
        lines.append("more than one step:")
        lines += [f"  {s['sha'][:12]} {fmt_change(s.get('step_ratio'))} {s.get('subject') or ''}" for s in section["steps"]]
    lines += [f"note: {n}" for n in section.get("notes") or []]
    lines.append(tail)
    return term("\n".join(lines), markup=False)
