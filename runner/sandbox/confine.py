"""The kernel's side of :mod:`runner.sandbox.limits` (shell): what this machine offers (cgroups this
process may make children in, the runner user's processes), the sandbox's cgroups made and
removed, the process tree attached to them and its rlimits set, the kernel's counters read after,
and every process of the sandbox killed (at the deadline, and at the end).

A leaf of the engine beside :mod:`runner.sandbox.bubblewrap`; :mod:`runner.sandbox.limits` decides,
this module does what it decided. Where a cgroup cannot be made after all (a read-only or
non-delegated hierarchy that looked writable), the limits fall back to the rlimits (a retry
mechanic).
"""

from __future__ import annotations

import os
import signal
import stat
import time
import uuid
from pathlib import Path
from typing import Callable

from .limits import (PROGRESS_BYTES, PROGRESS_FILE, Enforcement, Hits, Limits, Offers,
                     cgroup_parents, counter, enforcement, limit_hit, names_a_benchmark)


#: Bytes free under which the scratch tmpfs counts as full.
FULL = 1 << 20


def memory_total() -> int:
    """This machine's memory in bytes (``MemTotal`` of ``/proc/meminfo``)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _read(path: str | Path) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def _threads_of(uid: int) -> int:
    """The tasks (threads: RLIMIT_NPROC counts them) whose real user is ``uid``."""
    total = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            status = dict(line.split(":", 1) for line in _read(f"/proc/{entry.name}/status")
                          .splitlines() if ":" in line)
            if status.get("Uid", "").split()[:1] == [str(uid)]:
                total += int(status.get("Threads", "1").strip() or 1)
    return total


def _sized_tmpfs(bwrap: str) -> bool:
    """Whether ``bwrap --help`` lists ``--size`` (a tmpfs of a set size)."""
    import subprocess

    try:
        shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in shown.stdout + shown.stderr


def read_progress(out_dir: Path) -> str:
    """The compare's progress record under ``out_dir``
    (:data:`runner.sandbox.limits.PROGRESS_FILE`): at most
    :data:`runner.sandbox.limits.PROGRESS_BYTES` of it, '' when there is none. The sandbox wrote
    there: every folder is opened without following a link, the file too (``O_NOFOLLOW``), never
    waited on (``O_NONBLOCK``: a FIFO) and read only when it is a regular file."""
    *folders, name = PROGRESS_FILE.split("/")
    opened: list[int] = []
    try:
        opened.append(os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW))
        for folder in folders:
            opened.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                  dir_fd=opened[-1]))
        opened.append(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=opened[-1]))
        if not stat.S_ISREG(os.fstat(opened[-1]).st_mode):
            return ""
        return os.read(opened[-1], PROGRESS_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        for fd in opened:
            os.close(fd)


def offers(drop_to: tuple[int, int] | None, bwrap: str = "bwrap") -> Offers:
    """What this machine offers the sandbox's limits (:class:`runner.sandbox.limits.Offers`); the
    sandbox runs as ``drop_to`` (root mode) or as this process's user (None)."""
    v2, v1 = cgroup_parents(_read("/proc/self/cgroup"), _read("/proc/self/mountinfo"))
    v2_offer = None
    if v2 is not None and os.access(v2, os.W_OK):
        v2_offer = (v2, frozenset(_read(Path(v2) / "cgroup.subtree_control").split()))
    v1_offer = tuple((name, folder) for name, folder in sorted(v1.items())
                     if os.access(folder, os.W_OK))
    users = 0 if drop_to is not None else _threads_of(os.getuid())
    return Offers(v2=v2_offer, v1=v1_offer, user_processes=users, sized_tmpfs=_sized_tmpfs(bwrap))


