"""``perfgate intent``: the strategy of a change (from text, a diff file, or git refs), named only
where a rule measured precise on real pull requests backs it, beside the hand rules' reading."""

from __future__ import annotations

import json

from ..errors import UserError
from .claims_cli import read_text_file
from .git import read_change
from .classifier import classify_rules
from .precise import MIN_PRECISION, name_strategy
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
        change = dict(title=title, body=body, labels=labels, commit_messages=messages, diff=diff)
    else:
        diff = _read_diff(diff_name)
        _check_diff(diff_name or "", diff)
        if not (title.strip() or body.strip() or labels or diff.strip()):
            raise UserError("nothing to classify: give --title/--body/--labels, --diff FILE, or --base REF [--head REF]")
        change = dict(title=title, body=body, labels=labels, diff=diff)
    result = {**name_strategy(**change), "rules": classify_rules(**change)["candidates"][:3]}
    if getattr(args, "json", False):
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(render_text(result))
    return 0


def render_text(result: dict) -> str:
    """The human form of ``name_strategy``'s result with the hand rules' reading (``rules``: the
    first candidates of ``classify_rules``), e.g.::

        strategy: math_simplification (algorithm level: cheaper math for the same result)
                  named by a rule right on 13 of the 13 real pull requests it matches
                  - matched "exp2"
        the hand rules also read: kernel_fusion (title: "fuse") -- not named: no such rule is
        right on 90 % of the real pull requests it matches
    """
    lines = []
    strategy = result.get("strategy")
    if strategy in STRATEGIES:
        level, what = STRATEGIES[strategy]
        precision = result.get("precision") or {}
        lines.append(f"strategy: {strategy} ({level} level: {what})")
        lines.append(f"          named by a rule right on {precision.get('right')} of the "
                     f"{precision.get('fired')} real pull requests it matches")
        lines.extend(f"          - {signal}" for signal in result.get("signals") or [])
    else:
        lines.append(f"strategy: none named (no rule right on {MIN_PRECISION:.0%} of the real "
                     "pull requests it matches fires)")
    others = [c for c in result.get("rules") or [] if c.get("strategy") != strategy]
    for cand in others:
        signals = "; ".join(str(s) for s in (cand.get("signals") or [])[:2])
        lines.append(f"the hand rules also read: {cand.get('strategy')}"
                     + (f" ({signals})" if signals else ""))
    if others:
        lines.append("  (not named: their rules are right on fewer than "
                     f"{MIN_PRECISION:.0%} of the real pull requests they match)")
    return "\n".join(lines)
