"""A convention that exists only in the tests: ``*.toy`` files, one case per line ``name steps``.

It is everything a new convention needs — this module and one line in
``runner.conventions.REGISTRY`` (the test adds that line) — and it shows both kinds of case: a
line ``name steps`` is timed by perfgate's sampler (a loop of ``steps``), a line ``name = value
unit`` is a benchmark that reports its own measure (one value per run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.conventions.base import Prepared, Reading, Suite, listing, python_files


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


class ToyConvention:
    name = "toy"
    looked_for = "*.toy files"
    options: tuple[str, ...] = ()

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        return Suite(self.name, benchmarks) if python_files(root / benchmarks, "*.toy") else None

    def collect(self, directory: Path, options: dict) -> dict:
        cases = []
        for path in python_files(Path(directory), "*.toy"):
            for words in _lines(path):
                case = {"name": words[0], "file": path.name, "func": words[0], "params": {}, "suite": self.name}
                if words[1] == "=":
                    case.update(measures="self", group=path.name, unit=words[3], direction="bigger")
                cases.append(case)
        return listing(cases)

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        words = {w[0]: w for w in _lines(Path(case["dir"]) / case["file"])}.get(case["name"])
        if words is None:
            raise LookupError(f"{case['name']} is not in {case['file']}")
        if words[1] == "=":
            return Prepared(measure=lambda: {w[0]: Reading((float(w[2]),), w[3], "bigger")
                                             for w in _lines(Path(case["dir"]) / case["file"]) if w[1] == "="})
        steps = int(words[1])
        return Prepared(lambda: sum(i * i for i in range(steps)))


CONVENTION = ToyConvention()
