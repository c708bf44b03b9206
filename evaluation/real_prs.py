"""Does perfgate tell the truth about real merged pull requests that claim a speed-up?

A benchmark, not a test: it runs for about two minutes a case and prints (``--write``: writes) a
table. Each case is a folder under ``evaluation/real_prs/``:

- ``case.toml``: the repository (``owner/name``), the PR number and URL, its title, its claim
  quoted from the PR text or commit message, ``kind`` (``perf`` or ``control``: a PR that touched
  only docs or tests), the full ``base`` (first parent) and ``head`` (the merged commit) SHAs, the
  import name ``package``, extra pip packages ``requires``, and what the benchmark exercises;
- ``bench_<case>.py``: one benchmark in perfgate's own convention (``bench_*(device)`` returns the
  timed callable), written against the library's public API for the scenario the claim is about.

For each case the script clones the repository (``--mirrors DIR``: ``DIR/<owner>+<name>/repo``
or ``DIR/<owner>/<name>``, a bare or ordinary clone with the PR's commits), then:

1. runs the real ``perfgate compare --base BASE --head HEAD --benchmarks CASE_DIR --max-time T
   --no-profile`` (the library imported from each side's worktree, as ``--benchmarks DIR`` does
   for a repository without an install step) and reads its verdict, interval, resolvable change
   and wall time from results.json;
2. runs an independent check that shares nothing with perfgate's engine: ``--check-procs``
   fresh Python processes per side, alternated ABBA, one at a time, each timing the same
   callable with ``timeit``-style repeats for ``--check-seconds``; its estimate is the ratio of
   the sides' medians of the per-process medians, with a 95 % bootstrap interval over processes
   (:func:`scipy.stats.bootstrap`), and its verdict follows perfgate's rule
   (:func:`check_verdict`) so that the two can be compared.

:func:`agreement` says whether they agree. The table shows the claim, perfgate's verdict and
interval, the check's, and the agreement; the summary, how often a claimed optimisation
delivered (the check's ``faster``) and how often perfgate agreed.

Usage::

    python evaluation/real_prs.py --mirrors ~/mirrors --write evaluation/RESULTS_real_prs.md
    python evaluation/real_prs.py --mirrors ~/mirrors --only einops_XXX --max-time 30
    python evaluation/real_prs.py --smoke      # two generated cases, toy sizes (CI)

The library's own dependencies must be importable by the runner's Python (each case's
``requires``; install them with ``pip install -c <constraints pinning torch>`` so that torch stays).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, clone, compare  # noqa: E402 - the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))
from runner.pipeline.machine.conditions import GLIBC_STEADY  # noqa: E402
from runner.pipeline.revisions import source_paths  # noqa: E402
from testkit.gitrepo import git, history  # noqa: E402

CASES = Path(__file__).resolve().parent / "real_prs"
THRESHOLD = 0.02
FIELDS = ("repo", "pr", "title", "claim", "kind", "base", "head", "package")

#: One process of the independent check: import the case's benchmark from the side's worktree,
#: warm up, calibrate a repeat to >= 20 ms, then time repeats for the given seconds; print JSON.
CHECK_PROCESS = r"""
import importlib, json, sys, time
paths, module, package, seconds = json.loads(sys.argv[1])
sys.path[:0] = paths
import torch
torch.set_num_threads(1)
bench = importlib.import_module(module)
name = [n for n in dir(bench) if n.startswith("bench_") and callable(getattr(bench, n))][0]
fn = getattr(bench, name)("cpu")
origin = getattr(importlib.import_module(package), "__file__", None)
clock = time.perf_counter
end = clock() + min(0.2, seconds / 4)
while clock() < end:
    fn()
number = 1
while True:
    t0 = clock()
    for _ in range(number):
        fn()
    if clock() - t0 >= 0.02 or number >= 1 << 20:
        break
    number *= 2
times = []
end = clock() + seconds
while clock() < end or len(times) < 3:
    t0 = clock()
    for _ in range(number):
        fn()
    times.append((clock() - t0) / number)
