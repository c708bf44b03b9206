"""Issue 49: the product's compile-and-read path against the hand check on the same
specialisations.

``perfgate kernels`` finds its own specialisations (launch sites, autotune configs, guesses), and
on this evaluation set they are seldom the cases' stated shapes (``BLOCK_SIZE`` from
``calculate_settings(n_cols)`` cannot be read from the source), so ``evaluation/static_kernels.py``
finds few rows compiled alike. This checks the other half of the goal ("the compiler's numbers
match a hand compile exactly"): every specialisation of the hand check
(``evaluation/static_kernels_hand.py``: the same extracted tree, kernel, signature, constexprs,
warps and stages) is compiled by the product's worker (``runner.kernels.worker._compile``: its
``triton.compile`` call, cuobjdump read by ``runner.kernels.usage``) and its registers, stack
and ``metadata.shared`` compared with ``evaluation/static_kernels/hand.json``, twice:

- ``aligned = []``: no ``tt.divisibility``, as the hand check compiles (must agree exactly);
- ``aligned`` = every pointer argument, as the product compiles what it finds (Triton's own
  launch marks a fresh torch tensor's pointer 16-byte aligned): how much that alone moves.

    PYTHONPATH=$PWD python evaluation/static_kernels_same_spec.py --mirrors /tmp/ev49 \\
        --json /tmp/same_spec.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import static_kernels_hand as hand  # noqa: E402


def worker(specs: list[dict]) -> list[dict]:
    """In the extracted tree: each spec (and autotune config) and arch, both alignments."""
    from runner.kernels.worker import _compile

    out = []
    for spec in specs:
        try:
            obj = hand.load_kernel(spec)
        except Exception as error:  # noqa: BLE001 - the hand check reports it the same way
            out.append({"kernel": spec["name"], "error": f"import: {error}"[:200]})
            continue
        fn = hand._jit_function(obj)
        module = sys.modules[fn.__module__]
        for one in hand._configs(obj, spec):
            signature, constexprs = hand.build_signature(fn, one)
            pointers = [i for i, t in enumerate(signature.values()) if t.startswith("*")]
            for cc in one.get("archs", hand.ARCHS):
                row = {"kernel": spec["name"], "config": one.get("config", "default"),
                       "arch": f"sm_{cc}"}
                for name, aligned in (("plain", []), ("aligned", pointers)):
                    job = {"paths": [], "module": module.__name__, "kernel": fn.__name__,
                           "signature": signature, "constexprs": constexprs, "aligned": aligned,
                           "num_warps": one.get("num_warps", 4),
                           "num_stages": one.get("num_stages", 3), "arch": f"sm_{cc}"}
                    answer = _compile(job)
                    row[name] = ({"regs": answer["usage"]["registers"],
                                  "stack": answer["usage"]["stack"],
                                  "shared": answer["shared_dynamic"]} if answer["ok"]
                                 else {"error": answer["error"].strip().splitlines()[-1][:200]})
                out.append(row)
    return out


def run_side(case: dict, side: str, repo: Path, scratch: Path) -> list[dict]:
    tree = scratch / case["id"]
    roots = sorted({k.get("module_root", ".") for k in case["kernels"]})
    hand.extract(repo, case[side], case.get("archive", roots), tree)
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="same-spec-cache-"),
               TRITON_DEFAULT_FP_FUSION="1",
               PYTHONPATH=os.pathsep.join([*(str(tree / r) for r in roots),
                                           str(HERE.parent)]))
    specs = json.dumps(hand.for_side(case["kernels"], side))
    done = subprocess.run([sys.executable, __file__, "--worker"], input=specs, cwd=tree, env=env,
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"{case['id']} {side}: worker failed\n{done.stderr[-2000:]}")
    return [dict(r, case=case["id"], side=side) for r in json.loads(done.stdout.splitlines()[-1])]


def compare(rows: list[dict], hand_rows: list[dict]) -> dict:
    """Per alignment: rows equal to the hand check's (regs, stack, shared), differing, and
    where both sides agree that the compile fails."""
    index = {(h["case"], h["side"], h["kernel"], h["config"], h["arch"]): h for h in hand_rows}
    out = {"plain": {"equal": 0, "differ": [], "both_fail": 0, "one_fails": []},
           "aligned": {"equal": 0, "differ": [], "both_fail": 0, "one_fails": []}}
    for r in rows:
        h = index.get((r["case"], r["side"], r["kernel"], r.get("config"), r.get("arch")))
        if h is None:
            continue
        mine = None if "error" in h else {"regs": h["regs"], "stack": h["stack"],
                                           "shared": h["meta_shared"]}
        for name in ("plain", "aligned"):
            theirs, tally = r.get(name) or {}, out[name]
            key = f"{r['case']} {r['side']} {r['kernel']} [{r['config']}] {r['arch']}"
            if mine is None or "error" in theirs:
                if mine is None and "error" in theirs:
                    tally["both_fail"] += 1
                else:
                    tally["one_fails"].append(key)
            elif theirs == mine:
                tally["equal"] += 1
            else:
                tally["differ"].append({"row": key, "hand": mine, "product": theirs})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=Path, default=hand.CASES)
    parser.add_argument("--hand", type=Path, default=HERE / "static_kernels" / "hand.json")
    parser.add_argument("--mirrors", type=Path, default=Path("/tmp/ev49"))
    parser.add_argument("--case", action="append", help="only these case ids")
    parser.add_argument("--scratch", type=Path,
                        default=Path(tempfile.gettempdir()) / "same_spec49")
    parser.add_argument("--json", type=Path, help="write the rows and the comparison here")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(sys.stdin.read()))))
        return 0
    cases = [c for c in hand.load_cases(args.cases) if c.get("kernels")
             and (not args.case or c["id"] in args.case)]
    rows = []
    for case in cases:
        for side in ("base", "head"):
            rows += run_side(case, side, args.mirrors / case["clone"], args.scratch)
        print(case["id"], file=sys.stderr, flush=True)
    result = compare(rows, json.loads(args.hand.read_text()))
    if args.json:
        args.json.write_text(json.dumps({"comparison": result, "rows": rows}, indent=1) + "\n")
    for name, tally in result.items():
        print(f"{name}: {tally['equal']} equal, {len(tally['differ'])} differ, "
              f"{tally['both_fail']} fail on both, {len(tally['one_fails'])} fail on one")
    return 0 if not result["plain"]["differ"] and not result["plain"]["one_fails"] else 1


if __name__ == "__main__":
    sys.exit(main())
