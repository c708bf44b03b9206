"""The view of a results document that every renderer shares: ordering, headline, derived
columns, and the sentences about conditions, policy and the runner's checks (pure)."""

from __future__ import annotations

import math

from ..environment import ASLR_LEFT_ON, LAYOUT_EFFECT
from ..gate import broken_by_head, memory_regressions, output_changes, regressions_beyond
from ..results import (CHANGED, REPORT_ORDER, change_of, is_memory_valued, memory_verdict_of,
                       output_changed, verdict_of)
from .claims import claims_checked
from .measures import has_memory, kernels_view
from .notes import INCONCLUSIVE_WORD, bench_note, inconclusive_fix
from .sweeps import MAX_PLOTS, summary_lines, sweeps
from .units import (fmt_change_interval, fmt_pct, fmt_quantity, fmt_time, fmt_value_change,
                    is_number)

#: Position of each verdict when reports list benchmarks (runner.results.REPORT_ORDER).
VERDICT_RANK = {v: i for i, v in enumerate(REPORT_ORDER)}

VERDICT_ICON = {"regression": "🔴", "improvement": "🟢", "unchanged": "⚪", "inconclusive": "🟡",
                "failed": "❌", "new": "🆕", "removed": "➖"}


def head_time(bench: dict) -> float | None:
    """The head column of the tables: base's median times the estimated change where the
    benchmark was compared, so that base, head and change are one estimate (head's own median
    of all samples can disagree with the paired estimate over process pairs, and did by 11 %
    beside an identical median); head's own median otherwise (``new``, a single run). For a
    bigger-is-better value (``direction: bigger``, ``ratio`` base/head of it): base's median / ratio."""
    base = (bench.get("base") or {}).get("median")
    ratio = change_of(bench).get("ratio")
    if positive(base) and positive(ratio):
        return base / ratio if bench.get("direction") == "bigger" else base * ratio
    return (bench.get("head") or {}).get("median")


def value_text(bench: dict, side: str) -> str:
    """A table's base or head value of ``bench`` in its unit (:func:`head_time` for head)."""
    value = head_time(bench) if side == "head" else (bench.get(side) or {}).get("median")
    return fmt_quantity(value, bench.get("unit") or "s")


def _factor_words(bench: dict) -> tuple[str, str]:
    """How a factor of change reads: ``slower``/``faster`` for times, ``larger``/``smaller`` for a
    value in another unit (bytes, an asv ``track_`` value)."""
    return ("slower", "faster") if (bench.get("unit") or "s") == "s" else ("larger", "smaller")


def change_texts(bench: dict) -> tuple[str, str]:
    """The change and interval columns of ``bench``, in one form (:func:`.units.ratio_form`): of
    the time per call (``+30.2 %``, ``[+28.0, +32.3] %``; ``2.5× slower``, ``[1.52×, 3.1×]
    slower``), of another smaller-is-better value (``2.5× larger``), or, for a bigger-is-better
    value, of the value in its unit (``−20.0 % tokens/s``). Markdown, HTML and the terminal
    show these."""
    change = change_of(bench)
    ratio, low, high = change.get("ratio"), change.get("ci_low"), change.get("ci_high")
    if bench.get("direction") == "bigger":
        return fmt_value_change(ratio, bench.get("unit"), low, high)
    return fmt_change_interval(ratio, low, high, *_factor_words(bench))


def change_text(bench: dict) -> str:
    """The change column (:func:`change_texts`)."""
    return change_texts(bench)[0]


def interval_text(bench: dict) -> str:
    """The interval column, in the same form as :func:`change_text` (:func:`change_texts`)."""
    return change_texts(bench)[1]


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
    if worker.get("aslr") == ASLR_LEFT_ON:
        line += f"; {ASLR_ON_NOTE}"
    return line + "."


#: The report's words for a random layout (:func:`conditions_line`).
ASLR_ON_NOTE = ("address-space layout randomisation was on (setarch -R not available or PERFGATE_ASLR=1), "
                f"so {LAYOUT_EFFECT}")


TABLE_NOTE = ("base is the median of base's samples; head is base × the change, the paired estimate over "
              "fresh process pairs, so the three columns agree (head's own median is in the HTML report)")


def positive(v) -> bool:
    """A finite number > 0."""
    return is_number(v) and math.isfinite(v) and v > 0


def memory_counts(benchmarks: list) -> list[str]:
    """``["1 memory regression", "1 memory improvement"]``: the memory verdicts of ``benchmarks``
    that are changes, each named apart (pure; the gate's sentence, every format's headline, says
    them so: a +50 % peak read "2 memory changes" beside an improvement; issue 47)."""
    memory = [memory_verdict_of(b) for b in benchmarks if isinstance(b, dict)]
    return [_counted(memory.count(key), f"memory {key}") for key in CHANGED if memory.count(key)]


