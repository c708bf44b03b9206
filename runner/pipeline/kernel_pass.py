"""The static pass of a compare: the Triton kernels the change touches, compiled on both sides
for the target architectures (:func:`runner.kernels.analysis.analyse`), within
:data:`KERNEL_BUDGET_SHARE` of the compare's budget; its findings become ``register_pressure``
hints of the benchmarks whose code map shows they run the kernel's file
(:func:`runner.kernels.table.attach`). It runs on CPU and GPU runners alike (no GPU is used);
without Triton the section says it was not run, and why."""

from __future__ import annotations

import time

from ..kernels.analysis import analyse, archs_for
from ..kernels.table import attach
from .revisions import Revision

#: Share of ``max_time`` the static pass may take; jobs not begun by then are reported skipped.
KERNEL_BUDGET_SHARE = 0.1


def kernel_pass(gpu_arch: tuple[str, ...], max_time: float, revs: dict[str, Revision],
                environment: dict, entries: list[dict], code_map: dict | None, progress) -> dict:
    """results.json's ``kernels`` section; ``entries`` get their hints in place."""
    progress.phase("compiling the changed Triton kernels")
    archs = archs_for(list(gpu_arch), environment.get("compute_capability"))
    section = analyse({side: rev.path for side, rev in revs.items()}, archs,
                      deadline=time.monotonic() + KERNEL_BUDGET_SHARE * max_time)
    attach(entries, section, code_map)
    return section
