"""Run ``perfgate compare`` as a subprocess (thin shell) and say how it ended.

The command line is built by a pure function from the plan; the subprocess's standard error is
echoed (progress shows in the job log) and it runs with the same interpreter
(``sys.executable``, the runner's environment with torch) but not the same environment (see
:func:`run_compare`). Exit status per DESIGN.md (:mod:`runner.errors`): 0 done, 1 a regression
tripped ``--fail-on-regression``, 2 bad input (one line on standard error), 3 internal failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runner.sandbox.child_env import child_environment

from .environment import Plan


def _argv(plan: Plan, command: str, refs: list[str], python: str | None, out_dir: Path | None,
          selection: tuple[str, str | None]) -> list[str]:
    """``python -m runner.cli COMMAND`` with what every command of the action shares: the
    repository, ``refs``, the results folder, the gate's settings file, the benchmarks, the
    ``selection`` flag and its value, the device and the budget."""
    argv = [python or sys.executable, "-m", "runner.cli", command, f"--repo={plan.workspace}", *refs,
            f"--out={out_dir or plan.out_dir}", "--quiet"]
    if plan.config is not None:
        argv.append(f"--config={plan.config}")
    for flag, value in (("--benchmarks", plan.benchmarks), selection, ("--device", plan.device)):
        if value is not None:
            argv.append(f"{flag}={value}")
    return argv


def compare_argv(plan: Plan, base_sha: str, head_sha: str, python: str | None = None,
                 out_dir: Path | None = None) -> list[str]:
    """The ``perfgate compare`` command for ``plan`` at the two resolved SHAs (pure); results go
    to ``out_dir`` (default ``plan.out_dir``; the sandbox's own folder when sandboxed); with
    ``plan.bisect``, :func:`bisect_argv`.

    Every value is one ``--option=value`` item: a PR title like ``-O3`` or
    ``--Fix-everything`` is then the option's value, never read as an option itself.
    """
    if plan.bisect:
        return bisect_argv(plan, base_sha, head_sha, python, out_dir)
    argv = _argv(plan, "compare", [f"--base={base_sha}", f"--head={head_sha}"], python, out_dir,
                 ("--filter", plan.filter))
    argv.append("--no-reports")  # the publish step renders them once, from the validated document
    if plan.threshold is not None:
        argv.append(f"--threshold={plan.threshold!r}")
    if plan.max_time is not None:
        argv.append(f"--max-time={plan.max_time!r}")
    if plan.min_rounds is not None:
        argv.append(f"--min-rounds={plan.min_rounds}")
    if plan.profile is not None:
        argv.append("--profile" if plan.profile else "--no-profile")
    if plan.fail_on_regression:
        argv.append("--fail-on-regression")
    if plan.all_benchmarks:
        argv.append("--all")
    argv += [f"--force-run={name}" for name in plan.force_run]
    if plan.title:
        argv.append(f"--title={plan.title}")
    if plan.body:
        argv.append(f"--body={plan.body}")
    if plan.labels:
        argv.append(f"--labels={','.join(plan.labels)}")
    return argv


def bisect_argv(plan: Plan, good_sha: str, bad_sha: str, python: str | None = None,
                out_dir: Path | None = None) -> list[str]:
    """The ``perfgate bisect`` command of a bisect run (input ``bisect``: the App's runs of kind
    ``bisect``): base is good, head is bad, ``filter`` the benchmark to follow (pure)."""
    argv = _argv(plan, "bisect", [f"--good={good_sha}", f"--bad={bad_sha}"], python, out_dir,
                 ("--benchmark", plan.filter))
    if plan.max_time is not None:
        argv.append(f"--max-time={plan.max_time!r}")
    return argv


@dataclass(frozen=True)
class CompareOutcome:
    """How compare ended: ``status`` (exit code), the last lines of its standard error,
    and the results file (present for status 0 and 1)."""

    status: int
    stderr_tail: tuple[str, ...]
    results_path: Path
    #: why ``run_compare`` killed it: ``"deadline"`` (its ``timeout``), ``"limit"`` (its
    #: ``watch`` saw a limit reached); None when it ended by itself
    stopped: str | None = None

    @property
    def last_error_line(self) -> str:
        for line in reversed(self.stderr_tail):
            if line.strip():
                return line.strip()
        return f"perfgate compare exited with status {self.status}"


def compare_env() -> dict[str, str]:
    """The compare's environment: :func:`runner.sandbox.child_env.child_environment` of this process
    (no token, no step command files), git's own settings kept for perfgate's git calls."""
    return child_environment(isolate_git=False)


#: The longest line echoed whole (bytes); a longer one is echoed in pieces of this size.
MAX_LINE = 16_384


def neutral_line(raw: bytes) -> str:
    """One line of the compare's output as it may reach the job log (pure): decoded, without
    control characters but TAB, and with ``##[`` — the runner's older command syntax, matched
    anywhere in a line — broken by a zero-width space. Workflow commands are switched off while
    the compare runs (:func:`run_compare`); this keeps the older form inert too."""
    from runner.report.escape import one_line

    return one_line(raw.decode("utf-8", "replace").replace("\t", "    ")).replace("##[", "##\u200b[")


#: Seconds the output of a compare killed at its deadline is still read.
GRACE = 10.0
#: Seconds between two looks of ``run_compare``'s ``watch``.
WATCH_EVERY = 1.0


class _Stops:
    """When :func:`run_compare` stops a compare: at its deadline, or when ``watch()`` answers
    True (a limit reached); then ``on_stop()`` and :data:`GRACE` seconds more of reading."""

    def __init__(self, timeout: float | None, watch: Callable[[], bool] | None,
                 on_stop: Callable[[], None] | None):
        import time

        self.now = time.monotonic
        self.end = None if timeout is None else self.now() + timeout
        self.watch, self.on_stop, self.look = watch, on_stop, self.now()
        self.stopped: str | None = None
        self.grace_end: float | None = None

    def over(self, pgid: int) -> bool:
        """Look at the clock (and the watch, once a second); True once the grace is over."""
        now = self.now()
        if self.stopped is None and self.watch is not None and now >= self.look:
            self.look = now + WATCH_EVERY
            self.stopped = "limit" if self.watch() else None
        if self.stopped is None and self.end is not None and now >= self.end:
            self.stopped = "deadline"
        if self.stopped is not None and self.grace_end is None:
            self.grace_end = now + GRACE
            kill_process_group(pgid)
            if self.on_stop is not None:
                self.on_stop()
        return self.grace_end is not None and now >= self.grace_end

    def left(self) -> float | None:
        """Seconds until the next look (None: no clock to look at)."""
        running = self.stopped is None
        times = [t for t in (self.end if running else None, self.grace_end,
                             self.look if running and self.watch is not None else None)
                 if t is not None]
        return max(0.0, min(times) - self.now()) if times else None


def run_compare(argv: list[str], out_dir: Path, timeout: float | None = None,
                env: dict[str, str] | None = None, preexec: Callable[[], None] | None = None,
                on_stop: Callable[[], None] | None = None,
                watch: Callable[[], bool] | None = None) -> CompareOutcome:
    """Run ``argv``; its standard output and error are echoed to ours line by line and the
    error's tail kept.

    The compare runs the pull request's code, so it gets the allow-listed environment
    (``env``, default :func:`compare_env`) and a process group of its own, killed when it ends.
    That alone does not stop a ``setsid`` daemon: the sandbox's PID namespace does
    (:mod:`runner.sandbox.bubblewrap`). What it prints reaches the job log only through this
    function: as whole, terminated lines of at most :data:`MAX_LINE` bytes made inert
    (:func:`neutral_line`), with workflow commands (``::add-mask::``, ``::set-output``) switched off
    for the whole time (``::stop-commands::`` with a token it cannot know), and both streams ended
    with a line break before they are switched on again (a last line without one would otherwise be
    read after the token). ``preexec`` runs in the child before it starts (a new session keyring).

    ``timeout`` is the compare's deadline in seconds (security review P8); ``watch``, asked
    once a second, answers True when a limit was reached (the sandbox's). Then the process group
    is killed and ``on_stop`` called (the sandbox's cgroups killed); what is still written is
    read for :data:`GRACE` seconds; the outcome says why it ``stopped``.
    """
    import secrets

    tail: deque[str] = deque(maxlen=20)
    stops = _Stops(timeout, watch, on_stop)
    resume = secrets.token_hex(16)
    print(f"::stop-commands::{resume}", flush=True)
    try:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=compare_env() if env is None else env, start_new_session=True,
                              preexec_fn=preexec) as proc:
            try:
                _pump({proc.stdout: (sys.stdout, None), proc.stderr: (sys.stderr, tail)},
                      stops, proc.pid)
                status = proc.wait(timeout=None if stops.stopped is None else GRACE)
            finally:
                kill_process_group(proc.pid)
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.write("\n")
            stream.flush()
        print(f"::{resume}::", flush=True)
    return CompareOutcome(status, tuple(tail), out_dir / "results.json", stops.stopped)


def _pump(streams: dict, stops: "_Stops", pid: int) -> None:
    """Echo ``streams`` (``{pipe: (our stream, kept tail or None)}``) line by line until both
    end or ``stops`` says the compare is over (a part of :func:`run_compare`)."""
    import selectors

    with selectors.DefaultSelector() as selector:
        pending: dict = {}
        for stream in streams:
            selector.register(stream, selectors.EVENT_READ)
            pending[stream] = b""
        while selector.get_map() and not stops.over(pid):
            for key, _ in selector.select(stops.left()):
                chunk = os.read(key.fileobj.fileno(), 65_536)
                out, kept = streams[key.fileobj]
                if not chunk:
                    selector.unregister(key.fileobj)
                    if pending[key.fileobj]:
                        _echo(pending[key.fileobj], out, kept)
                    continue
                *lines, rest = (pending[key.fileobj] + chunk).split(b"\n")
                while len(rest) > MAX_LINE:
                    lines.append(rest[:MAX_LINE])
                    rest = rest[MAX_LINE:]
                pending[key.fileobj] = rest
                for line in lines:
                    _echo(line[:MAX_LINE], out, kept)


def _echo(raw: bytes, out, kept: deque | None) -> None:
    line = neutral_line(raw)
    out.write(line + "\n")
    out.flush()
    if kept is not None:
        kept.append(line)


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process left in group ``pgid`` (gone already: nothing to do)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
