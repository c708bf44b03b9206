"""Parent side of the workers: one fork server per revision, and its current worker child.

The parent never lets two workers run at once: every request waits for its response before
the next request goes out, to either side. Each side has a fork server (:mod:`runner.worker`)
that has imported torch and, where that is safe, the benchmark files; every benchmark and every
process pair of a benchmark runs in a fresh child forked from it (:meth:`WorkerProcess.new_child`),
so no benchmark inherits another's process state. A child that crashes, hangs past the timeout
(its process group is killed) or answers garbage raises :class:`WorkerFailure`; the next request
forks a fresh child, so the run goes on with the other benchmarks. A server that dies is started
again (and preloads again) on the next request.
"""

from __future__ import annotations

import json
import os
import selectors
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..machine import conditions, layouts
from ...sandbox.child_env import child_environment
from ...errors import UserError
from ...protocol import ListRequest, read_reply
from ..machine.layouts import layout_pinned
from ..revisions import Revision

_RUNNER_PARENT = str(Path(__file__).resolve().parents[3])

#: Seconds to wait for the server to report a child's exit after ``quit`` or a kill.
_EXIT_WAIT = 15.0


class WorkerFailure(Exception):
    """The worker died, hung or broke the protocol; ``str()`` says how, with the log's last lines."""


