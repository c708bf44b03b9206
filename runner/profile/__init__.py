"""Profile analysis, in the parent and without torch: read Kineto traces (:mod:`.kineto`, names of
every vendor and version in :mod:`.names`), summarise them (:mod:`.summaries`, with roofline peaks
from :mod:`.roofline`), match kernels across two traces (:mod:`.match`), diff them (:mod:`.diff`)
and judge what repeated passes agree on (:mod:`.noise`). The hints that explain a change read the
diff (:mod:`runner.hints`); ``perfgate trace-summary``/``trace-diff`` are
:mod:`runner.cli.trace`."""
