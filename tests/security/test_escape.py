"""runner.escape: each output context, checked by what the rendered text does (markdown_check),
and the checker itself (it must see each attack it is there to see)."""

from __future__ import annotations

import re

import pytest
from markupsafe import Markup

from runner.report import escape as esc
from tests.security.markdown_check import inspect

ATTACKS = [
    "@octo/security-team please look",
    "![pixel](https://attacker.example/p.png)",
    "[click](javascript:alert(1))",
    "<https://attacker.example>",
    "see https://attacker.example/x and www.attacker.example",
    "mail me: someone@attacker.example",
    "fixes #1 and octo/demo#2",
    "</b></summary></details>\n\n## all clear <details><summary>",
    "```\n@octo/release-team\n```",
    "`` ` `` `",
    "a | b || c \\| d \\\\| e",
    "<img src=x onerror=alert(1)>",
    "*bold* _it_ ~~gone~~ $x^2$",
    "line\r\nbreak\u2028sep\x1b[31mred\x00nul\u202egnp.exe",
    "- item\n# heading\n1. one\n> quote\n    code",
    "&lt;b&gt; &amp; &#64;octo",
]


def _doc(*parts: str) -> str:
    return "\n".join(parts) + "\n"


def test_the_checker_sees_every_kind_of_live_markup():
    assert inspect("hello @octo/team").problems
    assert inspect("![x](https://a.example/x.png)").problems
    assert inspect("[x](https://a.example)").problems
    assert inspect("see https://a.example").problems and inspect("see www.a.example").problems
    assert inspect("fixes #12").problems and inspect("a@b.example").problems
    assert inspect("<details><summary>x</summary>\n\n</details>\n</details>\n").problems
    assert inspect("<details><summary>x</summary>\n\ny\n").problems
    assert inspect("```\nunclosed\n").problems
    assert inspect("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n").problems
    assert inspect("x <img src=y> z").problems
    assert inspect("```mermaid\nxychart-beta\n    x-axis [\"a\", \"b\"c\"]\n```\n").problems
    # and what perfgate writes on purpose passes
    ok = inspect("<!-- perfgate -->\n<details><summary><b>x</b></summary>\n\n```\n`@a`\n```\n\n</details>\n\n"
                 "| a | b |\n|---|---|\n| `x\\|y` | 2 |\n\n[report](https://p.example/runs/1) @bob #3\n",
                 links=("https://p.example/",), mentions=frozenset({"bob"}), references=frozenset({"#3"}))
    assert ok.problems == []


@pytest.mark.parametrize("text", ATTACKS)
def test_inline_text_is_inert_and_on_one_line(text):
    out = esc.md_text(text)
    assert "\n" not in out and "\r" not in out and "|" not in out
    page = inspect(_doc("before", f"- kind: {out}", "", f"| a | b |\n|---|---|\n| {out} | 2 |"))
    assert page.problems == []
    assert page.skeleton == inspect(_doc("before", "- kind: x", "", "| a | b |\n|---|---|\n| x | 2 |")).skeleton


@pytest.mark.parametrize("text", ATTACKS)
def test_code_span_holds_any_text(text):
    out = esc.md_code(text)
    page = inspect(_doc(f"name {out} end", "", f"| a | b |\n|---|---|\n| {esc.md_cell(out)} | 2 |"))
    assert page.problems == []
    fence = len(out) - len(out.lstrip("`"))
    assert max((len(run) for run in re.findall("`+", out[fence:-fence])), default=0) < fence


def test_code_span_shows_the_same_characters():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    for text in ("plain", "`tick`", "a `` b", " lead", "trail ", "``"):
        tokens = md.parseInline(esc.md_code(text))[0].children
        assert [t.type for t in tokens] == ["code_inline"] and tokens[0].content == text
    assert esc.md_code("") == ""


@pytest.mark.parametrize("text", ATTACKS)
def test_text_inside_raw_html_stays_text(text):
    out = esc.md_html(text)
    page = inspect(_doc(f"<details><summary><b>{out}</b> failed</summary>", "", "body", "", "</details>"))
    assert page.problems == []
    assert page.skeleton == inspect(_doc("<details><summary><b>x</b> failed</summary>", "", "body", "",
                                         "</details>")).skeleton


@pytest.mark.parametrize("text", ATTACKS + ["````\n```\n`````", "~~~\nx\n~~~"])
def test_fenced_block_cannot_be_closed_from_inside(text):
    page = inspect(_doc("<details><summary>e</summary>", "", esc.md_fence(text), "", "</details>", "", "after"))
    assert page.problems == []
    assert [s for s in page.skeleton if s[0] == "fence"] == [("fence", "")]


