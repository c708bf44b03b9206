"""``perfgate bisect``'s decisions, pure: which benchmark to follow, how a commit's measured change
compares with the regression, which commit to measure next, and what the search found.

Terms. The *range* is the first-parent history from ``good`` (excluded) to ``bad`` (included),
oldest first: indices ``0 .. n-1``, ``n-1`` being ``bad``; index ``-1`` stands for ``good``. Every
compare of the search is a paired compare of one commit (head) against ``good`` (base), so its
*level* — one benchmark's ratio commit/good with the compare's interval (:class:`Level`) — is on
the same scale for every commit. The *target* is the level of ``bad``: the regression found by
the first compare.

Matching is by intervals, never by point estimates (:func:`classify`): a commit is on the good
side when its whole interval lies below the midpoint between no change and the regression, on
the bad side when it lies above it. An interval that misses both the band of no change and the
target's interval lies between them — a *partial* change: the range holds more than one step —
or beyond the target (a step that a later commit partly undid), or on the other side of 1. One
that holds the midpoint could not tell the two apart and is measured once more with twice the
process pairs (:data:`ATTEMPTS`), then skipped.

The search is git bisect's: the commit nearest the middle of the commits still in question is
measured; a commit that cannot be built or measured is *skipped* (as ``git bisect skip``), and
the next nearest is tried; when only skipped commits lie between the last good-side and the first
bad-side commit, the culprit is any of them or that bad-side commit (as git says: "the first bad
commit could be any of"). ``n`` commits take at most ``⌈log2 n⌉`` measured commits when none is
skipped (:func:`worst_case_compares` adds the first compare).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ...results import change_of, verdict_of

#: Classes of a commit's level against the target (:func:`classify`).
CLASSES = ("before", "after", "partial", "beyond", "opposite", "undecided")

#: Classes that put the culprit after the commit (the full regression has not happened yet)...
GOOD_SIDE = ("before", "partial", "opposite")
#: ...and those that put it at the commit or before.
BAD_SIDE = ("after", "beyond")

#: Classes that show the range holds more than one step.
MORE_THAN_ONE_STEP = ("partial", "beyond", "opposite")

#: The practical band around no change (and the margin past the target), as a fraction of the
#: regression's log-ratio (:func:`classify`): a level whose interval reaches within a quarter of
#: the step of no change is never taken for a step of its own, however narrow its interval.
PRACTICAL = 0.25

#: Measurements of one commit before an undecided one is skipped (the second with twice the pairs).
ATTEMPTS = 2

#: The half-width (log units) a step's interval is sized for, as a fraction of the regression's
#: log-ratio: 0.4 leaves the good side's interval and the target's apart by a fifth of the step
#: on either side of the midpoint (:func:`step_pairs`).
PRECISION = 0.4


@dataclass(frozen=True)
class Level:
    """One benchmark's change in one compare against ``good``: ``ratio`` commit/good of the time
    per call (> 1 slower) with the compare's interval ``[low, high]`` (its ``ci_level``), and the
    equivalence interval ``[eq_low, eq_high]`` its ``unchanged`` was tested with (None in older
    documents; :func:`runner.stats.decide`)."""

    ratio: float
    low: float
    high: float
    eq_low: float | None = None
    eq_high: float | None = None

    @staticmethod
    def of(change: dict | None) -> "Level | None":
        """The level in a results.json ``change`` object; None when it has no positive ratio
        and interval (a failed or new benchmark)."""
        change = change or {}
        values = [change.get(k) for k in ("ratio", "ci_low", "ci_high")]
        if not all(map(_positive, values)):
            return None
        ratio, low, high = (float(v) for v in values)
        eq_low, eq_high = change.get("eq_low"), change.get("eq_high")
        if _positive(eq_low) and _positive(eq_high):  # inside the reported interval, around the ratio
            eq_low, eq_high = max(min(float(eq_low), ratio), low), min(max(float(eq_high), ratio), high)
        else:
            eq_low = eq_high = None
        return Level(ratio, min(low, ratio), max(high, ratio), eq_low, eq_high)

    @property
    def log(self) -> float:
        return math.log(self.ratio)

    @property
    def half_width(self) -> float:
        """Half the interval's width in log units (≈ a fraction)."""
        return (math.log(self.high) - math.log(self.low)) / 2

    def as_dict(self) -> dict:
        return {"ratio": self.ratio, "ci_low": self.low, "ci_high": self.high}


