"""Apply the label conventions of README_intent.md to ``intent_real.jsonl``.

Usage:
    python evaluation/relabel_intent.py --list [--split real-train|real-test6]   rows a convention may move
    python evaluation/relabel_intent.py --apply                                 write the decisions of RELABELS
    python evaluation/relabel_intent.py --smoke                                 --list on every 10th row (CI)

``SUSPECTS`` selects the rows that a convention could move: a label on one side of the border,
and a regular expression over the title, description and reason. No classifier is involved.
Each selected row was read, and ``RELABELS`` records the decisions: source -> (label, also,
convention). ``--apply`` writes them into the corpus. The old label and ``also`` go into the
row's ``relabel`` field. A row already relabelled is left as it is, so applying twice changes
nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from intent_real import CORPUS, SPLITS, current_split, load  # noqa: E402

#: convention -> (which labels it may move, a pattern over title + body + reason).
SUSPECTS: dict[str, tuple[Callable[[str], bool], str]] = {
    "C1 split count or heuristic": (lambda label: label == "warp_level_reduction",
                                    r"(?=.*(?:split|stream-?k))(?=.*(?:heuristic|count|number of|chos|choos|select|"
                                    r"when|more often|whenever|threshold|occupancy|retun|tuned))"),
    "C1 a new split path": (lambda label: label == "launch_config_tuning",
                            r"(?=.*(?:split-?k|split-?kv|stream-?k))(?=.*(?:adds?|new|implement|introduc))"),
    "C2 persistent kernel": (lambda label: label not in ("launch_config_tuning", "unknown"),
                             r"persistent (?:kernel|grid|block|program|schedul|loop|mode|launch)"),
    "C4 cached tuning results": (lambda label: label in ("autotuning", "build_configuration"),
                                 r"(?:autotun\w*|tuning) (?:results?|cache)|cached? (?:autotun|tuning)"),
    "C4 compile cache": (lambda label: label in ("redundancy_elimination", "allocator_reuse"),
                         r"compil\w* (?:cache|kernels?)|kernel cache|jit cache|recompil"),
    "C5 graph capturability": (lambda label: label in ("host_sync_elimination", "transfer_reduction",
                                                       "redundancy_elimination", "copy_avoidance"),
                               r"cuda ?graph|capturable|graph capture|hip ?graph|cudagraph"),
    "C6 stored tuned tables": (lambda label: label == "autotuning",
                               r"stored|tables?|tuned (?:config|table|entr|result)|best configs|config (?:file|json)|csv"),
    "C6 a search": (lambda label: label == "launch_config_tuning",
                    r"autotun(?:e|ing|er) (?:search|space|over|list|config)|search space|autotuner|sweeps?"),
    "C8 multi-tensor": (lambda label: label == "kernel_fusion",
                        r"multi[- ]tensor|foreach|horizontal|per-tensor|one launch (?:for|over|covers)"),
    "C9 non_blocking and pinned": (lambda label: label in ("transfer_reduction", "stream_concurrency"),
                                   r"non[_-]blocking|pinned|pin_memory"),
    "C10 new dtype support": (lambda label: label == "precision_specialization", r"support|new|add"),
    "C11 torch.compile": (lambda label: label not in ("kernel_fusion", "unknown", "launch_overhead_reduction",
                                                      "autotuning"), r"torch\.compile|inductor"),
    "C3 library routing": (lambda label: label in ("algorithm_replacement", "layout_fast_path",
                                                   "launch_config_tuning", "kernel_fusion"),
                           r"(?:rout|dispatch|switch|call|use)\w*\b.{0,40}\b(?:cublas\w*|cudnn|cutlass|hipblas\w*|"
                           r"rocblas|ck\b|composable.kernel|flash-?attention|flashinfer|flashmla|deepgemm|kleidiai|"
                           r"onednn|mkl|cub\b|nccl|trt-?llm)"),
}

#: The decisions, after reading every row ``SUSPECTS`` selected: source -> (label, also, convention).
RELABELS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # real-train
    "InternLM/lmdeploy#3510": ("launch_config_tuning", ("warp_level_reduction",), "C1"),
    "ggml-org/llama.cpp#12931": ("launch_config_tuning", ("warp_level_reduction",), "C1"),
    "facebookresearch/xformers#1177": ("launch_config_tuning", (), "C1"),
    "flashinfer-ai/flashinfer#2244": ("launch_overhead_reduction", ("host_sync_elimination",), "C5"),
    "flashinfer-ai/flashinfer#1716": ("launch_config_tuning", ("autotuning",), "C6"),
    "fla-org/flash-linear-attention#598": ("redundancy_elimination", ("autotuning",), "C4"),
    "NVIDIA/TransformerEngine#1640": ("unknown", (), "C10"),
    # real-test4 (read without any classifier output)
    "ggml-org/llama.cpp#10637": ("launch_config_tuning", ("warp_level_reduction", "vectorization"), "C1"),
}


def suspects(rows: list[dict]) -> dict[str, list[dict]]:
    """convention -> the rows of ``rows`` it selects (``SUSPECTS``), in corpus order."""
    out: dict[str, list[dict]] = {}
    for name, (side, pattern) in SUSPECTS.items():
        rx = re.compile(pattern, re.IGNORECASE | re.DOTALL)
        out[name] = [r for r in rows if side(r["label"])
                     and rx.search(" ".join((r["title"], r.get("body", ""), r["reason"])))]
    return out


def relabel(row: dict) -> dict:
    """``row`` with the decision of ``RELABELS`` applied (the old label and ``also`` kept in
    ``relabel``); the row itself when it has no decision or was relabelled already."""
    decision = RELABELS.get(row["source"])
    if decision is None or "relabel" in row:
        return row
    label, also, convention = decision
    return dict(row, label=label, also=list(also),
                relabel={"from": row["label"], "also_from": list(row.get("also", [])), "convention": convention})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the rows each convention selects")
    parser.add_argument("--split", choices=SPLITS, default=None, help="only this split (with --list)")
    parser.add_argument("--apply", action="store_true", help=f"write RELABELS into {CORPUS.name}")
    parser.add_argument("--smoke", action="store_true", help="--list on every 10th row, nothing written (CI)")
    args = parser.parse_args(argv)
    rows = load()
    if args.apply:
        new = [relabel(r) for r in rows]
        missing = set(RELABELS) - {r["source"] for r in rows}
        if missing:
            raise SystemExit(f"RELABELS names rows that are not in the corpus: {sorted(missing)}")
        CORPUS.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new), encoding="utf-8")
        print(f"{sum(a is not b for a, b in zip(rows, new))} rows relabelled", file=sys.stderr)
        return 0
    if not (args.list or args.smoke):
        parser.error("give --list, --apply or --smoke")
    chosen = rows[::10] if args.smoke else rows
    if args.split:
        chosen = [r for r in chosen if current_split(r) == args.split]
    for name, found in suspects(chosen).items():
        print(f"=== {name}: {len(found)}")
        for r in found:
            done = RELABELS.get(r["source"])
            mark = f" -> {done[0]}" if done else ""
            print(f"{r['source']} [{r['label']}{'+' + ','.join(r['also']) if r['also'] else ''}]{mark} "
                  f"{r['title'][:100]}\n    reason: {r['reason'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
