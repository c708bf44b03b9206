"""What one artifact's ingest costs the App's worker (security review F13): a results.json of
about ``--mb`` MB, zipped as the Action uploads it, taken the way
``bot.app.job.runs.ingest_results`` takes it — unpacked, validated and rendered once
(``bot.app.core.ingest.prepare``), stored with its points and change points
(``bot.history.store.add_result``, SQLite in a temporary folder), and concluded (the sticky comment,
the check run's summary and title) — without the network.

A benchmark, not a test: it prints the seconds of each part (the best of ``--repeat`` runs) and
how many full schema validations of the document one ingest makes (every call of
``runner.results.validation_problems``, which ``validate`` also goes through).

Usage::

    python -m evaluation.ingest_cost                 # ~1.5 MB, a PR's compare
    python -m evaluation.ingest_cost --kind history  # a push: the compare's head side is stored

The document repeats the benchmarks of ``testkit/documents.py`` (every section the
readers show: hints, kernel profiles, an error) under new names, each measured side with
``--samples`` rounds, until it is ``--mb`` MB of JSON.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def document(megabytes: float, samples: int) -> dict:
    """A valid compare document of about ``megabytes`` MB of JSON, whose measured sides hold
    ``samples`` rounds each (seconds, log-normal noise, seeded)."""
    import random

    from runner import results
    from testkit.documents import full_document

    rng = random.Random(0)
    doc = full_document()

    def copy(bench: dict, i: int) -> dict:
        bench = dict(json.loads(json.dumps(bench)), name=f"{bench['name']}[copy={i}]")
        for name in ("base", "head"):
            old = bench.get(name)
            if old and old.get("samples"):
                level = old["median"]
                extra = {k: v for k, v in old.items() if k not in ("samples", "median", "ci_low", "ci_high",
                                                                    "peak_memory_bytes", "error")}
                bench[name] = results.side([level * rng.lognormvariate(0, 0.01) for _ in range(samples)],
                                           peak_memory_bytes=old.get("peak_memory_bytes"), error=old.get("error"),
                                           **extra)
        return bench

    template = doc["benchmarks"]
    per_copy = len(json.dumps([copy(b, 0) for b in template]))
    copies = max(1, round((megabytes * 1e6 - len(json.dumps(doc)) + len(json.dumps(template))) / per_copy))
    doc["benchmarks"] = [copy(b, i) for i in range(copies) for b in template]
    doc["summary"] = results.summarize(doc["benchmarks"])
    return results.validate(doc)


def artifact(doc: dict) -> bytes:
    """The zip the Action uploads (``perfgate-results-<run-id>``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("results.json", json.dumps(doc))
    return buffer.getvalue()


class Counting:
    """Counts the full schema validations (``runner.results.validation_problems`` calls)."""

    def __init__(self):
        from runner import results

        self.module, self.original, self.calls = results, results.validation_problems, 0

    def __enter__(self):
        def counted(doc):
            self.calls += 1
            return self.original(doc)

        self.module.validation_problems = counted
        return self

    def __exit__(self, *exc):
        self.module.validation_problems = self.original


def ingest_once(data: bytes, doc: dict, kind: str, folder: Path, n: int) -> dict[str, float]:
    """One ingest, as the executor makes it; seconds per part."""
    from bot.app.core import ingest
    from bot.db import open_database
    from bot.history import store as history_store

    head = doc["head"]["sha"]
    times: dict[str, float] = {}
    start = time.perf_counter()
    prepared = ingest.prepare(data, run_id=f"run{n}", head_sha=head, kind=kind, repository="acme/kernels",
                              pr_number=7 if kind == "pr" else None, github_url="https://github.com",
                              workflow_url="https://github.com/acme/kernels/actions/runs/1",
                              details_url="https://perfgate.example.org/runs/x")
    times["prepare (unzip, parse, validate, render check)"] = time.perf_counter() - start
    db = open_database(f"sqlite:///{folder / f'perfgate{n}.db'}")
    try:
        # as bot.app.job.runs.ingest_results calls it at this commit
        validated = {"validated": True} if "validated" in inspect.signature(history_store.add_result).parameters \
            else {}
        start = time.perf_counter()
        with db.session() as session, session.begin():
            history_store.add_result(session, prepared, repository="acme/kernels", **validated)
        times["store (add_result)"] = time.perf_counter() - start
    finally:
        db.dispose()
    start = time.perf_counter()
    verdict = ingest.conclusion(prepared, 0.0)
    for text in (ingest.comment_body(prepared, "https://perfgate.example.org/runs/x"),
                 ingest.check_summary(prepared, "https://perfgate.example.org/runs/x"),
                 ingest.check_title(prepared, verdict)):
        text.encode("utf-8")
    times["conclude (comment, check run)"] = time.perf_counter() - start
    times["total"] = sum(times.values())
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.5, help="size of results.json in MB (default 1.5)")
    parser.add_argument("--samples", type=int, default=100, help="rounds per measured side (default 100)")
    parser.add_argument("--kind", choices=("pr", "history"), default="pr")
    parser.add_argument("--repeat", type=int, default=3, help="ingests to run; the best is printed (default 3)")
    parser.add_argument("--smoke", action="store_true", help="a 0.05 MB document, once (seconds; for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mb, args.repeat = 0.05, 1

    doc = document(args.mb, args.samples)
    data = artifact(doc)
    print(f"results.json {len(json.dumps(doc)) / 1e6:.2f} MB, {len(doc['benchmarks'])} benchmarks, "
          f"artifact {len(data) / 1e6:.2f} MB")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, Counting() as counting:
        for n in range(args.repeat):
            before = counting.calls
            times = ingest_once(data, doc, args.kind, Path(tmp), n)
            validations = counting.calls - before
            best = {k: min(v, best.get(k, v)) for k, v in times.items()}
    for part, seconds in best.items():
        print(f"  {part:<48} {seconds:7.2f} s")
    print(f"full schema validations per ingest: {validations}")
    print(f"ingest_s={best['total']:.2f} validations={validations} kind={args.kind} mb={args.mb} "
          f"samples={args.samples}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
