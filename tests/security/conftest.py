"""Hypothesis settings of the fuzz tests: ``PERFGATE_FUZZ_EXAMPLES`` inputs per property
(default 60: the whole suite stays within minutes on two cores; raise it for a long run, and
add ``--hypothesis-show-statistics`` to see how many inputs each property tried)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("perfgate", max_examples=int(os.environ.get("PERFGATE_FUZZ_EXAMPLES", "60")),
                          deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("perfgate")
