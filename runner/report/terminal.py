"""The results as rich tables for a terminal: the compare table and the single-run table."""

from __future__ import annotations

from ..results import CHANGED, change_of, memory_verdict_of, output_changed
from . import escape as esc
from .measures import memory_cell
from .outputs import verdict_text
from .units import bare_interval, fmt_quantity, plural, short_sha
from .notes import INCONCLUSIVE_WORD, hint_label
from .view import change_text, doctor_warning, interval_text, rest_counts, value_text, view


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
    """Print a compare the way report.md opens: the gate's sentence, base and head, the changed
    or failed benchmarks (each with why, or what failed, in one line), the rest counted, and one
    line pointing to report.md for the notes and the method. At most :data:`TERMINAL_LINES`
    lines whatever the suite: the benchmarks listed are as many as fit. A table at
    :data:`TABLE_MIN_WIDTH` columns or more, stacked lines below it. A single-revision result:
    :func:`print_run_table`."""
    warning = doctor_warning((results.get("environment") or {}).get("doctor"))
    if results.get("base") is None:
        print_run_table(results, console)
        if warning:
            console.print(f"warning: {esc.term(warning, markup=False)}", markup=False, highlight=False)
        return
    ctx = view(results)
    t = esc.term
    base, head, env = results.get("base") or {}, results.get("head") or {}, ctx["env"]
    contradicted = [c for c in ctx["claims"] if c["verdict"] == "contradicted"]
    opening = [f"base {_revision(base)} → head {_revision(head)} · "
               f"{t(env.get('device'), markup=False)}"
               + (f" · torch {t(env.get('torch'), markup=False)}" if env.get("torch") else "")]
    if contradicted:
        claim = contradicted[0]
        quote, why = t(claim['quote'], markup=False), t(claim['why'], markup=False)
        opening.append(f"the PR's claim is contradicted: “{quote}” — {why}")
    if warning:
        opening.append(f"warning: {t(warning, markup=False)}")
    closing = [f"{INCONCLUSIVE_WORD}: {ctx['inconclusive_fix']}"] if ctx["inconclusive_fix"] else []
    closing.append(pointer_line(len(ctx["notes"])))
    # the lines left for the benchmarks: the sentences around them, and the two count lines
    room = TERMINAL_LINES - 2 - sum(_height(console, text) for text in
                                    [f"perfgate: {ctx['gate']}", *opening, *closing])
    everything = len(ctx["news"]) + len(ctx["rest"]) <= TERMINAL_ROWS
    wanted = ctx["news"] + ctx["rest"] if everything else ctx["news"][:TERMINAL_ROWS]
    console.print(f"[bold]perfgate: {t(ctx['gate'])}[/]", highlight=False)
    for text in opening:  # wrapped at words
        console.print(text, markup=False, highlight=False)
    table = _table(ctx, wanted) if wanted and console.width >= TABLE_MIN_WIDTH else None
    if (table is not None
            and table.__rich_measure__(console, console.options).maximum <= console.width):
        shown = _tabled(ctx, wanted, console, room)
    else:
        shown = _stacked(ctx, wanted, console, room)
    listed = {id(b) for b in shown}
    more = sum(1 for b in ctx["news"] if id(b) not in listed)
    if more:
        console.print(f"… and {more} more changed or failed: {EVERY_BENCHMARK}",
                      markup=False, highlight=False)
    counts = rest_counts([b for b in ctx["rest"] if id(b) not in listed], shown)
    if counts:
        console.print(f"{counts}: {EVERY_BENCHMARK}", markup=False, highlight=False)
    for text in closing:
        console.print(text, markup=False, highlight=False)


#: Where the benchmarks the terminal leaves out are: report.md is cut to a comment's size
#: (:data:`runner.report.render.COMMENT_LIMIT`), report.html lists every one.
EVERY_BENCHMARK = "report.html lists every benchmark"
#: Lines the terminal prints for a compare at most, whatever the suite (issue 47: 60 lines for a
#: 1,000-benchmark suite at 80 columns; a screen, not a scroll-back).
TERMINAL_LINES = 60


def _height(console, text: str) -> int:
    """The lines ``text`` takes on ``console``, wrapped at words as it prints it."""
    from rich.text import Text

    return len(console.render_lines(Text(text), console.options, pad=False))


def _quote(bench: dict) -> tuple[str, str] | None:
    """One benchmark's why in a line's words, plain text: ``("failed on head:", last line of the
    error)``, else its first hint (``("why:", "operator time: …")``) where its time or memory
    changed; None without either."""
    for side in ("head", "base"):
        err = ((bench.get(side) or {}).get("error") or "").strip().splitlines()
        if err:
            return f"failed on {side}:", err[-1]
    changed = {change_of(bench).get("verdict"), memory_verdict_of(bench)} & set(CHANGED)
    if changed and bench.get("hints"):
        hint = bench["hints"][0]
        return "why:", f"{hint_label(hint)}: {hint.get('summary')}"
    return None


