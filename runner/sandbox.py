"""The jail the pull request's code runs in on the runner: bubblewrap, built from an allow-list.

A leaf of the engine beside :mod:`runner.child_env` (the environment of the target's code): the
GitHub Action runs ``perfgate compare`` in it (``action/__main__.py``) and ``perfgate doctor``
says whether it can run on this machine (:func:`probe`).

Why (security review 2026-12-01, N1): the compare step, the publish step, ``actions/upload-
artifact`` and ``actions/checkout``'s post step are steps of one job. They share the runner's OS
user, its file system, the step command files under ``RUNNER_TEMP`` (``GITHUB_ENV``,
``GITHUB_PATH``: what one step appends there changes every later step) and the runner's Python.
A clean environment for the compare is not enough: code that runs in it could leave a daemon
reading later steps' ``/proc/<pid>/environ``, plant ``BASH_ENV`` or a ``python3`` first on
``PATH`` for them, a ``.pth`` in the interpreter, a hook in the clone's ``.git`` for checkout's
post step, or a symbolic link in the artifact folder to the runner's own credentials.

So ``perfgate compare`` — and with it the PR's ``install`` command and benchmarks — runs under
`bubblewrap <https://github.com/containers/bubblewrap>`_ (the unprivileged sandbox Flatpak uses),
in namespaces of its own:

- **file system from an allow-list** (:func:`bwrap_argv`): the OS (``/usr``, ``/etc``, ...),
  the interpreter's prefixes, perfgate's own code, the target's clone and the gate's settings,
  all read-only; writable only a fresh scratch folder (``/tmp``, ``HOME``) and the sandbox's own
  results folder; the root itself read-only. ``RUNNER_TEMP`` (the step command files), the
  runner's folder (``.credentials``, ``.runner``), the home folder (``~/.ssh``, ``~/.docker``,
  ``~/.git-credentials``), ``/run`` and ``/var`` are simply not there. Nothing is "removed":
  what is not listed does not exist inside.
- **process isolation**: a PID namespace (other processes are invisible, ``/proc`` is its own;
  when the compare ends the kernel kills every process left in it — ``setsid`` daemons too),
  a user namespace with ``no_new_privs`` (``sudo`` and other set-uid programs cannot raise
  privileges), IPC and UTS namespaces, a new terminal session (no ``TIOCSTI``), and no further
  user namespaces inside.
- GPUs stay reachable: the ``/dev/nvidia*``, ``/dev/dri`` and ``/dev/kfd`` nodes are bound into
  the sandbox's own ``/dev``.

What leaves the sandbox is taken out by :func:`launder`: regular files only, copied into a
folder the sandbox never saw (no symbolic links, no hard links, no devices), so nothing a later
step reads or writes there can point outside it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

#: The operating system, read-only in every sandbox (those that exist on this machine).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")

#: Device nodes of GPUs (NVIDIA, the DRM render nodes, AMD's KFD) bound into the sandbox's /dev.
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri", "/dev/kfd")

#: Where the sandbox's home folder appears inside (its content is the scratch folder's ``home``).
SANDBOX_HOME = "/home/perfgate-sandbox"

#: Sandbox modes of the action's ``sandbox`` input.
MODES = ("bwrap", "none")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here; the message says why and what to do."""


@dataclass(frozen=True)
class SandboxSpec:
    """What one sandbox shows.

    Attributes:
        read_only: absolute paths bound read-only at the same path (missing ones are skipped).
        writable: absolute paths bound writable at the same path (they must exist).
        devices: device nodes or folders bound at the same path (missing ones are skipped).
        scratch: a fresh folder of the caller's; its ``tmp`` and ``home`` sub-folders become the
            sandbox's ``/tmp`` and :data:`SANDBOX_HOME`.
        chdir: the working directory inside.
    """

    read_only: tuple[str, ...]
    writable: tuple[str, ...]
    scratch: str
    chdir: str
    devices: tuple[str, ...] = field(default=())


