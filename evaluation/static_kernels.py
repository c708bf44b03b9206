"""Issue 49's evaluation of ``perfgate kernels`` against the hand check, on real PRs.

For each case of ``evaluation/static_kernels/cases.toml`` this runs the product as a user would,
``python -m runner.cli kernels --repo <mirrors>/<clone> --base B --head H --arch sm_80 --arch sm_90
--json FILE``, as a subprocess, and compares its JSON with:

- the ground truth read from each PR's diff (``kernels_changed``): every changed kernel must be
  reported ``changed`` (misses), and no other kernel may be (false ``changed``; on the controls,
  any at all);
- the hand check's numbers (``evaluation/static_kernels_hand.py``, rows in
  ``evaluation/static_kernels/hand.json``): registers, stack bytes and shared memory must be equal
  where the product compiled the same specialisation (kernel, arch, num_warps, num_stages and the
  constexprs both name); a row of the product with no such twin is counted, not compared.

The product's JSON is not fixed yet; ``product_rows`` is the one place that reads it, written
against this expected shape::

    {"kernels": [{"name": "_rms_norm_forward_kernel", "file": "src/.../rms_norm.py",
                  "arch": "sm_90", "config": {"num_warps": 8, "num_stages": 3,
                                              "constexprs": {"BLOCK_SIZE": 4096}},
                  "changed": true,
                  "base": {"registers": 56, "stack_bytes": 0, "shared_bytes": 32,
                           "cubin_sha256": "..."},
                  "head": {...}}]}

``base``/``head`` may be null (a kernel added or removed) or carry ``"error"`` (a side that does
not compile). Exit 2 when the command does not exist yet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "evaluation" / "static_kernels" / "cases.toml"
HAND = ROOT / "evaluation" / "static_kernels" / "hand.json"


def product_rows(payload: dict) -> list[dict]:
    """The product's kernels as flat rows: the adapter to change when its JSON shape settles."""
    rows = []
    for k in payload.get("kernels", []):
        config = k.get("config") or {}
        sides = {}
        for side in ("base", "head"):
            s = k.get(side) or {}
            sides[side] = None if not s or "error" in s else {
                "regs": s.get("registers"), "stack": s.get("stack_bytes"),
                "shared": s.get("shared_bytes"), "cubin_sha256": s.get("cubin_sha256")}
        rows.append({"name": k["name"], "file": k.get("file", ""), "arch": k["arch"],
                     "num_warps": config.get("num_warps"), "num_stages": config.get("num_stages"),
                     "constexprs": config.get("constexprs", {}), "changed": bool(k.get("changed")),
                     **sides})
    return rows


def truth(case: dict) -> set[str]:
    """``file::name`` of the kernels the PR changed (the notes in brackets dropped)."""
    return {re.sub(r"\s*\(.*\)$", "", k) for k in case.get("kernels_changed", [])}


def detection(case: dict, rows: list[dict]) -> dict:
    changed = {f"{r['file']}::{r['name']}" for r in rows if r["changed"]}
    by_name = {n.split("::")[-1] for n in changed}
    expected = truth(case)
    misses = sorted(k for k in expected if k not in changed and k.split("::")[-1] not in by_name)
    false = sorted(k for k in changed if k not in expected
                   and k.split("::")[-1] not in {e.split("::")[-1] for e in expected})
    return {"expected": sorted(expected), "reported_changed": sorted(changed),
            "misses": misses, "false_changed": false}


def _same_config(hand: dict, row: dict) -> bool:
    if row["num_warps"] not in (None, hand.get("num_warps")):
        return False
    if row["num_stages"] not in (None, hand.get("num_stages")):
        return False
    given = hand.get("constexprs", {})
    return all(str(given[k]) == str(v) for k, v in row["constexprs"].items() if k in given)


def numbers(case_id: str, hand_rows: list[dict], rows: list[dict]) -> dict:
    """Every hand row of the case against the product's row for the same specialisation."""
    agree, differ, unmatched = 0, [], 0
    for h in (r for r in hand_rows if r["case"] == case_id and "error" not in r):
        twins = [r for r in rows if r["name"] == h["kernel"] and r["arch"] == h["arch"]
                 and r.get(h["side"]) and _same_config(h, r)]
        if not twins:
            unmatched += 1
            continue
        p = twins[0][h["side"]]
        mine = {"regs": h["regs"], "stack": h["stack"], "shared": h["meta_shared"]}
        theirs = {k: p[k] for k in mine}
        if mine == theirs:
            agree += 1
        else:
            differ.append({"kernel": h["kernel"], "arch": h["arch"], "side": h["side"],
                           "config": h["config"], "hand": mine, "product": theirs})
    return {"agree": agree, "differ": differ, "hand_rows_without_twin": unmatched}


def command_exists(env: dict) -> bool:
    probe = subprocess.run([sys.executable, "-m", "runner.cli", "kernels", "--help"], cwd=ROOT,
                           env=env, capture_output=True, text=True)
    return probe.returncode == 0


def run_case(case: dict, mirrors: Path, out: Path, env: dict) -> tuple[dict | None, str]:
    target = out / f"{case['id']}.json"
    cmd = [sys.executable, "-m", "runner.cli", "kernels", "--repo", str(mirrors / case["clone"]),
           "--base", case["base"], "--head", case["head"], "--arch", "sm_80", "--arch", "sm_90",
           "--json", str(target)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or not target.exists():
        return None, f"exit {done.returncode}: {done.stderr.strip()[-500:]}"
    return json.loads(target.read_text()), ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--hand", type=Path, default=HAND, help="the hand check's rows")
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of the cases' clones")
    parser.add_argument("--out", type=Path, default=Path("/tmp/perfgate-kernels-eval"))
    parser.add_argument("--case", action="append", help="only these case ids")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not command_exists(env):
        print("`python -m runner.cli kernels` does not exist yet (issue 49's product has not "
              "landed): nothing to compare", file=sys.stderr)
        return 2
    with open(args.cases, "rb") as handle:
        cases = [c for c in tomllib.load(handle)["cases"] if not args.case or c["id"] in args.case]
    hand_rows = json.loads(args.hand.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    report, totals = [], {"misses": 0, "false_changed": 0, "agree": 0, "differ": 0, "failed": 0}
    for case in cases:
        payload, error = run_case(case, args.mirrors, args.out, env)
        if payload is None:
            totals["failed"] += 1
            report.append({"case": case["id"], "error": error})
            continue
        rows = product_rows(payload)
        found, nums = detection(case, rows), numbers(case["id"], hand_rows, rows)
        totals["misses"] += len(found["misses"])
        totals["false_changed"] += len(found["false_changed"])
        totals["agree"] += nums["agree"]
        totals["differ"] += len(nums["differ"])
        report.append({"case": case["id"], **found, **nums})
        print(f"{case['id']}: misses {found['misses'] or 0}, false changed "
              f"{found['false_changed'] or 0}, numbers {nums['agree']} equal, "
              f"{len(nums['differ'])} differ, {nums['hand_rows_without_twin']} not compiled alike")
    (args.out / "comparison.json").write_text(json.dumps({"totals": totals, "cases": report},
                                                         indent=1) + "\n")
    print(json.dumps(totals))
    return 0 if totals["misses"] == totals["false_changed"] == totals["differ"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
