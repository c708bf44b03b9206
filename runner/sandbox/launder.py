"""Taking files out of the sandbox (:mod:`runner.sandbox.bubblewrap`): regular files only, copied
into a folder the sandbox never saw — no symbolic links, no hard links, no devices, no names the
artifact upload refuses — so nothing a later step reads or writes there can point outside it.
A leaf of the engine.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Laundered:
    """What :func:`launder` copied (``files``, ``bytes``) and what it left behind, with why."""

    files: int
    bytes: int
    skipped: tuple[str, ...]


#: Characters ``actions/upload-artifact`` refuses in a path (a file so named would fail the upload).
UNUPLOADABLE = set('"\\:<>|*?\r\n')
#: Limits of what :func:`launder` takes out: folders deep, files in all.
MAX_DEPTH, MAX_FILES = 32, 20_000
#: How :func:`launder` opens a folder: never through a symbolic link.
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def launder(source: Path, target: Path, *, max_bytes: int = 2 << 30, max_files: int = MAX_FILES,
            max_depth: int = MAX_DEPTH) -> Laundered:
    """Copy the regular files under ``source`` (written by untrusted code) into ``target``.

    Nothing is followed, by path or otherwise: the walk holds a descriptor of each folder
    (``O_DIRECTORY | O_NOFOLLOW``) and opens what is in it relative to that descriptor with
    ``O_NOFOLLOW``, so swapping a folder for a link while it runs changes nothing. Symbolic
    links, devices, FIFOs and sockets are skipped, a file with more than one hard link is
    skipped, every file is checked after opening (``fstat``) to be a regular file. Names that
    ``actions/upload-artifact`` refuses (:data:`UNUPLOADABLE`) are skipped. The walk is iterative
    and stops at ``max_depth`` folders deep, ``max_files`` files and ``max_bytes`` in all (what
    is left is listed as skipped). Folders are created fresh under ``target``.

    Returns: counts and the skipped paths (relative to ``source``) with the reason.
    """
    target.mkdir(parents=True, exist_ok=True)
    try:
        root_fd = os.open(source, _FOLDER_FLAGS)
    except OSError as exc:
        return Laundered(0, 0, (f". (unreadable: {exc.strerror})",))
    walk = _Walk(target, max_bytes, max_files, max_depth)
    stack: list[tuple[int, Path]] = [(root_fd, Path("."))]
    while stack:
        dir_fd, rel_folder = stack.pop()
        for name in walk.names(dir_fd, rel_folder):
            folder = walk.take(dir_fd, name, rel_folder / name)
            if folder is not None:
                stack.append(folder)
        os.close(dir_fd)
    return Laundered(walk.files, walk.total, tuple(walk.skipped))


@dataclass
class _Walk:
    """One :func:`launder` walk: its limits, and the files and bytes copied and the entries
    skipped (``"path (why)"``) so far."""

    target: Path
    max_bytes: int
    max_files: int
    max_depth: int
    files: int = 0
    total: int = 0
    skipped: list[str] = field(default_factory=list)

    def names(self, dir_fd: int, rel_folder: Path) -> list[str]:
        """The sorted names in the folder ``dir_fd``; none where it cannot be read (skipped)."""
        try:
            with os.scandir(dir_fd) as entries:
                return sorted(e.name for e in entries)
        except OSError as exc:
            self._skip(f"{rel_folder} (unreadable: {exc.strerror})")
            return []

    def take(self, dir_fd: int, name: str, rel: Path) -> tuple[int, Path] | None:
        """Copy the entry ``name`` of the folder ``dir_fd`` (``rel`` under the source) or skip it;
        a folder is created under the target and returned as ``(its descriptor, rel)`` to walk."""
        if UNUPLOADABLE & set(name):
            return self._skip(f"{rel!s:.200} (a name upload-artifact refuses)")
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            return self._skip(f"{rel} (unreadable: {exc.strerror})")
        if stat.S_ISLNK(info.st_mode):
            return self._skip(f"{rel} (a symbolic link)")
        if stat.S_ISDIR(info.st_mode):
            return self._folder(dir_fd, name, rel)
        if self.files >= self.max_files:
            return self._skip(f"{rel} (more than {self.max_files} files)")
        why = _copy_one(dir_fd, name, self.target / rel, self.max_bytes - self.total)
        if isinstance(why, str):
            return self._skip(f"{rel} ({why})")
        self.files += 1
        self.total += why
        return None

    def _folder(self, dir_fd: int, name: str, rel: Path) -> tuple[int, Path] | None:
        if len(rel.parts) > self.max_depth:
            return self._skip(f"{rel!s:.200} (more than {self.max_depth} folders deep)")
        try:
            child = os.open(name, _FOLDER_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            return self._skip(f"{rel} (unreadable: {exc.strerror})")
        (self.target / rel).mkdir(exist_ok=True)
        return child, rel

    def _skip(self, entry: str) -> None:
        self.skipped.append(entry)


def _copy_one(dir_fd: int, name: str, dst: Path, room: int) -> int | str:
    """Copy one listed file (``name`` in the folder ``dir_fd``); returns its size, or the reason
    it was skipped."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        return "a symbolic link" if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}"
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
