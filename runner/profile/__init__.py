"""Profile analysis, in the parent and without torch: read Kineto traces (:mod:`.kineto`, names of
every vendor and version in :mod:`.names`), summarise them (:mod:`.summaries`, with roofline peaks
from :mod:`.roofline`), match kernels across two traces (:mod:`.match`), diff them (:mod:`.diff`),
judge what repeated passes agree on (:mod:`.noise`) and explain a change (:mod:`.hints`);
``perfgate trace-summary``/``trace-diff`` (:mod:`.cli`)."""
