"""The gate: what fails ``--fail-on-regression`` and the App's check run, over a results
document (pure). A time regression beyond ``fail_threshold``, a benchmark the head broke, and,
with ``fail_on_memory_regression``, a memory regression, with ``fail_on_output_change``, a
benchmark whose head changes the result (:mod:`runner.outputs.verdict`).

Moved out of :mod:`runner.results` (the document's model) when the gate grew its third reason.
"""

from __future__ import annotations

from .results import change_of, is_memory_valued, memory_verdict_of, output_changed, verdict_of


def regressions_beyond(doc: dict, fail_threshold: float) -> list[dict]:
    """The benchmarks whose verdict is ``regression`` with ``ratio > 1 + fail_threshold``: what
    ``--fail-on-regression`` and the App's check run fail on. A memory-valued benchmark
    (``measure: "memory"``, asv's ``peakmem_*``/``mem_*``) is left to :func:`memory_regressions`."""
    out = []
    for entry in doc.get("benchmarks") or []:
        if is_memory_valued(entry):
            continue
        change = change_of(entry)
        ratio = change.get("ratio")
        if (change.get("verdict") == "regression" and isinstance(ratio, (int, float))
                and ratio > 1.0 + fail_threshold):
            out.append(entry)
    return out


def memory_regressions(doc: dict) -> list[dict]:
    """The benchmarks whose memory verdict is ``regression`` (beyond ``memory_threshold``, which
    the verdict already holds): what ``fail_on_memory_regression`` fails the check run on."""
    return [entry for entry in doc.get("benchmarks") or []
            if memory_verdict_of(entry) == "regression"]


def broken_by_head(doc: dict) -> list[dict]:
    """The benchmarks that ran on base and fail on head (verdict ``failed``, an error on head's
    side only): the pull request broke them, which the gate fails on like a regression (issue 47:
    such a PR passed ``--fail-on-regression``). A benchmark that fails on both sides, or only on
    base (the PR fixed it), is not the PR's doing."""
    out = []
    for entry in doc.get("benchmarks") or []:
        if verdict_of(entry) != "failed":
            continue
        base, head = entry.get("base") or {}, entry.get("head") or {}
        if head.get("error") and base.get("samples") and not base.get("error"):
            out.append(entry)
    return out


def output_changes(doc: dict) -> list[dict]:
    """The benchmarks whose head changes the result (``output.verdict`` ``changed``): what
    ``fail_on_output_change`` fails the check run on. A faster head among them is no plain
    improvement (the report says so whether or not the gate fails on it)."""
    return [entry for entry in doc.get("benchmarks") or [] if output_changed(entry)]


def gate_failures(doc: dict, fail_threshold: float, fail_on_memory: bool,
                  fail_on_output: bool = False) -> list[dict]:
    """What fails the gate (``--fail-on-regression``, the App's check run): the time regressions
    beyond ``fail_threshold`` (:func:`regressions_beyond`), the benchmarks the head broke
    (:func:`broken_by_head`), with ``fail_on_memory`` the memory regressions
    (:func:`memory_regressions`) and with ``fail_on_output`` the benchmarks whose head changes
    the result (:func:`output_changes`); each benchmark once, in document order."""
    failing = (regressions_beyond(doc, fail_threshold) + broken_by_head(doc)
               + (memory_regressions(doc) if fail_on_memory else [])
               + (output_changes(doc) if fail_on_output else []))
    ids = {id(e) for e in failing}
    return [entry for entry in doc.get("benchmarks") or [] if id(entry) in ids]
