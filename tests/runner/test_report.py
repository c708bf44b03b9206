"""Rendering from results.json alone: markdown (limits), HTML (self-contained), terminal."""

from __future__ import annotations

import re
from html import unescape

import pytest

from runner import report
from runner.report.terminal import render_terminal
from runner import results as results_mod
from runner.errors import ResultsError
from runner.report import notes, units


def _bench(name, verdict, ratio, base=1e-3, n=8, error=None):
    b = [base * (1 + 0.01 * ((i % 3) - 1)) for i in range(n)]
    h = [x * ratio for x in b] if ratio else []
    change = {"ratio": ratio, "ci_low": ratio and ratio * 0.98, "ci_high": ratio and ratio * 1.02,
              "p_value": 0.001 if ratio else None, "verdict": verdict}
    return {"name": name, "file": "bench_x.py", "unit": "s",
            "base": results_mod.side(b), "head": results_mod.side(h, error=error),
            "change": change, "hints": [], "profile": None}


def _doc(benchmarks, **settings):
    return results_mod.new_results(
        repository="o/r", base={"ref": "main", "sha": "a" * 40}, head={"ref": "pr", "sha": "b" * 40},
        environment={"device": "cpu", "device_name": "x", "torch": "2.13.0", "cuda": None, "driver": None,
                     "python": "3.11", "platform": "linux", "cpu": "x", "telemetry": {"available": False}},
        settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 8, "max_time": 60, **settings},
        benchmarks=benchmarks)


def test_markdown_has_marker_table_chart_and_failures():
    doc = _doc([_bench("bench_slow", "regression", 1.3), _bench("bench_fast", "improvement", 0.7),
                _bench("bench_same", "unchanged", 1.0),
                _bench("bench_boom", "failed", None, error="Traceback...\nRuntimeError: boom on head")])
    md = report.render(doc, "md")
    assert md.startswith(report.MARKER)
    # the first line: what changed and the gate's decision (a benchmark the head broke fails it)
    assert (md.splitlines()[1]
            == "## perfgate: 1 regression beyond 5 %, 1 benchmark broken by head: gate fails")
    assert "| 🔴 | `bench_slow` | 1 ms | 1.3 ms | +30.0 % | [+27.4, +32.6] % | regression |" in md
    assert "xychart-beta" in md and "bar [30.00, -30.00, 0.00]" in md
    assert "RuntimeError: boom on head" in md
    # regressions first, then failures, improvements, ..., unchanged last
    assert md.index("`bench_slow`") < md.index("`bench_boom`") < md.index("`bench_fast`") < md.index("`bench_same`")


def test_markdown_is_trimmed_to_fit_with_a_link():
    doc = _doc([_bench(f"bench_{i:03d}_" + "x" * 60, "regression", 1.1 + i / 1000) for i in range(400)])
    full = report.render(doc, "md")
    assert len(full) > 65_536
    short = report.render(doc, "md", max_chars=65_536, details_url="https://example.invalid/run/1")
    assert len(short) <= 65_536
    assert short.startswith(report.MARKER)
    assert "https://example.invalid/run/1" in short
    tiny = report.render(doc, "md", max_chars=3000, details_url="https://example.invalid/run/1")
    assert len(tiny) <= 3000 and "https://example.invalid/run/1" in tiny


def test_html_is_self_contained_with_a_paired_plot_per_benchmark():
    doc = _doc([_bench("bench_slow", "regression", 1.3, n=16), _bench("bench_same", "unchanged", 1.0)])
    html = report.render(doc, "html")
    assert html.count('<svg class="paired"') == 2
    assert html.count('class="pair"') == 16 + 8  # one line per paired round
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html


@pytest.mark.parametrize("ratio, low, high, expected", [
    # all three below 2× either way: percent
    (1.302, 1.28, 1.323, ("+30.2 %", "[+28.0, +32.3] %")),
    (0.97, 0.6, 1.2, ("-3.0 %", "[-40.0, +20.0] %")),
    # any of them at 2× or beyond: factors, the estimate and both ends (those below 2× too)
    (2.38, 1.585, 3.565, ("2.38× slower", "[1.58×, 3.56×] slower")),
    (0.123, 0.053, 0.286, ("8.13× faster", "[3.5×, 18.9×] faster")),
    (1.9, 1.52, 2.4, ("1.9× slower", "[1.52×, 2.4×] slower")),
    (0.3, 0.1, 1.0, ("3.33× faster", "[1×, 10×] faster")),
    # an interval across no change names each end's direction
    (2.5, 0.9, 7.0, ("2.5× slower", "[1.11× faster, 7× slower]")),
    (0.97, 0.4, 1.2, ("1.03× faster", "[2.5× faster, 1.2× slower]")),
    # the demo on a loaded machine: "-92.7 % [-100.0, +17092674468.9] %"
    (0.073, 0.0001, 1.7e8, ("13.7× faster", "[10,000× faster, > 1,000,000× slower]")),
    # nothing to read
    (None, None, None, ("–", "")), (float("nan"), 0.9, 1.1, ("–", "[-10.0, +10.0] %")),
])
def test_a_change_and_its_interval_read_in_one_form(ratio, low, high, expected):
    # issue 47: "2.38× slower [+58.5, +256.5] %" in the demo's terminal; one rule for all three
    assert units.fmt_change_interval(ratio, low, high) == expected
    assert (units.ratio_form(ratio, low, high) == "factor") == ("×" in expected[0])


