"""Does perfgate ever give a verdict on identical code? Real docs-only commits, whole suites, the
default budget split, several runs each.

A benchmark, not a test: it prints (``--write``: writes) a table. The controls are listed in
``evaluation/identical_code/controls.toml``: a public commit that touched only docs, tests or
docstrings (its first parent as base), and the suite folder under ``evaluation/identical_code/``
it runs — 4 to 10 benchmarks in perfgate's convention, against the library's public API. Before
it runs one, the script checks from the diff that the library's code really is identical
(:func:`code_identical`: every changed ``.py`` file outside tests and docs has the same syntax
tree without its docstrings); a commit that fails the check is reported, not run.

Each control is compared ``--runs`` times with the real ``perfgate compare --base BASE --head HEAD
--benchmarks SUITE --max-time T --no-profile``: the whole suite in one compare, so the timing pass
splits the budget across its benchmarks as it does for a user (issue 45: compared one at a time,
the same commit was ``unchanged``; in its suite, a 1.50× "regression"). Every benchmark's verdict
is counted; ``regression`` or ``improvement`` on identical code is a false verdict.

``--mirrors DIR`` holds ordinary (not bare) clones, ``DIR/<owner>+<name>/repo`` or
``DIR/<owner>/<name>``, with the controls' commits.

Usage::

    python evaluation/identical_code.py --mirrors ~/mirrors --runs 5 --write evaluation/RESULTS_identical_code.md
    python evaluation/identical_code.py --smoke      # a generated docstring-only commit, toy sizes (CI)

The libraries' dependencies must be importable by the runner's Python (kornia: ``kornia_rs``; see
``evaluation/real_prs/requirements.txt``).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import ROOT, SPIN, compare  # noqa: E402 - the evaluation folder is first on sys.path
from real_prs import find_mirror  # noqa: E402

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import git, history  # noqa: E402

CONTROLS = HERE / "identical_code" / "controls.toml"
CHANGES = ("regression", "improvement")


def _without_docstrings(source: str) -> str:
    """``source``'s syntax tree, docstrings removed, as text (comments never reach the tree)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def code_identical(clone: Path, base: str, head: str, package: str) -> tuple[bool, str]:
    """Is the library's code identical base to head? ``(yes, why)``: every changed file is outside
    the package the suite imports (``package/``: docs, tests, CI, text, helpers) or a ``.py`` file
    whose syntax tree without docstrings is the same on both sides."""
    changed = git(clone, "diff", "--name-only", base, head).split()
    code = [p for p in changed if p.endswith(".py") and p.startswith(f"{package}/")]
    for path in code:
        try:
            before = git(clone, "show", f"{base}:{path}")
            after = git(clone, "show", f"{head}:{path}")
        except subprocess.CalledProcessError:
            return False, f"{path} added or removed"
        if _without_docstrings(before) != _without_docstrings(after):
            return False, f"{path} changes code, not only docstrings"
    return True, (f"{len(changed)} file(s) changed, {len(code)} of them in {package}/ with only docstrings changed"
                  if code else f"{len(changed)} file(s) changed, none of them in {package}/")


def run_compare(clone: Path, control: dict, suite: Path, out: Path, max_time: float) -> dict:
    """One real ``perfgate compare`` of the whole suite; every benchmark's verdict and interval."""
    outcome = compare(clone, out, "--benchmarks", str(suite), "--max-time", str(max_time),
                      "--no-profile", base=control["base"], head=control["head"],
                      timeout=max_time * 2 + 300)
    if outcome.doc is None:
        return {"error": outcome.failure(), "wall": round(outcome.wall, 1)}
    benchmarks = []
    for bench in outcome.doc["benchmarks"]:
        change = bench.get("change") or {}
        benchmarks.append({"name": bench["name"], "verdict": change.get("verdict"), "ratio": change.get("ratio"),
                           "ci_low": change.get("ci_low"), "ci_high": change.get("ci_high"),
                           "pairs": change.get("process_pairs"), "stop_reason": change.get("stop_reason")})
    return {"wall": round(outcome.wall, 1), "benchmarks": benchmarks}


def summarize(rows: list[dict]) -> dict:
    """Verdict counts over every benchmark comparison of every run, and the false verdicts."""
    verdicts = Counter(b["verdict"] for r in rows for b in r.get("benchmarks", []))
    false = [(r["id"], r["run"], b["name"], b["ratio"], b["ci_low"], b["ci_high"])
             for r in rows for b in r.get("benchmarks", []) if b["verdict"] in CHANGES]
    return {"comparisons": sum(verdicts.values()), "verdicts": dict(verdicts), "false": false,
            "runs": len(rows), "errors": sum(1 for r in rows if r.get("error"))}


def _ratio(b: dict) -> str:
    if b.get("ratio") is None:
        return "—"
    return f"{b['ratio']:.3f} [{b['ci_low']:.3f}, {b['ci_high']:.3f}]"


