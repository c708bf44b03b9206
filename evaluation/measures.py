"""Peak memory and torch.compile as measures: the goals of issue 29, measured.

A benchmark, not a test: it prints tables and one summary line, and with ``--write`` the Markdown
of evaluation/RESULTS_measures.md. The goals:

* memory A/A: 0 false memory verdicts in ≥ 200 comparisons (identical base and head);
* a 5 % peak increase found in ≥ 95 % of the comparisons;
* every graph break and recompilation a head adds named with its frame and reason; compile time
  compared with an interval over ≥ 3 fresh processes per side.

How. Two copies of a generated benchmark folder (base, head), the workers of ``perfgate compare``
(:func:`runner.pipeline.timing.workers.start_workers`: one fork server per side, a fresh child per
benchmark and process pair, compile caches of its own), and in each process pair each side's
worker answers what it answers at the end of every pair of a compare: ``setup`` (prepare, first
call, a fixed warm-up of ``WARMUP`` calls) then ``measure`` (:mod:`runner.worker.measures`). The
timing rounds a compare takes in between are left out (they change no allocation), and the two
sides run at once, each on its own CPU (a compare never does that: time would suffer, a count of
allocations does not). Comparisons and verdicts are :mod:`runner.measures`' own, at the default
``memory_threshold`` (5 %).

The memory suite (:func:`memory_suite`) holds ``KINDS`` of benchmark at several sizes: torch
elementwise chains, matmuls, softmax and layer norm, reductions with kept temporaries, numpy
arrays, and plain Python lists and dicts. The injected head allocates, inside the call and alive
through it, 5 % of base's peak as measured in a first process plus 1 KiB (Python's own
allocations move by a few hundred bytes between processes): a peak 5.0x % larger. Benchmarks whose
5 % is below :data:`runner.measures.MEMORY_FLOOR_BYTES` are left out of that study (by design no
verdict calls so small a change).

The A/A study also asks what the resident set (``rss_bytes``) would have decided as the verdict's
measure, the reason it is not.

Usage::

    python evaluation/measures.py                 # the goals' sizes (≈ 10 min on 2 CPUs)
    python evaluation/measures.py --inductor      # and one compile-time case with inductor (slow: cold C++ compiles)
    python evaluation/measures.py --smoke         # 50 A/A benchmarks, 2 injected, the compile cases, 2–3 pairs (CI)
    python evaluation/measures.py --pairs 3 --repeats 4   # fewer process pairs per comparison
    python evaluation/measures.py --write evaluation/RESULTS_measures.md --json rows.json

Exit status 1 when a goal is missed at the full size (the smoke size checks the same goals on fewer
comparisons), else 0.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runner import measures  # noqa: E402
from runner.config import Config  # noqa: E402
from runner.pipeline.revisions import Revision  # noqa: E402
from runner.pipeline.timing.workers import WorkerFailure, start_workers  # noqa: E402

#: Warm-up calls before the measured one (the set-up's fixed warm-up samples of one call).
WARMUP = 2

#: The benchmark file of every generated suite.
FILE = "bench_measures.py"

#: Benchmark kinds of the memory suite: name → (sizes, body). ``n`` is the size; ``extra`` the
#: injected bytes (0 on base), allocated inside the call and alive through it.
KINDS = {
    "chain": ((2**14, 2**16, 2**18, 2**20), '''
    x = torch.randn({n})
    def call():
        keep = _extra({extra})
        return ((x * 2 + 1).relu() * 3).sum()
    return call'''),
    "matmul": ((64, 128, 256, 512), '''
    a, b = torch.randn({n}, {n}), torch.randn({n}, {n})
    def call():
        keep = _extra({extra})
        return (a @ b).sum()
    return call'''),
    "softmax": ((2**12, 2**14, 2**16, 2**18), '''
    x = torch.randn(16, {n} // 16)
    def call():
        keep = _extra({extra})
        return torch.softmax(x, dim=-1)
    return call'''),
    "layer_norm": ((2**12, 2**14, 2**16, 2**18), '''
    ln = torch.nn.LayerNorm({n} // 64)
    x = torch.randn(64, {n} // 64)
    def call():
        keep = _extra({extra})
        with torch.no_grad():
            return ln(x)
    return call'''),
    "kept_temporaries": ((2**14, 2**16, 2**18, 2**20), '''
    x = torch.randn({n})
    def call():
        keep = _extra({extra})
        parts = [x * k for k in range(4)]
        return sum(p.sum() for p in parts)
    return call'''),
    "numpy": ((2**14, 2**16, 2**18, 2**20), '''
    x = np.random.default_rng(0).standard_normal({n})
    def call():
        keep = _extra_np({extra})
        return float(np.sqrt(x * x + 1).sum())
    return call'''),
    "python": ((2**10, 2**12, 2**14, 2**16), '''
    def call():
        keep = bytearray({extra})
        table = {{i: str(i) for i in range({n})}}
        return len([v for v in table.values() if v])
    return call'''),
}

HEADER = '''import numpy as np
import torch


def _extra(n):
    return torch.empty(n, dtype=torch.uint8) if n else None


def _extra_np(n):
    return np.empty(n, dtype=np.uint8) if n else None
'''


def memory_cases(count: int) -> list[tuple[str, str, int]]:
    """``count`` benchmarks ``(name, kind, size)``, the kinds and sizes of :data:`KINDS` in turn."""
    combos = [(kind, n) for kind, (sizes, _) in KINDS.items() for n in sizes]
    out = []
    for i in range(count):
        kind, n = combos[i % len(combos)]
        out.append((f"bench_{kind}_{n}_{i}", kind, n))
    return out


def memory_suite(cases: list[tuple[str, str, int]], extra: dict[str, int] | None = None) -> str:
    """The benchmark file of ``cases``; ``extra`` bytes per benchmark name allocated in its call."""
    parts = [HEADER]
    for name, kind, n in cases:
        body = KINDS[kind][1].format(n=n, extra=int((extra or {}).get(name, 0)))
        parts.append(f"\n\ndef {name}(device):{textwrap.indent(textwrap.dedent(body), '    ')}\n")
    return "".join(parts)


def write_suite(folder: Path, source: str) -> Path:
    """``folder/benchmarks/FILE`` holding ``source``; returns the benchmarks folder."""
    bench = folder / "benchmarks"
    bench.mkdir(parents=True, exist_ok=True)
    (bench / FILE).write_text(source)
    return bench


def run_pairs(folders: dict[str, Path], names: list[str], pairs: int, log_dir: Path) -> dict[str, dict[str, list]]:
    """Per benchmark and side, the ``measure`` answers of ``pairs`` process pairs, each process fresh;
    a set-up that failed answers ``{ok: False, error}``.

    Args:
        folders: ``{side: folder}`` (each with ``benchmarks/FILE``): ``base`` and ``head``, or one.
    """
    revs = {side: Revision(side, side, "0" * 40, path, sys_path=[str(path)]) for side, path in folders.items()}
    # both sides' processes at once, one CPU each (cpus="all": nothing pinned): unlike a time, a
    # peak of allocations does not depend on what runs beside it, and the study takes half as long
    workers, _ = start_workers(revs, Config(cpus="all", threads=1), log_dir)
    out: dict[str, dict[str, list]] = {name: {side: [] for side in revs} for name in names}

    def one_side(side: str) -> None:
        worker, bench = workers[side], revs[side].path / "benchmarks"
        worker.preload(str(bench), "perfgate")
        for name in names:
            for _ in range(pairs):
                out[name][side].append(_one_process(worker, bench, name))

    try:
        with ThreadPoolExecutor(max_workers=len(workers)) as pool:
            for done in [pool.submit(one_side, side) for side in workers]:
                done.result()
    finally:
        for worker in workers.values():
            worker.close()
    return out


def _one_process(worker, bench_dir: Path, name: str) -> dict:
    try:
        worker.new_child()
        resp = worker.request("setup", dir=str(bench_dir), file=FILE, func=name.split("[")[0], name=name,
                              suite="perfgate", min_sample_time=0.0, cold_cache=False, number=1,
                              warmup_samples=WARMUP)
        if resp.get("ok"):
            resp = worker.request("measure")
        return resp
    except WorkerFailure as exc:
        return {"ok": False, "error": str(exc)}
    finally:
        worker.end_child()


def _records(answers: list[dict], key: str = "memory") -> list:
    return [a.get(key) if a.get("ok") else None for a in answers]


def _as_rss(records: list) -> list:
    """The memory records with the resident set's growth as their ``peak_bytes``."""
    return [dict(r, peak_bytes=r["rss_bytes"]) if r and isinstance(r.get("rss_bytes"), int) else None
            for r in records]


