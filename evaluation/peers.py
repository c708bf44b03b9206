"""perfgate side by side with asv, pyperf, pytest-benchmark and github-action-benchmark.

A benchmark, not a test: it prints one table and ends with the line
``perfgate_aa_false=.. perfgate_2pct=.. asv_2pct=.. pyperf_2pct=.. wall_ratio_vs_asv=..``.

Every pair is one generated git repository with two commits, ``base`` and ``head``, that holds
the same three workloads written once (``peerwork.py``) and one suite per tool's convention:

- perfgate: ``benchmarks/bench_peers.py`` (``bench_*`` functions returning a callable);
- asv: ``asv.conf.json`` + ``asv_bench/benchmarks.py`` (``time_*`` methods, ``setup``);
- pyperf: ``pyperf_bench.py`` (a ``pyperf.Runner`` script);
- pytest-benchmark (and github-action-benchmark, which reads its JSON): ``bench_pytest/test_peers.py``.

Workloads, each doing ``COUNT`` (100 on base) identical units of work, so head's change is
exactly ``COUNT_head / 100 - 1``:

- ``cpu_mm``: ``torch.mm`` of two 128×128 float32 matrices, COUNT times (compute-bound);
- ``mem_add``: ``torch.add`` of two 256 KiB rows into a third, over COUNT distinct rows of
  110-row buffers (75 MB streamed per call: memory-bound);
- ``py_loop``: a pure-Python loop of 500·COUNT integer steps.

Pairs: A/A (head touches a README only) and head doing 1, 2, 5, 10 % more (``+``) or less
(``-``) work in all three workloads. For every pair the tools run in an order rotated by one
per pair (drift hits them all alike), one after the other, never at the same time:

- ``perfgate compare`` with its defaults (threshold 2 %), profiling off (it only adds the
  *why*, not the verdict);
- asv: what ``asv continuous`` does, by hand, because asv cannot benchmark two commits in an
  ``existing`` environment (``asv run`` refuses a commit range there, and ``continuous`` needs
  one): each side checked out in its own worktree and run with
  ``asv run --environment existing:PYTHON --set-commit-hash SHA``, one round at a time and
  interleaved base, head, base (``--append-samples``), head — as ``continuous`` interleaves its
  default two rounds — then ``asv compare`` with its default ``--factor 1.1`` and with
  ``--factor 1.02`` (the same 2 % as perfgate); ``+``/``-`` rows are its verdicts;
- pyperf: ``pyperf_bench.py --rigorous`` on each side, then ``python -m pyperf compare_to``;
  a benchmark it does not hide as "not significant" is its verdict (slower/faster);
- pytest-benchmark: ``--benchmark-autosave`` on base, then ``--benchmark-compare
  --benchmark-compare-fail=mean:2%`` on head; a failed check is a regression verdict (it has no
  rule for improvements);
- github-action-benchmark's method on the same pytest-benchmark runs (one run per revision):
  alert when head/base of the mean (it stores ``ops`` = 1/mean and compares prev/current)
  passes its default ``alert-threshold`` of 200 %, and a 2 % one (regressions only, as it does).

Usage::

    python evaluation/peers.py --quick        # A/A, +2 %, -2 %, +10 %, pyperf --fast (the full run: --rigorous)
    python evaluation/peers.py --quick --tools perfgate asv pytest-benchmark  # without pyperf: ~5 min
    python evaluation/peers.py                # 3 A/A + ±1, 2, 5, 10 % (+ ±2 % twice)
    python evaluation/peers.py --log run.jsonl          # append each pair's record; rerun resumes
    python evaluation/peers.py --report --log run.jsonl # the table of a log, nothing run
    python evaluation/peers.py --smoke        # one A/A pair, perfgate only, 8 s; the committed log's table (CI)
    python evaluation/peers.py --tools perfgate asv pytest-benchmark --stop-after 1200 --log run.jsonl
    PERFGATE_MEASURE=1 PERFGATE_CPUS=1 taskset -c 1 python evaluation/peers.py  # all tools on CPU 1

Figures and how they were made: evaluation/RESULTS_peers.md (raw log: RESULTS_peers.jsonl).

All tools get ``OMP_NUM_THREADS=1`` and the CPUs the script is started on (``taskset``);
perfgate's workers are pinned by ``PERFGATE_CPUS``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, compare  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import git, make_repo  # noqa: E402

#: The log of the figures in RESULTS_peers.md.
COMMITTED_LOG = Path(__file__).resolve().parent / "RESULTS_peers.jsonl"

WORKLOADS = ("cpu_mm", "mem_add", "py_loop")
BASE_COUNT = 100
QUICK_PAIRS = ["aa", "+0.02", "-0.02", "+0.10"]
#: The quick set first, so a full run can resume from a quick run's log.
FULL_PAIRS = QUICK_PAIRS + ["aa", "+0.05", "-0.05", "-0.10", "aa", "+0.01", "-0.01", "+0.02", "-0.02"]
TOOLS = ("perfgate", "asv", "pyperf", "pytest-benchmark")
#: Rows of the table: (tool variant, the runner that produces it).
VARIANTS = [("perfgate", "perfgate"), ("asv (factor 1.1)", "asv"), ("asv (factor 1.02)", "asv"),
            ("pyperf", "pyperf"), ("pytest-benchmark (mean:2%)", "pytest-benchmark"),
            ("github-action-benchmark (200%)", "pytest-benchmark"),
            ("github-action-benchmark (2%)", "pytest-benchmark")]
REGRESSION_ONLY = {"pytest-benchmark (mean:2%)", "github-action-benchmark (200%)", "github-action-benchmark (2%)"}

PEERWORK = '''"""Three workloads, each COUNT identical units of work."""
import torch

COUNT_CPU = {cpu}
COUNT_MEM = {mem}
COUNT_PY = {py}


def cpu_mm():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g)
    c = torch.empty(128, 128)

    def run():
        for _ in range(COUNT_CPU):
            torch.mm(a, b, out=c)
    return run


def mem_add():
    x, y, z = torch.ones(110, 65536), torch.ones(110, 65536), torch.empty(110, 65536)

    def run():
        for i in range(COUNT_MEM):
            torch.add(x[i], y[i], out=z[i])
    return run


def py_loop():
    def run():
        t = 0
        for i in range(500 * COUNT_PY):
            t += i * i % 7
        return t
    return run
'''

PERFGATE_SUITE = "import peerwork\n\n" + "".join(
    f"\ndef bench_{w}(device):\n    return peerwork.{w}()\n\n" for w in WORKLOADS)

ASV_SUITE = ("import os\nimport sys\n\n# asv's existing environment drops PYTHONPATH: import this checkout's code\n"
             "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
             "import peerwork  # noqa: E402\n\n\nclass Peers:\n    def setup(self):\n"
             + "".join(f"        self.{w} = peerwork.{w}()\n" for w in WORKLOADS)
             + "".join(f"\n    def time_{w}(self):\n        self.{w}()\n" for w in WORKLOADS))

PYPERF_SUITE = "import pyperf\n\nimport peerwork\n\nrunner = pyperf.Runner()\n" + "".join(
    f"runner.bench_func({w!r}, peerwork.{w}())\n" for w in WORKLOADS)

PYTEST_SUITE = "import peerwork\n" + "".join(
    f"\n\ndef test_{w}(benchmark):\n    benchmark(peerwork.{w}())\n" for w in WORKLOADS)


def head_count(change: float) -> int:
    """Head's COUNT for a relative change of work (``0.02`` → 102, ``-0.05`` → 95)."""
    return round(BASE_COUNT * (1 + change))


