"""The results as rich tables for a terminal: the compare table and the single-run table."""

from __future__ import annotations

from ..results import CHANGED, change_of, memory_verdict_of, output_changed
from . import escape as esc
from .measures import memory_cell
from .outputs import verdict_text
from .units import fmt_pct, fmt_quantity, plural, short_sha
from .view import TABLE_NOTE, change_text, doctor_warning, interval_text, value_text, view


#: Rows of changed or failed benchmarks the terminal lists; the rest are counted and named in
#: report.md (a 1,000-benchmark suite printed 1,000 rows; issue 47 asks for 60 lines at most).
TERMINAL_ROWS = 15
#: Below this width, or where the table would not fit whole, the columns are stacked, two lines a
#: benchmark, so that no benchmark name wraps and no verdict is cut (80 columns: a CI log's width).
TABLE_MIN_WIDTH = 100
#: Failures and hints the terminal quotes (one line each); report.md has them all.
TERMINAL_QUOTES = 5

_STYLES = {"regression": "bold red", "improvement": "bold green", "failed": "red",
           "inconclusive": "yellow"}


def render_terminal(results: dict, width: int = 120) -> str:
    """The results as the terminal shows them, ``width`` columns, plain text (no colour codes)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    print_table(results, console)
    return buf.getvalue()


def print_table(results: dict, console) -> None:
    """Print a compare the way report.md opens (the gate's sentence, base and head, the changed
    or failed benchmarks, the rest counted, then why and what failed, one line each), at most
    about 60 lines whatever the suite; a table at :data:`TABLE_MIN_WIDTH` columns or more,
    stacked lines below it. A single-revision result: :func:`print_run_table`."""
    warning = doctor_warning((results.get("environment") or {}).get("doctor"))
    if results.get("base") is None:
        print_run_table(results, console)
        if warning:
            console.print(f"warning: {esc.term(warning, markup=False)}", markup=False, highlight=False)
        return
    ctx = view(results)
    t = esc.term
    # say: wrapped at words
    say = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    base, head, env = results.get("base") or {}, results.get("head") or {}, ctx["env"]
    console.print(f"[bold]perfgate: {t(ctx['gate'])}[/]", highlight=False)
    say(f"base {_revision(base)} → head {_revision(head)} · {t(env.get('device'), markup=False)}"
        + (f" · torch {t(env.get('torch'), markup=False)}" if env.get("torch") else ""))
    contradicted = [c for c in ctx["claims"] if c["verdict"] == "contradicted"]
    if contradicted:
        say(f"the PR's claim is contradicted: “{t(contradicted[0]['quote'], markup=False)}” — "
            f"{t(contradicted[0]['why'], markup=False)}")
    if warning:
        say(f"warning: {t(warning, markup=False)}")
    everything = len(ctx["news"]) + len(ctx["rest"]) <= TERMINAL_ROWS
    shown = ctx["news"] + ctx["rest"] if everything else ctx["news"][:TERMINAL_ROWS]
    table = _table(ctx, shown) if shown and console.width >= TABLE_MIN_WIDTH else None
    if (table is not None
            and table.__rich_measure__(console, console.options).maximum <= console.width):
        console.print(table)
    elif shown:
        _stacked(ctx, shown, console)
    more = 0 if everything else len(ctx["news"]) - len(shown)
    if more:
        say(f"… and {more} more changed or failed: report.md lists them")
    if ctx["rest_counts"] and not everything:
        undecided = any(change_of(b).get("verdict") == "inconclusive" for b in ctx["rest"])
        say(f"{ctx['rest_counts']}: report.md lists them" + (
            "; undecided: a larger --max-time, or fewer benchmarks (--filter), gives each more "
            "process pairs"
            if undecided else ""))
    for b in ctx["failed"][:TERMINAL_QUOTES]:
        for side in ("base", "head"):
            err = ((b.get(side) or {}).get("error") or "").strip().splitlines()
            if err:
                console.print(f"[red]{t(b['name'])} failed on {side}:[/] {t(err[-1])}",
                              highlight=False)
    quoted = [(b, (b.get("hints") or [])[0]) for b in ctx["changed"] if b.get("hints")]
    for b, h in quoted[:TERMINAL_QUOTES]:
        console.print(f"why {t(b['name'])}: \\[{t(h['kind'])}] {t(h['summary'])}", highlight=False)
    noted = [b for b in shown if ctx["notes"].get(b["name"])]
    for b in noted[:TERMINAL_QUOTES]:
        say(f"  {t(b['name'], markup=False)}: {t(ctx['notes'][b['name']], markup=False)}")
    if len(noted) > TERMINAL_QUOTES:
        say(f"  … and the notes of {len(noted) - TERMINAL_QUOTES} more: report.md")
    fail = ctx["settings"].get("fail_threshold")
    say(f"change = head/base − 1, {ctx['ci_pct']} CI; threshold "
        f"±{fmt_pct(ctx['settings'].get('threshold'))}{ctx['eq_note']}; {TABLE_NOTE}"
        + (f"; the gate fails beyond {fmt_pct(fail)}" if fail is not None else ""))
    if ctx["conditions"]:
        say(t(ctx["conditions"], markup=False))


def _revision(side: dict) -> str:
    """``main (1a2b3c4d5e6f)``, or the short SHA alone where the ref is the SHA."""
    ref, sha = str(side.get("ref") or ""), str(side.get("sha") or "")
    short = esc.term(short_sha(sha), markup=False)
    return short if not ref or sha.startswith(ref) else f"{esc.term(ref, markup=False)} ({short})"


def _verdict(v: str, bench: dict) -> str:
    """The verdict, styled, and "changes the result" beside it (:func:`.outputs.verdict_text`)."""
    shown = verdict_text(bench) if output_changed(bench) else v
    return f"[{_STYLES[v]}]{shown}[/]" if v in _STYLES else shown


def _table(ctx: dict, benches: list[dict]):
    """``benches`` as a rich table (for a terminal wide enough for all of it)."""
    from rich.table import Table

    t = esc.term
    table = Table()
    table.add_column("benchmark", no_wrap=True)
    for name in ("base", "head", "change", "CI"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    if ctx["memory"]:
        table.add_column("peak memory", justify="right", no_wrap=True)
    for b in benches:
        row = [t(b["name"]), t(value_text(b, "base")), t(value_text(b, "head")), t(change_text(b)),
               t(interval_text(b)), _verdict(change_of(b).get("verdict", ""), b)]
        if ctx["memory"]:
            row.append(t(memory_cell(b)))
        table.add_row(*row)
    return table


def _stacked(ctx: dict, benches: list[dict], console) -> None:
    """``benches`` two lines each (a narrow terminal): the verdict, change, interval and times,
    then the name on its own line — never wrapped into a column, never a verdict cut; a memory
    change a third line (it took the first past 80 columns)."""
    t = esc.term
    for b in benches:
        v = change_of(b).get("verdict", "")
        console.print(f"{_verdict(v, b):<12} {t(change_text(b)):>9} {t(_bare_interval(b))}  "
                      f"{t(value_text(b, 'base'))} → {t(value_text(b, 'head'))}",
                      highlight=False, soft_wrap=True)
        console.print(f"  {t(b['name'], markup=False)}", markup=False, highlight=False,
                      soft_wrap=True)
        if memory_verdict_of(b) in CHANGED:
            console.print(f"  memory {t(memory_cell(b))}", highlight=False, soft_wrap=True)


def _bare_interval(bench: dict) -> str:
    """The interval without the word the change beside it ends with: "10.9× faster [4.4×,
    26.9×]", not "... [4.4×, 26.9×] faster" (a table gives each its own column)."""
    interval, word = interval_text(bench), change_text(bench).rsplit(" ", 1)[-1]
    return interval[: -len(word) - 1] if word.isalpha() and interval.endswith(" " + word) \
        else interval


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

