"""``perfgate intent``: print the strategy of a change (from text, a diff file, or git refs)."""

from __future__ import annotations

import json

from ..errors import UserError
from .claims_cli import read_text_file
from .git import read_change
from .model import answer_text, classify
from .rules import STRATEGIES


def _read_diff(name: str | None) -> str:
    return read_text_file("--diff", name, "a diff file (git diff BASE HEAD > change.diff)")


def _check_diff(name: str, text: str) -> None:
    """Refuse a ``--diff`` input that is not a unified diff (binary data, or text without any hunk).

    Raises:
        UserError: with the reason, naming the input.
    """
    if not text.strip():
        return
    if "\x00" in text or text.count("\ufffd") > len(text) // 100:
        raise UserError(f"--diff {name!r} is binary, not a unified diff (git diff BASE HEAD > change.diff)")
    if not any(line.startswith(("@@", "diff --git ", "--- ", "+++ ")) for line in text.splitlines()):
        raise UserError(f"--diff {name!r} has no diff header or hunk: not a unified diff")


def main_intent(args) -> int:
    """Handler of ``perfgate intent``; returns 0.

    Uses ``args.title``, ``args.body``, ``args.labels`` (comma-separated), ``args.diff``
    (a file, ``-`` for standard input), ``args.repo`` / ``args.base`` / ``args.head`` (read
    commit messages and diff from git; ``--head`` defaults to HEAD, ``--repo`` to ``.``) and
    ``args.json``.

    Raises:
        UserError: nothing to classify (no text, an empty diff, no change between the refs), a
            missing diff file or a directory, a diff that is binary or has no hunk,
            ``--repo``/``--head`` without ``--base``. GitError (a UserError) for a bad
            repository or ref.
    """
    title = getattr(args, "title", "") or ""
    body = getattr(args, "body", "") or ""
    labels = [part.strip() for part in (getattr(args, "labels", "") or "").split(",") if part.strip()]
    base, head, repo = getattr(args, "base", None), getattr(args, "head", None), getattr(args, "repo", None)
    diff_name = getattr(args, "diff", None)
    if (repo or head) and not base:
        raise UserError("--repo/--head need --base REF (the commits base..head are classified)")
    if base:
        if diff_name:
            raise UserError("give either --diff FILE or --base/--head, not both")
        messages, diff = read_change(repo or ".", base, head or "HEAD")
        if not messages and not diff.strip():
            raise UserError(f"no change between --base {base} and --head {head or 'HEAD'}: nothing to classify")
        result = classify(title=title, body=body, labels=labels, commit_messages=messages, diff=diff)
    else:
        diff = _read_diff(diff_name)
        _check_diff(diff_name or "", diff)
        if not (title.strip() or body.strip() or labels or diff.strip()):
            raise UserError("nothing to classify: give --title/--body/--labels, --diff FILE, or --base REF [--head REF]")
        result = classify(title=title, body=body, labels=labels, diff=diff)
    if getattr(args, "json", False):
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(render_text(result))
    return 0


def render_text(result: dict) -> str:
    """The human form of a ``classify`` result: the answer ("probably X", "X or Y", "unknown") with
    how often such answers were right on held-out pull requests, the gate when it is near its
    line, then each candidate with its strategy text and evidence (rule and code matches only).

    Example (an ``either`` answer)::

        answer:       kernel_fusion or launch_overhead_reduction
                      one of the two right 7 times in 10 at this confidence on 199 held-out pull requests
        optimisation: 0.97 (probability that the change is one)
        1. kernel_fusion                 0.61  several kernels become one (execution level)
             - title: "fuse"
        2. launch_overhead_reduction     0.22  CUDA Graphs, multi-tensor apply, batched launches (...)
             - body: "cuda graph"
    """
    words = answer_text(result)
    answer = words["answer"]
    lines = [f"answer:       {words['headline']}" + (f" ({words['gate']})" if answer == "unknown" and words["gate"]
                                                       else "")]
    if words["rate"]:
        lines.append(f"              {words['rate']}")
    chance = result.get("optimisation")
    if chance is not None and answer != "unknown":
        near = f"; {words['gate']}" if words["gate"] else ""
        lines.append(f"optimisation: {float(chance):.2f} (probability that the change is one{near})")
    cues = [str(c) for c in result.get("cues") or []]
    if cues:
        lines.append("says it is not an optimisation: " + "; ".join(cues))
    candidates = [c for c in result.get("candidates") or [] if c.get("strategy") in STRATEGIES]
    if candidates and answer == "unknown":
        lines.append("if it is one:")
    for i, cand in enumerate(candidates, 1):
        strategy = cand["strategy"]
        level, what = STRATEGIES[strategy]
        value = float(cand.get("share") or 0.0) if answer == "unknown" else float(cand.get("confidence") or 0.0)
        lines.append(f"{i}. {strategy:<29} {value:.2f}  {what} ({level} level)")
        evidence = [str(s) for s in cand.get("signals") or []]
        lines.extend(f"     - {item}" for item in evidence)
        if not evidence and i <= 2:
            lines.append("     (no rule or code match: ranked by the model's reading of the words)")
    return "\n".join(lines)
