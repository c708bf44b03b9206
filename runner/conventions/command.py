"""The command convention: a benchmark that measures itself, run as a configured command.

``command`` (config) is a shell command, built per revision by ``install``, that prints Google
Benchmark, nvbench or github-action-benchmark JSON (:mod:`runner.formats`; ``command_format`` says
which, ``auto`` tells the first two apart). ``{out}`` in it is replaced by a file the command writes
its JSON to (``./build/bench --json {out}`` for nvbench); without ``{out}`` its standard output is
read. It runs in the revision's root with the side's environment (its venv's ``bin`` first on
``PATH``).

Every benchmark the output names is a case (``measures: "self"``, all of them in one ``group``):
one run of the command measures all of them. perfgate runs it in interleaved process pairs: each
round runs the command once on each side (the order alternating), and each run is one sample set
per side of every benchmark — its reported repetitions (:class:`runner.conventions.base.Reading`).
perfgate's statistics then apply to the runs as to process pairs
(:mod:`runner.pipeline.timing.measured`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from .. import formats
from .base import Prepared, Reading, Suite, listing

#: The group every case of the command belongs to (one run measures them all).
GROUP = "command"


def run_command(command: str, fmt: str, cwd: Path | None = None) -> list[formats.Reported]:
    """Run ``command`` once (a shell, in ``cwd``, default the working directory) and read its
    measurements.

    Raises:
        RuntimeError: it exited non-zero (the last lines of its output), or its output is not the
            format (:class:`runner.formats.FormatError`'s line).
    """
    with tempfile.TemporaryDirectory(prefix="perfgate-command-") as tmp:
        out = Path(tmp) / "out.json"
        text = command.replace("{out}", shlex.quote(str(out)))
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        proc = subprocess.run(text, shell=True, cwd=cwd, env=env, capture_output=True, text=True,
                              errors="replace")
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout or "").rstrip().splitlines()[-8:])
            raise RuntimeError(f"command {command!r} exited with status {proc.returncode}:\n{tail}")
        try:
            body = out.read_text(encoding="utf-8", errors="replace") if "{out}" in command else proc.stdout
            return formats.parse(formats.load_json(body), fmt)
        except OSError as exc:
            raise RuntimeError(f"command {command!r} wrote no {{out}} file ({exc.strerror})") from None
        except formats.FormatError as exc:
            raise RuntimeError(f"command {command!r}: {exc}") from None


class CommandConvention:
    """A configured command that prints its own measurements (see the module docstring)."""

    name = "command"
    looked_for = "the benchmarks the configured `command` prints"
    options: tuple[str, ...] = ("command", "command_format")

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """The revision's root when ``command`` is configured."""
        return Suite(self.name, ".") if getattr(cfg, "command", "") else None

    def collect(self, directory: Path, options: dict) -> dict:
        """Run the command once (worker side) and list every benchmark it reports."""
        command = options.get("command") or ""
        if not command:
            return listing(errors=[{"file": "command", "error": "suite = \"command\" needs a `command` to run"}])
        try:
            found = run_command(command, options.get("command_format") or "auto")
        except RuntimeError as exc:
            return listing(errors=[{"file": "command", "error": str(exc)}])
        return listing([{"name": r.name, "file": None, "func": r.name, "params": dict(r.params), "family": r.family,
                         "suite": self.name, "measures": "self", "group": GROUP, "unit": r.unit,
                         "direction": r.direction} for r in found])

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        """A ``measure`` that runs the command once and returns every benchmark's reading."""
        command, fmt = options.get("command") or "", options.get("command_format") or "auto"
        if not command:
            raise LookupError("no `command` is configured")

        def measure() -> Mapping[str, Reading]:
            return {r.name: Reading(r.values, r.unit, r.direction) for r in run_command(command, fmt)}

        return Prepared(measure=measure)


CONVENTION = CommandConvention()