class WorkerProcess:
    """One revision's fork server and its current child.

    Args:
        rev: the revision (its worktree is the working directory, its python runs the worker).
        device: ``auto`` | ``cpu`` | ``cuda``.
        log_path: the worker's standard error (benchmark prints, tracebacks) is appended here.
        timeout: default seconds to wait for one response.
        env: the complete environment of the server (and so of its children): by default the
            allow-listed parent variables (:func:`runner.sandbox.child_env.child_environment`, so no
            token or credential reaches the benchmarks); :func:`start_workers` adds the conditions.
        cpus: CPUs to pin the server (and so its children) to; [] for no pinning.
    """

    def __init__(self, rev: Revision, device: str, log_path: Path, timeout: float, *,
                 env: dict[str, str] | None = None, cpus: list[int] | None = None, layout_seed: int = 0):
        self.rev = rev
        self.device = device
        self.log_path = log_path
        self.timeout = timeout
        self.env = dict(child_environment() if env is None else env)
        self.cpus = list(cpus or [])
        self.server: subprocess.Popen | None = None
        self.child_pid: int | None = None
        self.children_started = 0
        self.preload_dir: str | None = None
        self.preload_suite: str | None = None
        self.preload_options: dict = {}
        self.preload_refused: list[str] = []
        self._buf = b""
        self._log = None
        #: the layout whose server is current (runner.pipeline.machine.layouts), the others' parked
        #: ``(server, buffer, log)``, and this side's seed for their pads
        self.layout = 0
        self._parked: dict[int, tuple] = {}
        self.layout_seed = layout_seed
        #: this side's Triton cache for the compare, shared by its children, never the other
        #: side's (runner.worker.caches); made when a server starts, removed by :meth:`close`
        self.triton_cache: str | None = None
        #: told ``(cmd, side, benchmark)`` of each request sent (a compare's progress record)
        self.on_request = lambda cmd, side, name: None

    # -- the fork server ------------------------------------------------------------------
    def _start_server(self) -> None:
        cmd = layout_pinned([self.rev.python, "-m", "runner.worker", "--device", self.device])
        if self.cpus:
            cmd += ["--cpus", ",".join(map(str, self.cpus))]
        for p in self.rev.sys_path:
            cmd += ["--sys-path", p]
        if self.triton_cache is None:
            self.triton_cache = tempfile.mkdtemp(prefix=f"perfgate-triton-{self.rev.side}-")
        cmd += ["--triton-cache", self.triton_cache]
        env = {**self.env, **layouts.layout_env(self.layout, self.layout_seed)}
        # The worker must import perfgate's own runner package even from a per-revision venv.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_RUNNER_PARENT, env.get("PYTHONPATH")]))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.server = subprocess.Popen(cmd, cwd=self.rev.path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=self._log, env=env, start_new_session=True)
        self._buf = b""
        hello = self._read(max(self.timeout, 120.0), expect_child=False)
        if not hello.get("ok"):
            self.close()
            raise WorkerFailure(f"worker for {self.rev.side} could not start: {hello.get('error')}")
        if self.preload_dir and not self.preload_refused:
            self._preload(self.preload_dir, self.preload_suite, self.preload_options)

    def _server_alive(self) -> bool:
        return self.server is not None and self.server.poll() is None

    def _send(self, obj: dict) -> None:
        self.on_request(obj.get("cmd"), self.rev.side, obj.get("name"))
        try:
            self.server.stdin.write(json.dumps(obj).encode() + b"\n")
            self.server.stdin.flush()
        except OSError as exc:
            self._server_gone()
            raise WorkerFailure(f"worker for {self.rev.side} is gone ({exc})") from None

    def _preload(self, directory: str, suite: str | None, options: dict | None = None) -> dict:
        self._send(ListRequest(directory, suite, dict(options or {}), cmd="preload").to_json())
        resp = self._read(max(self.timeout, 120.0), expect_child=False)
        if resp.get("ok") and not resp.get("fork_safe", True):
            # The benchmark files started threads or CUDA on import: a child forked from this
            # server could hang. Start a clean server; children import the files themselves.
            self.preload_refused = list(resp.get("hazards") or ["unsafe"])
            self._server_gone()
            self._start_server()
        return resp

    def preload(self, directory: str, suite: str | None = None, options: dict | None = None) -> dict:
        """Import the benchmark files under ``directory`` into the fork server, once, and list them
        by the convention ``suite`` (a name of :data:`runner.conventions.REGISTRY`; None = perfgate's),
        with ``options`` the configuration keys that convention asks for.

        Returns:
            The worker's listing ``{ok, benchmarks, errors, skipped, fork_safe, hazards}``; after an unsafe
            import (``fork_safe`` false) the server has been restarted without the files.

        Raises:
            WorkerFailure: the server died or timed out while importing.
        """
        if not self._server_alive():
            self._start_server()
        self.end_child()
        self.preload_dir, self.preload_suite, self.preload_options = directory, suite, dict(options or {})
        return self._preload(directory, suite, options)

    def use_layout(self, layout: int) -> float:
        """Make ``layout``'s fork server current (:mod:`runner.pipeline.machine.layouts`), starting
        it (and preloading) when it is not running; the others keep running, parked. Returns the
        seconds a start took (0 when it was running)."""
        if layout != self.layout:
            self.end_child()
            self._parked[self.layout] = (self.server, self._buf, self._log)
            self.server, self._buf, self._log = self._parked.pop(layout, (None, b"", None))
            self.layout = layout
        t0 = time.monotonic()
        return time.monotonic() - t0 if self._ensure_server() else 0.0

    def _ensure_server(self) -> bool:
        """Start the current layout's server when it is not running (a dead one is cleared first);
        True when one was started."""
        if self._server_alive():
            return False
        if self.server is not None:
            self._server_gone()
        self._start_server()
        return True

    # -- children -------------------------------------------------------------------------
    def new_child(self) -> dict:
        """End the current child (if any) and fork a fresh one; returns its hello."""
        self.end_child()
        self._ensure_server()
        self._send({"cmd": "fork"})
        hello = self._read(max(self.timeout, 120.0), expect_child=True)
        if not hello.get("ok"):
            if hello.get("fatal"):
                self._await_exit()  # the child reported why it cannot work, then exits
            raise WorkerFailure(f"worker for {self.rev.side} could not start: {hello.get('error')}")
        self.child_pid = int(hello["pid"])
        self.children_started += 1
        return hello

    def end_child(self) -> None:
        """Let the current child quit and wait for it, then kill what is left of its process group
        (processes the benchmark started and left behind must not outlive it)."""
        if self.child_pid is None:
            return
        if self._server_alive():
            try:
                self._send({"cmd": "quit"})
                if not self._await_exit():
                    self._kill_child()
                    self._await_exit()
            except WorkerFailure:
                pass
        self._kill_child()
        self.child_pid = None

    def request(self, cmd: str, timeout: float | None = None, **fields) -> dict:
        """Send one request to the current child (forking one if there is none) and wait.

        Returns:
            The response dict; ``ok`` False with ``error`` for a benchmark-level failure.

        Raises:
            WorkerFailure: the child died, timed out (its process group is killed) or broke the
                protocol; the next request forks a fresh child.
        """
        if self.child_pid is None:
            self.new_child()
        self._send({"cmd": cmd, **fields})
        return self._read(timeout or self.timeout, expect_child=True)

    def close(self) -> None:
        """End the child and every layout's fork server, and whatever is left in their sessions;
        remove the side's Triton cache."""
        self.end_child()
        self._close_server()
        for server, buf, log in self._parked.values():
            self.server, self._buf, self._log = server, buf, log
            self._close_server()
        self._parked.clear()
        if self.triton_cache is not None:
            shutil.rmtree(self.triton_cache, ignore_errors=True)
            self.triton_cache = None

    def _close_server(self) -> None:
        if self.server is not None:
            if self.server.poll() is None:
                try:
                    self._send({"cmd": "quit"})
                    self.server.wait(timeout=5)
                except (WorkerFailure, subprocess.TimeoutExpired):
                    pass
            self._server_gone()

    # -- plumbing -------------------------------------------------------------------------
    def _kill_child(self) -> None:
        """SIGKILL the current child's process group (the child leads it; its leftovers share it)."""
        if self.child_pid is None:
            return
        for kill in (lambda: os.killpg(self.child_pid, signal.SIGKILL), lambda: os.kill(self.child_pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                continue

    def _server_gone(self) -> None:
        """Kill the server's whole process group (what its imports started too) and forget it."""
        if self.server is not None:
            try:
                os.killpg(self.server.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                if self.server.poll() is None:
                    self.server.kill()
            self.server.wait()
        self._kill_child()
        self.server = None
        self.child_pid = None
        self._buf = b""
        if self._log is not None:
            self._log.close()
            self._log = None

    def _await_exit(self) -> bool:
        """Read until the server reports the current child's exit; False on time-out."""
        deadline = time.monotonic() + _EXIT_WAIT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                msg = self._read_line(left)
            except WorkerFailure:
                return True  # the server is gone, and its child with it
            if msg is None:
                return False
            if "child_exited" in msg:
                return True

    def _read_line(self, timeout: float) -> dict | None:
        """The next JSON line from the server's output; None on time-out; lines that are not JSON
        (the tail of a killed child's half-written response) are skipped.

        Raises:
            WorkerFailure: the server exited (end of output).
        """
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.server.stdout, selectors.EVENT_READ)
        try:
            while True:
                while b"\n" in self._buf:
                    line, self._buf = self._buf.split(b"\n", 1)
                    try:  # an empty line is not JSON either
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict):
                        return msg
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if not sel.select(timeout=left):
                    continue
                chunk = os.read(self.server.stdout.fileno(), 65536)
                if not chunk:
                    code = self.server.wait()
                    tail = self.log_tail()
                    self._server_gone()
                    raise WorkerFailure(f"worker exited with status {code}{_describe_signal(code)}\n{tail}")
                self._buf += chunk
        finally:
            sel.close()

    def _read(self, timeout: float, *, expect_child: bool) -> dict:
        """The response to the request just sent. A child's exit reported instead means it died."""
        msg = self._read_line(timeout)
        if msg is None:
            if expect_child and self.child_pid is not None:
                self._kill_child()
                self._await_exit()
                self.child_pid = None
            else:
                self._server_gone()
            raise WorkerFailure(f"timed out after {timeout:g} s (worker killed and restarted)")
        if "child_exited" in msg:
            code = int(msg.get("status") or 0)
            self.child_pid = None
            raise WorkerFailure(f"worker exited with status {code}{_describe_signal(code)}\n{self.log_tail()}")
        return msg

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of the worker's standard error."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def ask(worker: "WorkerProcess", message, reply: type, timeout: float | None = None):
    """``worker.request`` with a typed ``message`` (:mod:`runner.protocol`): the ``reply`` type read
    from the answer, or its :class:`runner.protocol.Failure` (:func:`runner.protocol.read_reply`).

    Raises:
        WorkerFailure: as :meth:`WorkerProcess.request`.
    """
    data = message.to_json()
    return read_reply(worker.request(data.pop("cmd"), timeout=timeout, **data), reply)


def _describe_signal(code: int) -> str:
    if code < 0:
        try:
            return f" (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f" (killed by signal {-code})"
    return ""


def start_workers(revs: dict[str, Revision], cfg, log_dir: Path) -> tuple[dict[str, "WorkerProcess"], dict]:
    """One :class:`WorkerProcess` per side, all under the same conditions
    (:mod:`runner.pipeline.machine.conditions`).

    Args:
        revs: ``{side: Revision}``.
        cfg: the run's :class:`runner.config.Config` (device, timeout, cpus, threads, allocator,
            cuda_alloc_conf).
        log_dir: ``worker-<side>.log`` files go here.

    Returns:
        ``(workers, conditions)`` with ``conditions`` the ``environment.worker`` record
        (:func:`runner.pipeline.machine.conditions.describe`). Nothing is started until the first
        request.

    Raises:
        UserError: the configured allocator's library is not installed, or ``cpus`` names CPUs
            this machine does not have.
    """
    try:
        plan = conditions.cpu_plan(os.environ, cfg.cpus, cfg.threads)
        added = conditions.worker_env(os.environ, allocator=cfg.allocator, cuda_alloc_conf=cfg.cuda_alloc_conf,
                                      threads=plan.threads)
    except (conditions.AllocatorNotFound, ValueError) as exc:
        raise UserError(str(exc)) from None
    env = {**child_environment(), **added}  # an allow-list: no token or credential reaches the benchmarks
    # each side draws its own layouts (runner.pipeline.machine.layouts.layout_env)
    workers = {side: WorkerProcess(rev, cfg.device, log_dir / f"worker-{side}.log", cfg.timeout, env=env,
                                   cpus=plan.cpus, layout_seed=secrets.randbits(32))
               for side, rev in revs.items()}
    record = conditions.describe(added, plan, allocator=cfg.allocator, layout_pinned=layout_pinned(["x"]) != ["x"],
                                 isolation=f"a fresh process per benchmark and per process pair, forked from one of "
                                           f"{layouts.LAYOUTS} servers per side, each its own memory layout")
    return workers, record
