"""Generated histories for ``perfgate bisect``: a real git repository whose commits each say how
long the benchmark takes (``cost.txt``), and a :class:`runner.pipeline.bisect.bisect_run.Comparer`
that runs the engine's real timing pass and statistics
(:class:`runner.pipeline.timing.timing.TimingPass`, looks, budget, verdicts) over simulated workers
(:mod:`testkit.sim_workers`) whose time per call is the cost each side's commit states. So a bisect
over 32 or 200 commits takes seconds, with the truth known and the noise of a shared machine
(log-normal per process and per sample).

A commit with a ``BROKEN`` file cannot be compared (the comparer raises ``UserError``, as a
failed install does); one with ``FAILS`` has a benchmark that raises at set-up (the compare
runs, the benchmark is ``failed`` on head).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from runner import results as results_mod
from runner.config import Config
from runner.errors import UserError

from .gitrepo import git
from .sim_workers import SideModel, sim_pass

#: The benchmark of every generated history.
BENCH = "bench_work"


@dataclass(frozen=True)
class History:
    """A generated repository: its path, the SHAs oldest first (``shas[0]`` is good), the index in
    ``shas`` of each regressing commit, and each commit's cost (seconds per call)."""

    path: Path
    shas: list[str]
    culprits: list[int]
    costs: list[float]


def _commit(root: Path, subject: str, i: int) -> None:
    """``git commit`` dated ``i`` hours after a fixed moment: the same history gets the same SHAs
    (and so the same simulated noise, which is seeded by them)."""
    import os
    import subprocess

    stamp = f"{1767225600 + 3600 * i} +0000"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", subject],
                   check=True, capture_output=True, env=env)


def make_history(root: Path, costs: list[float], *, broken: tuple[int, ...] = (), fails: tuple[int, ...] = (),
                 subjects: dict[int, str] | None = None) -> History:
    """One commit per cost (``costs[0]``: the good commit); commit ``i`` gets ``BROKEN`` when
    ``i in broken`` and ``FAILS`` when ``i in fails``; subjects ``change i (#100+i)`` unless given.
    Commits are dated, so the same arguments make the same SHAs."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    shas = []
    for i, cost in enumerate(costs):
        (root / "cost.txt").write_text(repr(cost))
        for name, where in (("BROKEN", broken), ("FAILS", fails)):
            marker = root / name
            if i in where:
                marker.write_text("x")
            elif marker.exists():
                marker.unlink()
        git(root, "add", "-A")
        _commit(root, (subjects or {}).get(i) or f"change {i} (#{100 + i})", i)
        shas.append(git(root, "rev-parse", "HEAD"))
    culprits = [i for i in range(1, len(costs)) if abs(costs[i] / costs[i - 1] - 1) > 1e-9]
    return History(root, shas, culprits, list(costs))


@dataclass
class SimComparer:
    """The engine's timing pass over simulated workers, one compare per call
    (:class:`runner.pipeline.bisect.bisect_run.Comparer`). ``process_sd``/``sample_sd``: the noise
    (log units); ``config``: the target's configuration before the bisect's overrides."""

    repo: Path
    seed: int = 0
    process_sd: float = 0.005
    sample_sd: float = 0.01
    config: Config = field(default_factory=lambda: Config(max_time=600.0, profile=False))
    calls: list[tuple[str, str, dict]] = field(default_factory=list)

    def _file(self, sha: str, name: str) -> str | None:
        try:
            return git(self.repo, "show", f"{sha}:{name}")
        except Exception:  # noqa: BLE001 - no such file at that commit
            return None

    def __call__(self, base_sha: str, head_sha: str, out: Path, *, filter: str | None, names: list[str] | None,
                 overrides: dict) -> dict:
        self.calls.append((base_sha, head_sha, dict(overrides)))
        if self._file(head_sha, "BROKEN") is not None:
            raise UserError(f"the install command failed at {head_sha[:12]} (exit status 1)")
        cfg = self.config.override(**{k: v for k, v in overrides.items() if v is not None})
        base, head = (float(self._file(sha, "cost.txt")) for sha in (base_sha, head_sha))
        models = {BENCH: (SideModel(base, self.process_sd, self.sample_sd, first_call=1.0),
                          SideModel(head, self.process_sd, self.sample_sd, first_call=1.0,
                                    fails_setup=self._file(head_sha, "FAILS") is not None))}
        seed = zlib.crc32(f"{self.seed}:{base_sha}:{head_sha}:{len(self.calls)}".encode())
        session, states, clock, _ = sim_pass(models, cfg, seed=random.Random(seed).randrange(2 ** 31))
        start = clock()
        session.time_all(states)
        from runner.pipeline.timing.entries import benchmark_entry

        entries = [benchmark_entry(s, session.ci_level) for s in states]
        settings = {"threshold": cfg.threshold, "alpha": cfg.alpha, "min_rounds": cfg.min_rounds,
                    "max_time": cfg.max_time, "max_rounds": cfg.max_rounds, "pair_rounds": cfg.pair_rounds,
                    "min_process_pairs": cfg.min_process_pairs, "profile": False, "looks": session.looks,
                    "ci_level": session.ci_level, "budget": {"max_time": cfg.max_time,
                                                             "spent_s": round(clock() - start, 3)}}
        environment = {"device": "cpu", "device_name": None, "torch": None, "cuda": None, "driver": None,
                       "python": "3", "platform": "sim", "cpu": "simulated", "telemetry": {}}
        doc = results_mod.new_results(repository=str(self.repo), base={"ref": base_sha, "sha": base_sha},
                                      head={"ref": head_sha, "sha": head_sha}, environment=environment,
                                      settings=settings, benchmarks=entries)
        results_mod.dump(doc, out / "results.json")
        return doc
