"""Hints cite only differences larger than the profile's own spread over repeated passes."""

from __future__ import annotations

from runner.hints.evidence import hints_for
from runner.profile.noise import drop_within_noise, median_pass, pass_spread


def _summary(ops: dict[str, tuple[int, float]], iterations: int = 5) -> dict:
    """A CPU trace summary with operators ``{name: (count per trace, self µs per trace)}``."""
    operators = [{"name": n, "count": c, "self_us": us, "total_us": us, "mean_us": us / c} for n, (c, us) in ops.items()]
    total = sum(us for _, us in ops.values())
    return {"iterations": iterations, "kernels": [], "operators": operators, "span_us": total * 1.2,
            "operator_totals": {"count": sum(c for c, _ in ops.values()), "self_us": total},
            "kernel_totals": {"count": 0, "total_us": 0.0}, "runtime": {}, "gpu_busy_us": 0.0}


# The real case (per profiled call): one short head pass showed aten::mul 25.5 µs -> 711 µs and
# aten::add 14.6 µs -> 332 µs with nothing changed in either; the other passes did not.
BASE = [_summary({"aten::mul": (5, 127.5), "aten::add": (5, 73.0), "aten::mm": (5, 5000.0)}),
        _summary({"aten::mul": (5, 130.0), "aten::add": (5, 75.0), "aten::mm": (5, 5050.0)}),
        _summary({"aten::mul": (5, 126.0), "aten::add": (5, 72.0), "aten::mm": (5, 4990.0)})]
HEAD = [_summary({"aten::mul": (5, 3555.0), "aten::add": (5, 1660.0), "aten::mm": (5, 1000.0)}),
        _summary({"aten::mul": (5, 128.0), "aten::add": (5, 74.0), "aten::mm": (5, 1010.0)}),
        _summary({"aten::mul": (5, 129.0), "aten::add": (5, 73.0), "aten::mm": (5, 995.0)})]
IMPROVED = {"ratio": 0.21, "ci_low": 0.2, "ci_high": 0.22, "p_value": 1e-6, "verdict": "improvement"}


def test_the_median_pass_is_chosen_per_side():
    assert median_pass([{"operator_totals": {"self_us": v}, "iterations": 1} for v in (30.0, 10.0, 20.0)]) == 2
    assert median_pass(HEAD) == 1


def test_spread_is_the_larger_range_of_the_two_sides_per_call():
    spread = pass_spread(BASE, HEAD)
    assert spread["passes"] == {"base": 3, "head": 3}
    assert spread["operators"]["aten::mul"] == round((3555.0 - 128.0) / 5, 3)
    assert spread["operators"]["aten::mm"] == round((5050.0 - 4990.0) / 5, 3)


def test_a_single_noisy_pass_cannot_be_cited_but_a_real_change_can():
    spread = pass_spread(BASE, HEAD)
    # the diff of a noisy pair of passes: head pass 0 against base pass 0
    noisy = hints_for(IMPROVED, BASE[0], HEAD[0], None, noise=spread)
    cited = " ".join(h["summary"] for h in noisy)
    assert "aten::mul" not in cited and "aten::add" not in cited
    assert "aten::mm" in cited  # 1000 µs -> 200 µs per call, far beyond its 12 µs spread
    # without the noise filter the same pair of passes blames aten::mul (the old behaviour)
    unfiltered = hints_for({**IMPROVED, "verdict": "regression", "ratio": 1.5}, BASE[0], HEAD[0], None)
    assert any("aten::mul" in h["summary"] for h in unfiltered)


def test_only_noise_left_means_unexplained():
    base = [_summary({"aten::mul": (5, v)}) for v in (100.0, 400.0, 120.0)]
    head = [_summary({"aten::mul": (5, v)}) for v in (300.0, 110.0, 130.0)]
    hints = hints_for({**IMPROVED, "verdict": "regression", "ratio": 1.3}, base[0], head[0], None,
                      noise=pass_spread(base, head))
    assert [h["kind"] for h in hints] == ["unexplained"]


def test_counts_stay_usable_when_times_are_within_noise():
    d = {"operators": [{"name": "aten::copy_", "base": {"count": 2, "self_us": 2.6}, "head": {"count": 4, "self_us": 3.0},
                        "delta_self_us": 0.4}], "kernels": []}
    out = drop_within_noise(d, {"operators": {"aten::copy_": 1.0}, "kernels": {}})
    assert out["operators"][0]["delta_self_us"] == 0.0 and out["operators"][0]["within_noise"]
    assert out["operators"][0]["head"]["count"] == 4 and out["within_noise"] == {"operators": 1, "kernels": 0}
    assert d["operators"][0]["delta_self_us"] == 0.4  # the input is not changed