def test_every_format_shows_a_row_in_one_form():
    from runner.report.view import change_texts

    slow = _bench("bench_slow", "regression", 2.38)
    slow["change"].update(ci_low=1.585, ci_high=3.565)
    near = _bench("bench_near", "regression", 1.3)
    near["change"].update(ci_low=1.2, ci_high=1.45)
    doc = _doc([slow, near])
    assert change_texts(slow) == ("2.38× slower", "[1.58×, 3.56×] slower")
    assert change_texts(near) == ("+30.0 %", "[+20.0, +45.0] %")
    md, html = report.render(doc, "md"), report.render(doc, "html")
    assert "| 2.38× slower | [1.58×, 3.56×] slower |" in md
    assert "| +30.0 % | [+20.0, +45.0] % |" in md
    assert '<td class="num">2.38× slower</td><td class="num">[1.58×, 3.56×] slower</td>' in html
    assert '<td class="num">+30.0 %</td><td class="num">[+20.0, +45.0] %</td>' in html
    # and a value never wraps in its cell ("+3.1" / "%"; a browser's test: test_comment_screen)
    assert re.search(r"td\.num \{[^}]*white-space: nowrap", html)
    for width in (80, 120):
        text = render_terminal(doc, width)
        assert "2.38× slower" in text and "[1.58×, 3.56×]" in text
        assert "[+20.0, +45.0] %" in text
        assert "[+58.5" not in text
    # a bigger-is-better value reads by the same rule, over the value's own head/base
    tput = {"name": "tput", "unit": "tokens/s", "direction": "bigger",
            "change": {"ratio": 0.4, "ci_low": 0.35, "ci_high": 0.45, "verdict": "improvement"}}
    assert change_texts(tput) == ("2.5× higher tokens/s", "[2.22×, 2.86×] higher")
    tput["change"].update(ratio=0.8, ci_low=0.75, ci_high=0.85)
    assert change_texts(tput) == ("+25.0 % tokens/s", "[+17.6, +33.3] %")


def test_terminal_table_and_unknown_format():
    text = report.render(_doc([_bench("bench_slow", "regression", 1.3)]), "term")
    assert "bench_slow" in text and "+30.0 %" in text and "regression" in text
    with pytest.raises(ValueError):
        report.render(_doc([]), "pdf")


def test_the_term_format_is_as_wide_as_columns_says(monkeypatch):
    """`perfgate report --format term` piped (no terminal): COLUMNS, as the compare prints."""
    doc = _doc([_bench("bench_slow", "regression", 1.3),
                _bench("bench_fast", "improvement", 0.0918)])
    for columns in ("80", "140"):
        monkeypatch.setenv("COLUMNS", columns)
        text = report.render(doc, "term")
        assert max(map(len, text.splitlines())) <= int(columns) and "bench_slow" in text
        stacked = "\n  bench_fast\n" in text  # a name on a line of its own below 100 columns
        assert stacked is (columns == "80"), text


def test_a_narrow_terminal_says_faster_once_per_benchmark():
    import io

    from rich.console import Console

    doc = _doc([_bench("bench_fast", "improvement", 0.0918),
                _bench("bench_slow", "regression", 1.3)])
    out = io.StringIO()
    report.print_table(doc, Console(file=out, width=80, color_system=None))
    [line] = [x for x in out.getvalue().splitlines() if x.startswith("improvement")]
    assert line.count("faster") == 1 and "10.9× faster [" in line
    [slow] = [x for x in out.getvalue().splitlines() if x.startswith("regression")]
    assert "+30.0 %" in slow and "] %" in slow          # a percentage keeps its unit


def test_old_documents_without_optional_settings_still_render():
    doc = _doc([_bench("bench_slow", "regression", 1.3)])
    assert "min_sample_time" not in doc["settings"]
    assert "bench_slow" in report.render(doc, "md") and "bench_slow" in report.render(doc, "html")


