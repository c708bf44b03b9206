"""An asv suite's ``asv.conf.json``: where it is and what it says, read as asv reads it (JSON
with comments and trailing commas); :class:`runner.conventions.asv.AsvConvention` detects through it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import UserError


#: JSON strings, or ``//`` and ``/* */`` comments (asv.conf.json allows comments).
_JSON_TOKENS = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[\]}])', re.S)


def read_asv_conf(text: str, where: str) -> dict:
    """An ``asv.conf.json`` as asv reads it: JSON with ``//`` and ``/* */`` comments and trailing
    commas allowed.

    Raises:
        UserError: not JSON even so, or not an object (naming ``where``).
    """
    stripped = _JSON_TOKENS.sub(lambda m: m.group(1) or "", text)
    stripped = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), stripped)
    try:
        conf = json.loads(stripped)
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(conf, dict):
        raise UserError(f"{where}: must be a JSON object")
    return conf


def find_asv_conf(root: Path, benchmarks: str) -> Path | None:
    """The ``asv.conf.json`` of the repository at ``root``: at the root, else in the configured
    ``benchmarks`` directory, else the first (sorted) one directory down; None without one."""
    for candidate in (root / "asv.conf.json", root / benchmarks / "asv.conf.json"):
        if candidate.is_file():
            return candidate
    below = sorted(root.glob("*/asv.conf.json"))
    return below[0] if below else None
