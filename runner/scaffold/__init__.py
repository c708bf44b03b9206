"""``perfgate init``: what a target repository needs to be benchmarked by perfgate.

:mod:`.inspect` reads the repository (which files exist, an asv or pytest-benchmark suite, the
``torch.nn.Module`` classes it defines); :mod:`.plan` decides, as a pure function of those facts,
which files to write and with what text: the workflow (from the two files in ``workflows/``,
the same ones README links as examples), a ``perfgate.toml`` whose keys, defaults and comments
come from :class:`runner.config.Config`, and an example benchmark. The command itself is
:mod:`runner.cli.init`.
"""