def test_formatters():
    assert units.fmt_time(1.234e-3) == "1.23 ms" and units.fmt_time(4.56e-7) == "456 ns"
    assert units.fmt_time(None) == "–" and units.fmt_change(0.7) == "-30.0 %"
    assert units.fmt_interval(0.9, 1.1) == "[-10.0, +10.0] %"
    # from twice as slow or fast on, factors (a percentage of +95092 % hides the size)
    assert units.fmt_change(951.9) == "952× slower" and units.fmt_change(0.001) == "1,000× faster"
    assert units.fmt_interval(40.72, 22299.2) == "[40.7×, 22,299×] slower"
    assert units.fmt_interval(0.0009, 0.0011) == "[909×, 1,111×] faster"
    assert units.fmt_interval(1.5, 3.0) == "[1.5×, 3×] slower"  # its middle is 2.1× slower
    assert units.fmt_interval(1.2, 1.8, ratio=1.5) == "[+20.0, +80.0] %"
    assert units.fmt_bytes(3 * 2**20) == "3.0 MiB"


def test_results_validation_names_the_problem(tmp_path):
    doc = _doc([_bench("bench_slow", "regression", 1.3)])
    doc["benchmarks"][0]["change"]["verdict"] = "slower"
    with pytest.raises(ResultsError, match="benchmarks/0/change"):
        results_mod.validate(doc)
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(ResultsError, match="is not JSON"):
        results_mod.load(bad)
    with pytest.raises(ResultsError, match="unsupported schema_version"):
        results_mod.validate({"schema_version": 2})


def _contradicting_bench():
    """The real case: all samples' medians equal (43.7 ms) beside a paired estimate of -11 %."""
    b = _bench("bench_loss", "improvement", 0.89, base=43.7e-3, n=24)
    b["head"] = results_mod.side(list(b["base"]["samples"]))  # head's own median: the same 43.7 ms
    b["change"].update(process_pairs=3, between_process_sd=0.057,
                       pairs=[{"start": 0, "rounds": 8, "ratio": 0.563, "used": True},
                              {"start": 8, "rounds": 8, "ratio": 1.004, "used": True},
                              {"start": 16, "rounds": 8, "ratio": 0.991, "used": True}])
    return b


def test_the_base_head_and_change_columns_are_one_estimate_everywhere():
    doc = _doc([_contradicting_bench()])
    md, term = report.render(doc, "md"), report.render(doc, "term")
    html = report.render(doc, "html")
    # head = base median x the estimated ratio: 43.7 ms x 0.89 = 38.9 ms, never "43.7 | 43.7 | -11 %"
    assert "| `bench_loss` | 43.7 ms | 38.9 ms | -11.0 % |" in md
    assert "38.9 ms" in term and "43.7 ms │ 43.7 ms" not in term
    assert '<td class="num">43.7 ms</td><td class="num">38.9 ms</td>' in html
    for text in (md, html):
        assert "head is base × the change" in " ".join(text.split())
    # the terminal points to report.md for how it was measured (issue 47: news first)
    assert "head is base" not in term and term.endswith("the environment: report.md\n")
    assert "head 43.7 ms" in html  # the raw medians stay visible, named as such


def test_html_shows_which_process_pair_each_round_came_from():
    html = report.render(_doc([_contradicting_bench()]), "html")
    assert html.count('class="pp0"') == 2 and html.count('class="pp1"') == 1
    assert "process pair 1: rounds 1–8, its own change -43.70 %" in html
    assert "round 9, pair 2:" in html
    assert "Process pairs' own changes: -43.7 %, +0.4 %, -0.9 %" in html


def test_the_conditions_are_stated_next_to_the_numbers():
    doc = _doc([_bench("bench_a", "unchanged", 1.0)])
    doc["environment"]["worker"] = {"note": "pinned to 1 CPU (1) with 1 thread: this machine has 2 CPU(s), too few "
                                            "to keep torch's default of 2 threads", "allocator": "steady",
                                    "timer": "timed with time.perf_counter_ns around the calls"}
    assert "Both sides ran" not in report.render(doc, "term")  # report.md's (issue 47)
    for fmt in ("md", "html"):
        text = " ".join(report.render(doc, fmt).split())
        assert "Both sides ran pinned to 1 CPU (1) with 1 thread" in text, fmt
        assert "allocator steady" in text
        assert "layout randomisation" not in text  # older results and ASLR off say nothing of it
    doc["environment"]["worker"]["aslr"] = "off (setarch -R)"
    assert "layout randomisation" not in report.render(doc, "md")
    doc["environment"]["worker"]["aslr"] = "system default"
    for fmt in ("md", "html"):
        text = " ".join(report.render(doc, fmt).split())
        assert "address-space layout randomisation was on" in text and "shift every benchmark of one side" in text, fmt
    assert "Both sides ran" not in report.render(_doc([_bench("bench_a", "unchanged", 1.0)]), "md")  # older results


