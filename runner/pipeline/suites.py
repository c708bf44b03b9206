"""Which benchmark convention a revision uses, and where its benchmarks are (config key ``suite``).

``auto`` (the default) asks each convention of :data:`runner.conventions.REGISTRY` in its order
whether it claims the revision (:meth:`runner.conventions.base.Convention.detect`: asv with an
``asv.conf.json``, a configured ``command``, pytest-benchmark tests, perfgate's ``bench_*``
factories, Triton ``perf_report``/``do_bench`` scripts, ``torch.utils.benchmark`` scripts); the
first that does is it, and perfgate's ``bench_*`` is the fallback. A named ``suite`` is asked for
its directory alone. The worker does the listing itself.
"""

from __future__ import annotations

from pathlib import Path

from .. import conventions
from ..config import Config
from ..conventions.base import Suite

__all__ = ["Suite", "detect", "detect_in", "looked_for", "options"]


def detect(root: Path, suite: str, benchmarks: str, cfg: Config | None = None) -> Suite:
    """The convention and benchmark directory of the revision checked out at ``root``.

    Args:
        suite: the config's ``suite`` (``auto`` or a convention's name).
        benchmarks: the config's ``benchmarks`` directory, relative to ``root``.
        cfg: the rest of the configuration (a convention may read its own keys); defaults.

    Raises:
        UserError: a convention's own files are broken (an ``asv.conf.json`` that is not JSON, or
            whose ``benchmark_dir`` leaves the repository).
    """
    cfg = cfg or Config()
    if suite != "auto":
        return conventions.get(suite).detect(root, benchmarks, cfg) or Suite(suite, benchmarks)
    for convention in conventions.REGISTRY:
        found = convention.detect(root, benchmarks, cfg)
        if found is not None:
            return found
    return Suite(conventions.DEFAULT, benchmarks)


def detect_in(directory: Path, suite: str, cfg: Config | None = None) -> str:
    """The convention of a benchmark directory given as it is (``--benchmarks DIR``): ``suite``
    unless ``auto``; then the first convention that claims ``DIR`` as the benchmark directory of
    its parent (an ``asv.conf.json`` beside ``DIR`` whose ``benchmark_dir`` is ``DIR``, or ``DIR``'s
    own files), else perfgate's."""
    if suite != "auto":
        return suite
    cfg = cfg or Config()
    directory = directory.resolve()
    for convention in conventions.REGISTRY:
        found = convention.detect(directory.parent, directory.name, cfg)
        if found is not None and (directory.parent / found.directory).resolve() == directory:
            return found.kind
    return conventions.DEFAULT


def looked_for(suite: str) -> str:
    """What "no benchmarks found" says the convention ``suite`` looks for."""
    try:
        return conventions.get(suite).looked_for
    except KeyError:
        return f"{suite} benchmarks"


def options(suite: str, cfg: Config) -> dict:
    """The configuration keys the convention ``suite`` asks its worker side for, with their values
    (sent with every listing and set-up)."""
    try:
        keys = conventions.get(suite).options
    except KeyError:
        return {}
    return {key: getattr(cfg, key) for key in keys}
