"""``perfgate doctor [--json] [--path DIR]``: is this runner fit to measure? (the checks are
:mod:`runner.pipeline.machine.doctor`'s)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from ..pipeline.machine import sustained
from ..pipeline.machine.clocks import measure_sustained
from ..pipeline.machine.doctor import run_checks
from ..pipeline.machine.finding import Finding, summarize
from ..pipeline.machine.machine_facts import gather


def render_text(findings: list[Finding], width: int | None = None) -> str:
    """The findings as a plain-text table (rich, no colour codes), fixes under the table,
    ``width`` columns (None: the terminal's, ``COLUMNS`` where set, else 80 as in a CI log)."""
    import io

    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    table = Table(title="perfgate doctor: is this runner fit to measure?")
    for column in ("status", "check"):  # never wrapped: the subject and finding take the rest
        table.add_column(column, no_wrap=True)
    table.add_column("subject", overflow="fold", max_width=24)
    table.add_column("finding", overflow="fold", ratio=1)
    for f in findings:
        table.add_row(f.status, f.check, f.subject, f.summary)
    console.print(table)
    fixes = [f for f in findings if f.fix and f.status in ("fail", "warn")]
    if fixes:
        console.print("How to fix:")
        for f in fixes:
            console.print(f"  [{f.status}] {f.check} ({f.subject}): {f.fix}", markup=False, highlight=False)
    failed = sum(f.status == "fail" for f in findings)
    warned = sum(f.status == "warn" for f in findings)
    console.print(f"{failed} failed, {warned} warning{'' if warned == 1 else 's'}, "
                  f"{sum(f.status == 'ok' for f in findings)} ok, {sum(f.status == 'skip' for f in findings)} skipped",
                  markup=False, highlight=False)
    return buf.getvalue()


def soak_gpu(gpu: dict) -> int | None:
    """Measure and cache the GPU's sustained SM clock (:func:`measure_sustained`); None when the
    soak could not run (no torch with CUDA, the GPU taken): the checks then say it is unmeasured."""
    print(f"perfgate doctor: measuring GPU {gpu.get('index')}'s sustained SM clock "
          f"({sustained.SOAK_SECONDS:.0f} s bf16 GEMM, once)...", file=sys.stderr)
    try:
        return measure_sustained(gpu["uuid"], gpu.get("sm_supported_clocks_mhz"))
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"perfgate doctor: the soak failed ({exc}); sustained clock unmeasured",
              file=sys.stderr)
        return None


def main_doctor(args: argparse.Namespace) -> int:
    """``perfgate doctor [--json]``: exit 0 when no check failed, 1 when one did."""
    facts = gather([args.path])
    for gpu in facts.get("gpus") or []:
        if sustained.needs_soak(gpu):  # GPU-only: a 10 s bf16 GEMM, once per GPU (cached)
            gpu["sustained_clock_mhz"] = soak_gpu(gpu)
    findings = run_checks(facts)
    if args.json:
        print(json.dumps(summarize(findings), indent=2))
    else:
        print(render_text(findings), end="")
    return 1 if any(f.status == "fail" for f in findings) else 0