def _undecided(name, **change):
    b = _bench(name, "inconclusive", 1.0)
    b["change"].update(change)
    return b


def test_an_inconclusive_benchmark_says_whether_the_machine_or_the_correction_kept_it_undecided():
    noisy = _undecided("bench_noisy", ci_low=0.97, ci_high=1.03, pair_sd=0.051, resolvable=0.0412, futile=True,
                       process_pairs=8)
    lost = _undecided("bench_lost", ratio=1.05, ci_low=1.021, ci_high=1.08, p_value=0.004, p_adjusted=0.07)
    cut = _undecided("bench_cut", ci_low=0.9, ci_high=1.1, budget_cut=True, process_pairs=2, resolvable=0.12)
    quiet = _bench("bench_quiet", "unchanged", 1.0)
    doc = _doc([noisy, lost, cut, quiet], budget={"max_time": 60, "spent_s": 61.2, "cut_short": ["bench_cut"],
                                                  "unprofiled": []})
    md = report.render(doc, "md")
    assert ("- `bench_noisy`: The machine's noise, not the code, kept the interval wide: the process pairs' estimates "
            "spread by 5.1 % (sd), at this noise, changes of ≥ 4.1 % would have been found; more pairs could not "
            "have narrowed it enough.") in md
    assert ("- `bench_lost`: Its interval excludes no change (p = 0.004 at its look), but not after the correction "
            "for 4 benchmarks compared (Benjamini–Hochberg, q = 0.07 ≥ 0.05).") in md
    assert "- `bench_cut`: The time budget (--max-time 60 s) ended it after 2 process pair(s); at this noise, changes of ≥ 12.0 %" in md
    assert "The time budget (--max-time 60 s, 61 s spent) ended 1 benchmark(s) before a verdict (bench_cut)" in md
    assert "`bench_quiet`:" not in md
    term = " ".join(report.render(doc, "term").split())
    # the terminal names what would decide them and where each note is, never the notes
    assert "Its interval excludes no change" not in term
    assert ("inconclusive: a larger --max-time, or fewer benchmarks at a time (--filter), gives "
            "each more process pairs notes on 3 benchmarks, how it was measured") in term
    only_noise = report.render(_doc([noisy, quiet]), "term")
    only_noise = " ".join(only_noise.split())
    assert "inconclusive: the machine's noise kept the interval wide" in only_noise
    html = report.render(doc, "html")
    assert "more pairs could not have narrowed it enough" in html


def test_a_note_says_a_large_resolvable_change_as_a_factor():
    # the demo's "changes of ≥ 1104.5 % would have been found": from 2× on, a factor
    b = _undecided("bench_softmax", ci_low=0.11, ci_high=8.8, pair_sd=0.745, resolvable=11.045,
                   futile=True)
    note = notes.verdict_note(b, {}, 3)
    assert "only changes of 12× or more would have been found" in note and "1104" not in note


def test_a_note_gives_the_first_reason_a_benchmark_stayed_undecided_then_every_condition():
    # runner.report.notes: of INCONCLUSIVE_REASONS the first that applies, then all CONDITIONS
    b = _undecided("bench_both", ci_low=0.9, ci_high=1.1, futile=True, budget_cut=True,
                   pair_sd=0.02, disturbed_rounds=2, rounds=10, dropped_rounds=4)
    note = notes.verdict_note(b, {"max_time": 60}, 1)
    assert note.startswith("The machine's noise, not the code, kept the interval wide: the "
                           "process pairs' estimates spread by 2.0 % (sd); more pairs could not "
                           "have narrowed it enough; 2 of 10 rounds left out")
    assert "time budget" not in note and note.endswith("from the next pair on.")
    assert note.index("2 of 10 rounds left out") < note.index("the first process pair's 4 rounds")
    b["change"]["verdict"] = "regression"  # decided: no reason, its conditions still said
    assert notes.verdict_note(b, {"max_time": 60}, 1).startswith("2 of 10 rounds left out")
    b["change"].update(disturbed_rounds=0, dropped_rounds=0)
    assert notes.verdict_note(b, {"max_time": 60}, 1) is None


def test_disturbed_rounds_and_separate_calls_per_sample_are_said():
    b = _bench("bench_huge", "regression", 950.0)
    b["change"].update(disturbed_rounds=3, rounds=16, shared_number=False)
    b["base"]["number"], b["head"]["number"] = 130, 1
    md = report.render(_doc([b]), "md")
    assert "3 of 16 rounds left out: another task took the measured CPU during them" in md
    assert "calls per sample differ (base 130, head 1)" in md
    # a split undone after the first pair (runner.pipeline.timing.timing.TimingPass.renumber) is
    # said too
    c = _bench("bench_same", "unchanged", 1.0)
    c["change"].update(dropped_rounds=32, shared_number=True)
    assert "950× slower" in md
    md = report.render(_doc([c]), "md")
    assert "The first process pair's 32 rounds were dropped" in md
    assert "both sides share one count from the next pair on" in md


