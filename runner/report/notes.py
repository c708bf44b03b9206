"""The note beside a benchmark's verdict, built from tables of sentences (plain text; pure).

:func:`verdict_note` joins the clauses that apply, in table order: why an ``inconclusive``
benchmark stayed undecided (:data:`INCONCLUSIVE_REASONS`: the first that applies), then what
the measurement left out or did differently (:data:`CONDITIONS`: every one that applies). A
clause is a function of :class:`NoteFacts` that returns its text, or None when it does not
apply; to say something new, write one and put it in its table. :func:`bench_note` adds what
head's output, memory and torch.compile did; :func:`inconclusive_fix` says what would decide the
``inconclusive`` ones, named by :data:`INCONCLUSIVE_WORD` in every report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..results import CHANGED, change_of, verdict_of
from .measures import compile_sentence, memory_note
from .outputs import output_note
from .units import FACTOR_FROM, fmt_factor, fmt_growth, is_number


@dataclass(frozen=True)
class NoteFacts:
    """What the clauses read: ``bench`` (a results.json benchmark), its ``change``, the run's
    ``settings`` and how many benchmarks were ``compared`` (the correction's count)."""

    bench: dict
    change: dict
    settings: dict
    compared: int

    def count(self, key: str) -> int | None:
        """The change's ``key`` where it is a positive int, else None."""
        value = self.change.get(key)
        return value if isinstance(value, int) and value > 0 else None


Clause = Callable[[NoteFacts], "str | None"]


def _noise(change: dict) -> str | None:
    """The spread of the process pairs' estimates (``change.pair_sd``, a fraction)."""
    sd = change.get("pair_sd")
    if not is_number(sd):
        return None
    return f"the process pairs' estimates spread by {sd * 100:.1f} % (sd)"


def _resolvable(change: dict) -> str | None:
    """The smallest change this noise let the compare find (``change.resolvable``, a fraction)."""
    resolvable = change.get("resolvable")
    if not is_number(resolvable):
        return None
    if 1.0 + resolvable >= FACTOR_FROM:  # the reports' one form: "12×", not "≥ 1104.5 %"
        return (f"at this noise, only changes of {fmt_factor(1.0 + resolvable)}× or more would "
                "have been found")
    return f"at this noise, changes of ≥ {resolvable * 100:.1f} % would have been found"


# -- why an inconclusive benchmark stayed undecided ------------------------------------------------

def lost_to_correction(facts: NoteFacts) -> str | None:
    """Its interval excludes no change, but its adjusted p-value (Benjamini–Hochberg across the
    ``compared`` benchmarks) is not below ``alpha``."""
    change = facts.change
    low, high, q = change.get("ci_low"), change.get("ci_high"), change.get("p_adjusted")
    alpha = facts.settings.get("alpha", 0.05)
    if not (is_number(low) and is_number(high) and (low > 1.0 or high < 1.0)
            and is_number(q) and q >= alpha):
        return None
    p = change.get("p_value")
    if not is_number(p):
        return ("its interval excludes no change, but not after the correction for "
                f"{facts.compared} benchmarks compared")
    return (f"its interval excludes no change (p = {p:.2g} at its look), but not after the "
            f"correction for {facts.compared} benchmarks compared (Benjamini–Hochberg, "
            f"q = {q:.2g} ≥ {alpha:g})")


def short_of_evidence(facts: NoteFacts) -> str | None:
    """The interval would decide it, but the evidence behind it is short (its reason)."""
    short = facts.change.get("short_of_evidence")
    if not short:
        return None
    return (f"its interval alone would decide it, but {short} "
            "(an offset that pairs share can look like a change)")


def futile(facts: NoteFacts) -> str | None:
    """More process pairs could not have narrowed the interval enough at this noise."""
    if not facts.change.get("futile"):
        return None
    said = [x for x in (_noise(facts.change), _resolvable(facts.change)) if x]
    return ("the machine's noise, not the code, kept the interval wide: " + ", ".join(said)
            + "; more pairs could not have narrowed it enough")


def budget_cut(facts: NoteFacts) -> str | None:
    """The time budget (``--max-time``, seconds) ended it."""
    if not facts.change.get("budget_cut"):
        return None
    found = _resolvable(facts.change)
    tail = f"; {found}" if found else ""
    settings = facts.settings
    budget = (settings.get("budget") or {}).get("max_time", settings.get("max_time"))
    if not is_number(budget):
        return "the time budget ended it" + tail
    return (f"the time budget (--max-time {budget:g} s) ended it after "
            f"{facts.change.get('process_pairs')} process pair(s)" + tail)


def wide_interval(facts: NoteFacts) -> str | None:
    """The interval stayed wide: the pairs' spread and the smallest change it let be found."""
    said = [x for x in (_noise(facts.change), _resolvable(facts.change)) if x]
    return "the interval stayed wide: " + ", ".join(said) if said else None


#: Why an ``inconclusive`` benchmark stayed undecided: the first clause that applies is said.
INCONCLUSIVE_REASONS: tuple[Clause, ...] = (lost_to_correction, short_of_evidence, futile,
                                            budget_cut, wide_interval)


# -- what the measurement left out or did differently ----------------------------------------------

def disturbed_left_out(facts: NoteFacts) -> str | None:
    """Rounds left out because another task took the measured CPU."""
    disturbed, rounds = facts.count("disturbed_rounds"), facts.count("rounds")
    if not (disturbed and rounds):
        return None
    return (f"{disturbed} of {rounds} rounds left out: another task took the measured CPU "
            "during them")


def disturbed_kept(facts: NoteFacts) -> str | None:
    """Rounds the disturbance detector flagged but kept (most of their pairs' rounds)."""
    kept, rounds = facts.count("disturbed_kept"), facts.count("rounds")
    if not (kept and rounds):
        return None
    more = "more " if facts.change.get("disturbed_rounds") else ""
    return (f"the disturbance detector saw {kept} {more}of {rounds} rounds as another task's "
            "(its process got less CPU than wall time while switched out), but they were most of "
            "their process pairs' rounds, so they were kept: where it sees the whole run so, it "
            "reads the machine, not a neighbour")


def clock_left_out(facts: NoteFacts) -> str | None:
    """Rounds left out because the GPU's clock was held down or moved (NVML)."""
    clock_rounds, rounds = facts.count("clock_rounds"), facts.count("rounds")
    if not (clock_rounds and rounds):
        return None
    why = facts.change.get("clock_reasons") or {}
    causes = [text for key, text in (("throttled", "held down by power or heat"),
                                     ("clock", "its SM clock moved"))
              if isinstance(why, dict) and why.get(key)]
    return (f"{clock_rounds} of {rounds} rounds left out: the GPU's clock was "
            + (" or ".join(causes) if causes else "disturbed") + " during them (NVML)")


def clock_kept(facts: NoteFacts) -> str | None:
    """Rounds NVML flagged that were kept: too many of their pairs' to leave out (GPU review #8:
    every round of a GEMM under a lock above the clock it sustains was flagged, all kept, and the
    report said all were left out)."""
    kept, rounds = facts.count("clock_kept"), facts.count("rounds")
    if not (kept and rounds):
        return None
    return (f"NVML saw the GPU's clock held down or moved in {kept} of {rounds} rounds, too many "
            "of their process pairs' rounds to leave out, so they were kept: the clock "
            "this GPU sustains under this load is below the reference (perfgate doctor shows "
            "the clock policy)")


def calls_per_sample_differ(facts: NoteFacts) -> str | None:
    """The sides sampled with different calls per sample (one more than 4× slower)."""
    base_n = (facts.bench.get("base") or {}).get("number")
    head_n = (facts.bench.get("head") or {}).get("number")
    if not (facts.change.get("shared_number") is False and base_n and head_n and base_n != head_n):
        return None
    return (f"calls per sample differ (base {base_n}, head {head_n}) because one side is more "
            "than 4× slower than the other: each side's samples last at least the sample time")


def first_pair_dropped(facts: NoteFacts) -> str | None:
    """The first process pair's rounds dropped: its warm-up misread the sides as > 4× apart."""
    dropped = facts.count("dropped_rounds")
    if not dropped:
        return None
    return (f"the first process pair's {dropped} rounds were dropped: its warm-up had read the "
            "sides more than 4× apart (another task disturbed it) and gave them different calls "
            "per sample, but its rounds measured them within 4×, so both sides share one count "
            "from the next pair on")


#: What the measurement left out or did differently: every clause that applies is said.
CONDITIONS: tuple[Clause, ...] = (disturbed_left_out, disturbed_kept, clock_left_out, clock_kept,
                                  calls_per_sample_differ, first_pair_dropped)


def verdict_note(bench: dict, settings: dict, compared: int) -> str | None:
    """One sentence beside a benchmark's verdict: the clauses of :data:`INCONCLUSIVE_REASONS`
    (``inconclusive`` only) and :data:`CONDITIONS` that apply, joined by "; ". None when none
    applies (a decided benchmark on a quiet machine)."""
    facts = NoteFacts(bench, change_of(bench), settings, compared)
    reason = None
    if facts.change.get("verdict") == "inconclusive":
        reason = next((text for clause in INCONCLUSIVE_REASONS if (text := clause(facts))), None)
    parts = [text for text in (reason, *(clause(facts) for clause in CONDITIONS)) if text]
    if not parts:
        return None
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def bench_note(bench: dict, settings: dict, compared: int) -> str | None:
    """What the report says beside a benchmark (plain text; pure): :func:`verdict_note`, whether
    head changes the result (:func:`runner.report.outputs.output_note`), then its memory verdict
    when that is a change (:func:`runner.report.measures.memory_note`) and what head's
    torch.compile does beyond base's (:func:`runner.report.measures.compile_sentence`)."""
    parts = [verdict_note(bench, settings, compared), output_note(bench), memory_note(bench),
             compile_sentence(change_of(bench))]
    parts = [p.rstrip(".") for p in parts if p]
    if not parts:
        return None
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


#: The word every report shows for results.json's verdict ``inconclusive`` (the interval spans
#: both no change and a change beyond the threshold): report.md, report.html, the terminal, the
#: check run's title and summary say this word and no other ("undecided" in the gate's sentence
#: beside "inconclusive" in its table read as two states; issue 47).
INCONCLUSIVE_WORD = "inconclusive"


def inconclusive_fix(benches: list[dict]) -> str | None:
    """What would decide the ``inconclusive`` benchmarks of ``benches`` (pure; None without
    one): more process pairs, unless the machine's noise kept every one of them wide
    (``change.futile``: more pairs could not have narrowed it, and the report said both)."""
    open_ = [b for b in benches if verdict_of(b) == "inconclusive"]
    if not open_:
        return None
    if all(change_of(b).get("futile") for b in open_):
        return ("the machine's noise kept the interval wide; more process pairs would not "
                "narrow it (a quieter machine would)")
    return ("a larger --max-time, or fewer benchmarks at a time (--filter), gives each more "
            "process pairs")


# -- why a benchmark changed, or why no cause is named ---------------------------------------------

#: The words a report shows for a hint's kind (results.json ``hints[].kind``); a kind not listed
#: reads as its words. ``memory_growth`` reads by its direction (:func:`hint_label`).
HINT_LABELS = {"register_pressure": "register pressure", "sync_overhead": "synchronisation",
               "memory_contention": "memory contention", "device_change": "another device",
               "launch_overhead": "launch overhead", "host_device_copy": "host–device copies",
               "gpu_idle": "GPU idle time", "new_kernels": "new kernels",
               "precision_change": "precision", "graph_break": "graph breaks",
               "compile_time": "compile time", "kernel_time": "kernel time",
               "new_operators": "operators added or removed", "operator_time": "operator time",
               "unexplained": "no cause found"}


def hint_label(hint: dict) -> str:
    """A hint's kind in words (``operator time``, not ``[operator_time]``); a memory hint says
    which way the peak went (one on a fall is no "growth")."""
    kind = str(hint.get("kind") or "")
    if kind == "memory_growth":
        peak = (hint.get("evidence") or {}).get("peak_memory_bytes") or {}
        base, head = peak.get("base"), peak.get("head")
        fell = is_number(base) and is_number(head) and head < base
        return "peak memory fell" if fell else "peak memory grew"
    return HINT_LABELS.get(kind, kind.replace("_", " "))


#: How many items of a list a hint's evidence shows (the rest counted).
EVIDENCE_ITEMS = 6


def evidence_value(value) -> str:
    """One value of a hint's evidence in words: a number as it is (floats to 4 significant
    digits), a list as its first :data:`EVIDENCE_ITEMS` items and how many more, a mapping as
    ``key value`` pairs; a kernel's or operator's record reads as its name."""
    if isinstance(value, dict):
        if "name" in value:
            return str(value["name"])
        return ", ".join(f"{str(k).replace('_', ' ')} {evidence_value(v)}"
                         for k, v in value.items())
    if isinstance(value, (list, tuple)):
        shown = [evidence_value(v) for v in value[:EVIDENCE_ITEMS]]
        more = len(value) - len(shown)
        return ", ".join(shown + ([f"{more} more"] if more > 0 else [])) or "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "–" if value is None else str(value)


def evidence_rows(evidence) -> list[tuple[str, str, str | None]]:
    """A hint's evidence (results.json ``hints[].evidence``) as table rows ``(field in words,
    base or the value, head or None)``: a ``{"base", "head"}`` pair side by side, anything else
    in one cell (:func:`evidence_value`); the pairs first, so the table's shape follows the
    values' shapes, never the keys' names. The report.html of each benchmark's Why shows them."""
    rows: list[tuple[str, str, str | None]] = []
    for key, value in (evidence.items() if isinstance(evidence, dict) else ()):
        field = str(key).replace("_", " ")
        if isinstance(value, dict) and set(value) == {"base", "head"}:
            rows.append((field, evidence_value(value["base"]), evidence_value(value["head"])))
        else:
            rows.append((field, evidence_value(value), None))
    return sorted(rows, key=lambda row: row[2] is None)


def why_heading(bench: dict, time_text: str) -> str:
    """What a benchmark's Why is about: its time verdict and ``time_text`` (its change) where that
    is a change, then its memory verdict where that is one (``inconclusive in time, memory
    regression +50.2 %``)."""
    change = change_of(bench)
    memory = change.get("memory") if isinstance(change.get("memory"), dict) else {}
    parts = [f"{change['verdict']} {time_text}"] if change.get("verdict") in CHANGED else []
    if memory.get("verdict") in CHANGED:
        if not parts and change.get("verdict"):
            parts.append(f"{change['verdict']} in time")
        ratio = memory.get("ratio")
        growth = f" {fmt_growth(ratio)}" if is_number(ratio) else ""
        parts.append(f"memory {memory['verdict']}{growth}")
    return ", ".join(str(p) for p in parts)


def why_missing(bench: dict, settings: dict) -> str:
    """One line on why a changed benchmark has no hint (plain text; pure): its profile failed,
    profiling was off, the time budget left it unprofiled, or its profile held no difference a
    hint names."""
    errors = bench.get("profile_errors")
    if isinstance(errors, dict) and errors:
        side, error = next(iter(errors.items()))
        first = str(error).strip().splitlines()[-1:] or [""]
        return f"its profile failed on {side}: {first[0][:200]}"
    if settings.get("profile") is False:
        return ("profiling was off (--no-profile or profile = false); perfgate compare --profile "
                "traces each side for the root cause")
    if bench.get("name") in ((settings.get("budget") or {}).get("unprofiled") or []):
        return ("the time budget ended before the profiling pass reached it; a larger --max-time "
                "profiles it")
    if bench.get("profile"):
        return "no difference between its profiles passed a hint's threshold (the profile is below)"
    return "it was not profiled (perfgate profiles the benchmarks it times, on both sides)"
