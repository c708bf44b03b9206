"""How much a profile differs from itself: repeated, interleaved profile passes per side.

One short profiling pass is noisy: in a real run, head's single pass of an improved benchmark
showed ``aten::mul`` 25.5 µs → 711 µs and ``aten::add`` 14.6 µs → 332 µs, with nothing changed in
either operator. So the profiling pass traces each side several times, alternating sides, and a
hint may cite an operator's or a kernel's difference only when it exceeds that item's own spread
over the passes (:func:`drop_within_noise`); what remains unexplained is called ``unexplained``.

Pure functions over trace summaries (:func:`runner.profile.summaries.summarize`). Times are microseconds per
profiled call (a summary's totals divided by its ``iterations`` when it counts them).
"""

from __future__ import annotations


def _per_call(summary: dict) -> float:
    return 1.0 / summary["iterations"] if summary.get("iterations") else 1.0


def _total(summary: dict) -> float:
    """The pass's size for choosing its median: GPU kernel time, else operator self time, else span."""
    kt = (summary.get("kernel_totals") or {}).get("total_us")
    if kt:
        return kt * _per_call(summary)
    ot = (summary.get("operator_totals") or {}).get("self_us")
    if ot:
        return ot * _per_call(summary)
    return (summary.get("span_us") or 0.0) * _per_call(summary)


def median_pass(summaries: list[dict]) -> int:
    """Index of the pass whose total time is the median (the lower median for an even count).

    Raises:
        ValueError: no summaries.
    """
    if not summaries:
        raise ValueError("no profile passes")
    order = sorted(range(len(summaries)), key=lambda i: _total(summaries[i]))
    return order[(len(order) - 1) // 2]


def _item_values(summaries: list[dict], key: str, field: str) -> dict[str, list[float]]:
    """Per item name, its time per call in every pass (0 in a pass that lacks it)."""
    names = {item["name"] for s in summaries for item in s.get(key) or []}
    values = {name: [] for name in names}
    for s in summaries:
        scale = _per_call(s)
        present = {item["name"]: (item.get(field) or 0.0) * scale for item in s.get(key) or []}
        for name in names:
            values[name].append(present.get(name, 0.0))
    return values


def pass_spread(base_passes: list[dict], head_passes: list[dict]) -> dict:
    """The noise of each operator and kernel over repeated passes of both sides.

    Returns:
        ``{passes: {base, head}, operators: {name: µs}, kernels: {name: µs}}`` where an item's
        spread is the larger of its two sides' ranges (max − min over that side's passes) of self
        time (operators) or total time (kernels) per call. With one pass per side every spread is
        0 (nothing is known about the noise; the caller says so).
    """
    out = {"passes": {"base": len(base_passes), "head": len(head_passes)}, "operators": {}, "kernels": {}}
    for key, field in (("operators", "self_us"), ("kernels", "total_us")):
        vb, vh = _item_values(base_passes, key, field), _item_values(head_passes, key, field)
        for name in vb.keys() | vh.keys():
            ranges = [max(v) - min(v) for v in (vb.get(name), vh.get(name)) if v]
            out[key][name] = round(max(ranges), 3) if ranges else 0.0
    return out


def drop_within_noise(d: dict, spread: dict) -> dict:
    """A profile diff (:func:`runner.profile.diff.diff`) in which no hint can cite a time difference that
    is not larger than that operator's or kernel's spread over the passes.

    Such an item stays in the diff (its call counts are exact and count-based rules may use them),
    but its time difference (``delta_self_us`` / ``delta_us``) becomes 0 and it is marked
    ``within_noise``, so the time-based rules, which need a difference of the measured sign, skip it.

    Args:
        d: the diff of the two median passes.
        spread: :func:`pass_spread` of all passes.

    Returns:
        A copy of ``d`` with those items changed, and ``within_noise: {operators, kernels}``
        counting them.
    """
    ops = spread.get("operators") or {}
    kernels = spread.get("kernels") or {}
    out = dict(d)
    out["operators"], n_ops = [], 0
    for o in d.get("operators") or []:
        if abs(o.get("delta_self_us") or 0.0) <= ops.get(o["name"], 0.0):
            o, n_ops = {**o, "delta_self_us": 0.0, "within_noise": True}, n_ops + 1
        out["operators"].append(o)
    out["kernels"], n_kernels = [], 0
    for k in d.get("kernels") or []:
        noise = max(kernels.get((k.get("base") or {}).get("name"), 0.0),
                    kernels.get((k.get("head") or {}).get("name"), 0.0))
        if abs(k.get("delta_us") or 0.0) <= noise:
            k, n_kernels = {**k, "delta_us": 0.0, "within_noise": True}, n_kernels + 1
        out["kernels"].append(k)
    out["within_noise"] = {"operators": n_ops, "kernels": n_kernels}
    return out
