"""Ingesting a run's results, the pure part: pick the artifact, unpack ``results.json`` from
its zip (size-limited), validate it, render it once, decide the check run's conclusion, write
the texts.

The artifact is written by the job that ran the pull request's code, so every byte of it is
untrusted: :func:`prepare` maps every failure of unzipping, parsing, validating and rendering
to :class:`IngestError` ("its results artifact is invalid: ..."), whose message is fixed text
safe to publish; the underlying error goes to the log.

The I/O around it (download, store, edit the comment and the check run) is
``bot.app.job.runs``; everything here takes bytes and dicts.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from typing import Iterable, Sequence

from runner import report
from runner import gate
from runner import results as results_schema
from runner.results import CHANGED, REPORT_ORDER, is_memory_valued, output_changed, verdict_of
from runner.errors import ResultsError, UserError
from runner.report import view as report_view
from runner.report.escape import md_code, plain

from ...history.points import fingerprint_of, points_of
from . import messages

log = logging.getLogger("perfgate.bot")

#: Largest ``results.json`` accepted once unpacked (bytes; ``runner.results.MAX_DOCUMENT_BYTES``).
#: A real one with profiles of a few hundred benchmarks is a few MB; this bounds a zip bomb.
RESULTS_LIMIT = results_schema.MAX_DOCUMENT_BYTES
ARTIFACT_PREFIX = "perfgate-results"


#: How every published ingestion failure of the artifact's content starts.
INVALID = "its results artifact is invalid"


class IngestError(UserError):
    """The run's artifact is missing, not a zip, too large or not a valid results.json. The
    message is Markdown that may be published (fixed text; untrusted parts as code spans)."""


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


def results_artifact(artifacts: Iterable, key: str, limit: int):
    """The artifact to download for run ``key`` (:func:`pick_artifact`).

    Raises:
        IngestError: there is none, or it is larger than ``limit`` bytes (``PERFGATE_ARTIFACT_LIMIT``).
    """
    artifact = pick_artifact(artifacts, key)
    if artifact is None:
        raise IngestError(f"produced no {md_code(artifact_name(key))} artifact")
    if artifact.size_in_bytes > limit:
        raise IngestError(f"its artifact is {artifact.size_in_bytes} bytes, over the limit of {limit} "
                          "(PERFGATE_ARTIFACT_LIMIT)")
    return artifact


def results_from_zip(data: bytes, limit: int = RESULTS_LIMIT) -> dict:
    """The validated ``results.json`` inside an artifact zip (the shallowest one).

    Raises:
        IngestError: for every way the archive or the document can be broken: not a zip,
            no ``results.json``, larger than ``limit`` unpacked, not readable (bad CRC,
            encrypted, unknown compression), not UTF-8 JSON (or nested too deep to parse),
            not a valid schema_version 1 document. The message names the problem (the
            first invalid field's path for a schema error) and never quotes the content.
    """
    try:
        raw = _unpack(data, limit)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of an untrusted archive is the archive's
        log.warning("unreadable results artifact: %s: %s", type(exc).__name__, exc)
        raise IngestError(f"{INVALID}: results.json cannot be unpacked") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - UnicodeDecodeError, ValueError, RecursionError (deep nesting)
        log.warning("results.json is not JSON: %s: %s", type(exc).__name__, str(exc)[:300])
        raise IngestError(f"{INVALID}: results.json is not JSON") from None
    return _validated(doc)


def _unpack(data: bytes, limit: int) -> bytes:
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
    return raw


def _validated(doc) -> dict:
    """``doc`` if it is a valid schema_version 1 document, else :class:`IngestError` naming
    the first invalid field's path (the schema's own message quotes the value: log only).

    The one full validation of an ingest (the artifact is the boundary): what :func:`prepare`
    changes afterwards is checked field by field, and the store is told it was validated."""
    try:
        if isinstance(doc, dict) and doc.get("schema_version") not in (None, results_schema.SCHEMA_VERSION):
            log.info("invalid results.json: schema_version %r", doc.get("schema_version"))
            raise IngestError(f"{INVALID}: results.json is not a schema_version 1 document")
        bad_text = results_schema.text_problem(doc)
        if bad_text is not None:
            raise IngestError(f"{INVALID}: results.json holds text with a NUL or a lone surrogate at "
                              f"{md_code(plain(bad_text, 200))}")
        problems = results_schema.validation_problems(doc)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on a document nested deep
        log.warning("results.json cannot be validated: %s: %s", type(exc).__name__, str(exc)[:300])
        raise IngestError(f"{INVALID}: results.json cannot be validated") from None
    if not problems:
        return doc
    where, message = problems[0]
    log.info("invalid results.json at %s: %s (%d problems)", where, message[:300], len(problems))
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    raise IngestError(f"{INVALID}: results.json does not match schema_version 1 at {md_code(plain(where, 200))}{more}")


#: The top-level fields :func:`prepare` sets from the App's run (``runner.results.with_run``).
RUN_FIELDS = ("run_id", "run_url", "pull_request")


def _check_run_fields(doc: dict) -> dict:
    """``doc`` once the fields the App set (:data:`RUN_FIELDS`) match their schema
    (:func:`runner.results.check_fields`): the rest was validated as it came (:func:`_validated`),
    so the document is valid without a second full validation (security review F13).

    Raises:
        ValueError: a field breaks the schema (a bug of the App's own values, never the artifact's).
    """
    try:
        return results_schema.check_fields(doc, RUN_FIELDS)
    except ResultsError as exc:
        raise ValueError(str(exc)) from None


def prepare(data: bytes, *, run_id: str, head_sha: str, kind: str, repository: str, pr_number: int | None,
            github_url: str, workflow_url: str | None = None, details_url: str | None = None,
            limit: int = RESULTS_LIMIT, runner: str | None = None) -> dict:
    """The document to store for run ``run_id`` (the App's run key), from its artifact's bytes:
    valid, so the store need not validate it again (``add_result(..., validated=True)``).

    Unpacked and validated, once (:func:`results_from_zip`); it must be for ``head_sha``; a push
    (``kind`` ``history``) keeps only its head side (:func:`as_history_run`); the App's
    metadata replaces the document's own (``runner.results.with_run``: ``run_id``,
    ``pull_request`` from the run — a document cannot name or re-title a PR —, ``run_url`` =
    ``workflow_url`` when the App has one; ``environment.runner_label`` = ``runner``, the runner
    group the run was dispatched to, so each group's results are a history series of their own);
    then it is rendered once (comment, check-run summary and title, run page, history points),
    so what is stored is known to render. A ``bisect`` run must carry its ``bisect`` section.

    Raises:
        IngestError: every failure on the way (message safe to publish; details logged).
    """
    doc = results_from_zip(data, limit)  # the one full validation
    head = (doc.get("head") or {}).get("sha")
    if head != head_sha:
        raise IngestError(f"its results are for head {md_code(messages.short(head))}, "
                          f"not the requested {md_code(messages.short(head_sha))}")
    if kind == "bisect" and not isinstance(doc.get("bisect"), dict):
        raise IngestError(f"{INVALID}: a bisect's results.json has no bisect section")
    try:
        if kind == "history":
            doc = as_history_run(doc)
        if runner is not None:
            doc = {**doc, "environment": {**(doc.get("environment") or {}), "runner_label": runner}}
        pull = {"number": pr_number, "url": f"{github_url.rstrip('/')}/{repository}/pull/{pr_number}"} \
            if pr_number is not None else None
        doc = _check_run_fields(results_schema.with_run(doc, run_id=run_id, run_url=workflow_url or doc.get("run_url"),
                                                        pull_request=pull))
        check_renders(doc, details_url)
    except Exception as exc:  # noqa: BLE001 - a schema-valid document the readers still cannot take
        log.warning("results cannot be rendered: %s: %s", type(exc).__name__, str(exc)[:300], exc_info=True)
        raise IngestError(f"{INVALID}: its results cannot be shown") from None
    return doc


def check_renders(doc: dict, details_url: str | None = None) -> None:
    """Render ``doc`` everywhere the App shows it (sticky comment, check-run title and
    summary, the run page's HTML — each encoded as UTF-8, as it is sent —, its history
    points); raises what a renderer raises."""
    for text in (comment_body(doc, details_url), check_summary(doc, details_url),
                 check_title(doc, conclusion(doc, 0.0)), report.render(doc, "html")):
        text.encode("utf-8")
    points_of(doc)
    fingerprint_of(doc.get("environment") or {}).as_dict()


def as_history_run(doc: dict) -> dict:
    """A single-revision (``perfgate run``) document from a validated result, for the
    default-branch history: a compare's head side (absolute seconds per call of the pushed
    commit) with ``base`` and the verdicts dropped. A document that is already single-revision
    is returned as it is. Not validated again: every part comes from the validated document
    through ``runner.results``'s constructors (``tests/security/test_fuzz_ingest.py`` stores what
    :func:`prepare` makes of mutated documents through the validating ``add_result``).

    (The example workflow always compares; a push is dispatched as ``before..after``.)
    """
    if doc.get("base") is None:
        return doc
    benchmarks = [results_schema.measured(b["name"], b.get("file"), b.get("head")) for b in doc.get("benchmarks", [])]
    return dict(doc, base=None, benchmarks=benchmarks, summary=results_schema.summarize(benchmarks))


def conclusion(doc: dict, fail_threshold: float, accepted: Iterable[str | None] = (),
               fail_on_memory: bool = False) -> str:
    """The check run's conclusion for a results document.

    ``accepted``: benchmark names whose regression was accepted for this document's head
    (None: every benchmark). ``failure``: a regression beyond ``fail_threshold`` — or, with
    ``fail_on_memory`` (the configuration's ``fail_on_memory_regression``), a memory regression,
    or, with the document's ``settings.fail_on_output_change``, a head that changes the result —
    that is not accepted; ``neutral``: no such regression but something undecided
    (``inconclusive``) or broken (``failed``); ``success`` otherwise (accepted regressions included).
    """
    accepted = set(accepted)
    on_output = (doc.get("settings") or {}).get("fail_on_output_change") is True  # base's config
    failing = gate.gate_failures(doc, fail_threshold, fail_on_memory, on_output)
    if any(None not in accepted and b.get("name") not in accepted for b in failing):
        return "failure"
    summary = doc.get("summary") or {}
    if summary.get("inconclusive") or summary.get("failed"):
        return "neutral"
    return "success"


def title_counts(summary: dict | None, benchmarks: list | None = None) -> str:
    """``"1 regression, 1 failed, 1 unchanged, 1 memory regression"``: the verdict counts in report
    order, then the memory verdicts of ``benchmarks`` that are changes, named as the reports' gate
    sentence names them (:func:`runner.report.view.memory_counts`); or ``"no benchmarks"``. A
    memory-valued benchmark's change (asv's ``peakmem_*``/``mem_*``, ``measure: memory``) is counted
    once, as a memory one; a benchmark whose head changes the result is counted as such last, and
    never as an improvement."""
    parts = []
    benches = [b for b in benchmarks or [] if isinstance(b, dict)]
    as_memory = [verdict_of(b) for b in benches if is_memory_valued(b)]
    changing = [verdict_of(b) for b in benches if output_changed(b)]
    for key in REPORT_ORDER:
        n = (summary or {}).get(key) or 0
        if isinstance(n, int) and key in CHANGED:
            faster_changing = changing.count(key) if key == "improvement" else 0
            n = max(0, n - as_memory.count(key) - faster_changing)
        if isinstance(n, int) and n:
            parts.append(f"{n} {key}{'s' if n != 1 and key in CHANGED else ''}")
    parts += report_view.memory_counts(benches)
    if changing:
        parts.append(f"{len(changing)} changing the result")
    return ", ".join(parts) or "no benchmarks"


def check_title(doc: dict, verdict: str, accepted_by: str | None = None) -> str:
    """One line for the check run's title, e.g. ``2 regressions, 1 improvement``."""
    headline = title_counts(doc.get("summary"), doc.get("benchmarks"))
    if verdict == "success" and accepted_by and gate.gate_failures(doc, -1.0, True):
        headline += f" (accepted by @{accepted_by})"
    return plain(headline, 250)


def comment_body(doc: dict, details_url: str | None, accepts: Sequence[dict] = (),
                 history_notes: Sequence[dict] = (), config_problem: str | None = None) -> str:
    """The sticky comment for a finished run: the CLI's markdown report within GitHub's
    65,536 characters, then each regression's history link (``history_store.
    regression_history_notes``), who accepted the regression, and why the defaults stood in for
    the target's config (``config_problem``, ``bot.app.core.facts.settled_config``; None: read as
    written)."""
    note = messages.history_notes(history_notes)
    note += "".join(messages.accepted_note(a["user"], a.get("reason")) for a in accepts[-3:])
    note += messages.config_note(config_problem)
    body = report.render(doc, "md", max_chars=report.COMMENT_LIMIT - len(note), details_url=details_url)
    return messages.with_note(body, note)


def check_summary(doc: dict, details_url: str | None) -> str:
    """The check run's ``summary`` (≤ 65,535 characters, GITHUB.md)."""
    return report.render(doc, "md", max_chars=messages.CHECK_TEXT_LIMIT, details_url=details_url)
