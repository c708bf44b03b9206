"""The pipeline tests' repositories: a pure-Python library whose head changes the work, an
example suite with one edit, and a compare of them that must succeed."""

from __future__ import annotations

from pathlib import Path

from testkit.gitrepo import make_repo


def _work_module(slow_n: int, fast_n: int, fragile_raises: bool) -> str:
    """``mylib/work.py``: every benchmark's time is proportional to a loop count."""
    fragile = ('    raise RuntimeError("fragile broke on head: index out of range")' if fragile_raises
               else "    return spin(1000)")
    return f"""
        SLOW_N = {slow_n}
        FAST_N = {fast_n}
        SAME_N = 20000

        def spin(n):
            total = 0
            for i in range(n):
                total += i * i % 7
            return total

        def slow():
            return spin(SLOW_N)

        def fast():
            return spin(FAST_N)

        def same():
            return spin(SAME_N)

        def fragile():
        {fragile}
    """


#: A pure-Python library whose work is proportional to a count the head commit changes.
LIB_BASE = {
    "mylib/__init__.py": "",
    "mylib/work.py": _work_module(20000, 20000, fragile_raises=False),
    "benchmarks/bench_work.py": """
        import mylib.work as w

        def bench_slow(device):
            return w.slow

        def bench_fast(device):
            return w.fast

        def bench_same(device):
            return w.same

        def bench_fragile(device):
            return w.fragile
    """,
    "pyproject.toml": """
        [tool.perfgate]
        benchmarks = "benchmarks"
        max_time = 60
        min_sample_time = 0.01
    """,
}

#: Head: 30 % more work in slow, 30 % less in fast, same untouched, fragile raises.
LIB_HEAD = {"mylib/work.py": _work_module(26000, 14000, fragile_raises=True)}


def suite_repo(root: Path, example: Path, lib: str, old: str, new: str) -> Path:
    """A repo whose base is a copy of the example suite ``example`` (with a [tool.perfgate] for a
    short compare) and whose head replaces ``old`` by ``new`` in its library file ``lib``."""
    files = {p.relative_to(example).as_posix(): p.read_text() for p in example.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    files["pyproject.toml"] = "[tool.perfgate]\nmax_time = 90\nmin_sample_time = 0.01\nprofile = false\n"
    changed = files[lib].replace(old, new)
    assert changed != files[lib], f"{old!r} is not in {lib}"
    return make_repo(root, files, {lib: changed})


def compare_ok(repo: Path, out: Path, max_time: float | None = None) -> dict:
    """``perfgate compare base head`` on ``repo`` into ``out`` (``--max-time`` when given, else the
    repository's): exits 0; its results.json."""
    from runner import results as results_mod
    from runner.cli.main import main

    budget = ["--max-time", str(max_time)] if max_time is not None else []
    code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head",
                 "--out", str(out), *budget, "--quiet"])
    assert code == 0
    return results_mod.load(out / "results.json")
