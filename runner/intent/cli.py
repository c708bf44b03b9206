"""``perfgate intent``: print the strategy of a change (from text, a diff file, or git refs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import UserError
from .git import read_change
from .model import classify, probable_above
from .rules import STRATEGIES


def _read_diff(name: str | None) -> str:
    if not name:
        return ""
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if path.is_dir():
        raise UserError(f"--diff {name!r} is a directory; give a diff file (git diff BASE HEAD > change.diff)")
    if not path.is_file():
        raise UserError(f"--diff {name!r}: no such file")
    return path.read_text(encoding="utf-8", errors="replace")


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
    """The human form of a ``classify`` result: strategy, confidence, signals, runners-up."""
    strategy = result.get("strategy", "unknown")
    lines = []
    if strategy in STRATEGIES:
        level, what = STRATEGIES[strategy]
        lines.append(f"strategy:    {strategy} ({level} level: {what})")
        confidence = float(result.get("confidence", 0.0))
        level = probable_above()
        verdict = "probable" if confidence >= level else f"unclear: below {level:.2f}, see the runners-up"
        lines.append(f"confidence:  {confidence:.2f} (measured on labelled pull requests; {verdict})")
        if result.get("optimisation") is not None:
            lines.append(f"optimisation: {float(result['optimisation']):.2f} (probability that the change is one)")
        lines.append("signals:")
        lines.extend(f"  - {s}" for s in result.get("signals", []))
    else:
        chance = result.get("optimisation")
        why = f"probability that it is an optimisation {float(chance):.2f}" if chance is not None else \
            "no signal of any strategy is strong enough"
        lines.append(f"strategy:    unknown ({why})")
    others = [c for c in result.get("candidates", []) if c["strategy"] != strategy]
    if others:
        lines.append("runners-up:" if strategy in STRATEGIES else "weak candidates:")
        for cand in others:
            first = f"  ({cand['signals'][0]})" if cand.get("signals") else ""
            lines.append(f"  {cand['strategy']:<28} {cand['confidence']:.2f}{first}")
    return "\n".join(lines)
