"""Does head still compute what base did? The summary of a benchmark call's return value as it
crosses the pipe (:mod:`.summary`, read as untrusted input) and base's outputs against head's
(:mod:`.verdict`, pure). Leaves of the engine: the worker writes the summaries
(:mod:`runner.worker.outputs`), the timing pass asks for them
(:mod:`runner.pipeline.timing.outputs`)."""
