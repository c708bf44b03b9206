"""Issue 49's evaluation of ``perfgate kernels`` against the hand check, on real PRs.

For each case of ``evaluation/static_kernels/cases.toml`` this runs the product as a user would,
``python -m runner.cli kernels --repo <mirrors>/<clone> --base B --head H --arch sm_80 --arch sm_90
--json FILE``, as a subprocess, and compares its JSON with:

- the ground truth read from each PR's diff (``kernels_changed``): every changed kernel must be
  reported ``changed`` (misses), and no other kernel may be (false ``changed``; on the controls,
  any at all), except one whose launch the diff changed (``launch_changed``), said apart;
- the hand check's numbers (``evaluation/static_kernels_hand.py``, rows in
  ``evaluation/static_kernels/hand.json``): registers, stack bytes and shared memory must be equal
  where the product compiled the same specialisation (kernel, arch, num_warps, num_stages and the
  constexprs both name, and the pointer types where the label gives them); a row of the
  product with no such twin is counted, not compared.

With ``--capture`` the product specialises each case from its ``capture`` command (the
repository's own tests, or ``static_kernels/launch.py``): ``perfgate kernels --capture CMD``.
With ``--captured FILE`` (``static_kernels_captured.py``'s JSON: the hand check at the same
launches) a case in that file is judged against it, numbers and growth, instead of against the
hand check at the stated shapes.

``product_rows`` is the one place that reads the product's JSON (results.json's ``kernels``
section, ``runner/kernels/analysis.py``)::

    {"ran": true, "seconds": 7.9, "jobs": {"compiled": 8, "cached": 0, ...},
     "kernels": [{"path": "src/.../rms_norm.py", "name": "_rms_norm_forward_kernel",
                  "status": "changed", "why": ["source", "launch site"], "changed": true,
                  "rows": [{"spec": "BLOCK_SIZE=64 num_warps=4 num_stages=3" (base's label
                            " → " head's where they differ), "how": "launch site",
                            "guessed": [...], "arch": "sm_90", "identical": false,
                            "base": {"registers", "stack", "local", "shared_static",
                                     "shared_dynamic", "sha256", "sass_sha256", "compile_s",
                                     "occupancy", ...} or {"error", "stage"} or null,
                            "head": {...}}]}]}

Only kernels that differ are listed (``unchanged`` counts the others). Shared memory is compared
as Triton's ``metadata.shared``: the product's ``shared_dynamic``, the hand check's
``meta_shared``. The mirrors lack a few large blobs (Liger-Kernel's LFS test data), which
``git worktree add`` refuses: :func:`stand_in` passes, for such a side, a commit of the same tree
without them (the kernels' files are all there). Exit 2 when the command does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "evaluation" / "static_kernels" / "cases.toml"
HAND = ROOT / "evaluation" / "static_kernels" / "hand.json"


def _label(text: str) -> dict:
    """``"BLOCK=64 X_dtype=tl.float32 num_warps=4 num_stages=3 *bf16 RSTD_ptr:*fp32"`` →
    constexprs, warps, stages, ``pointers`` (the type most pointers share, ``*fp32`` where the
    label leaves it unsaid) and ``types`` (the arguments of a type of their own)."""
    tokens = text.split()
    values = dict(t.split("=", 1) for t in tokens if "=" in t)
    warps, stages = values.pop("num_warps", None), values.pop("num_stages", None)
    return {"constexprs": values, "num_warps": int(warps) if warps else None,
            "num_stages": int(stages) if stages else None,
            "pointers": next((t for t in tokens if t.startswith("*")), "*fp32"),
            "types": dict(t.split(":", 1) for t in tokens if ":" in t and "=" not in t)}


def _side(s: dict | None) -> dict | None:
    if not s:
        return None
    if "error" in s:
        return {"error": s["error"], "stage": s.get("stage"), "loaded": s.get("loaded")}
    return {"regs": s["registers"], "stack": s["stack"], "local": s.get("local", 0),
            "shared": s["shared_dynamic"], "shared_static": s.get("shared_static"),
            "cubin_sha256": s.get("sha256"), "sass_sha256": s.get("sass_sha256"),
            "compile_s": s.get("compile_s"), "blocks": (s.get("occupancy") or {}).get("blocks"),
            "loaded": s.get("loaded")}


def product_rows(payload: dict) -> list[dict]:
    """The product's rows, flat: one per kernel, specialisation, arch (each side's label parsed
    into its own ``spec``, since a row pairs base's and head's specialisations)."""
    rows = []
    for k in payload.get("kernels", []):
        for r in k.get("rows") or [{"spec": "", "arch": None, "base": None, "head": None}]:
            labels = r.get("spec", "").split(" → ")
            specs = {"base": _label(labels[0]), "head": _label(labels[-1])}
            rows.append({"name": k["name"], "file": k["path"], "arch": r.get("arch"),
                         "status": k.get("status"), "why": k.get("why", []),
                         "changed": bool(k.get("changed")), "how": r.get("how"),
                         "guessed": r.get("guessed", []), "label": r.get("spec", ""),
                         "identical": r.get("identical"), "worse": r.get("worse", []),
                         "withheld": r.get("withheld"), "specs": specs,
                         "base": _side(r.get("base")), "head": _side(r.get("head"))})
    return rows


def truth(case: dict, key: str = "kernels_changed") -> set[str]:
    """``file::name`` of the kernels the PR changed (the notes in brackets dropped)."""
    return {re.sub(r"\s*\(.*\)$", "", k) for k in case.get(key, [])}


def detection(case: dict, rows: list[dict]) -> dict:
    """Misses and false ``changed``, by ``file::name`` (a name alone would let a namesake in
    another file, e.g. a backend's copy of the kernel, hide a miss or a false ``changed``). A
    kernel whose source is the same and whose launch the diff changed (``launch_changed``) is
    neither: it is reported ``changed`` for its launch (``launch_only``), said apart."""
    changed = {f"{r['file']}::{r['name']}" for r in rows if r["changed"]}
    why = {f"{r['file']}::{r['name']}": r["why"] for r in rows}
    expected, launched = truth(case), truth(case, "launch_changed")
    return {"expected": sorted(expected), "reported_changed": sorted(changed),
            "why": {k: why[k] for k in sorted(changed)},
            "misses": sorted(expected - changed),
            "false_changed": sorted(changed - expected - launched),
            "launch_only": sorted((changed & launched) - expected)}


def _same_config(hand: dict, spec: dict, pointers: dict | None = None) -> bool:
    """The product's side ``spec`` (:func:`_label`) is the hand row's specialisation: the same
    warps and stages, every constexpr both name equal, and, where the hand check's pointer types
    are given (``pointers``: ``{ptr_type, types}`` of the case's kernel entry), the same type
    for every pointer either names."""
    if (spec["num_warps"], spec["num_stages"]) != (hand.get("num_warps"), hand.get("num_stages")):
        return False
    given = {k: str(v) for k, v in hand.get("constexprs", {}).items()}
    if not all(given[k] == v for k, v in spec["constexprs"].items() if k in given):
        return False
    if not pointers or "types" not in spec:
        return True
    theirs = {k: t for k, t in pointers.get("types", {}).items() if t.startswith("*")}
    common = pointers.get("ptr_type", "*fp32")
    names = theirs.keys() | {k for k, t in spec["types"].items() if t.startswith("*")}
    return spec["pointers"] == common and all(
        spec["types"].get(k, spec["pointers"]) == theirs.get(k, common) for k in names)


def numbers(case_id: str, hand_rows: list[dict], rows: list[dict],
            case: dict | None = None) -> dict:
    """Every hand row of the case against the product's row for the same specialisation (with
    the ``case``, its pointer types too)."""
    agree, differ, unmatched = 0, [], 0
    entries = {(k["name"], k.get("config")): k for k in (case or {}).get("kernels", [])}
    for h in (r for r in hand_rows if r["case"] == case_id and "error" not in r):
        pointers = entries.get((h["kernel"], h.get("config")))
        twins = [r for r in rows if r["name"] == h["kernel"] and r["arch"] == h["arch"]
                 and r.get(h["side"]) and "error" not in r[h["side"]]
                 and _same_config(h, r["specs"][h["side"]], pointers)]
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
                           "config": h["config"], "hand": mine, "product": theirs,
                           "product_spec": twins[0]["label"]})
    return {"agree": agree, "differ": differ, "hand_rows_without_twin": unmatched}


def growths(case_id: str, hand_rows: list[dict]) -> set[tuple[str, str]]:
    """``(kernel, arch)`` where the hand check shows head worse than base at some specialisation
    of the case: more registers, more stack, or a head that no longer compiles."""
    sides: dict[tuple, dict] = {}
    for r in hand_rows:
        if r["case"] == case_id:
            sides.setdefault((r["kernel"], r["config"], r["arch"]), {})[r["side"]] = r
    out = set()
    for (kernel, _, arch), s in sides.items():
        b, h = s.get("base"), s.get("head")
        if not b or not h or "error" in b:
            continue
        if "error" in h or h["regs"] > b["regs"] or h["stack"] > b["stack"]:
            out.add((kernel, arch))
    return out


def findings_vs_hand(case_id: str, hand_rows: list[dict], rows: list[dict]) -> dict:
    """What the report names (the product's ``worse`` rows it does not withhold: a row whose base
    and head were guessed differently makes no finding) against the hand check's growths, by
    ``(kernel, arch)`` (the specialisations differ, so a kernel and arch is what both can name):
    ``named`` (both), ``missed`` (the hand check's alone), ``unconfirmed`` (the product's alone:
    worse at its own specialisation where the hand check, at the stated shape, shows no
    growth); ``withheld``: the worse rows it withheld, each saying whether the hand check shows
    a growth there (a miss the withholding costs) or not (a false finding it avoids)."""
    return judge(growths(case_id, hand_rows), rows)


def judge(hand: set[tuple[str, str]], rows: list[dict]) -> dict:
    """The product's findings against the ``(kernel, arch)`` pairs where the hand check shows
    growth (:func:`findings_vs_hand`)."""
    product = {(r["name"], r["arch"]): r["worse"] for r in rows
               if r["worse"] and not r.get("withheld")}
    kept = {(r["name"], r["arch"]) for r in rows if r["worse"] and r.get("withheld")}
    key = "{} {}".format
    return {"named": sorted(key(*k) for k in hand & product.keys()),
            "missed": sorted(key(*k) for k in hand - product.keys()),
            "unconfirmed": sorted(f"{key(*k)}: {', '.join(product[k])}"
                                  for k in product.keys() - hand),
            "withheld": sorted(f"{key(*k)}: {'a growth' if k in hand else 'no growth'} in the "
                               "hand check" for k in kept - product.keys())}


def _as_hand(launch: dict) -> tuple[dict, dict]:
    """A captured launch (static_kernels_captured.py) as a hand row's specialisation and its
    pointer types, for :func:`_same_config`."""
    pointers = [t for t in launch["signature"].values() if t.startswith("*")]
    common = max(dict.fromkeys(pointers), key=pointers.count) if pointers else "*fp32"
    spec = {"num_warps": launch["num_warps"], "num_stages": launch["num_stages"],
            "constexprs": launch["constexprs"]}
    return spec, {"ptr_type": common, "types": {
        k: t for k, t in launch["signature"].items() if t.startswith("*")}}


def versus_captured(captured: dict, rows: list[dict], case: dict | None = None) -> dict:
    """The product's rows against the hand check at the tests' own launches
    (``evaluation/static_kernels_captured.py``): registers and stack where both compiled the
    same launch, and its findings against the kernels and archs where the hand check shows
    growth (``grew``; with the ``case``, only the kernels its diff changed, source or launch:
    the others' launches differ only by what the unrun kernels left in memory); ``costs``: of
    those, where the growth costs a spill, blocks per SM or the compile."""
    agree, differ, unmatched = 0, [], 0
    for c in captured["rows"]:
        for side in ("base", "head"):
            mine = c[side]
            if not mine or "error" in mine:
                continue
            spec, pointers = _as_hand(c["launch"][side])
            twins = [r for r in rows if r["name"] == c["kernel"] and r["arch"] == c["arch"]
                     and r.get(side) and "error" not in r[side]
                     and set(r["specs"][side]["constexprs"]) == set(spec["constexprs"])
                     and _same_config(spec, r["specs"][side], pointers)]
            if not twins:
                unmatched += 1
                continue
            theirs = {"regs": twins[0][side]["regs"], "stack": twins[0][side]["stack"]}
            if theirs == {"regs": mine["regs"], "stack": mine["stack"]}:
                agree += 1
            else:
                differ.append({"kernel": c["kernel"], "arch": c["arch"], "side": side,
                               "hand": mine, "product": theirs})
    grew = {tuple(x.rsplit(" ", 1)) for x in captured["grew"]}
    if case is not None:  # the PR's kernels: launches of the others differ by the run alone
        mine = {k.split("::")[-1] for k in truth(case) | truth(case, "launch_changed")}
        grew = {g for g in grew if g[0] in mine}
    return {"agree": agree, "differ": differ, "hand_rows_without_twin": unmatched,
            "growths": judge(grew, rows), "costs": captured["costs"]}


def stand_in(repo: Path, sha: str) -> str:
    """``sha``, or where the clone lacks some of its tree's blobs (a mirror without its LFS-size
    files) a commit of the same tree less those files, whose worktree git can check out."""
    def git(*args, **kw) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=True, **kw).stdout

    listing = [line.split(None, 3) for line in git("ls-tree", "-r", sha).splitlines()]
    blobs = {obj: path for _, kind, obj, path in listing if kind == "blob"}
    checked = git("cat-file", "--batch-check", input="\n".join(blobs) + "\n")
    missing = [blobs[line.split()[0]] for line in checked.splitlines() if "missing" in line]
    if not missing:
        return sha
    env = dict(os.environ, GIT_INDEX_FILE=str(repo / ".git" / "perfgate-eval-index"))
    run = {"env": env}
    git("read-tree", sha, **run)
    git("update-index", "--force-remove", "--", *missing, **run)
    tree = git("write-tree", **run).strip()
    return git("commit-tree", tree, "-p", sha, "-m", f"{sha} less {len(missing)} missing blob(s)",
               **run).strip()


def capture_command(case: dict) -> str:
    """The case's ``capture`` command, ``{evaluation}`` being this evaluation folder."""
    return case["capture"].replace("{evaluation}", str(ROOT / "evaluation"))


def command_exists(env: dict) -> bool:
    probe = subprocess.run([sys.executable, "-m", "runner.cli", "kernels", "--help"], cwd=ROOT,
                           env=env, capture_output=True, text=True)
    return probe.returncode == 0


def run_case(case: dict, mirrors: Path, out: Path, env: dict, timeout: int = 600,
             capture: bool = False) -> tuple[dict | None, str]:
    """Run the product on one case; with ``capture``, its ``capture`` command (if it has one)
    goes to ``perfgate kernels --capture``."""
    target = out / f"{case['id']}.json"
    repo = mirrors / case["clone"]
    cmd = [sys.executable, "-m", "runner.cli", "kernels", "--repo", str(repo),
           "--base", stand_in(repo, case["base"]), "--head", stand_in(repo, case["head"]),
           "--arch", "sm_80", "--arch", "sm_90", "--json", str(target)]
    if capture and case.get("capture"):
        cmd += ["--capture", capture_command(case)]
    t0 = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"skipped: no answer in {timeout} s"
    (out / f"{case['id']}.txt").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not target.exists():
        return None, f"exit {done.returncode}: {done.stderr.strip()[-500:]}"
    payload = json.loads(target.read_text())
    payload["wall_s"] = round(time.monotonic() - t0, 2)
    return payload, ""


def rows_by_how(rows: list[dict]) -> dict[str, int]:
    """How many rows each source of specialisations gave (``launch``: captured; ``launch site``,
    ``autotune config``, ``default``; `` (guessed)`` where some value was guessed)."""
    return dict(Counter(f"{r['how']}{' (guessed)' if r['guessed'] else ''}" for r in rows))


def cost(payload: dict, rows: list[dict]) -> dict:
    """The static pass's own time, its jobs, and each compile's seconds (cached ones have the
    seconds of the run that compiled them)."""
    seconds = [s["compile_s"] for r in rows for s in (r["base"], r["head"])
               if s and "error" not in s and s.get("compile_s") is not None]
    return {"seconds": payload.get("seconds"), "wall_s": payload.get("wall_s"),
            "jobs": payload.get("jobs"), "unchanged": payload.get("unchanged"),
            "compile_s": seconds, "over_2s": sum(x > 2 for x in seconds),
            "max_compile_s": max(seconds, default=None),
            "not_compiled": sorted({f"{r['name']} {r['arch']} {side}: {s.get('stage')}: "
                                    f"{s['error'].strip().splitlines()[-1][:160]}"
                                    for r in rows for side in ("base", "head")
                                    if (s := r[side]) and "error" in s}),
            "findings": [f.get("summary") for f in payload.get("findings", [])]}


def judge_case(case: dict, payload: dict, hand_rows: list[dict],
               captured: dict | None = None) -> dict:
    """One case's line of the comparison: detection, numbers and findings against the hand
    check at the stated shapes, or where ``captured`` is given (its entry of
    static_kernels_captured.py's JSON), at the launches of the case's own tests."""
    rows = product_rows(payload)
    if captured:
        nums = versus_captured(captured, rows, case)
        grew = nums.pop("growths")
    else:
        nums = numbers(case["id"], hand_rows, rows, case)
        grew = findings_vs_hand(case["id"], hand_rows, rows)
    return {"case": case["id"], "judged_at": "the tests' launches" if captured else
            "the stated shapes", **detection(case, rows), **nums, **cost(payload, rows),
            "growths": grew, "rows_by_how": rows_by_how(rows),
            "captured": {side: {k: c[k] for k in ("launches", "exit")} for side, c in
                         (payload.get("capture") or {}).items()},
            "loaded_from_source": sorted(
                {f"{r['name']} {side}" for r in rows for side in ("base", "head")
                 if (r[side] or {}).get("loaded") == "source"})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--hand", type=Path, default=HAND, help="the hand check's rows")
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of the cases' clones")
    parser.add_argument("--out", type=Path, default=Path("/tmp/perfgate-kernels-eval"))
    parser.add_argument("--case", action="append", help="only these case ids")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a case may take")
    parser.add_argument("--capture", action="store_true",
                        help="specialise from each case's `capture` command (its own tests)")
    parser.add_argument("--captured", type=Path,
                        help="the hand check at the tests' launches (static_kernels_captured.py)"
                             ": its cases are judged against it, not against --hand")
    parser.add_argument("--reuse", action="store_true",
                        help="compare the JSON an earlier run left in --out, run nothing")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not command_exists(env):
        print("`python -m runner.cli kernels` does not exist yet (issue 49's product has not "
              "landed): nothing to compare", file=sys.stderr)
        return 2
    with open(args.cases, "rb") as handle:
        cases = [c for c in tomllib.load(handle)["cases"] if not args.case or c["id"] in args.case]
    hand_rows = json.loads(args.hand.read_text())
    captured = json.loads(args.captured.read_text()) if args.captured else {}
    args.out.mkdir(parents=True, exist_ok=True)
    report, totals = [], {"misses": 0, "false_changed": 0, "agree": 0, "differ": 0, "failed": 0,
                          "named": 0, "missed": 0, "unconfirmed": 0, "withheld": 0}
    for case in cases:
        saved = args.out / f"{case['id']}.json"
        if args.reuse:
            payload, error = (json.loads(saved.read_text()), "") if saved.exists() else (
                None, "no JSON from an earlier run")
        else:
            payload, error = run_case(case, args.mirrors, args.out, env, args.timeout,
                                      args.capture)
        if payload is None:
            print(f"{case['id']}: {error}", flush=True)
            totals["failed"] += 1
            report.append({"case": case["id"], "error": error})
            continue
        report.append(judge_case(case, payload, hand_rows, captured.get(case["id"])))
        line = report[-1]
        grew = line["growths"]
        for k in ("named", "missed", "unconfirmed", "withheld"):
            totals[k] += len(grew[k])
        totals["misses"] += len(line["misses"])
        totals["false_changed"] += len(line["false_changed"])
        totals["agree"] += line["agree"]
        totals["differ"] += len(line["differ"])
        print(f"{case['id']}: misses {line['misses'] or 0}, false changed "
              f"{line['false_changed'] or 0}, numbers {line['agree']} equal, "
              f"{len(line['differ'])} differ, {line['hand_rows_without_twin']} not compiled alike;"
              f" growths named {grew['named']}, missed {grew['missed']}, unconfirmed "
              f"{grew['unconfirmed']}, withheld {grew['withheld']};"
              f" {payload.get('seconds')} s, jobs {payload.get('jobs')}; rows by how"
              f" {report[-1]['rows_by_how']}", flush=True)
    (args.out / "comparison.json").write_text(json.dumps({"totals": totals, "cases": report},
                                                         indent=1) + "\n")
    print(json.dumps(totals))
    return 0 if totals["misses"] == totals["false_changed"] == totals["differ"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
