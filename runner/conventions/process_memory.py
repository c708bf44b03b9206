"""What a process holds in memory, read from the operating system and from Python's own objects.

Shared by perfgate's memory measure (:mod:`runner.worker.measures`) and asv's memory benchmark
types (:mod:`runner.conventions.asv`: ``peakmem_*`` reads the resident set, ``mem_*`` the deep size
of a returned object). Standard library only.
"""

from __future__ import annotations

import sys
from typing import Any


def status_kib(fields: tuple[str, ...], path: str = "/proc/self/status") -> dict[str, int]:
    """``{field: KiB}`` of ``VmRSS``/``VmHWM``-style lines of ``/proc/self/status``; {} where unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in fields:
            try:
                out[name] = int(rest.split()[0])
            except (ValueError, IndexError):
                continue
    return out


def reset_high_water_mark(path: str = "/proc/self/clear_refs") -> bool:
    """Reset this process's peak resident set (``VmHWM``) to its current one (Linux ≥ 4.0:
    writing ``5`` to ``/proc/self/clear_refs``, proc(5)); False where that is not possible."""
    try:
        with open(path, "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PeakResident:
    """The peak resident set of this process from a start on, as asv's ``peakmem_*`` reads it.

    :meth:`start` notes the resident set now and resets the high-water mark; :meth:`peak_bytes`
    is the high-water mark since then minus the resident set at the start (bytes, ``kind``
    ``rss``). asv reads the absolute ``ru_maxrss`` of a process that holds only the interpreter and
    the suite; a perfgate worker is forked from a server that imported torch and the benchmark
    files, so the part before the start (the same on both sides) is left out. Where Linux's
    ``/proc`` cannot reset the mark, ``peak_bytes`` is the absolute ``ru_maxrss`` (``kind``
    ``maxrss``), asv's own number.
    """

    def __init__(self) -> None:
        self.before_kib: int | None = None
        self.kind = "maxrss"

    def start(self) -> None:
        """Note the resident set and reset the high-water mark (call before the set-up)."""
        before = status_kib(("VmRSS",)).get("VmRSS")
        if before is not None and reset_high_water_mark():
            self.before_kib, self.kind = before, "rss"

    def peak_bytes(self) -> int:
        """Bytes: the peak resident set since :meth:`start` over the one at the start (``rss``), or
        the process's absolute peak (``maxrss``)."""
        if self.kind == "rss":
            hwm = status_kib(("VmHWM",)).get("VmHWM")
            if hwm is not None and self.before_kib is not None:
                return max(0, hwm - self.before_kib) * 1024
        import resource

        scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux KiB
        self.kind = "maxrss"
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale


#: Types whose objects deep_sizeof counts alone, never their referents: code and namespaces the
#: object points to are shared with the rest of the program, not part of a returned value (as
#: pympler's ``asizeof``, which asv uses, leaves classes, functions and modules out).
_SHARED = (type, type(sys), type(len), type(lambda: None))


def deep_sizeof(obj: Any, limit: int = 1_000_000) -> int:
    """Bytes an object holds with everything it refers to, each object once (asv's ``mem_*``
    measure, after pympler's ``asizeof``): ``sys.getsizeof`` of the object, of the items of a
    list, tuple, set or dict (keys and values), of an instance's ``__dict__`` and ``__slots__``
    values, and the storage of a torch tensor (``untyped_storage().nbytes()``; a numpy array that
    owns its data counts it in ``getsizeof``). Classes, functions and modules count nothing.

    Args:
        obj: the value a ``mem_*`` benchmark returned.
        limit: objects visited at most (a guard against huge graphs; the sum so far is returned).

    Returns:
        bytes (an int ≥ 0).
    """
    seen: set[int] = set()
    storages: set[int] = set()  # data pointers of the tensor storages counted (views share one)
    stack = [obj]
    total = 0
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen or isinstance(item, _SHARED):
            continue
        seen.add(id(item))
        try:
            total += sys.getsizeof(item)
        except TypeError:
            continue
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        storage = getattr(item, "untyped_storage", None)
        if callable(storage) and type(item).__module__.startswith("torch"):
            try:
                handle = storage()
                if handle.data_ptr() not in storages:
                    storages.add(handle.data_ptr())
                    total += int(handle.nbytes())
            except Exception:  # noqa: BLE001 - a tensor without storage (meta, sparse)
                pass
        state = getattr(item, "__dict__", None)
        if isinstance(state, dict):
            stack.append(state)
        for slot in getattr(type(item), "__slots__", ()) or ():
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__") and hasattr(item, slot):
                stack.append(getattr(item, slot))
    return total