# -- the studies --------------------------------------------------------------------------------------

def aa_study(tmp: Path, count: int, pairs: int, repeats: int, threshold: float) -> dict:
    """``repeats`` × ``count`` A/A comparisons: identical files on both sides."""
    cases = memory_cases(count)
    source = memory_suite(cases)
    base, head = write_suite(tmp / "aa_base", source), write_suite(tmp / "aa_head", source)
    rows, failed = [], 0
    for r in range(repeats):
        got = run_pairs({"base": base.parent, "head": head.parent}, [c[0] for c in cases], pairs, tmp / f"logs_aa{r}")
        for name, kind, n in cases:
            b, h = _records(got[name]["base"]), _records(got[name]["head"])
            change = measures.memory_change(b, h, threshold)
            rss = measures.memory_change(_as_rss(b), _as_rss(h), threshold)
            if change is None:
                failed += 1
                continue
            rows.append({"name": name, "kind": kind, "n": n, "verdict": change["verdict"], "ratio": change["ratio"],
                         "ci_low": change["ci_low"], "ci_high": change["ci_high"], "bytes": change["base_bytes"],
                         "rss_verdict": rss["verdict"] if rss else None})
    false = [r for r in rows if r["verdict"] in ("regression", "improvement")]
    rss_false = [r for r in rows if r["rss_verdict"] in ("regression", "improvement")]
    spread = [abs(math.log(r["ratio"])) for r in rows if r["ratio"] > 0]
    return {"comparisons": len(rows), "not_measured": failed, "pairs": pairs, "false_verdicts": len(false),
            "false": [r["name"] for r in false], "rss_false_verdicts": len(rss_false),
            "exactly_equal": sum(1 for r in rows if r["ratio"] == 1.0 and r["ci_low"] == r["ci_high"] == 1.0),
            "max_abs_log_ratio": max(spread) if spread else None,
            "by_kind": {k: sum(1 for r in rows if r["kind"] == k) for k in KINDS}}


