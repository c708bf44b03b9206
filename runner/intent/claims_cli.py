"""``perfgate claims``: print the quantitative performance claims of a PR's text (the shell of
:mod:`runner.intent.claims`: reads ``--body-file``, prints, writes ``--json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import UserError
from .claims import parse_claims


def read_text_file(option: str, name: str | None, what: str) -> str:
    """The text of the file an option names (``-``: standard input); ``""`` for None.

    Raises:
        UserError: ``option`` names a directory (the message asks for ``what``) or no file.
    """
    if not name:
        return ""
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if path.is_dir():
        raise UserError(f"{option} {name!r} is a directory; give {what}")
    if not path.is_file():
        raise UserError(f"{option} {name!r}: no such file")
    return path.read_text(encoding="utf-8", errors="replace")


def read_body_file(name: str | None) -> str:
    """The text of ``--body-file`` (``-``: standard input); ``""`` for None.

    Raises:
        UserError: no such file, a directory, or bytes that are not text (a NUL).
    """
    text = read_text_file("--body-file", name, "the file of the PR's description")
    if "\x00" in text:
        raise UserError(f"--body-file {name!r} is binary, not the text of a PR description")
    return text


def _figure(claim: dict) -> str:
    """``x0.392`` or ``x0.7-0.769`` (head/base), ``no ratio`` for an amount without a base."""
    if claim.get("ratio") is not None:
        return f"x{claim['ratio']:.3g}"
    if claim.get("ratio_low") is not None:
        return f"x{claim['ratio_low']:.3g}-{claim['ratio_high']:.3g}"
    return "no ratio"


def claim_line(claim: dict, width: int = 80) -> str:
    """One claim in at most ``width`` columns: source, metric, direction, head/base, bound,
    comparison point, then as much of the quote as fits."""
    bound = {"up_to": " up to", "at_least": " at least"}.get(claim.get("bound") or "", "")
    vs = "" if claim["vs"] == "base" else f" vs {claim['vs']}"
    head = (f"{claim['source']:<6} {claim['metric']} {claim['direction']} {_figure(claim)}"
            f"{bound}{vs}")
    quote = " ".join(claim["quote"].split())
    room = width - len(head) - 4
    if room >= 12:
        head += "  " + (quote if len(quote) <= room else quote[:room - 1] + "…")
    return head[:width]


def main_claims(args) -> int:
    """Handler of ``perfgate claims``; returns 0 (with claims or without).

    Uses ``args.title``, ``args.body``, ``args.body_file`` (a file, ``-`` for standard input)
    and ``args.json`` (a file the list of claims is written to, the objects of
    :func:`runner.intent.claims.parse_claims`; ``-``: printed instead of the lines).

    Raises:
        UserError: no text at all (neither title nor body), an unreadable ``--body-file``, a
            ``--json`` path that cannot be written.
    """
    title = getattr(args, "title", "") or ""
    body = getattr(args, "body", "") or read_body_file(getattr(args, "body_file", None))
    if not title.strip() and not body.strip():
        raise UserError("nothing to read: give --title, --body or --body-file")
    claims = parse_claims(title=title, body=body)
    if getattr(args, "json", None) == "-":   # the list alone on standard output, for a pipe
        print(json.dumps(claims, indent=1, ensure_ascii=False))
        return 0
    if not claims:
        print("no quantitative performance claim found")
    for claim in claims:
        print(claim_line(claim))
    if getattr(args, "json", None):
        try:
            Path(args.json).write_text(json.dumps(claims, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
        except OSError as exc:
            raise UserError(f"--json {args.json!r}: {exc.strerror or exc}") from None
    return 0
