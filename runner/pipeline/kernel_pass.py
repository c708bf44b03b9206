"""The static pass of a compare, before the selection and the timing: the Triton kernels the
change touches, compiled on both sides for the target architectures
(:func:`runner.kernels.analysis.analyse`), within :data:`KERNEL_BUDGET_SHARE` of the compare's
budget. The compare then skips a benchmark whose changed files only changed kernels that
compile alike (``same_code``, :func:`runner.selection.select`) and, after the timing, gives the
findings as ``register_pressure`` hints to the benchmarks whose code map shows they run the
kernel's file (:func:`runner.kernels.table.attach`). It runs on CPU and GPU runners alike (no GPU
is used); without Triton the section says it was not run, and why."""

from __future__ import annotations

import time

from ..kernels.analysis import analyse, archs_for
from .revisions import Revision

#: Share of ``max_time`` the static pass may take; jobs not begun by then are reported skipped.
KERNEL_BUDGET_SHARE = 0.1


def kernel_pass(gpu_arch: tuple[str, ...], max_time: float, revs: dict[str, Revision],
                head_env: dict, progress) -> dict:
    """results.json's ``kernels`` section, for the configured ``gpu_arch``, else the GPU of
    head's worker (``head_env``, its hello), else sm_80 and sm_90."""
    archs = archs_for(list(gpu_arch), head_env.get("compute_capability"))
    return analyse({side: rev.path for side, rev in revs.items()}, archs,
                   deadline=time.monotonic() + KERNEL_BUDGET_SHARE * max_time,
                   announce=lambda: progress.phase("compiling the changed Triton kernels"))