def test_mermaid_label_keeps_only_plain_characters():
    assert esc.mermaid_label('bench_mm\n```\n@octo/release-team ```"]') == "bench_mm octo/release-team"
    assert esc.mermaid_label("bench_norm[rows=4096]") == "bench_norm rows=4096"
    assert esc.mermaid_label("```") == "?" and len(esc.mermaid_label("x" * 100)) == 40


def test_plain_and_terminal_text():
    assert esc.plain("a\nb\x1b[31m", 250) == "a b[31m" and esc.plain("x" * 10, 5) == "xxxx…"
    assert esc.term("[/] [red]x[/red]") == "\\[/] \\[red]x\\[/red]"
    assert esc.term("\x1b[2Jgone", markup=False) == "[2Jgone"


@pytest.mark.parametrize("url,ok", [
    ("https://github.com/octo/demo/pull/7", True),
    ("https://GITHUB.com/octo/demo/actions/runs/1", True),
    ("javascript:alert(document.domain)", False),
    ("JAVASCRIPT:alert(1)", False),
    ("http://github.com/octo/demo/pull/7", False),
    ("https://github.com.attacker.example/x", False),
    ("https://github.com@attacker.example/x", False),
    ("https://attacker.example/https://github.com/", False),
    ("//attacker.example/x", False),
    ("https://github.com/x\"onmouseover=alert(1)", False),
    ("https://github.com/x\u200b", False),
    ("https://github.com", False),
    (None, False), (7, False),
])
def test_safe_link_allows_only_https_pages_of_the_github_host(url, ok):
    assert esc.safe_link(url, "https://github.com") == (url if ok else None)


def test_html_escape_filter_is_markup_safe():
    from runner.report.templating import html_escape

    once = html_escape("<b>")
    assert isinstance(once, Markup) and once == "&lt;b&gt;" and html_escape(once) == once


def test_compare_progress_shows_names_with_brackets_as_they_are(capsys):
    from runner.cli.compare import RichProgress

    with RichProgress() as progress:
        progress.start(2)
        for name in ("bench_layer_norm[rows=4096]", "bench[/]\x1b[2J"):
            progress.benchmark(0, name)
            progress.rounds(name, 4, None)
            progress.finished(name, "regression")
    err = capsys.readouterr().err
    assert "bench_layer_norm[rows=4096]: regression" in err and "bench[/][2J: regression" in err


def test_every_html_template_is_autoescaped_and_no_markdown_one_is():
    from runner import report

    env = report.environment()
    names = env.list_templates()
    assert [n for n in names if n.endswith(".html.j2")] and [n for n in names if n.endswith(".md.j2")]
    for name in names:
        assert env.get_template(name).environment.autoescape(name) is name.endswith(".html.j2"), name


def test_results_text_must_be_storable():
    from runner.errors import ResultsError
    from runner.results import storable, text_problem, validate
    from testkit.documents import full_document

    doc = full_document()
    doc["benchmarks"][2]["head"]["error"] = "boom\x00"
    assert text_problem(doc) == "benchmarks/2/head/error"
    with pytest.raises(ResultsError, match="benchmarks/2/head/error: text with a NUL"):
        validate(doc)
    doc["environment"]["telemetry"]["sides"]["\ud800"] = {}
    fixed = storable(doc)
    assert text_problem(fixed) is None and validate(fixed)["benchmarks"][2]["head"]["error"] == "boom\ufffd"


def test_no_terminal_control_sequence_survives_any_renderer():
    """Security review N9: a schema-valid document with ESC and BEL in the doctor's checks (the
    field the terminal table missed), a benchmark name, the base ref, an error and a hint; no
    registered format — terminal table, Markdown, HTML — writes a control character."""
    from runner import report
    from runner import results as results_mod
    from runner.report import formats
    from testkit.documents import full_document

    csi, osc = "\x1b[2J\x1b[31m", "\x1b]8;;https://evil.example\x07x\x1b]8;;\x07"
    doc = full_document()
    doc["environment"]["doctor"] = {
        "checks": [{"check": "load" + csi, "subject": "cpu" + osc, "status": "fail", "summary": "busy" + csi,
                    "fix": "wait" + osc}], "failed": ["load" + csi], "warned": []}
    doc["benchmarks"][0]["name"] += csi
    doc["base"]["ref"] += osc
    doc["benchmarks"][2]["head"]["error"] += csi
    doc["benchmarks"][1]["hints"][0]["summary"] += osc
    results_mod.validate(doc)
    assert formats.names() == ("md", "html", "term")
    for fmt in formats.names():
        text = report.render(doc, fmt)
        assert "\x1b" not in text and "\x07" not in text, fmt
        assert "busy" in text or fmt != "term"  # the doctor's warning is shown, only without its controls
