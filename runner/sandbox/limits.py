"""The limits of the sandbox the pull request's code runs in, and how the kernel enforces them
(pure): processes, memory, scratch space and wall time.

Why (security review 2026-12-06, "No resource limits" and P8): the sandbox had none — 400
processes started, 64 MiB written to ``/tmp`` on the runner's own disk, and the compare was
bounded only by the workflow's ``timeout-minutes``. The values are the Action's inputs
(``sandbox-pids``, ``sandbox-memory``, ``sandbox-disk``, ``sandbox-time``): the workflow's, never
the pull request's configuration (head's ``perfgate.toml`` cannot raise them).

How each is enforced, the strongest the machine offers first (:func:`enforcement`):

- **processes**: a cgroup's ``pids.max`` (v2, or v1's pids controller) where this process may
  make a child cgroup with that controller; otherwise ``RLIMIT_NPROC``. The rlimit counts the
  processes of a *real user*: in root mode the sandbox runs as uid 65534 and the count is the
  sandbox's (and other root-mode sandboxes' of the machine at the same time); in user mode it
  counts the runner user's own processes too, so the rlimit is set to those seen now plus the
  limit (:func:`enforcement`'s ``user_processes``).
- **memory**: a cgroup's ``memory.max`` (v2) or ``memory.limit_in_bytes`` (v1): the whole tree's
  RAM, its tmpfs pages included; the kernel's OOM killer ends a process in it. Otherwise
  ``RLIMIT_DATA``, per process (a process tree may hold several times it): not ``RLIMIT_AS``,
  because CUDA reserves terabytes of virtual addresses (its unified address space) and fails
  to initialise under an address-space limit; ``RLIMIT_DATA`` counts private writable mappings,
  which CUDA's reservations (``PROT_NONE``) and device mappings are not.
- **scratch space**: the sandbox's ``/tmp`` and home folder are one tmpfs of that size
  (bubblewrap's ``--size``): a write past it fails with ENOSPC. tmpfs is RAM, charged to the
  memory cgroup, so the default is at most half the machine's memory. ``RLIMIT_FSIZE`` at the
  same size bounds each file the code writes anywhere else (the results folder): EFBIG.
- **wall time**: a deadline for the whole sandboxed step; at it every process of the sandbox is
  killed (the cgroup's, and bubblewrap's PID namespace dies with it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

GIB = 1 << 30

#: Default process limit: a training-step benchmark's data-loader workers and compiler
#: threads (threads count as pids) stay far below it; a fork bomb reaches it in milliseconds.
DEFAULT_PIDS = 4096
#: Default wall time of the sandboxed step: below GitHub's 6 h ceiling for a job.
DEFAULT_WALL = 5 * 3600.0
#: Default scratch space, at most half the machine's memory (tmpfs is RAM).
DEFAULT_DISK = 32 * GIB
#: The share of the machine's memory the sandbox may use by default (the runner keeps the rest).
MEMORY_SHARE = 0.8

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000 ** 2,
          "mib": 1 << 20, "g": GIB, "gb": 1000 ** 3, "gib": GIB, "t": 1 << 40, "tb": 1000 ** 4,
          "tib": 1 << 40}
_SECONDS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Limits:
    """What the sandboxed step may use: processes (pids, threads included), memory and scratch
    space in bytes, wall time in seconds."""

    pids: int
    memory: int
    disk: int
    wall: float


#: Each limit's input (action.yml) and its unit, for messages.
INPUTS = {"pids": "sandbox-pids", "memory": "sandbox-memory", "disk": "sandbox-disk",
          "wall": "sandbox-time"}


def parse_size(text: str) -> int:
    """Bytes from ``64GiB``, ``512 MiB``, ``1.5G``, ``10GB`` (SI), ``4096`` (bytes); ``G`` and
    ``GiB`` are binary, ``GB`` decimal.

    Raises:
        ValueError: not a positive size, with the accepted forms.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match and _UNITS.get(match.group(2).lower())
    if not match or unit is None or float(match.group(1)) * unit < 1:
        raise ValueError(f"not a size: {text!r} (e.g. 64GiB, 512MiB, 10GB)")
    return int(float(match.group(1)) * unit)


def parse_duration(text: str) -> float:
    """Seconds from ``5h``, ``90m``, ``1h30m``, ``45s``, ``3600`` (seconds).

    Raises:
        ValueError: not a positive duration, with the accepted forms.
    """
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)", text)
    rest = re.sub(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)", "", text).strip()
    total = 0.0
    for number, unit in parts:
        if unit.lower() not in _SECONDS:
            parts = []
            break
        total += float(number) * _SECONDS[unit.lower()]
    if not parts or rest or total <= 0:
        raise ValueError(f"not a duration: {text!r} (e.g. 5h, 90m, 1h30m, 3600)")
    return total