def render(rows: list[dict], summary: dict, max_time: float) -> str:
    lines = [f"{summary['comparisons']} benchmark comparisons on identical code in {summary['runs']} compares "
             f"(`--max-time {max_time:g}`, each control's whole suite): "
             + ", ".join(f"{v} {k}" for k, v in sorted(summary["verdicts"].items()))
             + f"; **{len(summary['false'])} false verdict(s)**; {summary['errors']} compare(s) failed.", "",
             "| control | run | wall | unchanged | inconclusive | change (false) | other |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['id']} | {r['run']} | {r.get('wall', 0):.0f} s | — | — | — | {r['error'][:80]} |")
            continue
        count = Counter(b["verdict"] for b in r["benchmarks"])
        changed = "; ".join(f"`{b['name']}` {b['verdict']} {_ratio(b)}" for b in r["benchmarks"] if b["verdict"] in CHANGES)
        other = sum(v for k, v in count.items() if k not in ("unchanged", "inconclusive", *CHANGES))
        lines.append(f"| {r['id']} | {r['run']} | {r['wall']:.0f} s | {count['unchanged']} | {count['inconclusive']} | "
                     f"{changed or 0} | {other} |")
    return "\n".join(lines) + "\n"


def make_smoke(tmp: Path) -> tuple[Path, Path, Path]:
    """A mirrors folder with ``local/tinylib`` (base, then a commit that only rewrites a docstring),
    a controls file naming it, and a suite of four benchmarks."""
    docs_only = SPIN.replace("n steps of a loop", "n multiplications")  # its docstring only
    base, head = history(tmp / "mirrors" / "local" / "tinylib", [
        ({"tinylib/__init__.py": SPIN}, "base"),
        ({"tinylib/__init__.py": docs_only}, "docs: say what spin does (#2)")])
    suite = tmp / "suites" / "tinylib"
    suite.mkdir(parents=True)
    (suite / "bench_tiny.py").write_text("import tinylib\n\n" + "".join(
        f"\ndef bench_spin_{n}(device):\n    return lambda: tinylib.spin({n})\n" for n in (500, 1000, 2000, 4000)))
    controls = tmp / "controls.toml"
    controls.write_text(f'[[control]]\nid = "tinylib_2"\nrepo = "local/tinylib"\npackage = "tinylib"\n'
                        f'suite = "tinylib"\nbase = "{base}"\nhead = "{head}"\nwhat = "a docstring"\n')
    return tmp / "mirrors", controls, tmp / "suites"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, help="folder of the repositories' clones")
    parser.add_argument("--controls", type=Path, default=CONTROLS)
    parser.add_argument("--only", default="", help="comma-separated control ids")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-time", type=float, default=150.0)
    parser.add_argument("--write", type=Path, help="write the table (markdown) after the file's <!-- table --> marker")
    parser.add_argument("--json", type=Path, help="write the rows and summary here")
    parser.add_argument("--smoke", action="store_true", help="a generated docstring-only commit, toy sizes")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfgate-identical-") as tmp_name:
        tmp = Path(tmp_name)
        suites = HERE / "identical_code"
        if args.smoke:
            args.mirrors, args.controls, suites = make_smoke(tmp)
            args.runs, args.max_time = 1, 20.0
        if args.mirrors is None:
            parser.error("--mirrors DIR is required (or --smoke)")
        only = {x for x in args.only.split(",") if x}
        controls = [c for c in tomllib.loads(args.controls.read_text())["control"] if not only or c["id"] in only]
        rows = []
        for control in controls:
            clone = find_mirror(args.mirrors, control["repo"])
            identical, why = (code_identical(clone, control["base"], control["head"], control["package"]) if clone
                              else (False, "no clone"))
            if not identical:
                print(f"{control['id']}: not a control: {why}", flush=True)
                rows.append({"id": control["id"], "run": 0, "error": f"not a control: {why}"})
                continue
            for run in range(1, args.runs + 1):
                row = {"id": control["id"], "run": run, "identical": why,
                       **run_compare(clone, control, suites / control["suite"], tmp / f"{control['id']}-{run}", args.max_time)}
                rows.append(row)
                verdicts = Counter(b["verdict"] for b in row.get("benchmarks", []))
                print(f"{control['id']} run {run}: {dict(verdicts) or row.get('error')} in {row['wall']:.0f} s", flush=True)
                if args.json:
                    args.json.write_text(json.dumps({"rows": rows}, indent=1))
    summary = summarize(rows)
    text = render(rows, summary, args.max_time)
    print(text)
    if args.write:
        head = args.write.read_text().split("<!-- table -->")[0] if args.write.exists() else ""
        args.write.write_text((head or "# Identical code\n\n") + "<!-- table -->\n" + text)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 1 if summary["false"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
