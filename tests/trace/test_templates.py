"""The report partials (_hints, _profile, _telemetry; md and html) render from results.json data."""

from __future__ import annotations

import pytest

from runner import report

from runner.pipeline.machine import telemetry

from runner.hints import evidence as hints

from runner.profile import summaries as trace, diff as profile_diff
from testkit.synth import repeat

REGRESSION = {"ratio": 1.6, "ci_low": 1.5, "ci_high": 1.7, "p_value": 0.001, "verdict": "regression"}


@pytest.fixture(scope="module")
def env():
    # runner.report's environment: its escaping filters, autoescape for *.html.j2
    return report.environment()


@pytest.fixture(scope="module")
def bench():
    b = trace.summarize(repeat(lambda t: t.kernel("void k<float>(float*)", dur=100, regs=40)))
    h = trace.summarize(repeat(lambda t: t.kernel("void k<float>(float*)", dur=160, regs=128)))
    return {"name": "bench_x", "change": REGRESSION, "hints": hints.hints_for(REGRESSION, b, h),
            "profile": profile_diff.profile_for_results(b, h)}


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_hints_and_profile_partials(env, bench, fmt):
    text = env.get_template(f"_hints.{fmt}.j2").render(bench=bench)
    assert "register pressure" in text and "128 registers per thread" in text  # in words
    assert "k&lt;float" in text  # kernel names in sentences cannot turn into HTML tags
    text = env.get_template(f"_profile.{fmt}.j2").render(bench=bench)
    assert "<details" in text and "40 → 128" in text and "75 % → 25 %" in text
    assert ("void k&lt;float&gt;(float*)" if fmt == "html" else "| `void k<float>(float*)` | exact | 1 |") in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_profile_partial_without_rows_lists_each_side(env, bench, fmt):
    old = {**bench, "profile": {"base": bench["profile"]["base"], "head": bench["profile"]["head"]}}
    text = env.get_template(f"_profile.{fmt}.j2").render(bench=old)
    assert "<h4>head</h4>" in text if fmt == "html" else "**head** (NVIDIA A100-SXM4-80GB):" in text
    assert ("void k&lt;float&gt;(float*)" if fmt == "html" else "| `void k<float>(float*)` | 3 | 480.0 µs |") in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_partials_render_nothing_without_data(env, fmt):
    for name in ("_hints", "_profile", "_telemetry"):
        assert env.get_template(f"{name}.{fmt}.j2").render(bench={"hints": [], "profile": None}).strip() == ""


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_telemetry_partial(env, fmt):
    base = {"side": "base", "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 50,
            "power_avg_w": 400, "power_limit_w": 700, "memory_utilization_pct": 30, "reasons": 0}
    head = {"side": "head", "sm_clock_mhz": 1500, "memory_clock_mhz": 3201, "temperature_c": 85,
            "power_avg_w": 690, "power_limit_w": 700, "memory_utilization_pct": 30, "reasons": 0x40}
    samples = [base] * 5 + [head] * 5
    marks = [{"t": 0.0, "side": "base", "energy_mj": 0},
             {"t": 1.0, "side": "head", "energy_mj": 400_000},
             {"t": 2.0, "side": None, "energy_mj": 1_090_000}]
    t = telemetry.summarize_samples(samples, device_name="NVIDIA H200", driver="570.00",
                                    marks=marks)
    text = env.get_template(f"_telemetry.{fmt}.j2").render(env={"telemetry": t})
    assert "did not run at the same speed" in text and "hw_thermal_slowdown 100 %" in text and "1500" in text
    assert "690 / 700" in text and "400 / 700" in text  # each side's energy over its own time
    assert "power 545 W" in text and "memory busy 30 %" in text and "not bandwidth" in text
    text = env.get_template(f"_telemetry.{fmt}.j2").render(telemetry={"available": False, "reason": "no NVML"})
    assert "not recorded (no NVML)" in text