def _positive(v) -> bool:
    """A finite positive number (not a bool): what a ratio or an interval's end must be."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and not math.isinf(v)


def classify(level: Level, target: Level) -> str:
    """Where ``level`` lies against ``good`` and the regression (``target``), by intervals.

    In log units, with ``b`` the regression, ``m = b / 2`` the midpoint and ``δ`` =
    :data:`PRACTICAL` × ``|b|``:

    - an interval that misses both the band ``[−δ, δ]`` around no change and the target's interval
      (widened by ``δ`` on its far side) is a level of its own: ``partial`` between them (the
      range holds more than one step), ``beyond`` the target (a step a later commit partly undid)
      or ``opposite`` (faster than good);
    - otherwise the midpoint decides: ``before`` when the interval lies below it — the
      equivalence interval where the compare has one, the one-sided test at the look's level that
      its ``unchanged`` verdict used, so a compare that stopped ``unchanged`` is ``before`` —,
      ``after`` when the interval lies above it, ``undecided`` when it holds the midpoint (measure
      again).

    The band around no change is there because identical code in fresh processes can differ by
    more than its interval says on a busy machine (an A/A step measured −11 % [−19, −3] against a
    +93 % regression): such a level is on the good side, not a second step. The target's far side
    is widened for the same reason. The engine's own stopping rule agrees with the midpoint: a
    step's compare has the midpoint as its threshold (:func:`step_threshold`).

    Returns one of :data:`CLASSES`.
    """
    sign = 1.0 if target.ratio >= 1.0 else -1.0
    # everything in log units, turned so that the regression is positive
    low, high = sorted((sign * math.log(level.low), sign * math.log(level.high)))
    t_low, t_high = sorted((sign * math.log(target.low), sign * math.log(target.high)))
    b = abs(target.log)
    delta = PRACTICAL * b
    meets_good = low <= delta and high >= -delta
    meets_target = low <= t_high + delta and high >= t_low
    if not meets_good and not meets_target:
        if high < -delta:
            return "opposite"
        return "beyond" if low > t_high + delta else "partial"
    below = high
    if level.eq_low is not None and level.eq_high is not None:
        below = max(sign * math.log(level.eq_low), sign * math.log(level.eq_high))
    if below < b / 2:
        return "before"
    if low > b / 2:
        return "after"
    return "undecided"


def step_threshold(target: Level) -> float:
    """The practical threshold of a step's compare (fraction): the geometric midpoint between
    no change and the regression, ``exp(|ln r| / 2) − 1``. A good-side commit's compare then ends
    ``unchanged`` as soon as its equivalence interval lies within half the step
    (runner.stats.decide), and a
    bad-side one ``regression`` as soon as its interval misses 1."""
    return math.expm1(abs(target.log) / 2)


def step_pairs(first_pairs: int, first: Level, target: Level, min_pairs: int, max_pairs: int) -> int:
    """Process pairs a step's compare takes before its first look, so that its interval's
    half-width is about :data:`PRECISION` × the regression: the first compare's pairs scaled by
    the square of how much narrower the interval must be (an interval narrows with √pairs; the
    t quantile's fall with more pairs is a margin), and never fewer than the first compare took
    (with fewer pairs the t quantile grows faster than the spread shrinks: on a busy CPU a
    pyparsing step measured +85 % [+64, +108] in the first compare and [+31, +160] with two
    pairs). Within ``[min_pairs, max_pairs]``."""
    want = PRECISION * abs(target.log)
    if want <= 0:
        return max_pairs
    scale = (first.half_width / want) ** 2 if first.half_width > 0 else 0.0
    first_pairs = max(1, first_pairs)
    return max(min_pairs, min(max_pairs, max(first_pairs, math.ceil(first_pairs * scale))))


def choose_benchmark(benchmarks: list[dict]) -> tuple[str, Level] | None:
    """The benchmark to follow among a first compare's ``benchmarks[]``: of those whose interval
    lies wholly above 1 (slower at ``bad``), the one with the largest lower bound (the clearest
    regression). None when no benchmark regressed."""
    best: tuple[str, Level] | None = None
    for entry in benchmarks:
        level = Level.of(change_of(entry))
        if level is None or level.low <= 1.0 or verdict_of(entry) == "failed":
            continue
        if best is None or level.low > best[1].low:
            best = (str(entry.get("name")), level)
    return best


def worst_case_compares(commits: int) -> int:
    """Compares a search over ``commits`` commits takes at most when none is skipped or measured
    twice: the first compare and ``⌈log2 n⌉`` steps."""
    return 1 + (math.ceil(math.log2(commits)) if commits > 1 else 0)


_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from ")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")


def pr_of(subject: str | None) -> int | None:
    """The pull request a first-parent commit's subject names: GitHub's merge commit ("Merge pull
    request #12 from …") or squash/rebase title ("… (#12)"); None otherwise."""
    text = (subject or "").strip()
    match = _MERGE_PR.match(text) or _SQUASH_PR.search(text)
    return int(match.group(1)) if match else None


@dataclass
class Bisection:
    """The search over a range of ``size`` commits for the first one whose level matches
    ``target``.

    ``levels`` maps commit indices to levels already measured (shared between searches over the
    same range: a second search re-reads them instead of measuring again); ``lo`` is the last
    index known on the good side (-1: ``good``), ``hi`` the first known on the bad side
    (``size - 1``: ``bad`` at the start). Drive it with :meth:`next` and :meth:`record`.
    """

    size: int
    target: Level
    levels: dict[int, Level] = field(default_factory=dict)
    lo: int = -1
    hi: int = -1
    skipped: dict[int, str] = field(default_factory=dict)
    outcomes: dict[int, str] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("an empty range has nothing to bisect")
        if self.hi < 0:
            self.hi = self.size - 1

    def next(self) -> int | None:
        """The index of the commit to measure next (nearest the middle of those in question, the
        lower on a tie); None when the search is over. Commits whose level is known already are
        taken on the way without being measured again."""
        while True:
            candidates = [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]
            if not candidates:
                return None
            middle = self.lo + (self.hi - self.lo) // 2
            pick = min(candidates, key=lambda i: (abs(i - middle), i))
            if pick in self.levels:
                self._apply(pick, classify(self.levels[pick], self.target))
                continue
            return pick

    def record(self, index: int, level: Level | None, problem: str | None = None) -> str:
        """Record the measurement of commit ``index``: its ``level``, or None with the
        ``problem`` that kept it from being measured (the commit is skipped).

        Returns:
            the commit's class (:data:`CLASSES`), ``skipped``, or ``again`` when it was
            ``undecided`` and has an attempt left (measure it again with more pairs).
        """
        self.attempts[index] = self.attempts.get(index, 0) + 1
        if level is None:
            self.skipped[index] = problem or "it could not be measured"
            return "skipped"
        cls = classify(level, self.target)
        if cls == "undecided":
            if self.attempts[index] < ATTEMPTS:
                return "again"
            self.skipped[index] = (f"its interval held both no change and the regression after "
                                   f"{self.attempts[index]} compares")
            self.outcomes[index] = cls
            return "skipped"
        self.levels[index] = level
        self._apply(index, cls)
        return cls

    def _apply(self, index: int, cls: str) -> None:
        self.outcomes[index] = cls
        if cls in BAD_SIDE:
            self.hi = min(self.hi, index)
        else:
            self.lo = max(self.lo, index)

    @property
    def done(self) -> bool:
        return not any(i not in self.skipped for i in range(self.lo + 1, self.hi))

    @property
    def suspects(self) -> list[int]:
        """The commits that may be the first on the bad side, oldest first: ``hi`` and the
        skipped commits before it since the last good-side one (one commit: the culprit)."""
        return [i for i in range(self.lo + 1, self.hi) if i in self.skipped] + [self.hi]

    def partials(self) -> list[int]:
        """Measured commits before ``hi`` whose level lies between 1 and the target: a step
        happened at or before each of them."""
        return sorted(i for i, c in self.outcomes.items() if c == "partial" and i < self.hi)
