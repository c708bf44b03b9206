"""Kernel names across two traces: normalisation and one-to-one matching (pure).

Templated, fused and numbered kernel names differ between builds of the same code (tile sizes,
lambda numbers, Triton's index suffix); :func:`match_kernels` pairs them by exact name, then by
signature, then by family.
"""

from __future__ import annotations

import re
from collections import defaultdict

_ANON = re.compile(r"\(anonymous namespace\)")
_LAMBDA_NUM = re.compile(r"#\d+")
_TRITON_SUFFIX = re.compile(r"^(triton_\w+?)_\d+$")
_DIGITS = re.compile(r"\d+")


def _strip_args(name: str) -> str:
    """Drop the parameter list: everything from the first ``(`` outside template brackets."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def kernel_key(name: str, level: str) -> str | None:
    """The matching key of a kernel name at ``level``.

    Levels: ``exact`` (the name); ``signature`` (no ``void``, no parameter list, lambda and
    anonymous-namespace numbering dropped, Triton's trailing ``_N`` index dropped); ``family``
    (the qualified function name without template arguments, digits as ``#``: tile sizes and
    vector widths may differ). Triton kernels have no family key (their fused op list is their
    identity). Returns None when the level does not apply.
    """
    if level == "exact":
        return name
    core = _ANON.sub("anon", name.strip())
    if core.startswith("void "):
        core = core[5:]
    core = _LAMBDA_NUM.sub("#", _strip_args(core)).replace(" ", "")
    m = _TRITON_SUFFIX.match(core)
    if m:
        return m.group(1) if level == "signature" else None
    if level == "signature":
        return core
    return _DIGITS.sub("#", _strip_templates(core)) or None


LEVELS = ("exact", "signature", "family")


def match_kernels(base: list[dict], head: list[dict]):
    """Pair kernels one to one: exact name, then signature, then family; larger first.

    Returns:
        ``(pairs, unmatched_base, unmatched_head)`` with pairs ``(base_kernel, head_kernel, level)``.
    """
    ub = {k["name"]: k for k in base}
    uh = {k["name"]: k for k in head}
    pairs = []
    for level in LEVELS:
        gb, gh = defaultdict(list), defaultdict(list)
        for name, k in ub.items():
            key = kernel_key(name, level)
            if key is not None:
                gb[key].append(k)
        for name, k in uh.items():
            key = kernel_key(name, level)
            if key is not None:
                gh[key].append(k)
        for key in gb.keys() & gh.keys():
            bs = sorted(gb[key], key=lambda k: -k["total_us"])
            hs = sorted(gh[key], key=lambda k: -k["total_us"])
            for b, h in zip(bs, hs):
                pairs.append((b, h, level))
                del ub[b["name"]]
                del uh[h["name"]]
    return pairs, list(ub.values()), list(uh.values())


def display_name(name: str, width: int = 60) -> str:
    """A kernel name for a sentence: without ``void`` and parameter list, cut to ``width``."""
    core = kernel_key(name, "signature") or name
    return core if len(core) <= width else core[: width - 1] + "…"
