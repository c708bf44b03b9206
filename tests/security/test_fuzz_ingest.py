"""Property: whatever bytes a run uploads as its results artifact, ingestion either returns a
document that then stores, renders (comment, check run, run page, dashboard) and reads back,
or raises ``IngestError`` with a publishable message — never anything else (which would leave
the run "queued" and its page answering 500)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from bot.app.core import ingest
from runner.results import text_problem, validation_problems
from testkit.documents import HEAD
from tests.security.markdown_check import inspect
from tests.security.strategies import fuzzed_documents, json_values, mutated_documents, untrusted_text

DETAILS = "https://perfgate.example.org/runs/abc"


def _zip(raw: bytes, name: str = "results.json") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, raw)
    return buffer.getvalue()


def _prepare(data: bytes, head_sha: str = HEAD, kind: str = "pr") -> dict | None:
    try:
        return ingest.prepare(data, run_id="k1", head_sha=head_sha, kind=kind, repository="octo/demo",
                              pr_number=7 if kind == "pr" else None, github_url="https://github.com",
                              workflow_url="https://github.com/octo/demo/actions/runs/1", details_url=DETAILS)
    except ingest.IngestError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400
        assert inspect(message).problems == []
        return None


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A database and a Flask client over it (the dashboard and the run page)."""
    from bot import create_app

    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'perfgate.db'}"})
    yield app
    app.extensions["perfgate"]["db"].dispose()


def _store_and_show(app, doc: dict) -> None:
    """Store ``doc`` as the App does, read its history notes, show its dashboard pages (each
    answered and encodable), then forget it."""
    from urllib.parse import quote

    from sqlalchemy import delete

    from bot.history import reads as history_reads
    from bot.history import store as history_store
    from bot.history.tables import BenchmarkPoint, ChangePointRow, Environment, PullRequest, Repository, Result

    db = app.extensions["perfgate"]["db"]
    try:
        with db.session() as session, session.begin():
            assert history_store.add_result(session, doc, repository="octo/demo").created
            history_reads.regression_history_notes(session, "octo/demo", doc,
                                                   "https://perfgate.example.org")
        client = app.test_client()
        for page in ("/octo/demo", *(f"/octo/demo/bench/{quote(b['name'], safe='')}" for b in doc["benchmarks"][:2])):
            response = client.get(page)
            assert response.status_code in (200, 404), page
            response.get_data().decode("utf-8")
    finally:
        with db.session() as session, session.begin():
            for model in (BenchmarkPoint, ChangePointRow, Result, PullRequest, Environment, Repository):
                session.execute(delete(model))


@given(st.binary(max_size=2048))
def test_any_bytes(data):
    assert _prepare(data) is None


@given(st.one_of(st.binary(max_size=512), json_values.map(lambda v: json.dumps(v).encode()),
                 untrusted_text.map(lambda t: t.encode("utf-8", "surrogatepass"))),
       st.sampled_from(["results.json", "out/results.json", "../results.json", "results.json/"]))
def test_any_results_json_in_a_zip(raw, name):
    assert _prepare(_zip(raw, name)) is None


@given(st.binary(min_size=1, max_size=64), st.integers(min_value=0, max_value=400))
def test_a_corrupted_archive(noise, at):
    from testkit.documents import full_document

    data = bytearray(_zip(json.dumps(full_document()).encode()))
    at = min(at, len(data) - 1)
    data[at:at + len(noise)] = noise
    doc = _prepare(bytes(data))
    assert doc is None or doc["head"]["sha"] == HEAD


@given(fuzzed_documents(), st.sampled_from(["pr", "history"]))
def test_untrusted_text_in_every_field_is_stored_and_shown(store, pair, kind):
    doc, _ = pair
    head = doc["head"]["sha"]
    prepared = _prepare(_zip(json.dumps(doc).encode()), head_sha=head, kind=kind)
    if text_problem(doc) is not None:  # "\ud800", "\u0000": not text every database and page can hold
        assert prepared is None
        return
    assert prepared is not None  # text alone (within the schema's lengths) never makes a document invalid
    assert prepared.get("pull_request") == ({"number": 7, "url": "https://github.com/octo/demo/pull/7"}
                                            if kind == "pr" else None)
    _store_and_show(store, prepared)


@given(mutated_documents(), st.sampled_from(["pr", "history"]))
def test_a_document_the_schema_takes_is_one_every_reader_takes(store, doc, kind):
    head = doc.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    prepared = _prepare(_zip(json.dumps(doc).encode()), head_sha=sha if isinstance(sha, str) else HEAD, kind=kind)
    event("accepted" if prepared is not None else "refused as invalid")
    if isinstance(sha, str) and not validation_problems(doc) and text_problem(doc) is None:
        # refused only by the render check would mean the schema lets through what a reader cannot take
        assert prepared is not None
    if prepared is not None:
        _store_and_show(store, prepared)