def test_rounds_the_detector_flagged_but_the_estimate_kept_are_not_called_left_out():
    # issue 45: nanoGPT's loss step read "152 of 152 rounds left out", although all were kept
    b = _bench("bench_loss", "inconclusive", 1.0)
    b["change"].update(disturbed_rounds=0, disturbed_kept=152, rounds=152)
    md = report.render(_doc([b]), "md")
    assert "left out" not in md
    assert "the disturbance detector saw 152 of 152 rounds as another task's" in md.replace("The disturbance", "the disturbance")
    assert "so they were kept" in md


def test_rounds_the_gpu_clocks_disturbed_and_the_clock_policy_are_said():
    b = _bench("bench_gemm", "unchanged", 1.001)
    b["change"].update(clock_rounds=5, clock_reasons={"throttled": 4, "clock": 1}, rounds=32)
    doc = _doc([b])
    doc["environment"]["telemetry"] = {"available": True, "device_name": "NVIDIA H200", "samples": 40, "sides": {},
                                       "flags": {}, "notes": [],
                                       "clocks": {"policy": "lock", "reason": "clocks locked for the timing pass",
                                                  "restored": False, "restore_error": "reset sm: Insufficient <b>"}}
    assert not results_mod.validation_errors(doc)
    md, html = report.render(doc, "md"), report.render(doc, "html")
    for text in (md, unescape(html)):
        assert ("5 of 32 rounds left out: the GPU's clock was held down by power or heat or its SM clock moved "
                "during them (NVML)") in text
        assert "Clocks: clocks locked for the timing pass — restoring them failed" in text
    assert "Insufficient &lt;b&gt;" in html and "Insufficient <b>" not in html


def test_the_caption_says_unchanged_was_tested_on_the_equivalence_interval(monkeypatch):
    doc = _doc([_bench("bench_same", "unchanged", 1.0)], ci_level=0.99, eq_level=0.98)
    monkeypatch.setenv("COLUMNS", "120")  # the table's column (stacked lines below 100 columns)
    assert "99 % CI" in report.render(doc, "term")  # its column; the rest is report.md's
    for fmt in ("md", "html"):
        text = " ".join(report.render(doc, fmt).split())
        assert "99 %" in text and "unchanged: the 98 % interval of two one-sided tests lies inside it" in text, fmt
        assert "regression or improvement: the interval excludes no change and the estimate lies beyond it" in text
    older = " ".join(report.render(_doc([_bench("bench_same", "unchanged", 1.0)], ci_level=0.99), "md").split())
    assert "two one-sided" not in older


def test_a_verdict_held_back_for_too_little_evidence_says_why():
    b = _bench("bench_pyrdown", "inconclusive", 1.5)
    b["change"].update(short_of_evidence="0.85 s of timed rounds, under the 1.0 s a verdict within ×2 needs",
                       budget_cut=True)
    md = " ".join(report.render(_doc([b]), "md").split())
    assert "Its interval alone would decide it, but 0.85 s of timed rounds" in md


def _first_screen(md: str) -> list[str]:
    """The comment's lines before its first collapsed block."""
    return (md[:md.index("<details>")].rstrip("\n").splitlines() if "<details>" in md
            else md.splitlines())


@pytest.mark.parametrize("n", [0, 3, 40, 1000])
def test_the_first_screen_is_the_gate_and_the_news_within_15_lines_for_any_suite(n):
    benches = [_bench(f"bench_{i:04d}", "regression" if i % 3 == 0 else "unchanged",
                      1.3 if i % 3 == 0 else 1.0)
               for i in range(n)]
    md = report.render(_doc(benches))
    first = _first_screen(md)
    assert len(first) <= 15
    slower = sum(1 for i in range(n) if i % 3 == 0)
    assert first[1] == (f"## perfgate: {slower} regression{'s' if slower != 1 else ''} beyond "
                        "5 %: gate fails"
                        if slower else "## perfgate: no benchmarks")
    # only changed benchmarks before the fold; the unchanged ones are counted in a collapsed block
    assert not any("unchanged" in line for line in first[2:])
    if n > 3:
        assert f"<summary>{n - slower} unchanged</summary>" in md
        assert "Change = time per call" in md[md.index("<summary>How it was measured</summary>"):]


