"""perfgate's measurement engine.

Importing this package (or any module the bot needs from it: ``runner.results``,
``runner.report``) must not import torch; torch is imported only inside the worker
process (``runner.worker``) and the profiling/telemetry code that runs there.
"""

__version__ = "0.1.0"