def injected_study(tmp: Path, count: int, pairs: int, repeats: int, threshold: float, fraction: float = 0.05) -> dict:
    """Heads whose call holds ``fraction`` of base's peak more (plus 1 KiB), ``repeats`` times."""
    # the two largest sizes of each kind: 5 % of a smaller peak is below the floor
    cases = [c for c in memory_cases(len(KINDS) * 4) if c[2] in KINDS[c[1]][0][-2:]]
    cases = sorted(cases, key=lambda c: -KINDS[c[1]][0].index(c[2]))[:count + 4]
    source = memory_suite(cases)
    base = write_suite(tmp / "inj_base", source)
    probe = run_pairs({"base": base.parent}, [c[0] for c in cases], 1, tmp / "logs_probe")
    peaks = {name: (_records(probe[name]["base"])[0] or {}).get("peak_bytes") for name, _, _ in cases}
    chosen = [c for c in cases if isinstance(peaks[c[0]], int)
              and fraction * peaks[c[0]] >= measures.MEMORY_FLOOR_BYTES][:count]
    extra = {name: math.ceil(fraction * peaks[name]) + 1024 for name, _, _ in chosen}
    head = write_suite(tmp / "inj_head", memory_suite(cases, extra))
    rows = []
    for r in range(repeats):
        got = run_pairs({"base": base.parent, "head": head.parent}, [c[0] for c in chosen], pairs,
                        tmp / f"logs_inj{r}")
        for name, kind, n in chosen:
            change = measures.memory_change(_records(got[name]["base"]), _records(got[name]["head"]), threshold)
            rows.append({"name": name, "kind": kind, "verdict": (change or {}).get("verdict"),
                         "ratio": (change or {}).get("ratio"), "bytes": peaks[name], "extra": extra[name]})
    found = [r for r in rows if r["verdict"] == "regression"]
    return {"comparisons": len(rows), "found": len(found), "pairs": pairs,
            "missed": [(r["name"], r["verdict"], r["ratio"]) for r in rows if r["verdict"] != "regression"],
            "min_ratio": min((r["ratio"] for r in rows if r["ratio"]), default=None),
            "smallest_peak": min((r["bytes"] for r in rows), default=None)}


#: torch.compile cases: name → (base body, head body, what head adds). The line marked ``# HERE``
#: is where the head's graph break is, or the compiled function's ``def`` for a recompile.
COMPILE_CASES = {
    "item_branch": ('''
def f_item_branch(x):
    y = x * 2
    return y - 1
''', '''
def f_item_branch(x):
    y = x * 2
    if y.sum().item() > 0:  # HERE
        return y + 1
    return y - 1
''', "graph_break"),
    "data_dependent_branch": ('''
def f_data_dependent_branch(x):
    y = torch.sin(x)
    return y * 2
''', '''
def f_data_dependent_branch(x):
    y = torch.sin(x)
    if y.sum() > 0:  # HERE
        return y * 2
    return y * 3
''', "graph_break"),
    "shape_recompile": ('''
def f_shape_recompile(x):
    return (x * 2).sum()
''', '''
def f_shape_recompile(x):  # HERE
    return (x * 2).sum()
''', "recompile"),
}

