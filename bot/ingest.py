"""Ingesting a run's results, the pure part: pick the artifact, unpack ``results.json`` from
its zip (size-limited), validate it, decide the check run's conclusion, write the texts.

The I/O around it (download, store, edit the comment and the check run) is
``bot.executor``; everything here takes bytes and dicts.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Iterable, Sequence

from runner import report
from runner import results as results_schema
from runner.errors import UserError

from . import messages

#: Largest ``results.json`` accepted once unpacked (bytes). A real one with profiles of a few
#: hundred benchmarks is a few MB; this bounds a zip bomb.
RESULTS_LIMIT = 64 * 1024 * 1024
ARTIFACT_PREFIX = "perfgate-results"


class IngestError(UserError):
    """The run's artifact is missing, not a zip, too large or not a valid results.json."""


def artifact_name(key: str) -> str:
    """The artifact name the Action uploads for App run ``key`` (action.yml: ``perfgate-results-<run-id>``)."""
    return f"{ARTIFACT_PREFIX}-{key}"


def pick_artifact(artifacts: Iterable, key: str):
    """The run's artifact: named for ``key``, else the only other ``perfgate-results*`` one;
    expired artifacts are skipped. Items need ``name`` and ``expired``; None when none fits."""
    live = [a for a in artifacts if not a.expired and a.name.startswith(ARTIFACT_PREFIX)]
    exact = [a for a in live if a.name == artifact_name(key)]
    if exact:
        return exact[0]
    return live[0] if len(live) == 1 else None


def results_from_zip(data: bytes, limit: int = RESULTS_LIMIT) -> dict:
    """The validated ``results.json`` inside an artifact zip (the shallowest one).

    Raises:
        IngestError: not a zip, no ``results.json``, larger than ``limit`` unpacked, not JSON.
        runner.errors.ResultsError: not a valid schema_version 1 document.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise IngestError("the artifact is not a zip archive") from None
    with archive:
        candidates = [i for i in archive.infolist() if not i.is_dir()
                      and (i.filename == "results.json" or i.filename.endswith("/results.json"))]
        if not candidates:
            raise IngestError("the artifact has no results.json")
        info = min(candidates, key=lambda i: (i.filename.count("/"), i.filename))
        if info.file_size > limit:
            raise IngestError(f"results.json is {info.file_size} bytes unpacked, over the limit of {limit}")
        with archive.open(info) as handle:
            raw = handle.read(limit + 1)
        if len(raw) > limit:
            raise IngestError(f"results.json is over the limit of {limit} bytes unpacked")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IngestError(f"results.json is not JSON: {exc}") from None
    return results_schema.validate(doc)


def as_history_run(doc: dict) -> dict:
    """A single-revision (``perfgate run``) document from a result, for the default-branch
    history: a compare's head side (absolute seconds per call of the pushed commit) with
    ``base`` and the verdicts dropped. A document that is already single-revision is returned
    as it is. The result is validated.

    (The example workflow always compares; a push is dispatched as ``before..after``.)
    """
    if doc.get("base") is None:
        return doc
    benchmarks = [{"name": b["name"], "file": b.get("file"), "unit": b.get("unit", "s"), "base": None,
                   "head": b.get("head"), "change": None, "hints": [], "profile": None}
                  for b in doc.get("benchmarks", [])]
    run = dict(doc, base=None, benchmarks=benchmarks, summary=results_schema.summarize(benchmarks))
    return results_schema.validate(run)


def blocking_regressions(doc: dict, fail_threshold: float) -> list[dict]:
    """Benchmarks whose verdict is ``regression`` and whose slowdown (``ratio - 1``) exceeds
    ``fail_threshold`` (a fraction)."""
    out = []
    for bench in doc.get("benchmarks", []):
        change = bench.get("change") or {}
        ratio = change.get("ratio")
        if change.get("verdict") == "regression" and ratio is not None and ratio - 1 > fail_threshold:
            out.append(bench)
    return out


def conclusion(doc: dict, fail_threshold: float, accepted: Iterable[str | None] = ()) -> str:
    """The check run's conclusion for a results document.

    ``accepted``: benchmark names whose regression was accepted for this document's head
    (None: every benchmark). ``failure``: a regression beyond ``fail_threshold`` that is not
    accepted; ``neutral``: no such regression but something undecided (``inconclusive``) or
    broken (``failed``); ``success`` otherwise (accepted regressions included).
    """
    accepted = set(accepted)
    if any(None not in accepted and b.get("name") not in accepted for b in blocking_regressions(doc, fail_threshold)):
        return "failure"
    summary = doc.get("summary") or {}
    if summary.get("inconclusive") or summary.get("failed"):
        return "neutral"
    return "success"


def check_title(doc: dict, verdict: str, accepted_by: str | None = None) -> str:
    """One line for the check run's title, e.g. ``2 regressions, 1 improvement``."""
    headline = report.view(doc)["headline"]
    if verdict == "success" and accepted_by and blocking_regressions(doc, -1.0):
        headline += f" (accepted by @{accepted_by})"
    return headline[:250]


def comment_body(doc: dict, details_url: str | None, accepts: Sequence[dict] = (),
                 history_notes: Sequence[dict] = ()) -> str:
    """The sticky comment for a finished run: the CLI's markdown report within GitHub's
    65,536 characters, then each regression's history link (``history_store.
    regression_history_notes``) and who accepted the regression."""
    note = messages.history_notes(history_notes)
    note += "".join(messages.accepted_note(a["user"], a.get("reason")) for a in accepts[-3:])
    body = report.render(doc, "md", max_chars=report.COMMENT_LIMIT - len(note), details_url=details_url)
    return messages.with_note(body, note)


def check_summary(doc: dict, details_url: str | None) -> str:
    """The check run's ``summary`` (≤ 65,535 characters, GITHUB.md)."""
    return report.render(doc, "md", max_chars=messages.CHECK_TEXT_LIMIT, details_url=details_url)
