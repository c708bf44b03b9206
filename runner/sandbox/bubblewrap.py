"""The jail the pull request's code runs in on the runner: bubblewrap, built from an allow-list.

A leaf of the engine beside :mod:`runner.sandbox.child_env` (the environment of the target's code):
the GitHub Action runs ``perfgate compare`` in it (``action/__main__.py``) and ``perfgate doctor``
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
- **process isolation**: a PID namespace (other processes are invisible, ``/proc`` is its own,
  ``/proc/sys`` read-only; when the compare ends the kernel kills every process left in it —
  ``setsid`` daemons too), ``no_new_privs`` (``sudo`` and other set-uid programs cannot raise
  privileges), IPC and UTS namespaces, a new terminal session (no ``TIOCSTI``), a session
  keyring of its own, and optionally no network (:attr:`SandboxSpec.network`).
- **an unprivileged user**: a runner that runs as an ordinary user gets a user namespace (no
  further ones inside); a runner that runs as **root** (common on GPU machines) does not run
  the code as root: bubblewrap sets up the mounts as root, then ``setpriv`` drops to
  :data:`SANDBOX_UID` with no capabilities before the command starts — a user namespace would
  map the sandbox's root to the host's root, whose file permissions (``/proc/sys``, ``/etc/shadow``)
  it would keep.
- **limits** (:mod:`runner.sandbox.limits`): processes, memory, wall time, and ``/tmp`` with the
  home folder as one tmpfs of a set size (:attr:`SandboxSpec.scratch_size`).
- GPUs stay reachable: the ``/dev/nvidia*``, ``/dev/dri`` and ``/dev/kfd`` nodes are bound into
  the sandbox's own ``/dev``.

What leaves the sandbox is taken out by :func:`runner.sandbox.launder.launder`: regular files only,
copied into a folder the sandbox never saw (no symbolic links, no hard links, no devices), so
nothing a later step reads or writes there can point outside it.
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

from . import seccomp

#: The operating system, read-only in every sandbox (those that exist on this machine).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")

#: What of ``/etc`` the sandbox shows (read-only): name resolution, users, certificates, the
#: dynamic linker, time zone, the GPU stacks' loaders. Not the rest: ``/etc`` holds secrets
#: readable by the runner's user often enough (service units' environments, ``pip.conf`` with an
#: index password, ``/etc/shadow`` for root). A deployment adds more with ``sandbox-paths``.
ETC_PATHS = ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/nsswitch.conf",
             "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
             "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
             "/etc/timezone", "/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/mime.types",
             "/etc/fonts", "/etc/vulkan", "/etc/OpenCL", "/etc/glvnd", "/etc/nvidia", "/etc/machine-id")

#: Device nodes of GPUs (NVIDIA, the DRM render nodes, AMD's KFD) bound into the sandbox's /dev;
#: the nodes themselves, never their folders.
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*", "/dev/kfd")

#: ``/proc`` entries a fresh procfs still shares with the host, covered read-only (bubblewrap
#: 0.8 skips its own cover when ``access(W_OK)`` fails as it checks it).
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")

#: The user the code runs as when the runner runs as root (``nobody``).
SANDBOX_UID = SANDBOX_GID = 65534

#: Where the sandbox's home folder appears inside (its content is the scratch folder's ``home``).
SANDBOX_HOME = "/home/perfgate-sandbox"

#: The home folder's content when the scratch is a tmpfs (:attr:`SandboxSpec.scratch_size`):
#: on that tmpfs, so that ``/tmp`` and the home folder share its size.
TMPFS_HOME = "/tmp/.perfgate-home"

#: Sandbox modes of the action's ``sandbox`` input. ``none`` runs the code beside the job's
#: other steps, with what they hold: inside GitHub Actions the action refuses it unless the
#: workflow acknowledges that (``action.inputs.check_no_sandbox``).
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
        network: share the runner's network (True: an ``install`` command can fetch packages) or
            have none at all (False: loopback of its own only — no cloud metadata endpoint, no
            service on the runner's loopback, no abstract unix socket).
        drop_to: ``(uid, gid)`` to run the command as, for a runner that runs as root (bubblewrap
            then creates no user namespace; ``setpriv`` drops to it); None for an ordinary user.
    """

    read_only: tuple[str, ...]
    writable: tuple[str, ...]
    scratch: str
    chdir: str
    devices: tuple[str, ...] = field(default=())
    network: bool = True
    drop_to: tuple[int, int] | None = None
    #: a file of :func:`runner.sandbox.seccomp.userns_filter`'s program
    #: (``runner.sandbox.seccomp.write_userns_filter``), loaded by bubblewrap for the sandboxed
    #: process: no user namespace, no keyring, either mode
    seccomp: str | None = None
    #: bytes: the sandbox's ``/tmp`` and home folder are then one tmpfs of this size
    #: (:mod:`runner.sandbox.limits`, the scratch-space limit) in place of the scratch folder's
    #: ``tmp`` and ``home``; None: those folders, on the runner's disk
    scratch_size: int | None = None