def test_a_claim_and_a_warning_above_the_table_leave_the_first_screen_within_15_lines():
    benches = [_bench(f"bench_{i:04d}", "regression", 5.52) for i in range(40)]
    doc = _doc(benches)
    doc["claims"] = [{"quote": "optimize the function by 100-200x", "metric": "time",
                      "direction": "faster", "ratio": None, "ratio_low": 0.005, "ratio_high": 0.01,
                      "bound": None, "scope": {}, "vs": "base", "source": "body"}]
    doc["environment"]["doctor"] = {"checks": [{"status": "fail", "subject": "host",
                                                "summary": "load average 4.1 on 2 CPU(s)"}]}
    md = report.render(doc)
    first = _first_screen(md)
    assert "claim is contradicted" in md and "**Warning:** perfgate doctor" in md
    assert len(first) <= 15, "\n".join(first)  # 4 rows, not 6, under two paragraphs
    assert sum(line.startswith("| 🔴") for line in first) == 4
    assert first[1].endswith("gate fails")


def test_the_comment_and_the_terminal_of_a_1000_benchmark_suite_fit(tmp_path):
    benches = [_bench(f"test_module_{i:04d}[cpu-float32-batch{i % 7}]",
                      ("regression", "unchanged", "inconclusive", "unchanged")[i % 4],
                      1.2 if i % 4 == 0 else 1.0)
               for i in range(1000)]
    doc = _doc(benches)
    assert len(report.render(doc, "md", max_chars=report.COMMENT_LIMIT)) <= report.COMMENT_LIMIT
    # report.md as written is the comment's form too (it was 4x GitHub's limit); the HTML has all
    from runner.report.render import write_reports

    write_reports(doc, tmp_path)
    written = (tmp_path / "report.md").read_text("utf-8")
    assert len(report.render(doc, "md")) > report.COMMENT_LIMIT >= len(written)
    assert written.startswith(report.MARKER) and "<summary>Environment and settings" in written
    assert all(b["name"] in (tmp_path / "report.html").read_text("utf-8") for b in benches)
    for width in (80, 120, 200):
        text = render_terminal(doc, width)
        assert len(text.splitlines()) <= 60
        # no benchmark name wrapped, no verdict cut
        for i in range(15):
            assert any(f"test_module_{i * 4:04d}[cpu-float32-batch{i * 4 % 7}]" in line
                       for line in text.splitlines())
        assert "regressi…" not in text and "regression" in text


def test_the_terminal_of_a_1000_benchmark_suite_with_causes_and_failures_fits_a_screen():
    # issue 47: <= 60 lines at 80 columns, news first, the method one line pointing to report.md
    # (hints wrapped over 4 lines each and the notes' paragraphs took it to 81 lines)
    names = [f"tests/test_ops.py::test_op_{i:04d}[cuda-float32-batch64-seq2048]"
             for i in range(1000)]
    benches = []
    for i, name in enumerate(names):
        verdict = ("regression" if i < 25 else "improvement" if i < 40 else "failed" if i < 48
                   else "inconclusive" if i < 100 else "unchanged")
        b = _bench(name, verdict, None if verdict == "failed" else 1.3 if i < 25 else 0.5 if i < 40
                   else 1.0, error="Traceback...\nRuntimeError: CUDA out of memory"
                   if verdict == "failed" else None)
        if i < 10:
            b["hints"] = [{"kind": "launch_overhead", "confidence": 0.34, "evidence": {},
                           "summary": "Head dispatches 8 more operator calls per call (20 → 28; "
                                      "aten::_to_copy 2 → 4, aten::copy_ 2 → 4): per-call "
                                      "dispatch overhead adds up."}]
            b["change"]["memory"] = {"kind": "cpu", "ratio": 1.5, "ci_low": 1.5, "ci_high": 1.5,
                                     "base_bytes": 131_072, "head_bytes": 196_608, "pairs": 4,
                                     "threshold": 0.05, "verdict": "regression"}
        if verdict == "inconclusive":
            b["change"].update(futile=True, pair_sd=0.7, resolvable=11.0, ci_low=0.1, ci_high=9.0)
        benches.append(b)
    doc = _doc(benches)
    doc["environment"]["doctor"] = {"checks": [{"status": "fail", "subject": "host", "summary":
                                                "load average 4.12 (1 min) on 2 CPU(s): other "
                                                "work competes with the workers"}]}
    for width in (80, 120, 200):
        lines = render_terminal(doc, width).splitlines()
        assert len(lines) <= 60, (width, len(lines))
        assert all(len(line) <= width for line in lines), width
        assert lines[0].startswith("perfgate: 25 regressions beyond 5 %, 8 benchmarks broken")
        assert lines[-1] == ("notes on 62 benchmarks, how it was measured and the environment: "
                             "report.md")
        text = "\n".join(lines)
        assert "Change = time" not in text and "head is base" not in text
        assert "why" in text and "Head dispatches 8 more" in text  # the cause, cut to a line
        listed = [n for n in names if any(n in line for line in lines)]
        assert len(listed) >= 10 and listed == names[:len(listed)]  # news first, names whole
        more = 40 + 8 - len(listed)
        assert f"… and {more} more changed or failed: report.html lists every benchmark" in text
        assert "900 unchanged, 52 inconclusive: report.html lists every benchmark" in text


