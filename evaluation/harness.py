"""The evaluation's harness: perfgate's command line run the way every script runs it, a mirror's
clone, and the loop the generated suites time.

Repositories are made with :mod:`testkit.gitrepo`, an App key with
:func:`testkit.payloads.private_key` and a free port with :func:`testkit.services.free_port`
(shared with the tests). A script imports this module as ``harness`` (its own folder is first
on ``sys.path``), or as ``evaluation.harness`` when it runs as a module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

#: This checkout: the perfgate whose ``runner`` the commands run unless told another.
ROOT = Path(__file__).resolve().parents[1]

#: A pure-Python loop whose time is its count, for generated suites (``spin(n)``: n steps).
SPIN = '''def spin(n):
    """Busy work: n steps of a loop."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total
'''


@dataclass(frozen=True)
class Outcome:
    """One perfgate command: its results.json (None when it wrote none), exit status, wall
    seconds, and what it printed (empty when it ran in this process)."""

    doc: dict | None
    code: int
    wall: float
    stdout: str = ""
    stderr: str = ""

    def failure(self, what: str = "perfgate compare") -> str:
        """``"<what> exited N: <its last line on stderr>"``."""
        last = (self.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{what} exited {self.code}: {last}"


def perfgate(command: str, *args: str, out: Path, checkout: Path | None = ROOT,
             env: Mapping[str, str] | None = None, timeout: float | None = None) -> Outcome:
    """``perfgate COMMAND ARGS --out OUT --quiet``.

    ``checkout`` None: in this process (``runner.cli.main.main``); else ``python -m runner.cli``
    in a subprocess started in ``checkout``, its folder first on ``PYTHONPATH`` (another
    checkout's runner, e.g. an older commit's), with ``env`` (default: this process's) and at
    most ``timeout`` seconds.

    Raises:
        subprocess.TimeoutExpired: the subprocess ran past ``timeout``.
    """
    argv = [command, *args, "--out", str(out), "--quiet"]
    t0 = time.monotonic()
    if checkout is None:
        from runner.cli.main import main

        code, stdout, stderr = main(argv), "", ""
    else:
        base = dict(os.environ if env is None else env)
        path = os.pathsep.join(filter(None, [str(checkout), base.get("PYTHONPATH")]))
        proc = subprocess.run([sys.executable, "-m", "runner.cli", *argv], cwd=checkout,
                              env={**base, "PYTHONPATH": path}, capture_output=True, text=True,
                              timeout=timeout)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    wall = time.monotonic() - t0
    results = out / "results.json"
    doc = json.loads(results.read_text()) if results.is_file() else None
    return Outcome(doc, code, wall, stdout, stderr)


def compare(repo: Path, out: Path, *args: str, base: str = "base", head: str = "head",
            **how) -> Outcome:
    """``perfgate compare --repo REPO --base BASE --head HEAD ARGS`` into ``out``; ``how`` as
    :func:`perfgate` takes it (where it runs, its environment, its time limit)."""
    return perfgate("compare", "--repo", str(repo), "--base", base, "--head", head, *args, out=out,
                    **how)


def clone(mirror: Path, into: Path) -> Path:
    """A clone of the repository ``mirror`` at ``into`` that shares its objects, nothing
    checked out.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(into)],
                   check=True, capture_output=True)
    return into