def cut_at_word(text: str, width: int) -> str:
    """``text`` within ``width`` cells: whole, else cut at the last space that leaves room for
    " …", so that a number is never cut inside (``14.…`` read as a value; issue 47); a text
    without such a space is cut at the width."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    room = width - 2
    cut = text[:room + 1].rstrip()
    while cut and cell_len(cut) > room:
        cut = cut[:-1]
    at = cut.rfind(" ") if len(cut) < len(text) and text[len(cut)] != " " else len(cut)
    kept = cut[:at].rstrip() if at > 0 else ""
    return f"{kept} …" if kept else set_cell_size(text, max(0, width - 1)) + "…"


def _print_quote(console, lead: str, quote: tuple[str, str]) -> None:
    """``lead`` (a name, an indent) and ``quote`` in one line, cut at a word
    (:func:`cut_at_word`)."""
    from rich.text import Text

    label, words = quote
    line = cut_at_word(esc.term(f"{lead}{label} {words}", markup=False).replace("\n", " "),
                       console.width)
    style = "red" if label.startswith("failed") else ""
    text = Text(line)
    text.stylize(style, len(lead), len(lead) + len(label))
    console.print(text, highlight=False, no_wrap=True, overflow="ellipsis")


def _tabled(ctx: dict, benches: list[dict], console, room: int) -> list[dict]:
    """``benches`` as a table (a terminal wide enough for all of it), then each one's why in a
    line cut at the width, as many benchmarks as ``room`` lines hold; returns those listed."""
    t = esc.term
    quotes = [(b, q) for b in benches if (q := _quote(b))]
    rows = min(len(benches), max(0, room - 4 - min(len(quotes), TERMINAL_QUOTES)))
    shown = benches[:rows]
    if shown:
        console.print(_table(ctx, shown))
    listed = {id(b) for b in shown}
    for b, quote in [(b, q) for b, q in quotes if id(b) in listed][:TERMINAL_QUOTES]:
        _print_quote(console, f"{b['name']} ", quote)
    return shown


def pointer_line(noted: int) -> str:
    """The terminal's last line: where the rest is (pure). The notes beside ``noted``
    benchmarks, how it was measured and the environment are report.md's, never repeated here
    (issue 47: the terminal printed each note and the method, 20 of its 41 lines in the demo)."""
    notes = f"notes on {plural(noted, 'benchmark')}, " if noted else ""
    return f"{notes}how it was measured and the environment: report.md"


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
    for name in ("base", "head", "change", f"{ctx['ci_pct']} CI"):
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


def _stacked(ctx: dict, benches: list[dict], console, room: int) -> list[dict]:
    """``benches`` in lines (a narrow terminal), as many as ``room`` lines hold: the verdict,
    change, interval and times, then the name on its own line — never wrapped into a column,
    never a verdict cut; a memory change a line (it took the first past 80 columns), and its
    why or what failed a line cut at the width. Returns those listed."""
    t = esc.term
    shown: list[dict] = []
    for b in benches:
        memory = memory_verdict_of(b) in CHANGED
        quote = _quote(b)
        v = change_of(b).get("verdict", "")
        said = verdict_text(b) if output_changed(b) else v
        first = f"{said:<12} {change_text(b):>9} {_bare_interval(b)}"
        times = f"{value_text(b, 'base')} → {value_text(b, 'head')}"
        apart = len(f"{first}  {times}") > console.width  # a wide interval: times a line
        room -= 2 + apart + memory + (quote is not None)
        if room < 0:
            break
        shown.append(b)
        console.print(f"{_verdict(v, b):<12} {t(change_text(b)):>9} {t(_bare_interval(b))}"
                      + ("" if apart else f"  {t(times)}"), highlight=False, soft_wrap=True)
        if apart:
            console.print(f"  {t(times)}", highlight=False, soft_wrap=True)
        console.print(f"  {t(b['name'], markup=False)}", markup=False, highlight=False,
                      soft_wrap=True)
        if memory:
            console.print(f"  memory {t(memory_cell(b))}", highlight=False, soft_wrap=True)
        if quote:
            _print_quote(console, "  ", quote)
    return shown


def _bare_interval(bench: dict) -> str:
    """The interval without the word the change beside it ends with (:func:`.units.bare_interval`;
    a table gives each its own column)."""
    return bare_interval(change_text(bench), interval_text(bench))


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