COMPILE_TEMPLATE = '''

_c_{name} = torch.compile(f_{name}, backend="{backend}", dynamic=False)


def bench_{name}(device):
    xs = [torch.randn(64)] + ([torch.randn(32)] if {varying} else [])
    state = {{"i": 0}}
    def call():
        state["i"] += 1
        return _c_{name}(xs[state["i"] % len(xs)])
    return call
'''


def compile_suite(side: str, backend: str) -> str:
    """The compile cases' file for ``side``: base calls with one shape; a recompile case's head
    alternates two (``dynamic=False``: one recompilation per new shape)."""
    parts = ["import torch\n"]
    for name, (base_body, head_body, what) in COMPILE_CASES.items():
        parts.append(base_body if side == "base" else head_body)
        varying = side == "head" and what == "recompile"
        parts.append(COMPILE_TEMPLATE.format(name=name, backend=backend, varying=varying))
    return "".join(parts)


def compile_study(tmp: Path, pairs: int, backend: str = "eager") -> dict:
    """Each case's graph breaks or recompiles named? Compile time compared over ``pairs`` pairs."""
    base_src, head_src = compile_suite("base", backend), compile_suite("head", backend)
    base, head = write_suite(tmp / f"cmp_base_{backend}", base_src), write_suite(tmp / f"cmp_head_{backend}", head_src)
    here = {_case_above(head_src, i): i for i, line in enumerate(head_src.splitlines(), 1) if "# HERE" in line}
    names = [f"bench_{n}" for n in COMPILE_CASES]
    t0 = time.monotonic()
    got = run_pairs({"base": base.parent, "head": head.parent}, names, pairs, tmp / f"logs_cmp_{backend}")
    rows = []
    for name, (_, _, what) in COMPILE_CASES.items():
        answers = got[f"bench_{name}"]
        change = measures.compile_change(_records(answers["base"], "compile"), _records(answers["head"], "compile"))
        key = "graph_breaks" if what == "graph_break" else "recompiles"
        added = ((change or {}).get(key) or {}).get("added") or []
        frame = f"benchmarks/{FILE}:{here[name]}"
        named = [s for s in added if s.get("frame") == frame and s.get("reason")]
        timing = (change or {}).get("compile_s") or {}
        rows.append({"case": name, "adds": what, "expected_frame": frame, "named": bool(named),
                     "sites": added, "compile_ratio": timing.get("ratio"), "ci_low": timing.get("ci_low"),
                     "ci_high": timing.get("ci_high"), "pairs": timing.get("pairs"),
                     "compile_s": (timing.get("base"), timing.get("head"))})
    return {"backend": backend, "cases": rows, "named": sum(r["named"] for r in rows), "total": len(rows),
            "seconds": round(time.monotonic() - t0, 1)}


def _case_above(source: str, line: int) -> str:
    """The compile case whose function holds ``line`` of ``source`` (the nearest ``def f_`` above)."""
    for text in reversed(source.splitlines()[:line]):
        if text.startswith("def f_"):
            return text[len("def f_"):].split("(")[0]
    raise ValueError(f"no case above line {line}")


# -- output ---------------------------------------------------------------------------------------------