def rest_counts(rest: list[dict], above: list[dict]) -> str:
    """``"1 unchanged, 1 more inconclusive"``: the verdicts of the benchmarks in ``rest`` (the
    collapsed section, the terminal's unlisted), "more" where ``above`` (the rows shown before
    them) holds an inconclusive one too, so that the count never reads as the gate's sentence's
    total of them (pure; issue 47: "1 inconclusive" below "2 inconclusive")."""
    parts = []
    for v in ("unchanged", INCONCLUSIVE_WORD):
        n = sum(1 for b in rest if verdict_of(b) == v)
        more = "more " if v == INCONCLUSIVE_WORD and any(verdict_of(b) == v for b in above) else ""
        parts += [f"{n} {more}{v}"] if n else []
    return ", ".join(parts)


#: Rows of changed or failed benchmarks the comment shows before its first collapsed block, so
#: that its first screen stays within 15 lines whatever the suite (issue 47); the rest are one
#: click away.
FIRST_SCREEN_ROWS = 6


def first_rows(paragraphs: int) -> int:
    """The rows the comment's first table shows when ``paragraphs`` paragraphs (a contradicted
    claim, the runner's warning) stand between its revisions and the table (pure): the marker,
    the gate's sentence and the revisions take 5 lines, a paragraph 2, the table's head 2, so
    that the first screen stays within 15 lines: :data:`FIRST_SCREEN_ROWS`, fewer from two
    paragraphs on."""
    return max(1, min(FIRST_SCREEN_ROWS, 15 - 5 - 2 * paragraphs - 2))


