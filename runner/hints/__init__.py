"""Root-cause hints, the report's Why (pure): each rule one function registered with
``@rule(kind)`` (:mod:`.rule`, the registry and the kinds' ranking), over what the GPU did
(:mod:`.device`) and what the host did around it (:mod:`.host`); :func:`.evidence.hints_for`
runs them over a profile diff (:mod:`runner.profile`) and keeps what explains the measured
change. Adding a hint is one decorated function and its kind's place in ``RANKING``."""