def bwrap_argv(spec: SandboxSpec, command: Sequence[str], bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line that runs ``command`` inside ``spec`` (pure).

    Later mounts go over earlier ones, so the order is: the empty root, a fresh ``/proc`` with
    :data:`PROC_COVERS` read-only, the scratch folder's ``/tmp`` and home (first, so that a
    listed path under ``/tmp`` — a runner's temporary folder — stays visible over it), the
    folders leading to each listed path (mode 0755: bubblewrap makes them 0700 as root), the
    OS, the read-only paths, the devices, the writable paths, then the root made read-only.
    Options follow bubblewrap 0.8 (``bwrap --help``).
    """
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try"]
    if spec.seccomp:
        # bubblewrap reads the program from a descriptor: the shell opens the file as descriptor 9
        argv = ["/bin/sh", "-c", 'exec "$@" 9<"$0"', spec.seccomp, *argv, "--seccomp", "9"]
    if spec.drop_to is None:
        argv += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    else:  # bubblewrap runs as root: keep only what setpriv needs to drop to spec.drop_to and to
        # clear the bounding set (CAP_SETPCAP), which it does before it changes user
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                 "--cap-add", "CAP_SETPCAP"]
        if spec.scratch_size is not None:  # perfgate's own chown of the tmpfs, before setpriv
            argv += ["--cap-add", "CAP_CHOWN"]
    if not spec.network:
        argv.append("--unshare-net")
    argv += ["--hostname", "perfgate-sandbox", "--proc", "/proc"]
    for path in PROC_COVERS:
        argv += ["--ro-bind-try", path, path]
    argv += ["--dev", "/dev", *_scratch_argv(spec)]
    listed = [*SYSTEM_PATHS, *ETC_PATHS, *spec.read_only, *spec.devices, *spec.writable]
    for folder in _folders_leading_to(listed, covered=(*SYSTEM_PATHS, *spec.read_only)):
        argv += ["--perms", "0755", "--dir", folder]
    for path in (*SYSTEM_PATHS, *ETC_PATHS, *spec.read_only):
        argv += ["--ro-bind-try", path, path]
    for path in spec.devices:
        argv += ["--dev-bind-try", path, path]
    for path in spec.writable:
        argv += ["--bind", path, path]
    argv += ["--remount-ro", "/", "--chdir", spec.chdir, "--"]
    if spec.drop_to is not None:
        uid, gid = spec.drop_to
        if spec.scratch_size is not None:  # bubblewrap made the tmpfs as root: give it to uid
            argv += ["/bin/sh", "-c", f'chown {uid}:{gid} {TMPFS_HOME} /tmp && exec "$@"', "sh"]
        argv += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs", "--"]
    return argv + list(command)


def _scratch_argv(spec: SandboxSpec) -> list[str]:
    """The sandbox's ``/tmp`` and home folder: the scratch folder's ``tmp`` and ``home`` bound,
    or one tmpfs of ``spec.scratch_size`` bytes at ``/tmp`` whose :data:`TMPFS_HOME` the home
    folder links to (the scratch's ``.gitconfig`` bound read-only into it)."""
    if spec.scratch_size is None:
        return ["--bind", str(Path(spec.scratch) / "tmp"), "/tmp",
                "--perms", "0755", "--dir", str(Path(SANDBOX_HOME).parent),
                "--bind", str(Path(spec.scratch) / "home"), SANDBOX_HOME]
    return ["--perms", "0700", "--size", str(spec.scratch_size), "--tmpfs", "/tmp",
            "--perms", "0700", "--dir", TMPFS_HOME,
            "--perms", "0755", "--dir", str(Path(SANDBOX_HOME).parent),
            "--symlink", TMPFS_HOME, SANDBOX_HOME,
            "--ro-bind-try", str(Path(spec.scratch) / "home" / ".gitconfig"),
            f"{TMPFS_HOME}/.gitconfig"]


def _folders_leading_to(paths: Iterable[str], covered: Iterable[str]) -> list[str]:
    """The folders above ``paths`` that the sandbox's root must have (outermost first), less
    ``/``, ``/tmp``, ``/dev``, ``/proc``, :data:`SANDBOX_HOME` and those inside a ``covered``
    bind (they exist there)."""
    covered = tuple(c.rstrip("/") for c in covered)
    skip = {"/", "/tmp", "/dev", "/proc", SANDBOX_HOME}
    out: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            folder = str(parent)
            inside = any(folder == c or folder.startswith(c + "/") for c in covered)
            if folder not in skip and not inside and folder not in out:
                out.append(folder)
    return out


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
    return (str(Path(__file__).resolve().parents[2]),)


def gpu_devices(globs: Iterable[str] = GPU_DEVICE_GLOBS, *,
                modprobe: str | None = "nvidia-modprobe", control: str = "/dev/nvidiactl",
                uvm: str = "/dev/nvidia-uvm") -> tuple[str, ...]:
    """The GPU device nodes present on this machine (:data:`GPU_DEVICE_GLOBS`): character
    devices only, never a folder.

    Where the NVIDIA driver is loaded (``/dev/nvidiactl``) but ``/dev/nvidia-uvm`` is not there yet
    — no CUDA process ran since boot; the setuid ``nvidia-modprobe`` makes it on first use, which
    it cannot do inside a ``no_new_privs`` sandbox with its own ``/dev``, and CUDA then finds no
    device (GPU review 2026-12-06, #26) — ``modprobe -u -c=0`` makes the nodes first, here."""
    import glob
    import shutil
    import subprocess

    if modprobe and os.path.exists(control) and not os.path.exists(uvm):
        tool = shutil.which(modprobe)
        if tool:
            subprocess.run([tool, "-u", "-c=0"], capture_output=True, timeout=30, check=False)
    found = set()
    for pattern in globs:
        for path in glob.glob(pattern):
            try:
                if stat.S_ISCHR(os.stat(path).st_mode):
                    found.add(path)
            except OSError:
                pass
    return tuple(sorted(found))


def drop_to_for(euid: int | None = None) -> tuple[int, int] | None:
    """Whom the sandboxed code runs as: ``(SANDBOX_UID, SANDBOX_GID)`` when this process is root
    (``euid`` 0), else None (the runner's own, unprivileged user, in a user namespace)."""
    euid = os.geteuid() if euid is None else euid
    return (SANDBOX_UID, SANDBOX_GID) if euid == 0 else None


def new_session_keyring() -> None:
    """Give this process a session keyring of its own (``keyctl(KEYCTL_JOIN_SESSION_KEYRING)``),
    so that the sandbox neither reads the runner's keys nor leaves keys for a later job. For
    ``subprocess.Popen(preexec_fn=...)``; without the keyctl system call (another architecture,
    a seccomp filter) nothing happens."""
    import ctypes
    import platform

    number = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
    if number is None:
        return
    try:
        ctypes.CDLL(None, use_errno=True).syscall(number, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
    except (OSError, AttributeError):
        pass


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
    drop_to = drop_to_for()
    if drop_to is not None and shutil.which("setpriv") is None:
        raise SandboxUnavailable("the runner runs as root and setpriv (util-linux) is not installed to drop to an "
                                 "unprivileged user")
    with _scratch_for_probe(drop_to) as scratch:
        spec = SandboxSpec(read_only=(), writable=(), scratch=scratch, chdir="/", drop_to=drop_to,
                           seccomp=seccomp.write_userns_filter(scratch))
        try:
            proc = subprocess.run(bwrap_argv(spec, ["/bin/sh", "-c", "exit 0"], bwrap=path), capture_output=True,
                                  text=True, timeout=timeout, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"bubblewrap did not run: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise SandboxUnavailable(f"bubblewrap cannot create its namespaces here: {detail}")


class _scratch_for_probe:
    def __init__(self, drop_to: tuple[int, int] | None):
        self.drop_to = drop_to

    def __enter__(self) -> str:
        import tempfile

        self.path = tempfile.mkdtemp(prefix="perfgate-sandbox-probe-")
        make_scratch(Path(self.path), self.drop_to)
        return self.path

    def __exit__(self, *exc) -> None:
        remove_tree(Path(self.path))


def make_scratch(folder: Path, owner: tuple[int, int] | None = None) -> Path:
    """Create ``folder`` with the ``tmp`` and ``home`` sub-folders a :class:`SandboxSpec` needs
    (mode 0700: nobody else on the runner reads what the pull request's code writes there);
    ``owner`` (a :attr:`SandboxSpec.drop_to`) is given ``tmp`` and ``home``."""
    for sub in ("", "tmp", "home"):
        (folder / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
    if owner is not None:
        os.chmod(folder, 0o711)  # the dropped user passes through to its own folders, lists nothing
        # git refuses a repository another user owns ("dubious ownership"): the clone is the
        # runner's, read-only inside; perfgate's own git calls there must still read it.
        (folder / "home" / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
        for sub in ("tmp", "home", "home/.gitconfig"):
            os.chown(folder / sub, *owner)
    return folder


def make_writable(folder: Path, owner: tuple[int, int] | None = None) -> Path:
    """A fresh writable folder for the sandbox (mode 0700), given to ``owner`` when set."""
    folder.mkdir(mode=0o700)
    if owner is not None:
        os.chown(folder, *owner)
    return folder


def remove_tree(folder: Path) -> str | None:
    """Remove a folder the sandbox wrote, however deep (``rm -rf --one-file-system``: no link
    followed, no recursion limit). Returns None, or what was left and why (never raises)."""
    if not folder.exists() and not folder.is_symlink():
        return None
    try:
        if not folder.is_symlink():
            # a folder the code made mode 0 stops rm, which does not descend where it may not read:
            # as their owner, give every folder back its owner's rights first (security review P6;
            # chmod -R follows no link it meets on the way down)
            subprocess.run(["chmod", "-R", "u+rwX", "--", str(folder)], capture_output=True,
                           timeout=600)
        proc = subprocess.run(["rm", "-rf", "--one-file-system", "--", str(folder)], capture_output=True, text=True,
                              timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{folder} was not removed: {exc}"
    if proc.returncode != 0 or folder.exists():
        return f"{folder} was not removed completely: {proc.stderr.strip().splitlines()[-1:] or ['?']}"
    return None
