"""Parent side of the workers: start, talk to, time out and restart one worker per revision.

The parent never lets two workers run at once: every request waits for its response before
the next request goes out, to either worker. A worker that crashes (EOF), hangs past the
timeout (killed) or answers garbage raises :class:`WorkerFailure`; the next request starts a
fresh worker, so the run goes on with the other benchmarks.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from .child_env import child_environment
from .revisions import Revision

_RUNNER_PARENT = str(Path(__file__).resolve().parents[1])


class WorkerFailure(Exception):
    """The worker died, hung or broke the protocol; ``str()`` says how, with the log's last lines."""


class WorkerProcess:
    """One revision's worker subprocess.

    Args:
        rev: the revision (its worktree is the working directory, its python runs the worker).
        device: ``auto`` | ``cpu`` | ``cuda``.
        log_path: the worker's standard error (benchmark prints, tracebacks) is appended here.
        timeout: default seconds to wait for one response.
    """

    def __init__(self, rev: Revision, device: str, log_path: Path, timeout: float):
        self.rev = rev
        self.device = device
        self.log_path = log_path
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self._buf = b""
        self.restarts = 0
        self._ever_started = False

    # -- process ------------------------------------------------------------------------
    def start(self) -> dict:
        cmd = layout_pinned([self.rev.python, "-m", "runner.worker", "--device", self.device])
        cpus = worker_cpus()
        if cpus:
            cmd += ["--cpus", ",".join(map(str, cpus))]
        for p in self.rev.sys_path:
            cmd += ["--sys-path", p]
        env = child_environment()  # an allow-list: no token or credential reaches the benchmarks
        # The worker must import perfgate's own runner package even from a per-revision venv.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_RUNNER_PARENT, env.get("PYTHONPATH")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        # Both sides get the same string-hash seed, so dict/set layouts cannot differ by side.
        env.setdefault("PYTHONHASHSEED", "0")
        # The idle worker's OpenMP threads must not spin: with the default (active) wait policy
        # they keep cores busy after each sample, and the other side's parallel regions stall
        # behind them for whole scheduler time slices. Measured on 2 cores with torch.softmax:
        # sample CV 60-180 % with the default, 15-28 % with PASSIVE (evaluation/RESULTS.md).
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        if cpus:
            env.setdefault("OMP_NUM_THREADS", str(len(cpus)))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=self.rev.path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, env=env)
        self._buf = b""
        self._ever_started = True
        hello = self._read(timeout=max(self.timeout, 120.0))
        if not hello.get("ok"):
            self.stop()
            raise WorkerFailure(f"worker for {self.rev.side} could not start: {hello.get('error')}")
        return hello

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"cmd": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._log.close()

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
            self._log.close()

    # -- protocol -----------------------------------------------------------------------
    def request(self, cmd: str, timeout: float | None = None, **fields) -> dict:
        """Send one request and wait for its response.

        Returns:
            The response dict; ``ok`` False with ``error`` for a benchmark-level failure.

        Raises:
            WorkerFailure: the worker died, timed out (it is killed) or broke the protocol.
        """
        if not self.alive():
            if self.proc is not None:
                self.kill()
            if self._ever_started:
                self.restarts += 1
            self.start()
        line = json.dumps({"cmd": cmd, **fields}).encode() + b"\n"
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except OSError as exc:
            self.kill()
            raise WorkerFailure(f"worker for {self.rev.side} is gone ({exc})") from None
        return self._read(timeout or self.timeout)

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise WorkerFailure(f"timed out after {timeout:g} s (worker killed and restarted)")
                if not sel.select(timeout=left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    code = self.proc.wait()
                    self.proc = None
                    self._log.close()
                    raise WorkerFailure(f"worker exited with status {code}{_describe_signal(code)}\n{self.log_tail()}")
                self._buf += chunk
        finally:
            sel.close()
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            raise WorkerFailure(f"worker broke the protocol: {line[:200]!r}") from None

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of the worker's standard error."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def worker_cpus() -> list[int]:
    """The CPUs both workers are pinned to: the same set for base and head.

    Why: on a VM each vCPU is a host thread whose speed changes by itself (host contention,
    CPU quotas); the scheduler keeps a worker on "its" vCPU, so base and head ran at different
    speeds for seconds at a time — A/A runs on a 2-vCPU VM showed head 1.5x slower than base for
    a whole benchmark. On the same CPUs both sides see the same speed, and pairing cancels it.
    Default: every CPU this process may use except the first (left to the parent and the
    system), or all of them when there are fewer than two. ``PERFGATE_CPUS="2,3"`` chooses the
    set; ``PERFGATE_CPUS=all`` turns pinning off. Returns [] when not pinning.
    """
    choice = os.environ.get("PERFGATE_CPUS", "").strip()
    if choice == "all" or not hasattr(os, "sched_getaffinity"):
        return []
    if choice:
        return sorted({int(c) for c in choice.replace(" ", "").split(",") if c})
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[1:] if len(allowed) >= 2 else allowed


def layout_pinned(cmd: list[str]) -> list[str]:
    """``cmd`` run with address-space layout randomisation off (``setarch -R``), where possible.

    Why: in A/A runs on a 2-core VM, two worker processes running identical code differed by
    up to ±9 % in time per call, consistently for every benchmark of the run — a process-level
    layout effect (Mytkowicz et al., "Producing wrong data without doing anything obviously
    wrong!", ASPLOS 2009) that pairing cannot cancel. With ASLR off both workers get the same
    layout. Set ``PERFGATE_ASLR=1`` to keep randomisation; where ``setarch`` is missing or not
    permitted the command runs unchanged.
    """
    import shutil

    if os.environ.get("PERFGATE_ASLR") == "1" or not sys.platform.startswith("linux"):
        return cmd
    setarch = shutil.which("setarch")
    if setarch is None or not _setarch_works(setarch):
        return cmd
    return [setarch, os.uname().machine, "-R", *cmd]


@functools.lru_cache(maxsize=None)
def _setarch_works(setarch: str) -> bool:
    try:
        return subprocess.run([setarch, os.uname().machine, "-R", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _describe_signal(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f" (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f" (killed by signal {-code})"
    return ""
