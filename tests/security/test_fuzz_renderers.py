"""Property: untrusted text in any shown field of a results document changes what every
renderer writes only inside the escaped value — the structure (blocks, ``<details>``, fences,
table rows, HTML elements) is that of the same document with harmless text, nothing live
appears (mention, reference, image, link, tag, script), and nothing raises.

Renderers: the Markdown report (PR comment, check-run summary, the Action's job summary and
comment, each also trimmed to a limit), the check-run title, the HTML report, the terminal
table, and the App's texts built from results (history notes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from action import publish
from bot.app.core import ingest, messages
from runner import report
from runner.report.escape import md_text
from runner.report.formats.md import cut_markdown
from tests.security.html_check import inspect_html
from tests.security.markdown_check import inspect
from tests.security.strategies import fuzzed_documents, untrusted_text

DETAILS = "https://perfgate.example.org/runs/abc"
LINKS = (DETAILS,)


def _same_structure(text: str, plain: str) -> None:
    page, expected = inspect(text, links=LINKS), inspect(plain, links=LINKS)
    assert page.problems == []
    assert page.skeleton == expected.skeleton


@given(fuzzed_documents())
def test_markdown_report(pair):
    doc, plain = pair
    _same_structure(report.render(doc, "md", details_url=DETAILS), report.render(plain, "md", details_url=DETAILS))
    _same_structure(ingest.check_summary(doc, DETAILS), ingest.check_summary(plain, DETAILS))
    notes = [{"benchmark": b["name"], "url": "https://perfgate.example.org/octo/demo/bench/x", "within_noise": None}
             for b in doc["benchmarks"]]
    accepts = [{"user": "maintainer", "reason": b["name"]} for b in doc["benchmarks"][:2]]
    comment = ingest.comment_body(doc, DETAILS, accepts, notes)
    assert inspect(comment, links=(DETAILS, "https://perfgate.example.org/"),
                   mentions=frozenset({"maintainer"})).problems == []


@given(fuzzed_documents(), st.integers(min_value=300, max_value=70_000))
def test_markdown_report_trimmed_to_any_limit(pair, limit):
    doc, _ = pair
    for text in (report.render(doc, "md", max_chars=limit, details_url=DETAILS),
                 publish.fit_comment(lambda n: report.render(doc, "md", max_chars=n, details_url=DETAILS), DETAILS,
                                     limit=max(limit, 1000))):
        assert len(text) <= max(limit, 1000) and text.startswith(report.MARKER)
        assert inspect(text, links=LINKS).problems == []
    summary = publish.fit_summary(lambda n: report.render(doc, "md", max_chars=n, details_url=DETAILS), DETAILS,
                                  "> [!NOTE]\n> a note about #7\n\n", limit=limit + 3000)
    assert len(summary.encode("utf-8")) <= limit + 3000
    assert inspect(summary, links=LINKS, references=frozenset({"#7"})).problems == []


@given(fuzzed_documents())
def test_check_run_title(pair):
    doc, _ = pair
    for verdict in ("success", "failure", "neutral"):
        title = ingest.check_title(doc, verdict, "maintainer")
        assert "\n" not in title and len(title) <= 250


@given(fuzzed_documents())
def test_html_report(pair):
    doc, plain = pair
    page, expected = inspect_html(report.render(doc, "html")), inspect_html(report.render(plain, "html"))
    assert page.problems == []
    assert page.skeleton == expected.skeleton


@given(fuzzed_documents())
def test_terminal_table(pair):
    doc, _ = pair
    text = report.render(doc, "term")
    assert "\x1b" not in text and "perfgate" in text


@given(untrusted_text, untrusted_text, untrusted_text)
def test_app_messages(text, other, third):
    for body in (messages.queued(base_sha="0" * 40, head_sha="1" * 40, requested_by="maintainer", trigger="command",
                                 details_url=DETAILS, workflow_url=None, filter_=text, rounds=4, threshold=0.02),
                 messages.cancelled(messages.superseded_by_command(text, "maintainer")),
                 messages.label_refusal("maintainer", text),
                 messages.dispatch_failed("perfgate.yml", text),
                 messages.workflow_failed(text, None, "its results artifact is invalid"),
                 messages.accepted_note("maintainer", text),
                 messages.history_notes([{"benchmark": text, "url": "https://perfgate.example.org/o/r/bench/x",
                                          "within_noise": True}, {"benchmark": other, "url": DETAILS}]),
                 messages.with_note(report.MARKER + "\n" + md_text(text) * 20, messages.accepted_note("maintainer", third),
                                    limit=200)):
        assert inspect(body, links=LINKS + ("https://perfgate.example.org/",),
                       mentions=frozenset({"maintainer"})).problems == []


@given(untrusted_text, untrusted_text, untrusted_text, untrusted_text)
def test_history_reply(name, label, sha, asked):
    import datetime as dt

    from bot.history.series import ChangePoint, Point, Series
    from bot.history.texts import history_table_markdown

    when = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
    series = Series(benchmark=name, fingerprint={"key": "k", "label": label},
                    points=[Point(sha=sha, time=when, value=1e-3)],
                    change_points=[ChangePoint(index=0, sha=sha, prev_sha=sha, before=1e-3,
                                               after=2e-3, ratio=2.0, p_value=0.01,
                                               prs=({"number": 12},))])
    for text in (history_table_markdown([series], repository="octo/demo",
                                        public_url="https://perfgate.example.org"),
                 history_table_markdown([], repository="octo/demo", public_url=None,
                                        benchmark=asked)):
        assert inspect(text, links=("https://perfgate.example.org/octo/demo",), references=frozenset({"#12"})).problems == []


def test_the_html_checker_flags_a_scheme_where_it_can_run_and_not_in_shown_text():
    flagged = inspect_html('<a href="javascript:alert(1)">x</a><p style="background:url(javascript:x)">'
                           '<span data-u="javascript:x">').problems
    assert len(flagged) == 4, flagged  # the href twice (off-page link, scheme), the style, the data-*
    assert inspect_html('<code title="[l](javascript:alert(1))">[l](javascript:alert(1))</code>').problems == []


def test_a_cut_never_ends_inside_details_that_a_name_seems_to_close():
    """Found by the fuzzer (seed 4): a benchmark name or ref ``</details>`` in a code span counted
    as the element's end, so the trimmed comment left ``<details>`` open."""
    text = ("## perfgate\n\n<details><summary>1 unchanged</summary>\n\n"
            "| `</details>` | 1 ms |\n| `bench_b` | 2 ms |\n\n</details>\n\nafter\n")
    for limit in range(len(text)):
        cut = cut_markdown(text, limit)
        assert cut.count("<details>") == cut.count("\n</details>"), (limit, cut)
    assert cut_markdown(text, len(text)) == text