def test_the_html_report_needs_no_emoji_font():
    # issue 47: the status icons were emoji, empty boxes in a browser without an emoji font
    from runner.report.view import VERDICT_ICON

    doc = _doc([_bench("bench_slow", "regression", 1.3), _bench("bench_same", "unchanged", 1.0)])
    html = report.render(doc, "html")
    assert not any(icon in html for icon in VERDICT_ICON.values())
    assert 'class="dot dot-regression"' in html


def test_the_method_says_which_benchmarks_were_timed_with_a_flushed_l2():
    """cold_cache "auto" (settings null): a call a script hands to triton.testing.do_bench is timed
    cold, the others warm; the method line says how many were flushed (review #6)."""
    cold, warm = _bench("bench_triton", "unchanged", 1.0), _bench("bench_eager", "unchanged", 1.0)
    for side in ("base", "head"):
        cold[side]["cold_cache"], warm[side]["cold_cache"] = True, False
    for fmt in ("md", "html"):
        text = unescape(report.render(_doc([cold, warm], cold_cache=None), fmt))
        flushed = ("L2 flushed before each call of the 1 benchmark(s) timed as "
                   "triton.testing.do_bench")
        assert flushed in text
        assert "flushed" not in report.render(_doc([warm], cold_cache=None), fmt)
        assert "L2 flushed before each call (" in report.render(_doc([warm], cold_cache=True), "md")


# -- issue 47: what a newcomer's first `perfgate demo` shows -------------------------------------

def _memory(verdict, base_bytes, head_bytes):
    ratio = head_bytes / base_bytes
    return {"verdict": verdict, "ratio": ratio, "ci_low": ratio * 0.99, "ci_high": ratio * 1.01,
            "base_bytes": base_bytes, "head_bytes": head_bytes,
            "delta_bytes": head_bytes - base_bytes, "threshold": 0.05, "pairs": 8}


def _hint(kind, summary, evidence):
    return {"kind": kind, "confidence": 0.55, "summary": summary, "evidence": evidence}


def _demo_like():
    """The demo's shape: a time improvement with an operator hint; a time-inconclusive memory
    regression (+50.2 %) with hints; a time-inconclusive memory improvement whose memory hint
    reads a fall; a time-inconclusive one with no memory change; a memory change without hints."""
    fast = _bench("bench_pairwise_distance", "improvement", 0.3)
    fast["hints"] = [_hint("operator_time", "Operator aten::pow self time shrank from 376.0 us to "
                           "14.1 us per call (5 → 5 calls).",
                           {"explains_us": -720.326, "operators": [{"name": "aten::pow"}]})]
    grew = _bench("bench_rms_norm", "inconclusive", 1.01)
    grew["change"]["memory"] = _memory("regression", 131_277, 197_120)
    grew["hints"] = [_hint("operator_time", "Operator aten::copy_ +41.8 us per call.",
                           {"operators": [{"name": "aten::copy_"}]})]
    fell = _bench("bench_softmax", "inconclusive", 0.99)
    fell["change"]["memory"] = _memory("improvement", 4 << 20, 2 << 20)
    fell["hints"] = [_hint("memory_growth", "Peak memory fell from 4 MiB to 2 MiB.",
                           {"peak_memory_bytes": {"base": 4 << 20, "head": 2 << 20}})]
    quiet = _bench("bench_quiet", "inconclusive", 1.0)
    bare = _bench("bench_bare", "unchanged", 1.0)
    bare["change"]["memory"] = _memory("regression", 1 << 20, 3 << 20)
    return _doc([fast, grew, fell, quiet, bare])


def test_every_format_names_memory_regressions_and_improvements_apart():
    doc = _demo_like()
    md = report.render(doc, "md")
    html = report.render(doc, "html")
    term = render_terminal(doc, width=80)
    expected = ("1 improvement, 2 memory regressions, 1 memory improvement: gate passes "
                "(3 inconclusive; 5 benchmarks)")
    assert md.splitlines()[1] == f"## perfgate: {expected}"
    assert " ".join(term.splitlines()[:2]).startswith(f"perfgate: {expected}")
    assert f"<title>perfgate: {expected}</title>" in html
    assert "memory change" not in md + html + term