def _counted(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def gate_sentence(results: dict) -> str:
    """The report's first line: what changed and the gate's decision, in one sentence (pure).

    ``"2 regressions beyond 5 %, 1 benchmark broken by head: gate fails"``; ``"no change beyond
    ±2 %: gate passes"``; ``"1 improvement, 1 regression within the 5 % the gate allows: gate
    passes"``; then what is inconclusive, failed on both sides, new or removed, in parentheses. The
    gate is :func:`runner.gate.gate_failures` with the document's ``fail_threshold``,
    ``fail_on_memory_regression`` and ``fail_on_output_change``: what ``--fail-on-regression`` and
    the App's check run fail on. Heads that change the result are counted whether or not the gate
    fails on them (:mod:`runner.outputs.verdict`)."""
    settings = results.get("settings") or {}
    fail = settings.get("fail_threshold") if is_number(settings.get("fail_threshold")) else 0.05
    on_memory = settings.get("fail_on_memory_regression") is True
    n_output = len(output_changes(results))
    benches = [b for b in results.get("benchmarks") or [] if isinstance(b, dict)]
    verdicts = [verdict_of(b) for b in benches]
    # a memory-valued benchmark's change is memory_counts' alone
    timed = [verdict_of(b) for b in benches if not is_memory_valued(b)]
    # each reason the gate fails on, counted by its own rule (runner.gate)
    n_slower = len(regressions_beyond(results, fail))
    n_broken = len(broken_by_head(results))
    n_memory = len(memory_regressions(results)) if on_memory else 0
    parts = [text for n, text in ((n_slower, _counted(n_slower, "regression") + f" beyond {fmt_pct(fail)}"),
                                  (n_memory, _counted(n_memory, "memory regression")),
                                  (n_broken, _counted(n_broken, "benchmark") + " broken by head"),
                                  (n_output if settings.get("fail_on_output_change") is True else 0,
                                   _counted(n_output, "benchmark") + " changing the result")) if n]
    failing = bool(parts)  # gate.gate_failures, its four reasons counted once each above
    if n_output and settings.get("fail_on_output_change") is not True:
        parts.append(_counted(n_output, "benchmark") + " changing the result")
    if not failing:
        improved = sum(1 for b in benches if verdict_of(b) == "improvement"
                       and not output_changed(b) and not is_memory_valued(b))
        if improved:  # a faster head that changes the result is no plain improvement
            parts.append(_counted(improved, "improvement"))
        if timed.count("regression"):
            parts.append(_counted(timed.count("regression"), "regression")
                         + f" within the {fmt_pct(fail)} the gate allows")
        parts += memory_counts(benches)
    if not parts:
        threshold = settings.get("threshold")
        parts.append(f"no change beyond ±{fmt_pct(threshold)}" if is_number(threshold)
                     else "no change")
    others = [f"{verdicts.count('inconclusive')} {INCONCLUSIVE_WORD}"
              if verdicts.count("inconclusive") else "",
              f"{verdicts.count('failed') - n_broken} failed"
              if verdicts.count("failed") > n_broken else "",
              f"{verdicts.count('new')} new" if verdicts.count("new") else "",
              f"{verdicts.count('removed')} removed" if verdicts.count("removed") else ""]
    others = [o for o in others if o]
    decision = "gate fails" if failing else "gate passes"
    return (", ".join(parts) + f": {decision}"
            + (f" ({', '.join(others)}; {len(benches)} benchmarks)" if others else "")
            if benches else "no benchmarks")


def budget_note(settings: dict) -> str | None:
    """One sentence when the time budget cut something short: which benchmarks it ended before a
    verdict, which it left unprofiled (pure; None when it cut nothing)."""
    budget = settings.get("budget")
    if not isinstance(budget, dict):
        return None
    cut = [n for n in budget.get("cut_short") or [] if isinstance(n, str)]
    unprofiled = [n for n in budget.get("unprofiled") or [] if isinstance(n, str)]
    if not cut and not unprofiled:
        return None
    parts = []
    if cut:
        parts.append(f"ended {len(cut)} benchmark(s) before a verdict ({', '.join(cut[:5])}"
                     f"{', …' if len(cut) > 5 else ''})")
    if unprofiled:
        parts.append(f"left {len(unprofiled)} unprofiled ({', '.join(unprofiled[:5])}{', …' if len(unprofiled) > 5 else ''})")
    max_time = budget.get("max_time")
    spent = budget.get("spent_s")
    head = f"The time budget (--max-time {max_time:g} s" + (f", {spent:.0f} s spent" if is_number(spent) else "") + ")" \
        if is_number(max_time) else "The time budget"
    return f"{head} " + " and ".join(parts) + "; a larger --max-time gives them more."


def budget_line(settings: dict) -> str:
    """``"60 s (58 s spent: start-up 4 s, timing 47 s, profiling 7 s)"``: the budget and where
    its seconds went, from ``settings.budget`` where the result has it (pure)."""
    max_time = settings.get("max_time")
    text = f"{max_time:g} s" if is_number(max_time) else "–"
    budget = settings.get("budget") if isinstance(settings.get("budget"), dict) else {}
    parts = [f"{label} {budget[key]:.0f} s" for key, label in (("startup_s", "start-up"), ("timing_s", "timing"),
                                                               ("profile_s", "profiling")) if is_number(budget.get(key))]
    if is_number(budget.get("spent_s")):
        text += f" ({budget['spent_s']:.0f} s spent" + (": " + ", ".join(parts) if parts else "") + ")"
    if is_number(budget.get("install_s")) and budget["install_s"] > 0:
        text += f"; the install command's {budget['install_s']:.0f} s not counted"
    return text


def view(results: dict) -> dict:
    """The template context: the document plus derived, ordered views of it (pure)."""
    benches = sorted(results.get("benchmarks", []), key=lambda b: (VERDICT_RANK.get(verdict_of(b), 99), b["name"]))
    settings = results.get("settings", {})
    env = results.get("environment", {})
    compared = sum(1 for b in benches if change_of(b).get("p_value") is not None)
    notes = {b["name"]: note for b in benches if (note := bench_note(b, settings, compared))}
    sweep_lines, sweep_more = summary_lines(results.get("benchmarks", []))
    drawn = [s for s in sweeps(results.get("benchmarks", [])) if any(p.change is not None for p in s.points)]
    news = [b for b in benches
            if verdict_of(b) in ("regression", "failed", "improvement", "new", "removed")
            or memory_verdict_of(b) in CHANGED or output_changed(b)]
    rest = [b for b in benches if all(b is not n for n in news)]
    claims = claims_checked(results)
    contradicted = any(c["verdict"] == "contradicted" for c in claims)
    return {"r": results, "benches": benches, "changed": [b for b in benches if verdict_of(b) in CHANGED],
            "failed": [b for b in benches if verdict_of(b) == "failed"],
            "news": news, "rest": rest,
            "first_rows": first_rows(sum(1 for said in (contradicted,
                                                        doctor_warning(env.get("doctor")))
                                         if said)),
            "gate": gate_sentence(results), "claims": claims,
            "rest_counts": rest_counts(rest, news),
            "explained": [b for b in news if verdict_of(b) in CHANGED
                          or memory_verdict_of(b) in CHANGED or output_changed(b)],
            "inconclusive_fix": inconclusive_fix(benches),
            "settings": settings,
            "memory": has_memory(benches),
            "env": env, "doctor_warning": doctor_warning(env.get("doctor")),
            "doctor_line": doctor_counts(env.get("doctor")),
            "ci_pct": f"{settings.get('ci_level', 0.95) * 100:.3g} %", "eq_note": eq_note(settings), "policy_note": policy_note(settings),
            "skipped_note": skipped_note(settings), "selection": selection_view(results.get("selection")),
            "kernels": kernels_view(results.get("kernels")),
            "conditions": conditions_line(env),
            "budget_note": budget_note(settings), "budget_line": budget_line(settings), "notes": notes,
            "sweep_lines": sweep_lines, "sweep_more": sweep_more, "sweep_plots": drawn[:MAX_PLOTS],
            "compared": compared, "output_changes": sum(1 for b in benches if output_changed(b)),
            "cold_timed": sum(1 for b in benches
                              if any((b.get(side) or {}).get("cold_cache") is True
                                     for side in ("base", "head")))}


def eq_note(settings: dict) -> str:
    """What a verdict means against the threshold, after it in the table's caption (pure): a change
    excludes 1 with its estimate beyond the threshold, ``unchanged`` has the equivalence interval
    (two one-sided tests at its coverage) inside it (:func:`runner.stats.decide`); empty for a
    document without ``settings.eq_level`` (older, or a single-revision run)."""
    level = settings.get("eq_level")
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        return ""
    return (f" (regression or improvement: the interval excludes no change and the estimate lies beyond it; "
            f"unchanged: the {level * 100:.3g} % interval of two one-sided tests lies inside it)")


def policy_note(settings: dict) -> str | None:
    """What the report says about perfgate's configuration (pure), None when nothing: a sentence
    when the head revision changed it — which known keys (the head's own key names are not
    echoed: they are the PR's text) and that the base's settings were used — and one naming the
    deprecated keys of :data:`runner.config.INTERNALS` the settings used set."""
    from ..config import INTERNALS, KEYS

    notes = []
    changed = settings.get("config_changed_by_head")
    if isinstance(changed, list) and changed:
        known = sorted({k for k in changed if isinstance(k, str) and k in KEYS})
        others = len(changed) - len(known)
        what = ", ".join(known) + (f" and {others} other key(s)" if known and others else "")
        what = what or "its configuration"
        by_file = settings.get("config_source") == "file"
        source = "the --config file" if by_file else "the base revision"
        notes.append(f"This pull request changes perfgate's settings ({what}); it was measured "
                     f"with the settings of {source}, not its own.")
    listed = settings.get("config_deprecated")
    deprecated = [k for k in INTERNALS if isinstance(listed, list) and k in listed]
    if deprecated:
        notes.append(f"perfgate's settings set {', '.join(deprecated)}: internals, deprecated as "
                     "keys; their values were used, the next release ignores them.")
    return " ".join(notes) or None



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


def selection_view(selection: dict | None, limit: int = 20) -> dict | None:
    """What a compare that selected (results.json ``selection``, runner.selection.record) says:
    ``{note, rows, more}``: one sentence of how many ran, were skipped and why, and a row per
    benchmark not run ``{name, text, value}`` ("not affected (last measured at <sha>)" and its last
    value, or "not measured" where none was carried); None when the compare did not select."""
    if not isinstance(selection, dict):
        return None
    skipped = [s for s in selection.get("skipped") or [] if isinstance(s, dict)]
    ran = selection.get("run") or 0
    total = ran + len(skipped)
    if selection.get("mode") == "all":
        note = f"All {total} benchmark(s) run: asked for every benchmark (/perf run --all or --all)."
    elif selection.get("full_run"):
        note = f"All {total} benchmark(s) run: {selection['full_run']}."
    else:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted((selection.get("run_reasons") or {}).items()))
        note = (f"Ran {ran} of {total} benchmark(s) this change can affect" + (f" ({why})" if why else "")
                + f"; {len(skipped)} not affected, carried forward (the check passes on them).")
        count = selection.get("changed_count")
        if is_number(count):
            note += f" {int(count)} file(s) changed"
            if selection.get("map_sha"):
                note += f"; code map of {str(selection['map_sha'])[:12]}"
            note += "."
    rows = []
    for s in skipped[:limit]:
        last = s.get("last") if isinstance(s.get("last"), dict) else None
        reason = str(s.get("reason") or "not affected")
        if last and last.get("sha"):
            text = f"{reason} (last measured at {str(last['sha'])[:12]})"
        else:
            text = f"{reason} (not measured in this run)"
        value = fmt_time(last.get("median")) if last and is_number(last.get("median")) and \
            (last.get("unit") or "s") == "s" else (f"{last['median']:.4g} {last.get('unit')}" if last and
                                                    is_number(last.get("median")) else "")
        rows.append({"name": str(s.get("name")), "text": text, "value": value})
    return {"note": note, "rows": rows, "more": max(0, len(skipped) - limit)}


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
    parts = [f"{len(doctor[key])} {label if len(doctor[key]) != 1 else one} ({', '.join(doctor[key])})"
             for key, label, one in (("failed", "failed", "failed"), ("warned", "warnings", "warning"))
             if doctor.get(key)]
    return "; ".join(parts) or "all checks passed"


