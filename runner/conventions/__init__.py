"""Benchmark conventions: one module each, registered in :data:`REGISTRY` (see :mod:`.base`).

Adding a convention is its module (an object satisfying :class:`runner.conventions.base.Convention`)
and one line in :data:`REGISTRY`: the config key ``suite`` accepts its name, ``auto`` detects it in
the registry's order, the workers list and prepare its cases through it, and the report names what
it looked for. Every module here imports the standard library only at module level.
"""

from __future__ import annotations

from . import asv, command, perfgate, pytest_benchmark, torch_timer, triton
from .base import Convention, Suite

#: The conventions, in the order ``suite = "auto"`` tries them; the first whose ``detect`` claims
#: a revision is its convention, and perfgate's ``bench_*`` is the fallback when none does.
REGISTRY: tuple[Convention, ...] = (
    asv.CONVENTION,
    command.CONVENTION,
    pytest_benchmark.CONVENTION,
    perfgate.CONVENTION,
    triton.CONVENTION,
    torch_timer.CONVENTION,
)

#: The convention of a revision no convention claims.
DEFAULT = "perfgate"


def names() -> tuple[str, ...]:
    """The registered conventions' names (the config's ``suite`` values besides ``auto``)."""
    return tuple(c.name for c in REGISTRY)


def get(name: str | None) -> Convention:
    """The convention called ``name`` (None: the default).

    Raises:
        KeyError: no such convention (naming the ones there are).
    """
    for convention in REGISTRY:
        if convention.name == (name or DEFAULT):
            return convention
    raise KeyError(f"no benchmark convention {name!r} (there are: {', '.join(names())})")


__all__ = ["DEFAULT", "REGISTRY", "Suite", "get", "names"]