class Confinement:
    """The sandbox's limits, applied: ``with Confinement(limits, offers) as c``, start the
    sandbox with ``preexec_fn=c.attach`` (in the child, before it runs bubblewrap), call
    :meth:`kill` at the deadline, read :meth:`hits` after; leaving removes the cgroups."""

    def __init__(self, limits: Limits, offered: Offers, progress: Callable[[], str] = str):
        self.limits = limits
        self.offered = offered
        self.plan: Enforcement = enforcement(limits, offered)
        self.folders: list[Path] = []
        self.scratch_full = False
        #: reads the compare's progress record (:func:`read_progress`); ``seen``: what it said
        #: at the first look that found a limit reached (None: none found while it ran)
        self.progress = progress
        self.seen: str | None = None
        #: the sandbox's /tmp, held open once seen: looked at after the sandbox ended too
        self.scratch_fd: int | None = None

    def __enter__(self) -> "Confinement":
        try:
            for parent, files in self.plan.cgroups:
                folder = Path(parent) / f"perfgate-sandbox-{uuid.uuid4().hex[:12]}"
                folder.mkdir()
                self.folders.append(folder)
                for name, value in files:
                    if name != "memory.swap.max" or (folder / name).exists():
                        (folder / name).write_text(value)
        except OSError:  # the hierarchy refused after all: the rlimits instead
            self._remove()
            self.plan = enforcement(self.limits, Offers(user_processes=self.offered.user_processes,
                                                        sized_tmpfs=self.offered.sized_tmpfs))
        return self

    def __exit__(self, *exc) -> None:
        self._remove()

    def attach(self) -> None:
        """In the sandbox's first process, before it runs anything: join the cgroups, set the
        rlimits (never above a hard limit already lower)."""
        import resource

        for folder in self.folders:
            with open(folder / "cgroup.procs", "w", encoding="ascii") as procs:
                procs.write("0")
        for name, value in self.plan.rlimits:
            which = getattr(resource, f"RLIMIT_{name}")
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))

    def kill(self) -> None:
        """SIGKILL every process in the sandbox's cgroups (``cgroup.kill`` where the kernel has
        it; otherwise until none is left, for up to 10 s: a fork bomb forks while it is killed)."""
        for folder in self.folders:
            if (folder / "cgroup.kill").exists():
                try:
                    (folder / "cgroup.kill").write_text("1")
                    continue
                except OSError:
                    pass
            end = time.monotonic() + 10
            while time.monotonic() < end:
                pids = [int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit()]
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.05)

    def watch(self, pid: int | None = None) -> bool:
        """A look while the sandbox runs (``pid``: bubblewrap's, else every process of the
        cgroups): note a full scratch tmpfs (seen through ``/proc/PID/root``), and what the
        compare was doing when a limit was first found reached (a benchmark that meets ENOSPC or
        the OOM killer fails, and the compare goes on to others); True once the pids controller
        refused a fork (the step is then ended: see :class:`runner.sandbox.limits.Hits`)."""
        pids = [pid] if pid is not None else [
            int(p) for folder in self.folders for p in _read(folder / "cgroup.procs").split()]
        for each in pids[:64]:
            self._hold_scratch(each)
        self._look_at_scratch()
        refused = self._refused()
        if self.seen is None and limit_hit(self.limits, Hits(
                pids_refused=refused, oom_kills=self._oom_kills(),
                scratch_full=self.scratch_full), "") is not None:
            self.seen = self.progress()
        return refused > 0

    def _hold_scratch(self, pid: int) -> None:
        """Hold the sandbox's ``/tmp`` open, seen through ``/proc/PID/root``: a tmpfs no larger
        than the scratch's, not the runner's own ``/tmp`` (bubblewrap's view before it mounted
        the sandbox's). Held, the tmpfs and its files outlive the sandbox's mount namespace, so
        a benchmark that filled it in the step's last second is still seen full after."""
        if self.scratch_fd is not None or self.plan.tmpfs_size is None:
            return
        try:
            fd = os.open(f"/proc/{pid}/root/tmp", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return
        fs = os.fstatvfs(fd)
        if (os.fstat(fd).st_dev != os.stat("/tmp").st_dev
                and fs.f_blocks * fs.f_frsize <= self.plan.tmpfs_size):
            self.scratch_fd = fd
        else:
            os.close(fd)

    def _look_at_scratch(self) -> None:
        """Note the scratch full (less than :data:`FULL` left) when it is."""
        if self.scratch_fd is not None:
            fs = os.fstatvfs(self.scratch_fd)
            self.scratch_full = self.scratch_full or fs.f_bavail * fs.f_frsize < FULL

    def _refused(self) -> int:
        return sum(counter(_read(folder / "pids.events"), "max") for folder in self.folders)

    def _oom_kills(self) -> int:
        return sum(counter(_read(folder / "memory.events"), "oom_kill")
                   + counter(_read(folder / "memory.oom_control"), "oom_kill")
                   for folder in self.folders)

    def hits(self, deadline_passed: bool, stderr_tail: tuple[str, ...]) -> Hits:
        """The kernel's counters of the sandbox's cgroups, with the clock's and the step's say
        (its last lines) and the progress record when a limit was first found reached (else
        as the step left it; none for a scratch found full only after the step)."""
        self._look_at_scratch()  # the last look: the sandbox has ended, its tmpfs is held
        # a scratch first seen full now was filled after the last look: the record says when
        # only if it names a benchmark (the compare's last names the one a limit failed), not
        # once it has moved on to the compare's end
        progress = self.seen if self.seen is not None else self.progress()
        if self.seen is None and self.scratch_full and not names_a_benchmark(progress):
            progress = ""
        return Hits(deadline_passed=deadline_passed, pids_refused=self._refused(),
                    oom_kills=self._oom_kills(), stderr_tail=stderr_tail,
                    scratch_full=self.scratch_full, progress=progress)

    def _remove(self) -> None:
        """Kill what is left, then remove the cgroups (a cgroup goes once its last process has
        exited: retried for up to 10 s) and let the sandbox's tmpfs go."""
        self.kill()
        if self.scratch_fd is not None:
            os.close(self.scratch_fd)
            self.scratch_fd = None
        end = time.monotonic() + 10
        while self.folders and time.monotonic() < end:
            for folder in list(self.folders):
                try:
                    folder.rmdir()
                    self.folders.remove(folder)
                except FileNotFoundError:
                    self.folders.remove(folder)
                except OSError:
                    time.sleep(0.05)