def test_the_collapsed_count_does_not_contradict_the_headlines():
    md = report.render(_demo_like(), "md")
    # 3 inconclusive in the headline: two sit above with their memory change, one below
    assert "<details><summary>1 more inconclusive</summary>" in md


def test_every_changed_benchmark_with_hints_has_its_why_and_one_without_says_why_not():
    md = report.render(_demo_like(), "md")
    whys = [line for line in md.splitlines() if "Why: " in line]
    assert len(whys) == 4, whys
    assert any("bench_rms_norm</b> inconclusive in time, memory regression +50.2 %" in w
               and "aten::copy_ +41.8 us" in w for w in whys)
    assert any("bench_softmax" in w for w in whys)
    bare = next(w for w in whys if "bench_bare" in w)
    assert "no cause named: it was not profiled" in bare
    assert "bench_quiet" not in "".join(whys)


def test_report_html_shows_each_hints_evidence_as_a_table_not_json():
    html = report.render(_demo_like(), "html")
    assert "&#34;" not in html and "{&quot;" not in html and "explains_us" not in html
    assert "<tr><th>explains us</th><td colspan=\"2\">-720.3</td></tr>" in html
    # a base/head pair side by side, under a base | head header
    softmax = html.split("bench_softmax")[-1]
    assert "<tr><th></th><th>base</th><th>head</th></tr>" in softmax
    assert f"<tr><th>peak memory bytes</th><td>{4 << 20}</td><td>{2 << 20}</td></tr>" in softmax


def test_evidence_rows_read_pairs_lists_and_records():
    from runner.report.notes import evidence_rows

    rows = evidence_rows({"kernel": "k<4>", "registers_per_thread": {"base": 32, "head": 64},
                          "occupancy": {"base": 0.5, "head": None},
                          "replaced": [f"k{i}" for i in range(8)],
                          "operators": [{"name": "aten::pow", "self_us": 3.0}]})
    assert rows == [("registers per thread", "32", "64"), ("occupancy", "0.5", "–"),
                    ("kernel", "k<4>", None), ("replaced", "k0, k1, k2, k3, k4, k5, 2 more", None),
                    ("operators", "aten::pow", None)]
    assert evidence_rows(None) == [] and evidence_rows({"gpu_idle_us": 1234.56789}) == [
        ("gpu idle us", "1235", None)]
    # the table's shape follows the values, not the keys' order (a renamed key moves to the end:
    # tests/security/test_fuzz_renderers.py found two shapes for one evidence)
    pairs = {"waves": {"base": 2, "head": 5}, "count": {"base": 1, "head": 1}}
    shapes = [[head is None for _, _, head in evidence_rows(ev)]
              for ev in ({"match": "exact", **pairs}, {**pairs, "k_1": "exact"})]
    assert shapes[0] == shapes[1] == [False, False, True]


def test_hints_read_in_words_without_raw_json_or_internal_kinds():
    md = report.render(_demo_like(), "md")
    assert "explains_us" not in md and "{&quot;" not in md and '{"' not in md
    assert "operator_time" not in md and "memory_growth" not in md
    assert "**operator time**" in md and "**peak memory fell**" in md
    assert "growth" not in md.split("bench_softmax")[-1].split("</details>")[0]
    assert "report.html and results.json" in md
    term = render_terminal(_demo_like(), width=80)
    assert "[operator_time]" not in term and "why: operator time:" in term


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_the_terminal_cuts_a_why_at_a_word_never_inside_a_number(width):
    term = render_terminal(_demo_like(), width=width)
    whys = [line for line in term.splitlines() if "why:" in line]
    assert whys
    for line in whys:
        assert len(line) <= width
        assert not re.search(r"\d…|\d\.…|\.…", line), line
        assert not line.endswith("…") or line.endswith(" …"), line


def test_the_method_names_the_l2_flush_and_its_caveat():
    """GPU review #15: a zeroing flush's dirty lines are written back inside the next call's
    interval; the method line says so, or that the flush was a read (settings.l2_flush)."""
    warm = _bench("bench_eager", "unchanged", 1.0)
    for fmt in ("md", "html"):
        zero = unescape(report.render(_doc([warm], cold_cache=True, l2_flush="zero"), fmt))
        older = unescape(report.render(_doc([warm], cold_cache=True), fmt))
        read = unescape(report.render(_doc([warm], cold_cache=True, l2_flush="read"), fmt))
        assert all("written back during the next call" in text for text in (zero, older))
        assert "(read: clean lines, nothing written back in a call)" in read
        warm_doc = _doc([warm], cold_cache=False)
        assert "written back during" not in unescape(report.render(warm_doc, fmt))
