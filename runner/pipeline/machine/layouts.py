"""A worker process's memory layout, and how perfgate varies it so that it cannot pass for the
code's effect.

A process's speed depends on where its code and data land: page and cache-set alignment,
4 KiB aliasing between buffers, which free block a temporary gets (Mytkowicz et al., "Producing
wrong data without doing anything obviously wrong!", ASPLOS 2009; Curtsinger & Berger,
"Stabilizer", ASPLOS 2013). Two things follow:

* Address-space layout randomisation is turned off for the fork servers (:func:`layout_pinned`):
  with it on, each server drew its own layout at start.
* With it off, a server's layout is fixed by what it was started with — and that differs between
  the sides wherever the revisions differ at all (a docstring moves every later object). Every
  child of a server inherits it, so every process pair of a compare sat in the same two layouts:
  a docs-only kornia commit's ``pyrdown`` read 1.34× [1.22, 1.47] slower over 8 agreeing pairs,
  and in the compare before 0.82× faster (issue 45); standalone, the same function runs at
  ~3.7 ms in most processes and ~2.0 ms in others, by server. So each side runs :data:`LAYOUTS`
  fork servers, each started with an environment padded to a length of its own, drawn apart for
  the two sides (:func:`layout_env`: the environment is copied into the heap before anything is
  imported, so every later object moves), and process pair ``j`` runs in layout
  ``j mod LAYOUTS`` (:func:`of_pair`): the layout becomes a spread between pairs, which the
  interval carries, instead of an offset all pairs share. Once pairs repeat layouts, the pairs of
  one layout count as one replicate (:func:`runner.pipeline.timing.evidence.by_layout`).
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import subprocess
import sys

#: Fork servers (layouts) per side; process pair ``j`` runs in layout ``j mod LAYOUTS``. Each
#: costs one start of the worker (Python, torch, the preloaded benchmark files: ~1.7 s with kornia
#: on this project's 2-CPU VM), made when a pair first needs it.
LAYOUTS = 8

#: Longest environment pad (bytes) of a layout.
PAD_MAX = 16384

#: The variable that carries the pad (its value is never read).
PAD_VARIABLE = "PERFGATE_LAYOUT_PAD"


def of_pair(pair: int) -> int:
    """The layout process pair ``pair`` (0-based, per benchmark) runs in."""
    return pair % LAYOUTS


def layout_env(layout: int, seed: int) -> dict[str, str]:
    """The variables that make layout ``layout`` of one side: a pad of a length drawn from
    ``seed`` (one per side and compare) and the layout's number.

    Each side draws its own: with the same pad on both sides, the offset between them that the
    revisions' own difference makes stayed (a docs-only kornia commit's ``rgb_to_grayscale`` read
    0.63-0.81 in 7 of 8 layouts, 0.74 [0.61, 0.89] in all: a false verdict). Drawn apart, no offset
    is common to all layouts by construction; what the revisions' imports allocate differently
    still is (evaluation/RESULTS_identical_code.md)."""
    length = random.Random(seed * 1009 + layout).randrange(16, PAD_MAX, 16)
    return {PAD_VARIABLE: "x" * length, "PERFGATE_LAYOUT": str(layout)}


def layout_pinned(cmd: list[str]) -> list[str]:
    """``cmd`` run with address-space layout randomisation off (``setarch -R``), where possible.

    Why: in A/A runs on a 2-core VM, two worker processes running identical code differed by
    up to ±9 % in time per call, consistently for every benchmark of the run — a process-level
    layout effect (Mytkowicz et al., "Producing wrong data without doing anything obviously
    wrong!", ASPLOS 2009) that pairing cannot cancel. With ASLR off both workers get the same
    layout. Set ``PERFGATE_ASLR=1`` to keep randomisation; where ``setarch`` is missing or not
    permitted (:func:`layout_left_random` says why) the command runs unchanged.
    """
    if layout_left_random() is not None:
        return cmd
    return [shutil.which("setarch"), os.uname().machine, "-R", *cmd]


def layout_left_random() -> tuple[str, str] | None:
    """Why the workers would run with the system's address-space layout randomisation: ``(cause,
    reason in words)``, cause ``PERFGATE_ASLR``, ``platform``, ``setarch_missing`` or
    ``setarch_refused``; None where :func:`layout_pinned` turns it off (doctor check ``aslr``).

    Docker's and Podman's default seccomp profiles refuse ``personality(ADDR_NO_RANDOMIZE)``
    (moby/moby#43011, containers/common#1662), so ``setarch -R`` fails in a container run
    with either default.
    """
    if os.environ.get("PERFGATE_ASLR") == "1":
        return "PERFGATE_ASLR", "PERFGATE_ASLR=1 keeps it on"
    if not sys.platform.startswith("linux"):
        return "platform", f"perfgate turns it off only on Linux (this is {sys.platform})"
    setarch = shutil.which("setarch")
    if setarch is None:
        return "setarch_missing", "setarch (util-linux) is not installed"
    if not _setarch_works(setarch):
        return "setarch_refused", ("setarch -R is not permitted here (Docker's and Podman's default seccomp "
                                   "profiles refuse it)")
    return None


@functools.lru_cache(maxsize=None)
def _setarch_works(setarch: str) -> bool:
    try:
        return subprocess.run([setarch, os.uname().machine, "-R", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
