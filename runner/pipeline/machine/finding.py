"""One finding of ``perfgate doctor`` and the ``environment.doctor`` record of a list of them (pure).

The checks live in :mod:`runner.pipeline.machine.gpu_checks` (GPU, NVML) and
:mod:`runner.pipeline.machine.doctor` (CPU and host); :mod:`runner.pipeline.machine.doctor`'s
docstring lists them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

#: A finding's ``status``: ``fail`` (fix first), ``warn`` (adds noise or drift), ``ok``, ``skip``
#: (the machine does not expose it).
STATUSES = ("fail", "warn", "ok", "skip")


@dataclass(frozen=True)
class Finding:
    """One check's verdict. ``check``: stable id (module docstring); ``subject``: what was looked
    at (``GPU 0 (NVIDIA H200)``, ``CPU``, a path); ``summary``: one sentence with the numbers;
    ``fix``: what to do, None when nothing is needed."""

    check: str
    subject: str
    status: str
    summary: str
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(findings: Iterable[Finding]) -> dict:
    """``environment.doctor`` of results.json: ``{checks: [finding...], failed: [ids], warned: [ids]}``
    with ids ``check`` or ``check:subject`` when a check ran on several subjects."""
    findings = list(findings)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.check] = counts.get(f.check, 0) + 1

    def ident(f: Finding) -> str:
        return f.check if counts[f.check] == 1 else f"{f.check}:{f.subject}"

    return {"checks": [f.to_dict() for f in findings],
            "failed": [ident(f) for f in findings if f.status == "fail"],
            "warned": [ident(f) for f in findings if f.status == "warn"]}
