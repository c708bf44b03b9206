"""The results as rich tables for a terminal: the compare table and the single-run table."""

from __future__ import annotations

from ..results import change_of
from . import escape as esc
from .measures import memory_cell
from .units import fmt_pct, fmt_quantity, plural, short_sha
from .view import TABLE_NOTE, change_text, doctor_warning, interval_text, value_text, view


def render_terminal(results: dict, width: int = 120) -> str:
    """The results as a rich table rendered to plain text (no colour codes)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    print_table(results, console)
    return buf.getvalue()


def print_table(results: dict, console) -> None:
    """Print the verdict table (benchmark, base, head, change with CI, verdict) on a rich console."""
    from rich.table import Table

    warning = doctor_warning((results.get("environment") or {}).get("doctor"))
    if results.get("base") is None:
        print_run_table(results, console)
        if warning:
            console.print(f"warning: {esc.term(warning, markup=False)}", markup=False, highlight=False)
        return
    ctx = view(results)
    base, head = results.get("base") or {}, results.get("head") or {}
    title = f"perfgate: {ctx['headline']}"
    t = esc.term
    caption = (f"base {t(base.get('ref'))} ({t(short_sha(base.get('sha')))}) → head {t(head.get('ref'))} "
               f"({t(short_sha(head.get('sha')))}); change = head/base − 1, {ctx['ci_pct']} CI; threshold "
               f"±{fmt_pct(ctx['settings'].get('threshold'))}{ctx['eq_note']}; {TABLE_NOTE}")
    if ctx["conditions"]:
        caption += f"\n{t(ctx['conditions'])}"
    table = Table(title=title, caption=caption)
    table.add_column("benchmark", overflow="fold")
    table.add_column("base", justify="right")
    table.add_column("head", justify="right")
    table.add_column("change", justify="right")
    table.add_column("CI", justify="right")
    table.add_column("verdict")
    if ctx["memory"]:
        table.add_column("peak memory", justify="right")
    styles = {"regression": "bold red", "improvement": "bold green", "failed": "red", "inconclusive": "yellow"}
    for b in ctx["benches"]:
        v = change_of(b).get("verdict", "")
        row = [t(b["name"]), t(value_text(b, "base")), t(value_text(b, "head")), t(change_text(b)),
               t(interval_text(b)), f"[{styles.get(v, '')}]{v}[/]" if v in styles else v]
        if ctx["memory"]:
            row.append(t(memory_cell(b)))
        table.add_row(*row)
    console.print(table)
    if warning:
        console.print(f"warning: {esc.term(warning, markup=False)}", markup=False, highlight=False)
    if ctx["budget_note"]:
        console.print(t(ctx["budget_note"], markup=False), markup=False, highlight=False)
    for b in ctx["benches"]:
        note = ctx["notes"].get(b["name"])
        if note:
            console.print(f"  {t(b['name'], markup=False)}: {t(note, markup=False)}", markup=False, highlight=False)
    for b in ctx["failed"]:
        for side in ("base", "head"):
            err = (b.get(side) or {}).get("error")
            if err:
                console.print(f"[red]{t(b['name'])} failed on {side}:[/]")
                console.print("  " + "\n  ".join(t(err, markup=False).splitlines()[-4:]), markup=False, highlight=False)
    for b in ctx["changed"]:
        for h in (b.get("hints") or [])[:3]:
            console.print(f"  {t(b['name'])}: \\[{t(h['kind'])}] {t(h['summary'])}", highlight=False)


def print_run_table(results: dict, console) -> None:
    """The table of a single-revision ``perfgate run``: median, its interval, samples, errors."""
    from rich.table import Table

    t = esc.term
    head = results.get("head") or {}
    level = (results.get("settings") or {}).get("ci_level", 0.95)
    table = Table(title=f"perfgate run: {plural(len(results.get('benchmarks', [])), 'benchmark')} at {t(head.get('ref'))} "
                        f"({t(short_sha(head.get('sha')))})",
                  caption=f"median time per call with its {level * 100:g} % confidence interval")
    for col, justify in (("benchmark", "left"), ("median", "right"), ("CI", "right"), ("samples", "right"),
                         ("error", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for b in sorted(results.get("benchmarks", []), key=lambda b: b["name"]):
        side = b.get("head") or {}
        unit = b.get("unit") or "s"
        ci = f"[{fmt_quantity(side.get('ci_low'), unit)}, {fmt_quantity(side.get('ci_high'), unit)}]" \
            if side.get("ci_low") else ""
        err = (side.get("error") or "").strip().splitlines()
        table.add_row(t(b["name"]), t(fmt_quantity(side.get("median"), unit)), t(ci), str(len(side.get("samples") or [])),
                      t(err[-1]) if err else "")
    console.print(table)