def markdown(result: dict) -> str:
    """evaluation/RESULTS_measures.md's text."""
    aa, inj, comp = result["aa"], result["injected"], result["compile"]
    lines = ["# Peak memory and torch.compile as measures (issue 29)", "",
             f"`python evaluation/measures.py{result['argv']}` on {result['machine']} "
             f"({result['seconds']:.0f} s). Workers and statistics as `perfgate compare` runs them "
             "(runner.worker.measures, runner.measures); memory_threshold 5 %, floor "
             f"{measures.MEMORY_FLOOR_BYTES // 1024} KiB.", "",
             "## Memory", "",
             "| study | comparisons | process pairs each | result | goal |", "|---|---:|---:|---|---|",
             f"| A/A, identical heads | {aa['comparisons']} | {aa['pairs']} | {aa['false_verdicts']} false memory verdicts "
             f"({aa['exactly_equal']} with every pair's ratio exactly 1; largest log-ratio magnitude "
             f"{aa['max_abs_log_ratio']:.2g}) | 0 in ≥ 200 |",
             f"| A/A if the resident set decided | {aa['comparisons']} | {aa['pairs']} | {aa['rss_false_verdicts']} "
             "false verdicts | (why it does not) |",
             f"| +5 % of base's peak held in the call | {inj['comparisons']} | {inj['pairs']} | found {inj['found']} "
             f"({100 * inj['found'] / max(1, inj['comparisons']):.0f} %); smallest ratio {inj['min_ratio']} | ≥ 95 % |",
             "", "## torch.compile", "",
             "| case | head adds | named at its frame | compile time head/base (95 % CI) | pairs |",
             "|---|---|---|---|---:|"]
    for study in comp:
        for r in study["cases"]:
            ci = (f"{r['compile_ratio']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                  if r["compile_ratio"] is not None else "–")
            lines.append(f"| {r['case']} ({study['backend']}) | {r['adds']} | {'yes' if r['named'] else 'NO'} "
                         f"(`{r['expected_frame']}`) | {ci} | {r['pairs']} |")
    lines += ["", f"Summary: {result['summary']}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="50 A/A benchmarks once, 2 injected, 2–3 pairs (CI)")
    ap.add_argument("--inductor", action="store_true", help="also the compile cases with inductor (cold C++ compiles)")
    ap.add_argument("--pairs", type=int, metavar="N", help="process pairs per comparison (default 4; smoke 2, compile 3)")
    ap.add_argument("--repeats", type=int, metavar="N", help="repetitions of the A/A and +5 %% studies (default 4; smoke 1)")
    ap.add_argument("--write", metavar="MD", help="write the results as Markdown here")
    ap.add_argument("--json", metavar="PATH", help="write the raw figures here")
    args = ap.parse_args(argv)
    threshold = Config().memory_threshold
    sizes = (dict(aa=(50, 2, 1), inj=(2, 2, 1), pairs=3) if args.smoke
             else dict(aa=(56, 4, 4), inj=(25, 4, 4), pairs=4))
    for study in ("aa", "inj"):
        count, pairs, repeats = sizes[study]
        sizes[study] = (count, args.pairs or pairs, args.repeats or repeats)
    if args.pairs:
        sizes["pairs"] = max(3, args.pairs)  # compile time needs an interval over >= 3 pairs
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perfgate-measures-") as t:
        tmp = Path(t)
        aa = aa_study(tmp, *sizes["aa"], threshold)
        print(f"A/A: {aa['false_verdicts']} false memory verdicts in {aa['comparisons']} comparisons "
              f"(resident set as the measure: {aa['rss_false_verdicts']})", flush=True)
        inj = injected_study(tmp, *sizes["inj"], threshold)
        print(f"+5 %: found {inj['found']} of {inj['comparisons']} (missed: {inj['missed'][:5]})", flush=True)
        comp = [compile_study(tmp, sizes["pairs"])]
        if args.inductor:
            comp.append(compile_study(tmp, sizes["pairs"], backend="inductor"))
        for study in comp:
            for r in study["cases"]:
                print(f"compile {study['backend']} {r['case']}: named={r['named']} sites={r['sites']} "
                      f"compile ratio {r['compile_ratio']} [{r['ci_low']}, {r['ci_high']}] over {r['pairs']} pairs",
                      flush=True)
    named = sum(s["named"] for s in comp)
    total = sum(s["total"] for s in comp)
    intervals = all(r["pairs"] >= 3 and r["ci_low"] is not None for s in comp for r in s["cases"])
    goals = {"aa": aa["false_verdicts"] == 0 and (args.smoke or aa["comparisons"] >= 200),
             "injected": inj["comparisons"] > 0 and inj["found"] >= 0.95 * inj["comparisons"],
             "compile_named": named == total, "compile_intervals": intervals}
    summary = (f"memory A/A {aa['false_verdicts']} false of {aa['comparisons']}; +5 % found {inj['found']}/"
               f"{inj['comparisons']}; compile named {named}/{total}; intervals over ≥ 3 pairs: {intervals}; "
               f"goals {'met' if all(goals.values()) else 'MISSED: ' + ', '.join(k for k, v in goals.items() if not v)}")
    print(summary)
    import platform

    shown = "".join(f" {flag}" for flag, on in (("--smoke", args.smoke), ("--inductor", args.inductor)) if on)
    shown += "".join(f" --{key} {value}" for key, value in (("pairs", args.pairs), ("repeats", args.repeats)) if value)
    result = {"smoke": args.smoke, "argv": shown, "aa": aa, "injected": inj, "compile": comp, "goals": goals, "summary": summary,
              "seconds": time.monotonic() - t0, "machine": f"{platform.machine()}, {platform.python_version()}"}
    if args.write:
        Path(args.write).write_text(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
