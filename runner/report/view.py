"""The view of a results document that every renderer shares: ordering, headline, derived
columns, and the sentences about conditions, policy and the runner's checks (pure)."""

from __future__ import annotations

import math

from ..intent.impact import intent_vs_impact
from ..results import CHANGED, REPORT_ORDER, verdict_of
from .units import is_number

#: Position of each verdict when reports list benchmarks (runner.results.REPORT_ORDER).
VERDICT_RANK = {v: i for i, v in enumerate(REPORT_ORDER)}

VERDICT_ICON = {"regression": "🔴", "improvement": "🟢", "unchanged": "⚪", "inconclusive": "🟡",
                "failed": "❌", "new": "🆕", "removed": "➖"}


def head_time(bench: dict) -> float | None:
    """The head column of the tables: base's median times the estimated change where the
    benchmark was compared, so that base, head and change are one estimate (head's own median
    of all samples can disagree with the paired estimate over process pairs, and did by 11 %
    beside an identical median); head's own median otherwise (``new``, a single run)."""
    base = (bench.get("base") or {}).get("median")
    ratio = (bench.get("change") or {}).get("ratio")
    if positive(base) and positive(ratio):
        return base * ratio
    return (bench.get("head") or {}).get("median")


def conditions_line(environment: dict | None) -> str | None:
    """One sentence on what both workers ran under (plain text; escape for where it is shown):
    the CPU plan's note and the allocator, from ``environment.worker``; None for older results."""
    worker = (environment or {}).get("worker")
    if not isinstance(worker, dict) or not isinstance(worker.get("note"), str):
        return None
    line = f"Both sides ran {worker['note']}"
    if isinstance(worker.get("allocator"), str):
        line += f"; allocator {worker['allocator']}"
    if isinstance(worker.get("timer"), str):
        line += f"; {worker['timer']}"
    return line + "."


TABLE_NOTE = ("base is the median of base's samples; head is base × the change, the paired estimate over "
              "fresh process pairs, so the three columns agree (head's own median is in the HTML report)")


# -- mermaid ---------------------------------------------------------------------------------

def positive(v) -> bool:
    """A finite number > 0."""
    return is_number(v) and math.isfinite(v) and v > 0


def headline(summary: dict | None) -> str:
    """``"1 regression, 1 failed, 1 unchanged"``: the verdict counts in report order, or
    ``"no benchmarks"``."""
    parts = []
    for key in REPORT_ORDER:
        n = (summary or {}).get(key) or 0
        if isinstance(n, int) and n:
            plural = "s" if n != 1 and key in CHANGED else ""
            parts.append(f"{n} {key}{plural}")
    return ", ".join(parts) or "no benchmarks"


def view(results: dict) -> dict:
    """The template context: the document plus derived, ordered views of it (pure)."""
    benches = sorted(results.get("benchmarks", []), key=lambda b: (VERDICT_RANK.get(verdict_of(b), 99), b["name"]))
    intent_view = intent_vs_impact(results.get("intent") or {}, results.get("benchmarks", []))
    settings = results.get("settings", {})
    env = results.get("environment", {})
    return {"r": results, "benches": benches, "changed": [b for b in benches if verdict_of(b) in CHANGED],
            "failed": [b for b in benches if verdict_of(b) == "failed"],
            "headline": headline(results.get("summary")), "settings": settings,
            "env": env, "intent_view": intent_view, "doctor_warning": doctor_warning(env.get("doctor")),
            "doctor_line": doctor_counts(env.get("doctor")),
            "ci_pct": f"{settings.get('ci_level', 0.95) * 100:.3g} %", "policy_note": policy_note(settings),
            "skipped_note": skipped_note(settings), "conditions": conditions_line(env)}


def policy_note(settings: dict) -> str | None:
    """One sentence when the head revision changed perfgate's configuration (pure): which known
    keys (the head's own key names are not echoed: they are the PR's text) and that the base's
    settings were used. None when it changed nothing."""
    from dataclasses import fields

    from ..config import Config

    changed = settings.get("config_changed_by_head")
    if not isinstance(changed, list) or not changed:
        return None
    names = {f.name for f in fields(Config)}
    known = sorted({k for k in changed if isinstance(k, str) and k in names})
    others = len(changed) - len(known)
    what = ", ".join(known) + (f" and {others} other key(s)" if known and others else "")
    what = what or "its configuration"
    source = "the --config file" if settings.get("config_source") == "file" else "the base revision"
    return (f"This pull request changes perfgate's settings ({what}); it was measured with the settings of "
            f"{source}, not its own.")



def skipped_note(settings: dict, limit: int = 10) -> str | None:
    """One sentence naming the benchmarks the suite has but this run did not measure
    (``settings.skipped``: asv's ``NotImplementedError`` from a setup, types other than
    ``time_``, ``skip_params``, pytest skips), with each reason; None when there are none."""
    skipped = [s for s in settings.get("skipped") or [] if isinstance(s, dict)]
    if not skipped:
        return None
    listed = "; ".join(f"{s.get('name')} ({s.get('reason')})" for s in skipped[:limit])
    more = f"; and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return f"{len(skipped)} benchmark(s) skipped, not measured: {listed}{more}."


def doctor_warning(doctor: dict | None) -> str | None:
    """The report's one-line warning when a stored ``environment.doctor`` check failed (None when none did)."""
    failed = [c for c in (doctor or {}).get("checks", []) if c.get("status") == "fail"]
    if not failed:
        return None
    what = "; ".join(f"{c['subject']}: {c['summary']}" for c in failed[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    return (f"perfgate doctor: {len(failed)} check(s) failed on this runner ({what}{more}); "
            f"timings may reflect the machine rather than the code")


def doctor_counts(doctor: dict | None) -> str | None:
    """``"1 failed (load_average); 2 warnings (cpu_turbo, gpu_clocks)"`` for the report's
    environment table, ``"all checks passed"``, or None when the result has no doctor record."""
    if not doctor:
        return None
    parts = [f"{len(doctor[key])} {label} ({', '.join(doctor[key])})"
             for key, label in (("failed", "failed"), ("warned", "warnings")) if doctor.get(key)]
    return "; ".join(parts) or "all checks passed"