def bwrap_argv(spec: SandboxSpec, command: Sequence[str], bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line that runs ``command`` inside ``spec`` (pure).

    Later mounts go over earlier ones, so the order is: the empty root, the scratch folder's
    ``/tmp`` and home (first, so that a listed path under ``/tmp`` — a runner's temporary
    folder — stays visible over it), the OS, the read-only paths, the devices, the writable
    paths, then the root made read-only. Options follow bubblewrap 0.8 (``bwrap --help``);
    ``--disable-userns`` needs it.
    """
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--disable-userns", "--cap-drop", "ALL",
            "--hostname", "perfgate-sandbox", "--proc", "/proc", "--dev", "/dev",
            "--bind", str(Path(spec.scratch) / "tmp"), "/tmp",
            "--bind", str(Path(spec.scratch) / "home"), SANDBOX_HOME]
    for path in SYSTEM_PATHS:
        argv += ["--ro-bind-try", path, path]
    for path in spec.read_only:
        argv += ["--ro-bind-try", path, path]
    for path in spec.devices:
        argv += ["--dev-bind-try", path, path]
    for path in spec.writable:
        argv += ["--bind", path, path]
    argv += ["--remount-ro", "/", "--chdir", spec.chdir, "--", *command]
    return argv


def sandbox_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` (already allow-listed) with the sandbox's own home and temporary folders (pure)."""
    inside = dict(env)
    inside.update(HOME=SANDBOX_HOME, TMPDIR="/tmp", TMP="/tmp", TEMP="/tmp")
    inside.pop("XDG_RUNTIME_DIR", None)  # /run is not inside
    inside.pop("XDG_CACHE_HOME", None)   # the runner's cache folder is not inside: ~/.cache in the sandbox's home
    return inside


def interpreter_paths(executable: str | None = None) -> tuple[str, ...]:
    """The folders an interpreter needs to run (read-only): its prefixes (a venv's and its base
    interpreter's) and the folder of the executable itself (resolved through symbolic links)."""
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    exe = Path(executable or sys.executable)
    paths |= {str(exe.parent), str(exe.resolve().parent)}
    return tuple(sorted(p for p in paths if p))


def perfgate_source_paths() -> tuple[str, ...]:
    """The folder perfgate's packages (``runner``, ``action``, ``bot``: one distribution) are
    imported from: an editable install's checkout, or site-packages (already among
    :func:`interpreter_paths` then)."""
    return (str(Path(__file__).resolve().parent.parent),)


def gpu_devices(globs: Iterable[str] = GPU_DEVICE_GLOBS) -> tuple[str, ...]:
    """The GPU device nodes present on this machine (:data:`GPU_DEVICE_GLOBS`)."""
    import glob

    return tuple(sorted({p for pattern in globs for p in glob.glob(pattern)}))


def resolved_etc_links(names: Iterable[str] = ("/etc/resolv.conf", "/etc/hosts", "/etc/localtime")) -> tuple[str, ...]:
    """Targets outside ``/etc`` of the usual ``/etc`` symbolic links (``resolv.conf`` into
    ``/run/systemd/resolve``), so name resolution works inside without binding ``/run``."""
    out = []
    for name in names:
        path = Path(name)
        if path.is_symlink():
            target = path.resolve()
            if target.exists() and not str(target).startswith("/etc/"):
                out.append(str(target))
    return tuple(out)


def probe(bwrap: str = "bwrap", timeout: float = 30) -> None:
    """Check that bubblewrap can create this module's namespaces here, with a trivial command.

    Raises:
        SandboxUnavailable: bubblewrap is not installed, or it fails (user namespaces disabled,
            a container's seccomp profile refusing ``unshare``); the message gives its error.
    """
    path = shutil.which(bwrap)
    if path is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed on this runner")
    with _scratch_for_probe() as scratch:
        spec = SandboxSpec(read_only=(), writable=(), scratch=scratch, chdir="/")
        try:
            proc = subprocess.run(bwrap_argv(spec, ["/bin/sh", "-c", "exit 0"], bwrap=path), capture_output=True,
                                  text=True, timeout=timeout, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"bubblewrap did not run: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise SandboxUnavailable(f"bubblewrap cannot create its namespaces here: {detail}")


class _scratch_for_probe:
    def __enter__(self) -> str:
        import tempfile

        self.path = tempfile.mkdtemp(prefix="perfgate-sandbox-probe-")
        make_scratch(Path(self.path))
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def make_scratch(folder: Path) -> Path:
    """Create ``folder`` with the ``tmp`` and ``home`` sub-folders a :class:`SandboxSpec` needs
    (mode 0700: nobody else on the runner reads what the pull request's code writes there)."""
    for sub in ("", "tmp", "home"):
        (folder / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class Laundered:
    """What :func:`launder` copied (``files``, ``bytes``) and what it left behind, with why."""

    files: int
    bytes: int
    skipped: tuple[str, ...]


def launder(source: Path, target: Path, *, max_bytes: int = 2 << 30) -> Laundered:
    """Copy the regular files under ``source`` (written by untrusted code) into ``target``.

    Nothing is followed: symbolic links, devices, FIFOs and sockets are skipped, a file with
    more than one hard link is skipped, every file is opened with ``O_NOFOLLOW`` and checked
    after opening (``fstat``) to be the regular file that was listed. Folders are created fresh
    under ``target`` (which must not exist yet or be empty). Copying stops at ``max_bytes`` in
    all (the rest is listed as skipped).

    Returns: counts and the skipped paths (relative to ``source``) with the reason.
    """
    target.mkdir(parents=True, exist_ok=True)
    files = total = 0
    skipped: list[str] = []
    for folder, dirs, names in os.walk(source, followlinks=False):
        rel_folder = Path(folder).relative_to(source)
        for d in list(dirs):
            if os.path.islink(os.path.join(folder, d)):
                skipped.append(f"{rel_folder / d} (a symbolic link)")
                dirs.remove(d)
            else:
                (target / rel_folder / d).mkdir(exist_ok=True)
        for name in names:
            rel = rel_folder / name
            why = _copy_one(Path(folder) / name, target / rel, max_bytes - total)
            if isinstance(why, str):
                skipped.append(f"{rel} ({why})")
            else:
                files += 1
                total += why
    return Laundered(files, total, tuple(skipped))


def _copy_one(src: Path, dst: Path, room: int) -> int | str:
    """Copy one listed file; returns its size, or the reason it was skipped."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return "a symbolic link" if os.path.islink(src) else f"unreadable: {exc.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_nlink > 1:
            return "a hard link"
        if info.st_size > room:
            return "over the size limit"
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "rb", closefd=False) as reader, os.fdopen(out, "wb") as writer:
            shutil.copyfileobj(reader, writer)
        return info.st_size
    finally:
        os.close(fd)