def default_limits(memory_total: int) -> Limits:
    """The limits of a step whose workflow sets none, on a machine with ``memory_total`` bytes."""
    memory = int(memory_total * MEMORY_SHARE)
    return Limits(pids=DEFAULT_PIDS, memory=memory, disk=min(DEFAULT_DISK, memory_total // 2),
                  wall=DEFAULT_WALL)


def chosen(given: tuple[tuple[str, float], ...], memory_total: int) -> Limits:
    """The workflow's limits (``(field, value)`` pairs of :class:`Limits`, from the Action's
    inputs) over the defaults of a machine with ``memory_total`` bytes."""
    from dataclasses import replace

    values = {k: (int(v) if k != "wall" else float(v)) for k, v in given}
    return replace(default_limits(memory_total), **values)


def size_words(size: float) -> str:
    """``64 GiB``, ``512 MiB``, ``300 B`` (pure)."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{int(size)} B"


def time_words(seconds: float) -> str:
    """``5 h``, ``90 min``, ``45 s`` (pure)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


@dataclass(frozen=True)
class Offers:
    """What this machine offers to enforce limits with (gathered by :mod:`runner.sandbox.confine`).

    Attributes:
        v2: a cgroup v2 folder this process may make children in, and the controllers they get
            (its ``cgroup.subtree_control``); None when there is none.
        v1: controller → a cgroup v1 folder of that controller this process may make children in.
        user_processes: processes the sandbox's real user has now (user mode; 0 in root mode,
            where the sandbox runs as a user of its own).
        sized_tmpfs: bubblewrap takes ``--size`` for a tmpfs (0.7 and later; Ubuntu 22.04's
            0.6 does not): without it the scratch stays on the runner's disk, bounded per file.
    """

    v2: tuple[str, frozenset[str]] | None = None
    v1: tuple[tuple[str, str], ...] = ()
    user_processes: int = 0
    sized_tmpfs: bool = True


@dataclass(frozen=True)
class Enforcement:
    """How :class:`Limits` are enforced: cgroups to make (``(parent folder, {file: value})``,
    one child each), rlimits to set (``(name, value)``: ``NPROC``, ``DATA``, ``FSIZE``), the
    tmpfs size of the scratch (None: no tmpfs), the deadline in seconds, and ``how`` (limit →
    mechanism words)."""

    cgroups: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    rlimits: tuple[tuple[str, int], ...]
    tmpfs_size: int | None
    deadline: float
    how: tuple[tuple[str, str], ...]


def enforcement(limits: Limits, offers: Offers) -> Enforcement:
    """The strongest mechanism for each limit that ``offers`` allows (see the module's text)."""
    v1 = dict(offers.v1)
    cgroups: dict[str, dict[str, str]] = {}
    rlimits = [("FSIZE", limits.disk)]
    how = {"disk": "a tmpfs of that size for /tmp and HOME; RLIMIT_FSIZE per file elsewhere"
                   if offers.sized_tmpfs else "RLIMIT_FSIZE per file only (this bubblewrap has "
                   "no --size: 0.7 or later bounds /tmp and HOME)",
           "wall": "a deadline; the sandbox's processes killed at it"}
    v2 = offers.v2
    if v2 is not None and "pids" in v2[1]:
        cgroups.setdefault(v2[0], {})["pids.max"] = str(limits.pids)
        how["pids"] = "cgroup v2 pids.max"
    elif "pids" in v1:
        cgroups.setdefault(v1["pids"], {})["pids.max"] = str(limits.pids)
        how["pids"] = "cgroup v1 pids.max"
    else:
        rlimits.append(("NPROC", limits.pids + offers.user_processes))
        how["pids"] = "RLIMIT_NPROC" + (f" (+{offers.user_processes} of the runner's user)"
                                        if offers.user_processes else "")
    if v2 is not None and "memory" in v2[1]:
        cgroups.setdefault(v2[0], {}).update({"memory.max": str(limits.memory),
                                              "memory.swap.max": "0"})
        how["memory"] = "cgroup v2 memory.max"
    elif "memory" in v1:
        cgroups.setdefault(v1["memory"], {})["memory.limit_in_bytes"] = str(limits.memory)
        how["memory"] = "cgroup v1 memory.limit_in_bytes"
    else:
        rlimits.append(("DATA", limits.memory))
        how["memory"] = "RLIMIT_DATA, per process"
    return Enforcement(cgroups=tuple((k, tuple(v.items())) for k, v in cgroups.items()),
                       rlimits=tuple(rlimits), deadline=limits.wall,
                       tmpfs_size=limits.disk if offers.sized_tmpfs else None,
                       how=tuple(sorted(how.items())))


@dataclass(frozen=True)
class Hits:
    """What the kernel and the clock said after the step (gathered by
    :mod:`runner.sandbox.confine`): the deadline passed, forks the pids controller refused (the
    first ends the step: a tree held at its limit only waits for the deadline), processes the OOM
    killer ended, and the last lines of the step's standard error."""

    deadline_passed: bool = False
    pids_refused: int = 0
    oom_kills: int = 0
    stderr_tail: tuple[str, ...] = ()
    #: the step's exit status: its printed errors are read only when it failed (not 0 or 1)
    status: int = 0
    #: the scratch tmpfs was seen full while the step ran
    scratch_full: bool = False
    #: the compare's progress record as the step left it (:data:`PROGRESS_FILE`; untrusted)
    progress: str = ""


_NO_SPACE = ("No space left on device", "[Errno 28]", "File too large", "[Errno 27]")
_NO_FORK = ("Resource temporarily unavailable", "[Errno 11]", "fork: retry")
_NO_MEMORY = ("MemoryError", "Cannot allocate memory", "[Errno 12]", "out of memory")
#: Any limit's error, in a line or a benchmark's error.
_ANY_LIMIT = (*_NO_SPACE, *_NO_FORK, *_NO_MEMORY)


def limit_hit(limits: Limits, hits: Hits, step: str) -> str | None:
    """The sentence that names the limit the pull request's code reached in ``step`` (e.g.
    ``perfgate compare``) and the input that sets it, or None when it reached none. The
    kernel's counters come first; without them (rlimits), the errors a failed step printed."""
    text = "\n".join(hits.stderr_tail) if hits.status not in (0, 1) else ""
    last = next((line.strip() for line in reversed(hits.stderr_tail) if line.strip()), "")
    said = f" (its last line: {last})" if last else ""
    if hits.deadline_passed:
        what = (f"wall-time limit ({time_words(limits.wall)}, input {INPUTS['wall']}): "
                "every process of the sandbox was killed")
    elif hits.pids_refused or any(s in text for s in _NO_FORK):
        what = (f"process limit ({limits.pids} processes and threads, input "
                f"{INPUTS['pids']}): the kernel refused to start more")
    elif hits.oom_kills or any(s in text for s in _NO_MEMORY):
        what = (f"memory limit ({size_words(limits.memory)}, input {INPUTS['memory']}): "
                + (f"the kernel killed {hits.oom_kills} process(es)" if hits.oom_kills
                   else "an allocation was refused"))
    elif hits.scratch_full or any(s in text for s in _NO_SPACE):
        what = (f"scratch-space limit ({size_words(limits.disk)} for /tmp and HOME, input "
                f"{INPUTS['disk']}): a write failed")
    else:
        return None
    doing = progress_words(hits.progress)
    if doing and not any(s in last for s in _ANY_LIMIT):
        said = ""  # the benchmark named, a last line that is not the limit's says nothing more
    return (f"the pull request's code in {step} reached the sandbox's {what}"
            + (f", {doing}" if doing else "") + said)


#: The compare's progress record, relative to its results folder (written by
#: :mod:`runner.pipeline.progress_record`): what it runs now, read after a limit ended the step so
#: that the error names the benchmark. The pull request's code can write it too (it runs as the
#: same user in the sandbox): the parent reads at most :data:`PROGRESS_BYTES` of it, never through
#: a link, and :func:`progress_words` keeps a phase and a side it knows and a name cut to
#: :data:`NAME_CHARS` printable characters. Forged, it names another benchmark of the same pull
#: request's code; it never decides which limit was reached.
PROGRESS_FILE = "logs/progress.json"
PROGRESS_BYTES = 4096
NAME_CHARS = 120

#: The phase each request to a worker (its ``cmd``), or step of the compare, belongs to; other
#: requests (``fork``, ``quit``) leave the record as it is.
PHASES = {"install": "install", "env": "starting", "preload": "listing",
          "list": "listing", "setup": "measuring", "sample": "measuring", "output": "measuring",
          "measure": "measuring", "profile": "profiling", "trace": "mapping",
          "kernels": "kernels", "finish": "finishing"}
#: The phases of one benchmark (their record names it), and how each phase is said.
_OF_ONE = ("measuring", "profiling", "mapping")
_SAID = {"install": "while {side}'s install command ran",
         "starting": "while {side}'s worker started",
         "listing": "while {side}'s benchmark files were imported and listed",
         "measuring": "while the benchmark {name} was measured on {side}",
         "profiling": "while the benchmark {name} was profiled on {side}",
         "mapping": "while the benchmark {name} was mapped to the code it runs, on {side}",
         "kernels": "while the Triton kernels of base and head were compiled",
         "finishing": "after every benchmark, while the compare wrote its results"}
#: The phases of the whole compare, of no one side.
_OF_BOTH = ("kernels", "finishing")


def progress_record(cmd: str | None, side: str | None, benchmark: str | None) -> str | None:
    """The progress record's text for a request ``cmd`` (or a step of :data:`PHASES`) on
    ``side`` about ``benchmark`` (one character past :data:`NAME_CHARS` kept: the reader then
    says it was cut); None when ``cmd`` changes no phase."""
    phase = PHASES.get(cmd or "")
    if phase is None:
        return None
    name = benchmark[:NAME_CHARS + 1] if phase in _OF_ONE and benchmark else None
    return json.dumps({"phase": phase, "side": side, "benchmark": name})  # within PROGRESS_BYTES


def limit_failure(entries: list[dict]) -> tuple[str, str] | None:
    """The side and name of the first benchmark of a finished compare's ``entries`` (results.json's
    ``benchmarks``) whose error is a limit's (ENOSPC, a refused fork, a refused allocation), or
    None: the compare's last progress record names it (:meth:`runner.pipeline.progress_record.
    ProgressRecord.finish`), so that a limit reached between two looks of the watch is still
    said with its benchmark."""
    for entry in entries:
        for side in ("base", "head"):
            error = str((entry.get(side) or {}).get("error") or "")
            if any(s in error for s in _ANY_LIMIT):
                return side, str(entry.get("name") or "")
    return None


def _record(text: str) -> dict:
    """The progress record ``text`` read (at most :data:`PROGRESS_BYTES`), {} when not an object."""
    try:
        record = json.loads(text[:PROGRESS_BYTES])
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def names_a_benchmark(text: str) -> bool:
    """Whether the progress record ``text`` is of one benchmark's phase (not the end's)."""
    return _record(text).get("phase") in _OF_ONE


def progress_words(text: str) -> str:
    """What the progress record ``text`` says the compare was doing (``while the benchmark
    'bench_step' was measured on head``), '' when it says nothing this function trusts: a phase
    of :data:`PHASES`, a side ``base`` or ``head``, a benchmark name of printable characters
    cut at :data:`NAME_CHARS`, with ``##[`` (the runner's older command syntax) broken."""
    record = _record(text)
    if record.get("phase") not in _SAID:
        return ""
    side, name = record.get("side"), record.get("benchmark")
    phase = record["phase"]
    if phase not in _OF_BOTH and side not in ("base", "head"):
        return ""
    if phase in _OF_ONE:
        if not isinstance(name, str) or not name:
            return ""
        name = "".join(c for c in name if c.isprintable())
        name = name if len(name) <= NAME_CHARS else name[:NAME_CHARS] + "..."
        name = repr(name).replace("##[", "##\u200b[")
    return _SAID[phase].format(side=side, name=name)


def cgroup_parents(proc_cgroup: str, mountinfo: str) -> tuple[str | None, dict[str, str]]:
    """The folders of this process's own cgroups (``/proc/self/cgroup`` read against
    ``/proc/self/mountinfo``): the v2 one (or None) and, for cgroup v1, controller → folder
    (``pids`` and ``memory`` only). A sandbox's cgroup is made as a child of these, inside
    whatever limits the runner itself is under."""
    mounts: dict[str, tuple[str, str]] = {}  # "" cgroup2, else a v1 controller → (root, mount)
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        parts, kinds = fields.split(), tail.split()
        if len(parts) < 5 or len(kinds) < 3:
            continue
        if kinds[0] == "cgroup2":
            mounts.setdefault("", (parts[3], parts[4]))
        elif kinds[0] == "cgroup":
            for option in kinds[2].split(","):
                if option in ("pids", "memory"):
                    mounts.setdefault(option, (parts[3], parts[4]))
    v2, v1 = None, {}
    for line in proc_cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        for name in ([""] if number == "0" and not controllers else controllers.split(",")):
            if name not in mounts:
                continue
            root, mount = mounts[name]
            inner = path if root == "/" else path[len(root):] if path.startswith(root) else None
            if inner is None:
                continue
            folder = mount.rstrip("/") + "/" + inner.strip("/")
            if name:
                v1[name] = folder.rstrip("/")
            else:
                v2 = folder.rstrip("/")
    return v2, v1


def counter(text: str, name: str) -> int:
    """The value of ``name`` in a cgroup's flat-keyed file (``pids.events``' ``max 3``,
    ``memory.events``' or v1 ``memory.oom_control``'s ``oom_kill 1``); 0 when absent."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0
