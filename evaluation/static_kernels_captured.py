"""The hand check of issue 49 at the launches a repository's own tests make: for each case of
``evaluation/static_kernels/cases.toml`` with a ``capture`` command (Liger-Kernel's tests of the
changed kernels' files), base and head, the Triton launches the command asks for, compiled by the
hand check (``static_kernels_hand.compile_one``: Triton's own API, ptxas's log, cuobjdump) for
sm_80 and sm_90, and what grew.

What it shares with the product, and what it does not:

- **The launches** are read by Triton's ``knobs.runtime.jit_cache_hook`` as the product's
  ``--capture`` reads them: the command runs in the case's tree with the product's
  ``runner/kernels/site`` first on ``PYTHONPATH`` (its records are Triton's compile arguments,
  ``{signature, constexprs, num_warps, num_stages, aligned}``, and the stand-in driver that lets
  CPU tensors through). What a launch is, is Triton's answer, not a rule of either.
- **The compile** is the hand check's own (``static_kernels_hand.compile_one``, with the launch's
  whole signature and its ``tt.divisibility`` marks), in a fresh Triton cache, for both archs.
- **The pairing** is written here again: a launch of base and one of head are the same launch
  when their whole specialisation is equal; a base launch left meets the most alike head launch
  left (never one with tensors of another dtype: #1208's one launch meets the autotune config
  of its own block size); a kernel launched on one side only is compiled on both at those
  launches. The product's rule
  (``runner.kernels.table.pairs``, ``runner.kernels.plan``) says the same in other words and is
  not called.
- **Growth**, per kernel and arch, two ways: ``grew`` (the goal's words: head needs more
  registers or more stack at some launch, or no longer compiles) and ``costs`` (of those, the
  ones that cost something at that launch: a spill, fewer blocks per SM by the occupancy
  calculator's rules, or no compile).

Output (``--json``): ``{case: {"launches": {side: n}, "rows": [...], "grew": [...],
"costs": [...]}}``, each row one pair × arch: ``launch`` (each side's signature, constexprs,
num_warps, num_stages) and each side's ``regs``, ``stack``, ``blocks`` (or ``error``).
``static_kernels.py --captured FILE`` judges the product's findings against it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import static_kernels_hand as hand  # noqa: E402
from static_kernels import capture_command, stand_in  # noqa: E402
from static_kernels_table import occupancy  # noqa: E402

SIDES = ("base", "head")
#: The key two launches share when they are the same launch.
SAME_LAUNCH = ("signature", "constexprs", "num_warps", "num_stages", "aligned")


def launches(case: dict, side: str, repo: Path, tree: Path, timeout: int) -> list[dict]:
    """The case's ``capture`` command run in ``tree`` (the side extracted there): its launches of
    kernels in the tree, each once, ``file`` relative to the tree."""
    hand.extract(repo, stand_in(repo, case[side]), [], tree)
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        env = dict(os.environ, PERFGATE_TRITON_CAPTURE=out.name, PYTHONPATH=os.pathsep.join(
            [str(hand.REPO / "runner" / "kernels" / "site"), str(tree / "src"), str(tree),
             str(hand.REPO)]))
        subprocess.run(capture_command(case), shell=True, cwd=tree, env=env, capture_output=True,
                       timeout=timeout)
        records = [json.loads(x) for x in Path(out.name).read_text().splitlines() if x.strip()]
    unique: dict[str, dict] = {}
    for r in records:
        path = Path(r["file"])
        if path.is_relative_to(tree):
            r = dict(r, file=str(path.relative_to(tree)))
            unique.setdefault(json.dumps(r, sort_keys=True), r)
    return list(unique.values())


def _alike(b: dict, h: dict) -> int:
    """Items two launches share (argument types, constexpr values, warps, stages); -1 where an
    argument is a tensor of another dtype on each side."""
    shared = set(b["signature"]) & set(h["signature"])
    tensors = [(b["signature"][k], h["signature"][k]) for k in shared]
    if any(x != y and x[0] == y[0] == "*" for x, y in tensors):
        return -1
    items = [b["signature"][k] == h["signature"][k] for k in shared]
    items += [b["constexprs"][k] == h["constexprs"][k]
              for k in set(b["constexprs"]) & set(h["constexprs"])]
    return sum(items) + (b["num_warps"] == h["num_warps"]) + (b["num_stages"] == h["num_stages"])


def paired(base: list[dict], head: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """One kernel's launches, base with head: the same launch where both made it; then each
    base launch left with the most alike head launch left (``_alike``, the first of equals),
    never one with tensors of another dtype; the rest alone. A kernel launched on one side only
    is compiled on both at those launches."""
    if not base or not head:
        base, head = base or head, head or base
    key = lambda r: json.dumps([r[k] for k in SAME_LAUNCH], sort_keys=True)  # noqa: E731
    rest = list(head)
    twins = {}
    for i, b in enumerate(base):
        twin = next((h for h in rest if key(h) == key(b)), None)
        if twin is not None:
            twins[i] = twin
            rest.remove(twin)
    out = []
    for i, b in enumerate(base):
        if i not in twins:
            best = max(rest, key=lambda h: (_alike(b, h), -rest.index(h)), default=None)
            if best is not None and _alike(b, best) >= 0:
                twins[i] = best
                rest.remove(best)
        out.append((b, twins.get(i)))
    return out + [(None, h) for h in rest]


def compile_side(tree: Path, specs: list[dict]) -> list[dict]:
    """``static_kernels_hand.py --worker`` in ``tree``: one row per spec and arch."""
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="captured-cache-"),
               TRITON_DEFAULT_FP_FUSION="1",
               PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree), str(hand.REPO)]))
    try:
        done = subprocess.run([sys.executable, hand.__file__, "--worker"],
                              input=json.dumps(specs), cwd=tree, env=env, capture_output=True,
                              text=True, timeout=3600)
    finally:
        shutil.rmtree(env["TRITON_CACHE_DIR"], ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"worker failed in {tree}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _spec(record: dict, index: int, case: dict) -> dict:
    """The hand worker's spec of one launch: its module imported, or where the case loads that
    file from source (a package that does not import here) its file reduced, as the hand check
    at the stated shapes does."""
    module = record["file"].removeprefix("src/").removesuffix(".py").replace("/", ".")
    load = next((k.get("load", "import") for k in case.get("kernels", [])
                 if k["file"] == record["file"]), "import")
    return {"name": record["kernel"], "module": module, "file": record["file"], "load": load,
            "config": f"launch {index}", **{k: record[k] for k in SAME_LAUNCH}}


def _numbers(row: dict | None) -> dict | None:
    if row is None or "error" in row:
        return row and {"error": row["error"]}
    blocks, limit = occupancy(row)
    return {"regs": row["regs"], "stack": row["stack"], "blocks": blocks, "limit": limit,
            "spill_stores": row["spill_stores"]}


def check_case(case: dict, repo: Path, scratch: Path, timeout: int) -> dict:
    tree = scratch / case["id"]
    found = {side: launches(case, side, repo, tree, timeout) for side in SIDES}
    kernels = sorted({(r["file"], r["kernel"]) for rs in found.values() for r in rs})
    pairs = [(k, b, h) for k in kernels for b, h in paired(
        [r for r in found["base"] if (r["file"], r["kernel"]) == k],
        [r for r in found["head"] if (r["file"], r["kernel"]) == k])]
    answers = {}
    for side in SIDES:
        specs = [_spec(p[1 if side == "base" else 2], i, case) for i, p in enumerate(pairs)
                 if p[1 if side == "base" else 2]]
        hand.extract(repo, stand_in(repo, case[side]), [], tree)
        answers[side] = {(r["config"], r["arch"]): r for r in compile_side(tree, specs)}
    rows, grew, costs = [], set(), set()
    for i, ((_, name), b, h) in enumerate(pairs):
        for cc in hand.ARCHS:
            arch = f"sm_{cc}"
            sides = {s: _numbers(answers[s].get((f"launch {i}", arch))) for s in SIDES}
            launch = {s: r and {k: r[k] for k in SAME_LAUNCH if k != "aligned"}
                      for s, r in (("base", b), ("head", h))}
            rows.append({"kernel": name, "arch": arch, "launch": launch, **sides})
            sb, sh = sides["base"], sides["head"]
            if not sb or not sh or "error" in sb:
                continue
            if "error" in sh:
                grew.add(f"{name} {arch}")
                costs.add(f"{name} {arch}")
            elif sh["regs"] > sb["regs"] or sh["stack"] > sb["stack"]:
                grew.add(f"{name} {arch}")
                if sh["stack"] > sb["stack"] or sh["blocks"] < sb["blocks"]:
                    costs.add(f"{name} {arch}")
    return {"launches": {s: len(found[s]) for s in SIDES}, "rows": rows,
            "grew": sorted(grew), "costs": sorted(costs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=hand.CASES)
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of the clones")
    parser.add_argument("--case", action="append", help="only these case ids")
    parser.add_argument("--scratch", type=Path,
                        default=Path(tempfile.gettempdir()) / "captured49")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds a capture may run")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    out = json.loads(args.json.read_text()) if args.json.exists() else {}
    for case in hand.load_cases(args.cases):
        if not case.get("capture") or (args.case and case["id"] not in args.case):
            continue
        out[case["id"]] = result = check_case(case, args.mirrors / case["clone"], args.scratch,
                                              args.timeout)
        print(f"{case['id']}: launches {result['launches']}, {len(result['rows'])} rows; grew "
              f"{result['grew']}; costs {result['costs']}", flush=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