def pair_repo(path: Path, change: float | None, asv_dir: Path) -> dict[str, str]:
    """Generated repository with commits ``base`` and ``head``; returns their SHAs.

    ``change`` None is A/A (head edits README.md only); else every workload's COUNT is
    :func:`head_count` on head. ``asv_dir`` holds asv's results (shared by both sides' worktrees).
    """
    conf = {"version": 1, "project": "peerwork", "project_url": "", "repo": ".", "branches": ["base"],
            "environment_type": "existing", "benchmark_dir": "asv_bench", "results_dir": str(asv_dir / "results"),
            "html_dir": str(asv_dir / "html"), "env_dir": str(asv_dir / "env")}
    files = {"benchmarks/bench_peers.py": PERFGATE_SUITE, "asv_bench/__init__.py": "",
             "asv_bench/benchmarks.py": ASV_SUITE, "asv.conf.json": json.dumps(conf, indent=2),
             "pyperf_bench.py": PYPERF_SUITE, "bench_pytest/test_peers.py": PYTEST_SUITE,
             "peerwork.py": PEERWORK.format(cpu=BASE_COUNT, mem=BASE_COUNT, py=BASE_COUNT), "README.md": "base\n"}
    head = {"README.md": "head\n"}
    if change is not None:
        n = head_count(change)
        head["peerwork.py"] = PEERWORK.format(cpu=n, mem=n, py=n)
    make_repo(path, files, head)
    return {side: git(path, "rev-parse", side) for side in ("base", "head")}


