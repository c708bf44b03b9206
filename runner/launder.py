"""Taking files out of the sandbox (:mod:`runner.sandbox`): regular files only, copied into a
folder the sandbox never saw — no symbolic links, no hard links, no devices, no names the
artifact upload refuses — so nothing a later step reads or writes there can point outside it.
A leaf of the engine.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
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
    files = total = 0
    skipped: list[str] = []
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        root_fd = os.open(source, flags)
    except OSError as exc:
        return Laundered(0, 0, (f". (unreadable: {exc.strerror})",))
    stack: list[tuple[int, Path]] = [(root_fd, Path("."))]
    while stack:
        dir_fd, rel_folder = stack.pop()
        try:
            with os.scandir(dir_fd) as entries:
                names = sorted(e.name for e in entries)
        except OSError as exc:
            skipped.append(f"{rel_folder} (unreadable: {exc.strerror})")
            names = []
        for name in names:
            rel = rel_folder / name
            if UNUPLOADABLE & set(name):
                skipped.append(f"{rel!s:.200} (a name upload-artifact refuses)")
                continue
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError as exc:
                skipped.append(f"{rel} (unreadable: {exc.strerror})")
                continue
            if stat.S_ISLNK(info.st_mode):
                skipped.append(f"{rel} (a symbolic link)")
            elif stat.S_ISDIR(info.st_mode):
                if len(rel.parts) > max_depth:
                    skipped.append(f"{rel!s:.200} (more than {max_depth} folders deep)")
                    continue
                try:
                    child = os.open(name, flags, dir_fd=dir_fd)
                except OSError as exc:
                    skipped.append(f"{rel} (unreadable: {exc.strerror})")
                    continue
                (target / rel).mkdir(exist_ok=True)
                stack.append((child, rel))
            elif files >= max_files:
                skipped.append(f"{rel} (more than {max_files} files)")
            else:
                why = _copy_one(dir_fd, name, target / rel, max_bytes - total)
                if isinstance(why, str):
                    skipped.append(f"{rel} ({why})")
                else:
                    files += 1
                    total += why
        os.close(dir_fd)
    return Laundered(files, total, tuple(skipped))


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
