"""The PR's claims in the report: each judged against the measured intervals, and counted.

The judging is :mod:`runner.intent.claim_check` (imported only for a document with claims: the
report loads no intent module otherwise). Pure.
"""

from __future__ import annotations

from .units import bare_interval, fmt_change_interval

#: The judgements of claims, in the order the report counts them (runner.intent.claim_check).
CLAIM_VERDICTS = ("contradicted", "partly", "not_shown", "holds", "untestable")


def claim_counts(claims: list[dict]) -> list[tuple[str, int]]:
    """``[(judgement, n)]`` of the checked claims, non-zero only, contradicted first."""
    found = [c.get("verdict") for c in claims]
    return [(v, found.count(v)) for v in CLAIM_VERDICTS if found.count(v)]


def claims_checked(results: dict) -> list[dict]:
    """The PR's claims (results.json ``claims``) each judged against the measured intervals
    (:func:`runner.intent.claim_check.check_claims`); ``[]`` for a document without any. The
    judging module is imported only then (the report loads no intent module otherwise)."""
    claims = results.get("claims")
    if not isinstance(claims, list) or not claims:
        return []
    from ..intent.claim_check import check_claims

    return check_claims(claims, results.get("benchmarks") or [], results.get("environment"),
                        measured_words)


def measured_words(interval: tuple[float, float, float], metric: str) -> str:
    """A claim's measured interval (head/base of its metric) as the report's tables say it
    (:func:`.units.fmt_change_interval`, one form): "14.8× faster [6.52×, 33.7×]" beside the
    table's "14.8× faster | [6.52×, 33.7×] faster" (the judging's own words read "[6.52×,
    33.70×]", and "[-100.0 %, +17092674468.9 %]" where the table read factors)."""
    more, less = ("larger", "smaller") if metric == "memory" else ("slower", "faster")
    change, within = fmt_change_interval(*interval, more, less)
    return f"{change} {bare_interval(change, within)}"