# --- parsers: each tool's output → {workload: "regression" | "improvement" | "none"} -------------

def _workload(name: str) -> str | None:
    return next((w for w in WORKLOADS if name.endswith(w)), None)


def parse_perfgate(doc: dict) -> dict[str, str]:
    """Verdicts from perfgate's ``results.json``: regression/improvement; anything else is none."""
    out = {}
    for b in doc["benchmarks"]:
        verdict = b["change"]["verdict"]
        out[_workload(b["name"])] = verdict if verdict in ("regression", "improvement") else "none"
    return out


_ASV_ROW = re.compile(r"^\|?\s*([+\-!x* ])\s*\|.*\|\s*(\S+)\s*\|?\s*$|^([+\-!x* ])\s+\S+\s+\S+\s+\S+\s+(\S+)\s*$")


def parse_asv_compare(text: str) -> dict[str, str]:
    """Verdicts from ``asv compare`` output: ``+`` regression, ``-`` improvement, else none.

    Accepts both its table layout (``| + | 1.00ms | 1.10ms | 1.10 | peers.Peers.time_cpu_mm |``)
    and the plain one (``+  1.00ms  1.10ms  1.10  peers.Peers.time_cpu_mm``).
    """
    out = {w: "none" for w in WORKLOADS}
    for line in text.splitlines():
        m = _ASV_ROW.match(line.rstrip())
        if not m:
            continue
        mark, name = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
        w = _workload(name)
        if w and mark in "+-":
            out[w] = "regression" if mark == "+" else "improvement"
    return out


def parse_pyperf_compare(text: str) -> dict[str, str]:
    """Verdicts from ``pyperf compare_to`` output: a shown ``1.02x slower/faster`` is significant.

    Benchmarks it finds not significant are hidden ("Benchmark hidden because not significant");
    a shown one is either ``name: Mean +- std dev: [a] .. -> [b] ..: 1.02x slower`` or, under a
    ``name`` title underlined with ``=``, ``[a] .. -> [b] ..: 1.02x slower``.
    """
    out = {w: "none" for w in WORKLOADS}
    lines = text.splitlines()
    title = None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"="}:
            title = line.strip()
            continue
        m = re.search(r"[\d.]+x (slower|faster)$", line.strip())
        if not m:
            continue
        named = re.match(r"^(\w+): Mean ", line)
        name = named.group(1) if named else title if line.startswith("[") else None
        if name in out:
            out[name] = "regression" if m.group(1) == "slower" else "improvement"
    return out


def parse_pytest_benchmark_fail(text: str) -> dict[str, str]:
    """Verdicts from pytest-benchmark's ``--benchmark-compare-fail`` report (regressions only)."""
    out = {w: "none" for w in WORKLOADS}
    for line in text.splitlines():
        m = re.match(r"^\s*test_(\w+) \(.*\) - Field 'mean' has failed", line)
        if m and m.group(1) in out:
            out[m.group(1)] = "regression"
    return out


def gab_alerts(base: dict, head: dict, threshold: float) -> dict[str, str]:
    """github-action-benchmark's alert on pytest-benchmark JSONs.

    It stores ``stats.ops`` (calls per second, bigger is better) and alerts when
    ``prev / current`` exceeds ``threshold`` (2.0 for its default "200%"); that is head/base of
    the mean. It alerts on regressions only.
    """
    means = [{b["name"][len("test_"):]: b["stats"]["ops"] for b in doc["benchmarks"]} for doc in (base, head)]
    return {w: "regression" if means[0][w] / means[1][w] > threshold else "none" for w in WORKLOADS}


