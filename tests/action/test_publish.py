"""Summary, outputs and comment text (pure decisions of action.publish)."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.publish import (annotation, find_sticky, fit_comment, fit_summary, output_file_text, overall_verdict,
                            step_outputs, truncate, with_run_metadata)
from runner import results as results_mod
from runner.report import MARKER, render
from testkit.results_doc import bench, results_doc


def test_overall_verdict_is_the_most_severe_present():
    counts = dict.fromkeys(("regression", "improvement", "unchanged", "inconclusive", "failed", "new", "removed"), 0)
    assert overall_verdict(counts) == "none"
    assert overall_verdict({**counts, "unchanged": 3}) == "unchanged"
    assert overall_verdict({**counts, "unchanged": 3, "improvement": 1, "inconclusive": 2}) == "improvement"
    assert overall_verdict({**counts, "improvement": 1, "failed": 1}) == "failed"
    assert overall_verdict({**counts, "improvement": 5, "regression": 1, "failed": 1}) == "regression"


def test_step_outputs_hold_counts_and_paths():
    doc = results_doc([bench("a", "regression", 1.5), bench("b", "regression", 1.2), bench("c", "improvement", 0.5)])
    outputs = step_outputs(doc, Path("/out/results.json"), Path("/out"))
    assert outputs == {"results": "/out/results.json", "report": "/out/report.md", "out-dir": "/out",
                       "regressions": "2", "improvements": "1", "verdict": "regression"}


def test_output_file_text_uses_the_delimiter_form():
    text = output_file_text({"verdict": "regression", "odd": "two\nlines"}, delimiter="EOF_X")
    assert text == "verdict<<EOF_X\nregression\nEOF_X\nodd<<EOF_X\ntwo\nlines\nEOF_X\n"
    with pytest.raises(ValueError):
        output_file_text({"x": "EOF_X"}, delimiter="EOF_X")


def test_annotation_escapes_to_one_line():
    assert annotation("error", "50% slower\nsee log") == "::error::50%25 slower%0Asee log"
    assert annotation("error", "x", title="a: b, c") == "::error title=a%3A b%2C c::x"


@pytest.mark.parametrize("unit", ["chars", "bytes"])
def test_truncate_fits_and_links(unit):
    text = "é" * 5000
    out = truncate(text, 1000, "https://run", unit=unit)
    size = len(out.encode()) if unit == "bytes" else len(out)
    assert size <= 1000 and out.endswith("the full report: https://run\n")
    assert truncate("short", 1000, None) == "short"


def _big_results(n: int) -> dict:
    return results_doc([bench(f"bench_{i:04d}_{'x' * 80}", "regression", 1.0 + i / 1000) for i in range(n)])


def test_comment_fits_githubs_limit_and_keeps_the_marker():
    doc = _big_results(1500)
    assert len(render(doc, "md")) > 65_536  # the untrimmed report would be rejected with 422
    body = fit_comment(lambda n: render(doc, "md", max_chars=n, details_url="https://run/1"), "https://run/1")
    assert len(body) <= 65_536 and body.startswith(MARKER)
    assert "https://run/1" in body


def test_comment_gets_the_marker_even_if_a_renderer_forgot_it():
    body = fit_comment(lambda n: "## report\n" + "x" * 100_000, "https://run/2")
    assert body.startswith(MARKER) and len(body) <= 65_536 and body.rstrip().endswith("https://run/2")


def test_summary_fits_a_mebibyte_in_bytes_even_with_wide_characters():
    wide = "🔴" * 400_000  # 4 bytes each: 1.6 MB in 400,000 characters
    text = fit_summary(lambda n: wide[:n], "https://run/3", notes="> note\n\n")
    assert len(text.encode("utf-8")) <= 1_048_576 and text.startswith("> note")


def test_summary_of_a_small_result_is_the_whole_report():
    doc = results_doc()
    text = fit_summary(lambda n: render(doc, "md", max_chars=n), None)
    assert text == render(doc, "md") and "bench_sum" in text


def test_find_sticky_picks_the_oldest_marked_comment_of_the_author():
    comments = [
        {"id": 1, "body": "I think <!-- perfgate --> is neat", "login": "github-actions[bot]"},
        {"id": 2, "body": f"{MARKER}\nquoted by a human", "login": "octocat"},
        {"id": 3, "body": f"{MARKER}\n## perfgate", "login": "github-actions[bot]"},
        {"id": 4, "body": f"{MARKER}\n## perfgate again", "login": "github-actions[bot]"},
    ]
    assert find_sticky(comments, "github-actions[bot]")["id"] == 3
    assert find_sticky(comments, "perfgate[bot]") is None
    assert find_sticky([], "github-actions[bot]") is None


def test_run_metadata_keeps_results_valid_and_names_the_branches():
    doc = with_run_metadata(results_doc(), run_id="r-1", run_url="https://github.com/o/r/actions/runs/5",
                            pr_number=12, pr_url="https://github.com/o/r/pull/12", base_label="main",
                            head_label="feature")
    assert results_mod.validate(doc) is doc
    assert doc["run_id"] == "r-1" and doc["pull_request"] == {"number": 12, "url": "https://github.com/o/r/pull/12"}
    assert doc["base"] == {"ref": "main", "sha": "a" * 40} and doc["head"]["ref"] == "feature"
    plain = with_run_metadata(results_doc(), run_id=None, run_url=None, pr_number=None, pr_url=None)
    assert plain["pull_request"] is None and plain["base"]["ref"] == "a" * 40
