"""Reading a Kineto (torch.profiler) trace file: gzip or plain JSON, with a lenient parse of
the known torch export defects (raw control characters in names, pytorch/pytorch#113001;
unescaped Windows paths, pytorch/pytorch#98432). The only I/O of :mod:`runner.profile`."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

from . import names
from ..errors import UserError
from .names import REPAIRED_KEY

_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt]|.)', re.S)


def _escape_backslashes(text: str) -> str:
    """Double every backslash that does not start a valid JSON escape (``C:\\Users`` in a name)."""
    return _ESCAPE.sub(lambda m: m.group(0) if len(m.group(1)) > 1 or m.group(1) in '"\\/bfnrt'
                       else "\\\\" + m.group(1), text)


def parse_trace_json(text: str) -> tuple[object, list[dict]]:
    """Parse a trace's JSON text, repairing only the defects torch's exporter is known to write.

    Strict JSON first; on an error listed in :data:`runner.profile.names.KNOWN_EXPORT_DEFECTS`
    (raw control characters in strings, pytorch/pytorch#113001; unescaped backslashes of
    Windows paths, pytorch/pytorch#98432) that defect is repaired — control characters are
    accepted inside strings, stray backslashes are escaped — and the text parsed again.

    Returns:
        ``(document, repairs)``: repairs ``[{issue, what, repair}]`` applied, in order.

    Raises:
        ValueError: the text is not JSON even after those repairs (the message names the repairs
            made).
    """
    repairs: list[dict] = []
    strict = True
    while True:
        try:
            return json.loads(text, strict=strict), repairs
        except json.JSONDecodeError as exc:
            done = {r["repair"] for r in repairs}
            defect = next((d for d in names.KNOWN_EXPORT_DEFECTS
                           if exc.msg.startswith(d["message"]) and d["repair"] not in done), None)
            if defect is None:
                after = "; ".join(f"after repairing {r['what']} ({r['issue']})" for r in repairs)
                raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}" + (f" {after}" if after else "")) \
                    from None
            if defect["repair"] == "control_characters":
                strict = False
            else:
                text = _escape_backslashes(text)
            repairs.append({"issue": defect["issue"], "what": defect["what"], "repair": defect["repair"]})


def load_trace(path: str | Path) -> dict:
    """Read a Kineto/Chrome trace (``.json`` or ``.json.gz``).

    Invalid JSON that torch is known to write (:func:`parse_trace_json`) is read after repair;
    the repairs are listed under :data:`REPAIRED_KEY` (``[{issue, what, repair}]``).

    Returns:
        the trace document: a dict with ``traceEvents`` (a bare event list is wrapped).

    Raises:
        UserError: the file is missing or unreadable, not (gzipped) JSON, or not a trace.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc, repairs = parse_trace_json(raw.decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path} is not a JSON trace (.json or .json.gz): {str(exc).splitlines()[0][:200]}") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise UserError(f"{path} is JSON but not a Kineto/Chrome trace (no 'traceEvents' list)")
    if repairs:
        doc[REPAIRED_KEY] = repairs
    return doc


# ---------------------------------------------------------------------------------------------
# summarising (pure)
