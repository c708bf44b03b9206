"""The worker side: code that runs only inside the worker processes, the only place where perfgate
imports torch. :mod:`.serve` is the fork server and its children (``python -m runner.worker``),
:mod:`.discovery` finds benchmarks and their parameters, :mod:`.sampling` times them,
:mod:`.profiling` traces them. The parent side is :mod:`runner.pipeline.timing.workers`."""
