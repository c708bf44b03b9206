"""Revisions: resolve refs once, check each side out as a ``git worktree``, build its environment.

The thin shell around git and venv. Every ref is resolved to a full SHA exactly once (the SHA
is what is measured and reported); each side gets its own detached worktree at that SHA in a
temporary folder, removed again on exit, Ctrl-C included.

The worktrees belong to a scratch repository in that folder, not to the target's clone: a
worktree of the clone would share the clone's ``.git/config``, and with it any credential kept
there (``http.<url>.extraheader`` from ``actions/checkout``, a token in the remote URL, a
credential helper). The scratch repository borrows the clone's objects (``objects/info/
alternates``, nothing copied) and has an empty configuration of its own. The ``install``
command gets :func:`runner.sandbox.child_env.child_environment`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.child_env import child_environment
from ..errors import UserError
from ..git import git


@dataclass
class Revision:
    """One side of a compare, checked out.

    Attributes:
        side: ``base`` or ``head``.
        ref: the ref as the user gave it; ``sha``: the full SHA it resolved to.
        path: the worktree folder; ``python``: interpreter the worker runs with.
        sys_path: folders put first on the worker's ``sys.path``.
    """

    side: str
    ref: str
    sha: str
    path: Path
    python: str = sys.executable
    sys_path: list[str] = field(default_factory=list)
    venv: Path | None = None


def share_site_packages(venv: Path) -> Path:
    """Let ``venv`` import what the running interpreter can (its torch, its CUDA build), after
    its own packages: a ``.pth`` file naming the running environment's site-packages.

    ``--system-site-packages`` alone shares only the *base* interpreter's packages, so when
    perfgate itself runs in a venv (the usual case) the side's venv would not see torch. Entries
    of a ``.pth`` file come after the venv's own site-packages, so what the install command puts
    there wins. Returns the ``.pth`` file."""
    import sysconfig

    ours = sysconfig.get_paths()
    theirs = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})
    target = Path(theirs["purelib"])
    target.mkdir(parents=True, exist_ok=True)
    pth = target / "_perfgate_runner_site.pth"
    pth.write_text("".join(f"{p}\n" for p in dict.fromkeys((ours["purelib"], ours["platlib"]))))
    return pth



def source_paths(worktree: Path) -> list[str]:
    """What goes first on a worker's ``sys.path`` for a side without an install step: the
    worktree's ``src/`` when there is one (the src layout), then the worktree itself."""
    return ([str(worktree / "src")] if (worktree / "src").is_dir() else []) + [str(worktree)]

#: Seconds the configuration's install command may take on one side (it ran without a bound: a
#: hanging one held the runner for the workflow's whole timeout; security review P8).
INSTALL_TIMEOUT = 1800.0


class Checkouts:
    """Context manager owning the temporary worktrees (and venvs) of one run.

    ``add(side, ref, sha)`` creates a detached worktree at ``sha`` from the scratch repository
    (see the module's docstring); everything is removed on exit, also after KeyboardInterrupt.
    The target repository is only read.
    """

    def __init__(self, repo: Path, log_dir: Path):
        self.repo = repo
        self.log_dir = log_dir
        self.tmp = Path(tempfile.mkdtemp(prefix="perfgate-"))
        self.revisions: list[Revision] = []
        self.scratch: Path | None = None

    def __enter__(self) -> "Checkouts":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _scratch_repository(self) -> Path:
        """A bare repository in the temporary folder that sees the clone's objects, shallow
        boundary and tags (version tools such as setuptools-scm describe the checkout) but none
        of its configuration, branches or hooks."""
        if self.scratch is None:
            scratch = self.tmp / "repo.git"
            git(self.tmp, "init", "--quiet", "--bare", str(scratch))
            common = (Path(self.repo) / git(self.repo, "rev-parse", "--git-common-dir")).resolve()
            (scratch / "objects" / "info" / "alternates").write_text(f"{common / 'objects'}\n")
            if (common / "shallow").is_file():
                shutil.copyfile(common / "shallow", scratch / "shallow")
            tags = git(self.repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags")
            if tags:
                (scratch / "packed-refs").write_text(tags + "\n")
            self.scratch = scratch
        return self.scratch

    def add(self, side: str, ref: str, sha: str) -> Revision:
        path = self.tmp / side
        git(self._scratch_repository(), "worktree", "add", "--detach", "--force", "--", str(path), sha)
        rev = Revision(side=side, ref=ref, sha=sha, path=path)
        rev.sys_path = source_paths(path)
        self.revisions.append(rev)
        return rev

    def install(self, rev: Revision, command: str) -> None:
        """Make a venv for ``rev`` that sees the runner's packages (torch above all:
        :func:`share_site_packages`) and run ``command`` in the worktree with that venv first
        on PATH.

        The output goes to ``<log_dir>/install-<side>.log``.

        Raises:
            UserError: the command failed; the message holds its last lines and the log path.
        """
        venv = self.tmp / f"venv-{rev.side}"
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                       capture_output=True)
        share_site_packages(venv)
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        env = child_environment(VIRTUAL_ENV=str(venv), PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("PYTHONHOME", None)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"install-{rev.side}.log"
        with open(log, "w") as fh:
            proc = subprocess.Popen(command, shell=True, cwd=rev.path, env=env, stdout=fh,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                proc.wait(timeout=INSTALL_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
                proc.wait()
                raise UserError(f"install command {command!r} on {rev.side} ({rev.sha[:12]}) took "
                                f"longer than {INSTALL_TIMEOUT:.0f} s and was stopped; full output "
                                f"in {log}") from None
        if proc.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
            raise UserError(f"install command {command!r} failed on {rev.side} ({rev.sha[:12]}), exit "
                            f"{proc.returncode}; full output in {log}:\n{tail}")
        rev.venv = venv
        rev.python = str(bindir / "python")
        rev.sys_path = []  # the install made the package importable; the worktree stays cwd

    def close(self) -> None:
        """Remove the worktrees, venvs and the scratch repository (the clone is untouched)."""
        self.revisions.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)