# --- runners: each returns {"verdicts": {variant: {workload: verdict}}, "wall": seconds} ----------

def _run(cmd: list[str], cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=str(cwd), env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def run_perfgate(ctx: dict) -> dict:
    outcome = compare(ctx["repo"], ctx["tmp"] / "perfgate-out", "--no-profile",
                      *ctx.get("perfgate_args", ()), env=ctx["env"])
    if outcome.code != 0:
        tails = f"{outcome.stdout[-3000:]}\n{outcome.stderr[-3000:]}"
        raise RuntimeError(f"{outcome.failure()}:\n{tails}")
    doc = outcome.doc
    ctx["raw"] = {"perfgate": {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"]}}
    return {"perfgate": parse_perfgate(doc)}


def run_asv(ctx: dict) -> dict:
    env = dict(ctx["env"], HOME=str(ctx["home"]))
    asv = [sys.executable, "-m", "asv"]
    if not (ctx["home"] / ".asv-machine.json").exists():
        _run([*asv, "--config", str(ctx["worktrees"]["base"] / "asv.conf.json"), "machine", "--yes", "--machine",
              "peers"], ctx["worktrees"]["base"], env)
    for rnd in range(2):
        for side in ("base", "head"):
            wt = ctx["worktrees"][side]
            _run([*asv, "--config", str(wt / "asv.conf.json"), "run", "--environment", f"existing:{sys.executable}",
                  "--set-commit-hash", ctx["sha"][side], "--machine", "peers", "-a", "rounds=1",
                  *(["--append-samples"] if rnd else [])], wt, dict(env, PYTHONPATH=str(wt)))
    verdicts = {}
    for variant, factor in (("asv (factor 1.1)", "1.1"), ("asv (factor 1.02)", "1.02")):
        p = _run([*asv, "--config", str(ctx["worktrees"]["base"] / "asv.conf.json"), "compare", "--machine", "peers",
                  "--factor", factor, ctx["sha"]["base"], ctx["sha"]["head"]], ctx["worktrees"]["base"], env)
        verdicts[variant] = parse_asv_compare(p.stdout)
        ctx.setdefault("raw", {})[variant] = p.stdout
    return verdicts


def run_pyperf(ctx: dict) -> dict:
    files = {}
    for side in ("base", "head"):
        wt = ctx["worktrees"][side]
        files[side] = ctx["tmp"] / f"pyperf-{side}.json"
        _run([sys.executable, "pyperf_bench.py", *ctx["pyperf_args"], "--quiet", "-o", str(files[side])], wt,
             dict(ctx["env"], PYTHONPATH=str(wt)))
    p = _run([sys.executable, "-m", "pyperf", "compare_to", str(files["base"]), str(files["head"])], ctx["tmp"],
             ctx["env"])
    ctx.setdefault("raw", {})["pyperf"] = p.stdout
    return {"pyperf": parse_pyperf_compare(p.stdout)}


def run_pytest_benchmark(ctx: dict) -> dict:
    storage = ctx["tmp"] / "pytest-benchmark"
    common = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "bench_pytest",
              f"--benchmark-storage=file://{storage}"]
    wt = ctx["worktrees"]["base"]
    _run([*common, "--benchmark-autosave"], wt, dict(ctx["env"], PYTHONPATH=str(wt)))
    wt = ctx["worktrees"]["head"]
    head_json = ctx["tmp"] / "pytest-head.json"
    p = _run([*common, "--benchmark-compare", "--benchmark-compare-fail=mean:2%", f"--benchmark-json={head_json}"],
             wt, dict(ctx["env"], PYTHONPATH=str(wt)), check=False)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"pytest-benchmark exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    base_json = next(storage.rglob("0001_*.json"))
    base, head = (json.loads(f.read_text()) for f in (base_json, head_json))
    return {"pytest-benchmark (mean:2%)": parse_pytest_benchmark_fail(p.stdout + p.stderr),
            "github-action-benchmark (200%)": gab_alerts(base, head, 2.0),
            "github-action-benchmark (2%)": gab_alerts(base, head, 1.02)}


RUNNERS = {"perfgate": run_perfgate, "asv": run_asv, "pyperf": run_pyperf, "pytest-benchmark": run_pytest_benchmark}


def run_pair(tmp: Path, index: int, spec: str, tools: list[str], pyperf_args: list[str], home: Path,
             perfgate_args: tuple[str, ...] = ()) -> dict:
    """``tools`` on one generated pair, in an order rotated by ``index``; returns the record.
    ``perfgate_args``: extra flags of ``perfgate compare`` (the smoke's ``--max-time``)."""
    change = None if spec == "aa" else float(spec)
    d = tmp / f"pair{index}"
    sha = pair_repo(d / "repo", change, d / "asv")
    worktrees = {}
    for side in ("base", "head"):
        worktrees[side] = d / f"wt-{side}"
        git(d / "repo", "worktree", "add", "-q", "--detach", str(worktrees[side]), sha[side])
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    order = tools[index % len(tools):] + tools[:index % len(tools)]
    record = {"index": index, "spec": spec, "change": change, "order": list(order), "verdicts": {}, "wall": {}}
    for tool in order:
        ctx = {"tmp": d / tool, "repo": d / "repo", "sha": sha, "worktrees": worktrees, "env": env, "home": home,
               "pyperf_args": pyperf_args, "perfgate_args": perfgate_args}
        ctx["tmp"].mkdir()
        t0 = time.monotonic()
        record["verdicts"].update(RUNNERS[tool](ctx))
        record["wall"][tool] = time.monotonic() - t0
        record.setdefault("raw", {}).update(ctx.get("raw", {}))
        print(f"  pair {index} ({spec}) {tool}: {record['wall'][tool]:.0f} s "
              f"{ {v: x for v, x in record['verdicts'].items() if dict(VARIANTS)[v] == tool} }", flush=True)
    return record


# --- summary -------------------------------------------------------------------------------------

def summarise(records: list[dict]) -> dict:
    """Per variant: A/A false-verdict rate, detection and wrong-direction rates per |size|, wall.

    Detection at size s pools +s (verdict ``regression``) and −s (``improvement``); for the
    regression-only variants it counts +s only. Wrong direction: the opposite verdict (for those
    variants, a regression called on a −s pair). ``sizes[s]`` = (hits, detection comparisons,
    wrong, all comparisons).
    """
    out = {}
    sizes = sorted({abs(r["change"]) for r in records if r["change"] is not None})
    for variant, tool in VARIANTS:
        ran = [r for r in records if tool in r["order"]]
        if not ran:
            continue
        aa = [v for r in ran if r["change"] is None for v in r["verdicts"][variant].values()]
        row = {"pairs": len(ran), "aa_n": len(aa), "aa_false": sum(v != "none" for v in aa),
               "wall": statistics.median(r["wall"][tool] for r in ran), "sizes": {}}
        for s in sizes:
            hits = n_det = wrong = n = 0
            for r in ran:
                if r["change"] is None or abs(r["change"]) != s:
                    continue
                want, other = ("regression", "improvement") if r["change"] > 0 else ("improvement", "regression")
                counts = not (variant in REGRESSION_ONLY and r["change"] < 0)
                for v in r["verdicts"][variant].values():
                    n += 1
                    wrong += v == other
                    n_det += counts
                    hits += counts and v == want
            row["sizes"][s] = (hits, n_det, wrong, n)
        out[variant] = row
    return out


def _rate(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "–"


def render(summary: dict, records: list[dict]) -> str:
    sizes = sorted({s for row in summary.values() for s in row["sizes"]})
    head = ["tool", "pairs", "A/A false verdicts"] + [f"±{s:.0%} detected" for s in sizes] + ["wrong direction",
                                                                                    "median wall per pair"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for variant, row in summary.items():
        wrong = sum(w for _, _, w, _ in row["sizes"].values())
        n = sum(n for _, _, _, n in row["sizes"].values())
        cells = [variant, str(row["pairs"]), _rate(row["aa_false"], row["aa_n"])]
        cells += [_rate(h, n_) + ("¹" if variant in REGRESSION_ONLY else "") for h, n_, _, _ in row["sizes"].values()]
        cells += [_rate(wrong, n), f"{row['wall']:.0f} s"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "¹ regression-only rule: detection counts + changes only; a regression called on a − "
              "change counts as wrong direction.", "",
              f"{len(records)} pairs ({', '.join(r['spec'] for r in records)}), 3 workloads each; a "
              "comparison is one workload of one pair. Wall: the whole base-vs-head run of the tool "
              "for one pair (3 workloads), median over pairs; asv's two factors and the pytest-benchmark "
              "family share their runs."]
    return "\n".join(lines)


def final_line(summary: dict) -> str:
    def det(variant: str, s: float = 0.02) -> str:
        h, n, _, _ = summary.get(variant, {"sizes": {}})["sizes"].get(s, (0, 0, 0, 0))
        return f"{h / n:.2f}" if n else "nan"
    pg = summary["perfgate"]
    aa = f"{pg['aa_false'] / pg['aa_n']:.3f}" if pg["aa_n"] else "nan"
    asv = summary.get("asv (factor 1.02)")
    ratio = f"{pg['wall'] / asv['wall']:.2f}" if asv and asv["wall"] else "nan"
    return (f"perfgate_aa_false={aa} perfgate_2pct={det('perfgate')} asv_2pct={det('asv (factor 1.02)')} "
            f"pyperf_2pct={det('pyperf')} wall_ratio_vs_asv={ratio}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"pairs {', '.join(QUICK_PAIRS)} only")
    ap.add_argument("--pairs", nargs="*", help="pair specs: aa, +0.02, -0.05, ... (default: the full set)")
    ap.add_argument("--pyperf", default=None,
                    help="pyperf runner flags (default --rigorous, with --quick --fast; '' for pyperf's default)")
    ap.add_argument("--stop-after", type=float, default=0, metavar="SECONDS",
                    help="start no new pair after this many seconds (the log keeps what finished)")
    ap.add_argument("--report", action="store_true", help="run nothing: print the table of the pairs in --log")
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS), help="tools to run (default: all)")
    ap.add_argument("--log", default="", help="JSON lines: each finished pair is appended; pairs already there are "
                    "skipped (resume)")
    ap.add_argument("--smoke", action="store_true",
                    help="one A/A pair, perfgate only, 8 s; then the table of the committed log (CI)")
    args = ap.parse_args(argv)
    perfgate_args: tuple[str, ...] = ()
    if args.smoke:
        args.pairs, args.tools, args.log, args.report, perfgate_args = ["aa"], ["perfgate"], "", False, ("--max-time", "8")
    specs = args.pairs or (QUICK_PAIRS if args.quick else FULL_PAIRS)
    if args.pyperf is None:  # --rigorous costs ~12 min a pair here (40 processes importing torch per side)
        args.pyperf = "--fast" if args.quick else "--rigorous"
    started = time.monotonic()
    records = []
    log = Path(args.log) if args.log else None
    if log and log.exists():
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="perfgate-peers-") as t:
        tmp = Path(t)
        home = tmp / "home"
        home.mkdir()
        done = [r["spec"] for r in records if set(args.tools) <= set(r["order"])]
        for i, spec in enumerate([] if args.report else specs):
            if done.count(spec) > specs[:i].count(spec):  # this occurrence of spec is in the log already
                continue
            if args.stop_after and time.monotonic() - started > args.stop_after:
                print(f"--stop-after {args.stop_after:g} s reached: {len(specs) - i} pair(s) not run", flush=True)
                break
            print(f"pair {i + 1}/{len(specs)}: {spec}", flush=True)
            rec = run_pair(tmp, len(records), spec, args.tools, args.pyperf.split(), home, perfgate_args)
            records.append(rec)
            if log:
                with log.open("a") as f:
                    f.write(json.dumps(rec) + "\n")
    summary = summarise(records)
    print()
    print(render(summary, records))
    print()
    print(final_line(summary))
    if args.smoke:  # every tool's rows, from the committed log
        committed = [json.loads(line) for line in COMMITTED_LOG.read_text().splitlines() if line.strip()]
        print(render(summarise(committed), committed))
        print(final_line(summarise(committed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
