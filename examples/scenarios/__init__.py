"""Base/head scenario pairs that reproduce perfgate's root causes on a real GPU (see README.md)."""

SCENARIOS = ("register_pressure", "sync_overhead", "memory_contention")
