"""Synthetic results documents and series for the history tests (runner.results helpers)."""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np

from runner.results import new_results, side as side_result

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
SETTINGS = {"threshold": 0.02, "alpha": 0.05, "min_rounds": 5, "max_time": 60}


def environment(gpu="NVIDIA H200", driver="550.54", cuda="12.4", torch="2.5.1", runner="gpu-h200", device="cuda"):
    return {"device": device, "device_name": gpu, "torch": torch, "cuda": cuda, "driver": driver,
            "python": "3.11.9", "platform": "linux", "cpu": "AMD EPYC", "telemetry": {}, "runner_label": runner}


def sha(i: int, salt: str = "a") -> str:
    """A 40-hex commit SHA, distinct per (i, salt)."""
    return hashlib.sha1(f"{salt}{i}".encode()).hexdigest()


def when(i: float) -> str:
    return (T0 + dt.timedelta(hours=i)).isoformat().replace("+00:00", "Z")


def run_doc(i: int, values: dict[str, float], *, env=None, rng=None, samples=15, noise=0.005, salt="a", **extra) -> dict:
    """A ``perfgate run`` result for commit ``sha(i)`` measured at hour ``i``; ``values``: bench → seconds."""
    rng = rng or np.random.default_rng(i)
    benchmarks = []
    for name, level in values.items():
        xs = list(level * np.exp(rng.normal(0, noise, samples)))
        head = side_result(xs)
        ordered = sorted(xs)
        head["ci_low"], head["ci_high"] = ordered[3], ordered[-4]
        benchmarks.append({"name": name, "file": "benchmarks/bench.py", "unit": "s", "base": None, "head": head,
                           "change": None, "hints": [], "profile": None})
    return new_results(repository="acme/kernels", base=None, head={"ref": "main", "sha": sha(i, salt)},
                       environment=env or environment(), settings=SETTINGS, benchmarks=benchmarks,
                       created_at=when(i), **extra)


def compare_doc(i: int, name: str, base_s: float, head_s: float, *, pr: dict | None = None, verdict=None,
                env=None, head_sha=None) -> dict:
    """A ``perfgate compare`` result of one benchmark at hour ``i`` (optionally for a PR)."""
    rng = np.random.default_rng(1000 + i)
    base = side_result(list(base_s * np.exp(rng.normal(0, 0.003, 12))))
    head = side_result(list(head_s * np.exp(rng.normal(0, 0.003, 12))))
    ratio = head["median"] / base["median"]
    verdict = verdict or ("regression" if ratio > 1.02 else "improvement" if ratio < 0.98 else "unchanged")
    bench = {"name": name, "file": "benchmarks/bench.py", "unit": "s", "base": base, "head": head,
             "change": {"ratio": ratio, "ci_low": ratio * 0.99, "ci_high": ratio * 1.01, "p_value": 0.001,
                        "verdict": verdict}, "hints": [], "profile": None}
    extra = {"pull_request": pr} if pr else {}
    return new_results(repository="acme/kernels", base={"ref": "main", "sha": sha(i)},
                       head={"ref": "pr", "sha": head_sha or sha(i, "f")}, environment=env or environment(),
                       settings=SETTINGS, benchmarks=[bench], created_at=when(i), **extra)


def step_series(n: int, steps: list[tuple[int, float]], *, noise=0.02, seed=0, level=1e-3) -> np.ndarray:
    """``n`` log-normal noisy values; each ``(index, factor)`` multiplies the level from ``index`` on."""
    rng = np.random.default_rng(seed)
    base = np.full(n, level)
    for index, factor in steps:
        base[index:] *= factor
    return base * np.exp(rng.normal(0, noise, n))


BENCH = "bench_layer_norm[rows=4096]"


def populate(session) -> None:
    """A repository history with everything the pages draw: two benchmarks, a regression
    change point with its PR (merged, accepted), a later fix, PR results and an environment
    change (driver upgrade) starting a new series."""
    from bot.app.store import store as app_store
    from bot.db import utc_now
    from bot.history import reads as history_reads
    from bot.history import store as history_store
    from bot.history.points import parse_time

    rng = np.random.default_rng(123)
    levels = [1e-3] * 12 + [1.15e-3] * 12 + [1e-3] * 10
    for i, level in enumerate(levels):
        history_store.add_result(session, run_doc(i, {BENCH: level, "bench_matmul[n=1024]": 5e-3}, rng=rng))
    for i in range(len(levels), len(levels) + 8):
        history_store.add_result(session, run_doc(i, {BENCH: 0.9e-3, "bench_matmul[n=1024]": 5e-3}, rng=rng,
                                                  env=environment(driver="560.35")))
    repo = history_reads.get_repository(session, "acme/kernels")
    history_store.record_pull_request(session, repo, 101, url="https://github.com/acme/kernels/pull/101",
                                      title="Fuse layer norm and residual", merge_sha=sha(12))
    history_store.record_pull_request(session, repo, 102, url="https://github.com/acme/kernels/pull/102",
                                      title='Revert "Fuse layer norm and residual"',
                                      merged_at=parse_time(when(23.5)))
    history_store.add_result(session, compare_doc(5, BENCH, 1e-3, 1.16e-3, pr={
        "number": 101, "url": "https://github.com/acme/kernels/pull/101"}))
    history_store.add_result(session, compare_doc(27, BENCH, 1e-3, 0.97e-3, pr={
        "number": 103, "url": "https://github.com/acme/kernels/pull/103"}))
    # reported public: pages may show it
    app_store.record_visibility(session, "acme/kernels", False, utc_now())


PEAKMEM = "kinds.peakmem_list"


def populate_memory(session, runs: int = 20) -> None:
    """A repository history with peak memory: ``BENCH`` timed with its memory measured, and an asv
    ``peakmem_`` benchmark whose own value is memory (``measure: memory``), its peak doubling at
    the middle run."""
    from bot.app.store import store as app_store
    from bot.db import utc_now
    from bot.history import store as history_store

    rng = np.random.default_rng(7)
    for i in range(runs):
        doc = run_doc(i, {BENCH: 1e-3}, rng=rng)
        timed = doc["benchmarks"][0]
        timed["head"]["memory"] = {"kind": "cpu", "peak_bytes": 4 << 20, "processes": [4 << 20] * 3}
        peak = (1300 << 10) * (2 if i >= runs // 2 else 1)
        values = [float(peak + k * 4096) for k in range(3)]
        head = side_result(values, memory={"kind": "rss", "peak_bytes": peak + 4096,
                                           "processes": [int(v) for v in values]})
        doc["benchmarks"].append({"name": PEAKMEM, "file": "kinds.py", "unit": "B", "measure": "memory", "base": None,
                                  "head": head, "change": None, "hints": [], "profile": None})
        history_store.add_result(session, doc)
    app_store.record_visibility(session, "acme/kernels", False, utc_now())
