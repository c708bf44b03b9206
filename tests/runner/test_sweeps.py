"""Where an optimisation stops paying (runner/report/sweeps.py, pure): series read from families
and params, summaries only from verdicts that hold, the crossover bracketed, and how the reports
show it — with values in their own unit and bigger-is-better changes the right way round."""

from __future__ import annotations

import pytest

from runner import results as results_mod
from runner.environment import capture
from runner.report import render
from runner.report.sweeps import numeric, summary_lines, sweep_svg, sweeps


def bench(name: str, params: dict, verdict: str, ratio: float | None, family: str = "softmax", spread: float = 0.03,
          **extra) -> dict:
    change = {"ratio": ratio, "ci_low": ratio and ratio * (1 - spread), "ci_high": ratio and ratio * (1 + spread),
              "p_value": 0.001, "verdict": verdict}
    side = results_mod.side([1e-3, 1e-3])
    return results_mod.benchmark(name, "bench.py", base=side, head=side, change=change, family=family, params=params,
                                 **extra)


def grid(provider: str, verdicts: list[tuple[int, str, float]]) -> list[dict]:
    return [bench(f"softmax[N={n},provider={provider}]", {"N": str(n), "provider": provider}, v, r)
            for n, v, r in verdicts]


def test_a_crossover_is_bracketed_between_measured_values_and_summarised_from_verdicts_only():
    entries = grid("triton", [(256, "improvement", 0.70), (1024, "improvement", 0.88), (4096, "unchanged", 1.0),
                              (16384, "regression", 1.08), (65536, "regression", 1.15)])
    entries += grid("torch", [(256, "unchanged", 1.0), (1024, "inconclusive", 0.80), (4096, "unchanged", 1.0),
                              (16384, "unchanged", 1.0), (65536, "unchanged", 1.01)])
    found = {s.fixed["provider"]: s for s in sweeps(entries)}
    assert found["triton"].axis == "N" and [p.label for p in found["triton"].points] == ["256", "1024", "4096",
                                                                                      "16384", "65536"]
    assert found["triton"].summary == ("head faster for N ≤ 1024 (−12 … −30 %), slower for N ≥ 16384 (+8 … +15 %); "
                                       "crossover between N = 1024 and N = 16384")
    assert found["torch"].summary is None  # −20 % at N=1024 is an estimate that did not hold: never summarised
    lines, more = summary_lines(entries)
    assert lines == [("softmax (provider=triton)", found["triton"].summary)] and more == 0


def test_one_direction_undecided_points_and_a_single_changed_point():
    entries = grid("a", [(1, "improvement", 0.5), (2, "improvement", 0.6), (4, "improvement", 0.9)])
    assert sweeps(entries)[0].summary == "head faster for every N (−10 … −50 %)"
    entries = grid("a", [(1, "unchanged", 1.0), (2, "regression", 1.2), (4, "inconclusive", 1.1), (8, "failed", None)])
    assert sweeps(entries)[0].summary == ("head slower for N = 2 (+20 %); inconclusive at N = 4; "
                                          "failed at N = 8")
    assert sweeps(grid("a", [(1, "unchanged", 1.0), (2, "unchanged", 1.0)]))[0].summary is None


def test_the_axis_is_the_numeric_parameter_with_most_values_and_tuples_fall_back_to_one_series():
    entries = [bench(f"mm[M={m},K=64,dtype={d}]", {"M": str(m), "K": "64", "dtype": d}, "regression", 1.1)
               for m in (1, 8, 64) for d in ("fp16", "bf16")]
    found = sweeps(entries)
    assert {s.axis for s in found} == {"M"} and sorted(s.fixed["dtype"] for s in found) == ["bf16", "fp16"]
    assert all(s.fixed == {"K": "64", "dtype": s.fixed["dtype"]} for s in found)
    moving = [bench(f"g[M={m},N={2 * m}]", {"M": str(m), "N": str(2 * m)}, "improvement", 0.9) for m in (1, 2, 4)]
    (series,) = sweeps(moving)
    assert series.axis == "M" and series.fixed == {} and len(series.points) == 3
    assert sweeps([bench("x[dtype=a]", {"dtype": "a"}, "regression", 1.2)]) == []  # nothing numeric
    assert numeric("2^20") == 2 ** 20 and numeric("1e-3") == 0.001 and numeric("fp16") is None


def test_a_bigger_is_better_family_reads_better_and_worse_of_its_value():
    entries = [bench(f"decode[batch={b}]", {"batch": str(b)}, v, r, family="decode", unit="tokens/s",
                     direction="bigger") for b, v, r in ((1, "improvement", 0.8), (64, "regression", 1.25))]
    (series,) = sweeps(entries)
    assert series.summary == ("head better for batch = 1 (+25 %), worse for batch = 64 (−20 %); "
                              "crossover between batch = 1 and batch = 64")


def test_labels_in_the_picture_are_escaped():
    entries = grid("<script>", [(1, "improvement", 0.5), (2, "regression", 1.5)])
    svg = str(sweep_svg(sweeps(entries)[0], 0.02))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and 'class="cross"' in svg


def _doc(entries: list[dict]) -> dict:
    return results_mod.new_results(repository="o/r", base={"ref": "main", "sha": "a" * 40},
                                   head={"ref": "pr", "sha": "b" * 40}, environment=capture({}, None),
                                   settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 16, "max_time": 60.0},
                                   benchmarks=entries)


def test_the_reports_show_sweeps_and_values_in_their_unit():
    entries = grid("triton", [(256, "improvement", 0.70), (16384, "regression", 1.15)])
    decode = results_mod.benchmark("decode", None, base=results_mod.side([5000.0, 5100.0]),
                                   head=results_mod.side([4000.0, 4100.0]),
                                   change={"ratio": 1.25, "ci_low": 1.2, "ci_high": 1.3, "p_value": 0.001,
                                           "verdict": "regression"}, unit="tokens/s", direction="bigger")
    doc = results_mod.validate(_doc(entries + [decode]))
    markdown = render(doc, "md")
    assert "<summary>Where it stops paying</summary>" in markdown
    assert ("- `softmax (provider=triton)`: head faster for N = 256 (−30 %), slower for N = 16384 (+15 %); "
            "crossover between N = 256 and N = 16384") in markdown
    row = next(line for line in markdown.splitlines() if "`decode`" in line)
    assert [c.strip() for c in row.split("|")][3:8] == ["5,050 tokens/s", "4,040 tokens/s", "-20.0 % tokens/s",
                                                        "[-23.1, -16.7] %", "regression"]
    html = render(doc, "html")
    assert html.count('<svg class="sweep"') == 1 and "Where it stops paying" in html
    assert "tokens/s" in render(doc, "term")


@pytest.mark.parametrize("unit,value,text", [("s", 1.5e-3, "1.5 ms"), ("MB", 12.25, "12.2 MB"),
                                             ("tokens/s", 51200.0, "51,200 tokens/s")])
def test_values_are_formatted_in_their_unit(unit, value, text):
    from runner.report.units import fmt_quantity

    assert fmt_quantity(value, unit) == text