print(json.dumps({"origin": origin, "number": number, "times": times}))
"""


def load_case(folder: Path) -> dict:
    """The case in ``folder``: its ``case.toml`` with ``id`` (the folder's name), ``dir`` and
    ``module`` (the benchmark file's module name) added.

    Raises:
        ValueError: no ``case.toml``, a missing field, a SHA that is not 40 hex digits, or not
            exactly one ``bench_*.py``.
    """
    meta = folder / "case.toml"
    if not meta.is_file():
        raise ValueError(f"{folder}: no case.toml")
    case = tomllib.loads(meta.read_text())
    missing = [f for f in FIELDS if f not in case]
    if missing:
        raise ValueError(f"{meta}: missing {', '.join(missing)}")
    for side in ("base", "head"):
        sha = str(case[side])
        if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError(f"{meta}: {side} {sha!r} is not a full 40-hex SHA")
    if case["kind"] not in ("perf", "control"):
        raise ValueError(f"{meta}: kind must be perf or control, not {case['kind']!r}")
    benches = sorted(folder.glob("bench_*.py"))
    if len(benches) != 1:
        raise ValueError(f"{folder}: expected one bench_*.py, found {len(benches)}")
    return {**case, "id": folder.name, "dir": str(folder), "module": benches[0].stem}


def find_mirror(mirrors: Path, repo: str) -> Path | None:
    """The clone of ``owner/name`` under ``mirrors`` (``owner+name/repo`` as the search tool's
    fetch lays it out, or ``owner/name``), or None."""
    owner, name = repo.split("/", 1)
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / owner / name, mirrors / f"{owner}+{name}"):
        if candidate.exists():
            return candidate
    return None


def check_verdict(ratio: float, ci_low: float, ci_high: float, threshold: float = THRESHOLD) -> str:
    """The independent check's verdict, by the rule perfgate's verdicts had before its ``unchanged``
    became a pair of one-sided tests (:func:`runner.stats.decide`), on the check's one 95 %
    bootstrap interval: ``same`` when it lies within ``[1/(1+t), 1+t]``, ``slower`` / ``faster``
    when it excludes 1, else ``unclear``. ``ratio`` is head/base time per call."""
    upper = 1.0 + threshold
    if 1.0 / upper <= ci_low and ci_high <= upper:
        return "same"
    if ci_low > 1.0:
        return "slower"
    if ci_high < 1.0:
        return "faster"
    return "unclear"


#: perfgate's verdict → the check's word for the same finding.
SAME_FINDING = {"improvement": "faster", "regression": "slower", "unchanged": "same"}


def agreement(verdict: str | None, check: str | None) -> str:
    """How perfgate's ``verdict`` stands against the check's (pure):

    - ``agree``: the same finding (improvement/faster, regression/slower, unchanged/same);
    - ``wrong direction``: improvement against slower or regression against faster;
    - ``undecided``: perfgate said ``inconclusive`` (not wrong, not an answer);
    - ``unconfirmed``: the check itself is ``unclear`` and perfgate decided;
    - ``disagree``: any other pair (a change the check puts within the band, or a change missed);
    - ``error``: either side has no verdict.
    """
    if verdict is None or check is None:
        return "error"
    if verdict == "inconclusive":
        return "undecided"
    if check == "unclear":
        return "unconfirmed"
    if SAME_FINDING.get(verdict) == check:
        return "agree"
    if {verdict, check} in ({"improvement", "slower"}, {"regression", "faster"}):
        return "wrong direction"
    return "disagree"


def overlap(p: dict, c: dict) -> bool | None:
    """Whether perfgate's interval and the check's overlap (pure): the magnitude agrees, not only
    the direction. None when either has no interval."""
    if p.get("ci_low") is None or c.get("ci_low") is None:
        return None
    return p["ci_low"] <= c["ci_high"] and c["ci_low"] <= p["ci_high"]


def process_estimate(base: list[float], head: list[float], seed: int = 0) -> dict:
    """The check's estimate from per-process medians (seconds per call): ``ratio`` = median(head) /
    median(base) with a 95 % percentile bootstrap interval over processes (both samples resampled
    independently; :func:`scipy.stats.bootstrap`, 4000 resamples)."""
    b, h = np.asarray(base, float), np.asarray(head, float)

    def stat(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ratio = float(stat(b, h))
    res = sps.bootstrap((b, h), stat, n_resamples=4000, confidence_level=0.95, method="percentile",
                        vectorized=True, random_state=np.random.default_rng(seed))
    return {"ratio": ratio, "ci_low": float(res.confidence_interval.low),
            "ci_high": float(res.confidence_interval.high)}


def run_check(case: dict, worktrees: dict[str, Path], procs: int, seconds: float, allocator: str = "system") -> dict:
    """The independent check of one case: ``procs`` processes per side in ABBA order, one at a time,
    ``OMP_NUM_THREADS=1`` (perfgate's workers run one intra-op thread each on this 2-core machine),
    glibc malloc as it comes (``allocator="system"``) or with perfgate's ``steady`` settings
    (:data:`runner.pipeline.machine.conditions.GLIBC_STEADY`), to tell an allocator effect from an
    error.

    Raises:
        RuntimeError: a process failed (its last stderr line), or imported the library from
            outside the side's worktree.
    """
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if allocator == "steady":
        env.update(GLIBC_STEADY)
    env.pop("PYTHONPATH", None)
    medians: dict[str, list[float]] = {"base": [], "head": []}
    origins = {}
    order = []
    for i in range(procs):
        order += ["base", "head"] if i % 2 == 0 else ["head", "base"]
    t0 = time.monotonic()
    for side in order:
        arg = json.dumps([source_paths(worktrees[side]) + [case["dir"]], case["module"], case["package"], seconds])
        proc = subprocess.run([sys.executable, "-c", CHECK_PROCESS, arg], capture_output=True, text=True, env=env,
                              cwd=str(worktrees[side]), timeout=120 + 10 * seconds)
        if proc.returncode != 0:
            raise RuntimeError(f"check on {side}: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        origin = out.get("origin") or ""
        if origin and not Path(origin).resolve().is_relative_to(worktrees[side].resolve()):
            raise RuntimeError(f"check on {side}: {case['package']} imported from {origin}, not the worktree")
        origins[side] = origin
        medians[side].append(statistics.median(out["times"]))
    est = process_estimate(medians["base"], medians["head"])
    return {**est, "verdict": check_verdict(est["ratio"], est["ci_low"], est["ci_high"]), "procs": procs,
            "base_s": statistics.median(medians["base"]), "head_s": statistics.median(medians["head"]),
            "seconds": round(time.monotonic() - t0, 1), "allocator": allocator}


def run_perfgate(repo: Path, case: dict, out: Path, max_time: float) -> dict:
    """The real ``perfgate compare`` of the case in a subprocess; its one benchmark's change, wall
    time and settings.

    Raises:
        RuntimeError: the compare exited non-zero without results (its last stderr line).
    """
    outcome = compare(repo, out, "--benchmarks", case["dir"], "--max-time", str(max_time),
                      "--no-profile", "--threshold", str(THRESHOLD), "--title", case["title"],
                      base=case["base"], head=case["head"], timeout=max_time * 2 + 300)
    if outcome.doc is None:
        raise RuntimeError(outcome.failure())
    doc, wall = outcome.doc, outcome.wall
    (bench,) = doc["benchmarks"][:1] or [{}]
    change = bench.get("change") or {}
    error = (bench.get("head") or {}).get("error") or (bench.get("base") or {}).get("error")
    return {"verdict": change.get("verdict"), "ratio": change.get("ratio"), "ci_low": change.get("ci_low"),
            "ci_high": change.get("ci_high"), "resolvable": change.get("resolvable"),
            "pairs": change.get("process_pairs"), "timing_s": change.get("seconds"), "error": error,
            "stop_reason": change.get("stop_reason"), "wall": round(wall, 1), "max_time": max_time,
            "within_budget": wall <= 1.1 * max_time, "base_s": (bench.get("base") or {}).get("median"),
            "head_s": (bench.get("head") or {}).get("median")}


def run_case(case: dict, mirrors: Path, tmp: Path, max_time: float, procs: int, seconds: float,
             allocator: str = "system") -> dict:
    """perfgate and the check on one case; a row for the table (``error`` set when it could not run)."""
    row = {k: case.get(k) for k in ("id", "repo", "pr", "url", "title", "claim", "kind", "base", "head")}
    mirror = find_mirror(mirrors, case["repo"])
    if mirror is None:
        return {**row, "error": f"no clone of {case['repo']} under {mirrors}"}
    repo = clone(mirror, tmp / case["id"] / "clone")
    try:
        for side in ("base", "head"):
            git(repo, "cat-file", "-e", f"{case[side]}^{{commit}}")
    except subprocess.CalledProcessError:
        return {**row, "error": f"{case['repo']} clone lacks {case['base'][:12]} or {case['head'][:12]}"}
    try:
        row["perfgate"] = run_perfgate(repo, case, tmp / case["id"] / "out", max_time)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        row["perfgate"] = {"verdict": None, "error": str(exc)}
    worktrees = {}
    for side in ("base", "head"):
        worktrees[side] = tmp / case["id"] / side
        git(repo, "worktree", "add", "--quiet", "--detach", str(worktrees[side]), case[side])
    try:
        row["check"] = run_check(case, worktrees, procs, seconds, allocator)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        row["check"] = {"verdict": None, "error": str(exc)}
    row["agreement"] = agreement(row["perfgate"].get("verdict"), row["check"].get("verdict"))
    row["overlap"] = overlap(row["perfgate"], row["check"])
    return row


def summarize(rows: list[dict]) -> dict:
    """The study's figures (pure): counts by agreement for perf cases and controls, wrong
    directions, verdicts on controls, claims delivered (the check's ``faster``), budgets kept."""
    ran = [r for r in rows if "agreement" in r]
    perf = [r for r in ran if r["kind"] == "perf"]
    controls = [r for r in ran if r["kind"] == "control"]

    def count(rs, key):
        out: dict[str, int] = {}
        for r in rs:
            out[key(r)] = out.get(key(r), 0) + 1
        return dict(sorted(out.items()))

    decided_check = [r for r in perf if r["check"].get("verdict") in ("faster", "slower", "same")]
    agreed = [r for r in decided_check if r["agreement"] == "agree"]
    walls = [r["perfgate"]["wall"] for r in ran if r["perfgate"].get("wall") is not None]
    return {
        "cases": len(rows), "ran": len(ran), "not_run": [r["id"] for r in rows if "agreement" not in r],
        "perf": len(perf), "controls": len(controls),
        "perf_agreement": count(perf, lambda r: r["agreement"]),
        "agree_of_check_decided": f"{len(agreed)}/{len(decided_check)}",
        "agree_fraction": len(agreed) / len(decided_check) if decided_check else None,
        "wrong_direction": sum(r["agreement"] == "wrong direction" for r in ran),
        "agree_but_intervals_apart": [r["id"] for r in agreed if r.get("overlap") is False],
        "control_verdicts": count(controls, lambda r: r["perfgate"].get("verdict") or "error"),
        "control_false": sum(r["perfgate"].get("verdict") in ("improvement", "regression") for r in controls),
        "claims_delivered": count(perf, lambda r: r["check"].get("verdict") or "error"),
        "budget_kept": f"{sum(bool(r['perfgate'].get('within_budget')) for r in ran)}/{len(ran)}",
        "wall_median": statistics.median(walls) if walls else None,
    }


def _pct(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 2 or x <= 0.5:
        return f"×{x:.3g}"
    return f"{(x - 1) * 100:+.1f} %"


def _interval(d: dict) -> str:
    if d.get("ci_low") is None:
        return "–"
    return f"{_pct(d['ratio'])} [{_pct(d['ci_low'])}, {_pct(d['ci_high'])}]"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict], summary: dict, args) -> str:
    """The markdown table and summary of a run."""
    lines = ["| case | PR | claim | perfgate | change [99 % CI] | resolvable | wall | check | check change "
             "[95 % CI] | agreement |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pr = f"[{_md(r['repo'])}#{r['pr']}]({r['url']})" if r.get("url") else _md(r.get("repo") or "")
        if "agreement" not in r:
            lines.append(f"| {r['id']} | {pr} | {_md(r.get('claim') or '')[:80]} | not run: {_md(r['error'])} "
                         "| | | | | | |")
            continue
        p, c = r["perfgate"], r["check"]
        res = f"{p['resolvable'] * 100:.1f} %" if p.get("resolvable") is not None else "–"
        wall = f"{p['wall']:.0f} s" if p.get("wall") is not None else "–"
        pv = p.get("verdict") or f"error: {_md(p.get('error'))[:60]}"
        cv = c.get("verdict") or f"error: {_md(c.get('error'))[:60]}"
        claim = ("control: " if r["kind"] == "control" else "") + _md(r.get("claim") or "")[:90]
        apart = " (intervals apart)" if r.get("overlap") is False and r["agreement"] == "agree" else ""
        lines.append(f"| {r['id']} | {pr} | {claim} | {pv} | {_interval(p)} | {res} | {wall} | {cv} | "
                     f"{_interval(c)} | {r['agreement']}{apart} |")
    s = summary
    lines += [
        "",
        f"- cases: {s['ran']} run of {s['cases']} ({s['perf']} claimed speed-ups, {s['controls']} controls)"
        + (f"; not run: {', '.join(s['not_run'])}" if s["not_run"] else ""),
        f"- perfgate against the check on the claimed speed-ups: {s['perf_agreement']}; agrees on "
        f"{s['agree_of_check_decided']} of those the check decided"
        + (f" ({s['agree_fraction']:.0%})" if s["agree_fraction"] is not None else ""),
        f"- wrong direction: {s['wrong_direction']}",
        "- agreed in direction but perfgate's interval misses the check's (the magnitude differs): "
        + (", ".join(s["agree_but_intervals_apart"]) or "none"),
        f"- controls: {s['control_verdicts']} (false verdicts: {s['control_false']})",
        f"- did the claimed speed-up deliver (the check's verdict): {s['claims_delivered']}",
        f"- --max-time {args.max_time:g} s kept within 10 %: {s['budget_kept']}; median compare wall "
        + (f"{s['wall_median']:.0f} s" if s["wall_median"] is not None else "–"),
        f"- the check: {args.check_procs} processes per side × {args.check_seconds:g} s, ABBA, one thread, "
        f"glibc malloc {'as it comes' if getattr(args, 'check_allocator', 'system') == 'system' else 'with perfgate steady preset'}",
    ]
    return "\n".join(lines) + "\n"


# -- the smoke: two generated cases of a tiny library, so that CI runs every step above ----------

SMOKE_BASE = "def total(xs):\n    t = 0\n    for x in xs:\n        t = t + x\n    return t\n"
SMOKE_HEAD = "def total(xs):\n    return sum(xs)\n"
SMOKE_BENCH = ('"""The smoke library\'s total over 20 000 integers."""\nimport tinylib\n\n\n'
               "def bench_total(device):\n    xs = list(range(20000))\n    return lambda: tinylib.total(xs)\n")


def make_smoke(tmp: Path) -> tuple[Path, Path]:
    """A mirrors folder with ``local/tinylib`` (three commits: base, a faster ``total``, a README
    change) and a cases folder with a ``perf`` case and a ``control`` case of it."""
    base, head, docs = history(tmp / "mirrors" / "local" / "tinylib", [
        ({"tinylib.py": SMOKE_BASE}, "base"),
        ({"tinylib.py": SMOKE_HEAD}, "Speed up total with sum (#1)"),
        ({"README.md": "tinylib\n"}, "docs (#2)")])
    cases = tmp / "cases"
    for cid, kind, b, h, claim in (("tinylib_1", "perf", base, head, "sum() is faster"),
                                   ("tinylib_2", "control", head, docs, "docs only")):
        (cases / cid).mkdir(parents=True)
        (cases / cid / "case.toml").write_text(
            f'repo = "local/tinylib"\npr = {cid[-1]}\nurl = ""\ntitle = "{claim}"\nclaim = "{claim}"\n'
            f'kind = "{kind}"\nbase = "{b}"\nhead = "{h}"\npackage = "tinylib"\nrequires = []\n')
        (cases / cid / f"bench_{cid}.py").write_text(SMOKE_BENCH)
    return tmp / "mirrors", cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, help="folder of the repositories' clones")
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--only", default="", help="comma-separated case ids")
    parser.add_argument("--max-time", type=float, default=60.0)
    parser.add_argument("--check-procs", type=int, default=10)
    parser.add_argument("--check-seconds", type=float, default=1.0)
    parser.add_argument("--check-allocator", choices=("system", "steady"), default="system",
                        help="glibc malloc of the check's processes: as it comes, or perfgate's steady preset")
    parser.add_argument("--write", type=Path, help="write the table (markdown) here")
    parser.add_argument("--json", type=Path, help="write the rows and summary here")
    parser.add_argument("--smoke", action="store_true", help="two generated cases at toy sizes")
    parser.add_argument("--report", type=Path, help="run nothing: render the rows of an earlier --json")
    args = parser.parse_args(argv)
    if args.report:
        doc = json.loads(args.report.read_text())
        rows = doc["rows"]
        for key, value in (doc.get("settings") or {}).items():
            setattr(args, key, value)
        for row in rows:
            if "agreement" in row:
                row["overlap"] = overlap(row["perfgate"], row["check"])
        return _emit(rows, args)
    with tempfile.TemporaryDirectory(prefix="perfgate-real-prs-") as tmp_name:
        tmp = Path(tmp_name)
        if args.smoke:
            args.mirrors, args.cases = make_smoke(tmp)
            args.max_time, args.check_procs, args.check_seconds = 10.0, 2, 0.2
        if args.mirrors is None:
            parser.error("--mirrors DIR is required (or --smoke)")
        only = {x for x in args.only.split(",") if x}
        cases = [load_case(d) for d in sorted(args.cases.iterdir())
                 if d.is_dir() and (d / "case.toml").exists() and (not only or d.name in only)]
        rows = []
        for case in cases:
            t0 = time.monotonic()
            row = run_case(case, args.mirrors, tmp, args.max_time, args.check_procs, args.check_seconds,
                           args.check_allocator)
            rows.append(row)
            if args.json:  # after every case, so that an interrupted run keeps what it measured
                args.json.write_text(json.dumps({"rows": rows, "settings": _settings(args)}, indent=1))
            if "agreement" in row:
                p, c = row["perfgate"], row["check"]
                print(f"{case['id']}: perfgate {p.get('verdict')} {_interval(p)} in {p.get('wall', 0):.0f} s; "
                      f"check {c.get('verdict')} {_interval(c)}; {row['agreement']} "
                      f"({time.monotonic() - t0:.0f} s)", flush=True)
                for what in ("perfgate", "check"):
                    if row[what].get("error"):
                        print(f"  {what} error: {row[what]['error']}", flush=True)
            else:
                print(f"{case['id']}: not run: {row['error']}", flush=True)
    return _emit(rows, args)


def _settings(args) -> dict:
    return {k: getattr(args, k, None) for k in ("max_time", "check_procs", "check_seconds", "check_allocator")}


def _emit(rows: list[dict], args) -> int:
    """Print the table and summary; write them (``--write``, after the file's ``<!-- table -->``
    marker, keeping what stands before it) and the rows (``--json``)."""
    summary = summarize(rows)
    text = render(rows, summary, args)
    print(text)
    if args.write:
        head = args.write.read_text().split("<!-- table -->")[0] if args.write.exists() else ""
        args.write.write_text((head or "# Real pull requests\n\n") + "<!-- table -->\n" + text)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "settings": _settings(args)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
