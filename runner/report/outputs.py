"""Base's output against head's in words (pure): the verdict cell's "changes the result", the
sentence beside a benchmark with its figures, and the count in the gate's sentence.

Reads ``benchmarks[].output`` (:func:`runner.outputs.verdict.output_record`); a result without it
(an older one, a single run) renders as before. A faster head that changes the result is never shown
as a plain improvement: its verdict reads "improvement · changes the result".
"""

from __future__ import annotations

from ..results import change_of, output_changed
from .units import is_number

#: What the verdict cell adds for a benchmark whose head changes the result.
CHANGES = "changes the result"


def verdict_text(bench: dict) -> str:
    """The time verdict, with :data:`CHANGES` beside it when head changes the result."""
    verdict = str(change_of(bench).get("verdict") or "")
    if not output_changed(bench):
        return verdict
    return f"{verdict} · {CHANGES}" if verdict else CHANGES


def _figure(value) -> str:
    return f"{value:.3g}" if is_number(value) else "n/a"


def output_note(bench: dict) -> str | None:
    """One sentence on the output: for a changed one, the figures (max abs and rel diff, share of
    the elements compared) and what changed first; for one the same within a tolerance widened
    by the spread between two base calls, that spread (never hidden); None otherwise."""
    output = bench.get("output")
    if not isinstance(output, dict):
        return None
    nondet = output.get("nondeterminism") if isinstance(output.get("nondeterminism"), dict) else {}
    spread = nondet.get("spread")
    if output.get("verdict") == "changed":
        notes = [n for n in output.get("notes") or [] if isinstance(n, str)]
        share = output.get("share_changed")
        text = (f"{CHANGES}: max abs diff {_figure(output.get('max_abs_diff'))}, max rel diff "
                f"{_figure(output.get('max_rel_diff'))}"
                + (f", {share * 100:.3g} % of the elements compared" if is_number(share) else "")
                + (f" ({notes[0]})" if notes else ""))
        if change_of(bench).get("verdict") == "improvement":
            text += "; faster, but not computing the same thing"
        return text
    if output.get("verdict") == "same" and is_number(spread) and spread > 0:
        return (f"output the same as base's within a tolerance widened by the {spread:.2g} two "
                "base calls differed by (run-to-run nondeterminism)")
    return None


def output_changes(benches: list[dict]) -> int:
    """How many benchmarks' heads change the result."""
    return sum(1 for b in benches if output_changed(b))
