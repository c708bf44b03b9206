"""The security review's untrusted inputs (tests/security/payloads, see SOURCES.md) through the
App against the fake GitHub: every text the App writes stays inert (F4, F5's echo, F6, F19,
F20), every broken artifact ends the run with "its results artifact is invalid" (F9), and
every page carries the Content-Security-Policy."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from bot import CONTENT_SECURITY_POLICY
from bot.app.job import executor, shell
from bot.app.store import store as app_store
from bot.app.github.github_errors import GitHubError
from bot.db import utc_now
from testkit import payloads as P
from testkit.app_fakes import results_zip
from testkit.results_doc import bench, results_doc
from tests.security.markdown_check import inspect

from .flow import complete, deliver, deliveries, sticky, upload

PAYLOADS = Path(__file__).resolve().parent.parent / "security" / "payloads"
HEAD, BASE = "1" * 40, "0" * 40
PUBLIC = "https://perfgate.example.org/"


def _payload(name: str) -> dict:
    return json.loads((PAYLOADS / name).read_text("utf-8"))


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    return fake_github


def _label(client):
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)))


def _finish(gh, client, scene, data: bytes):
    (dispatch,) = gh.state.dispatches
    scene.artifacts[dispatch["run_id"]] = [(f"perfgate-results-{dispatch['inputs']['run-id']}", data)]
    complete(gh, client, dispatch)
    (check,) = gh.state.check_runs.values()
    return dispatch, check


def test_comment_injection_is_inert_in_the_comment_the_check_run_and_the_run_page(client, gh, scene):
    _label(client)
    dispatch, check = _finish(gh, client, scene, results_zip(_payload("payload_comment_injection.results.json")))
    assert check["conclusion"] == "failure"  # the +50 % regression: the document itself was taken
    links = (PUBLIC, "https://github.com/octo/demo/")
    for text in (sticky(gh).body, check["output"]["summary"]):
        page = inspect(text, links=links)
        assert page.problems == []
        assert (sorted(s for s in page.skeleton if s[0] == "fence")
                == [("fence", ""), ("fence", "mermaid")])
        assert "bench_norm[mode=x` @octo/security-team" in text  # still shown, as code
    run_page = client.get(f"/runs/{dispatch['inputs']['run-id']}")
    assert run_page.status_code == 200 and run_page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert b"</b></summary></details>" not in run_page.data and b"&lt;/b&gt;&lt;/summary&gt;" in run_page.data


def test_run_page_escapes_every_field(client, gh, scene):
    doc = _payload("payload_runpage_xss.results.json")
    # the typed fields (looks, rounds, samples) are refused by the schema (next test); the
    # string fields the page shows must be escaped
    doc["settings"]["looks"] = [4, 8]
    doc["benchmarks"][0]["change"]["rounds"] = 8
    doc["environment"]["telemetry"]["samples"] = 3
    doc["head"]["sha"] = HEAD
    _label(client)
    dispatch, check = _finish(gh, client, scene, results_zip(doc))
    html = client.get(f"/runs/{dispatch['inputs']['run-id']}").get_data(as_text=True)
    assert "<script" not in html and "<img" not in html and "<svg onload" not in html
    for shown in ("&lt;script&gt;alert(&#39;tool.version&#39;)&lt;/script&gt;", "&lt;img src=x onerror=alert(&#39;created_at&#39;)&gt;",
                  "&lt;script&gt;alert(&#39;telemetry.driver&#39;)&lt;/script&gt;", "&lt;script&gt;alert(&#39;side&#39;)&lt;/script&gt;"):
        assert shown in html


def _zip_with(raw: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("results.json", raw)
    return buffer.getvalue()


def _with_head(name: str) -> bytes:
    doc = _payload(name)
    doc["head"]["sha"] = HEAD
    return results_zip(doc)


@pytest.mark.parametrize("artifact", [
    lambda: (PAYLOADS / "payload_artifact_bad_crc.zip").read_bytes(),
    lambda: (PAYLOADS / "payload_artifact_deep_json.zip").read_bytes(),
    lambda: _with_head("payload_stuck_ci_string.results.json"),
    lambda: _with_head("payload_stuck_settings_looks.results.json"),
    lambda: _with_head("payload_runpage_xss.results.json"),
    lambda: _zip_with(b'{"schema_version": 1, "a": ' + b"[" * 900 + b"]" * 900 + b"}"),
    lambda: _zip_with("\ud800".encode("utf-8", "surrogatepass")),
], ids=["bad_crc", "deep_json", "ci_string", "settings_looks", "runpage_xss", "deep_valid_json", "bad_utf8"])
def test_a_broken_artifact_ends_the_run_as_invalid(app, client, gh, scene, artifact):
    _label(client)
    dispatch, check = _finish(gh, client, scene, artifact())
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "its results artifact is invalid" in check["output"]["summary"]
    assert "its results artifact is invalid" in sticky(gh).body
    assert inspect(sticky(gh).body, links=("https://github.com/octo/demo/",)).problems == []
    key = dispatch["inputs"]["run-id"]
    assert client.get(f"/runs/{key}").status_code == 200
    assert client.get(f"/api/runs/{key}").get_json()["status"] == "completed"


def test_a_history_run_cannot_name_or_retitle_a_pull_request(app, client, gh, scene):
    from bot.history import reads as history_reads

    new = "3" * 40
    deliver(client, P.push(before=BASE, after=new))
    (dispatch,) = gh.state.dispatches
    doc = _payload("payload_history_js_url.results.json")
    doc["head"]["sha"] = new
    upload(scene, dispatch, doc)
    complete(gh, client, dispatch)
    from sqlalchemy import select

    from bot.history.tables import PullRequest

    with app.extensions["perfgate"]["db"].session() as session:
        assert history_reads.load_side_points(session, P.REPO) == []
        assert session.scalars(select(PullRequest)).all() == []
        (series,) = history_reads.load_series(session, P.REPO)
        assert [p.sha for p in series.points] == [new]
    page = client.get(f"/{P.REPO}/bench/bench_hist").get_data(as_text=True)
    assert "javascript:" not in page and "Revert: forged title" not in page


def test_stored_links_render_only_to_the_github_host(app, client):
    """A result stored by ``perfgate history add`` may still carry a PR link: the pages link
    only ``https://`` pages of the configured GitHub host."""
    from bot.history import store as history_store

    doc = results_doc([bench("bench_a", "regression", 1.3)], base_sha=BASE, head_sha=HEAD)
    doc["pull_request"] = {"number": 7, "url": "javascript:alert(document.domain)"}
    other = results_doc([bench("bench_a", "regression", 1.3)], base_sha=BASE, head_sha="4" * 40)
    other["pull_request"] = {"number": 8, "url": "https://github.com/octo/demo/pull/8"}
    with app.extensions["perfgate"]["db"].session() as session, session.begin():
        history_store.add_result(session, doc, repository=P.REPO)
        history_store.add_result(session, other, repository=P.REPO)
        # public: the pages show it to anyone
        app_store.record_visibility(session, P.REPO, False, utc_now())
    page = client.get(f"/{P.REPO}/bench/bench_a")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "javascript:" not in text and '<a href="https://github.com/octo/demo/pull/8">#8</a>' in text
    assert ">#7<" in text  # shown, not linked


def test_a_download_error_publishes_no_storage_url(client, gh, scene, caplog):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scene.blob_url = f"http://127.0.0.1:{port}/container?sv=2024&sig=SECRET_SIGNATURE"
    _label(client)
    doc = results_doc([bench("bench_a", "unchanged", 1.0)], base_sha=BASE, head_sha=HEAD)
    dispatch, check = _finish(gh, client, scene, results_zip(doc))
    (job,) = [d for d, status in deliveries(client.application).items() if status == "failed"]
    rt = client.application.extensions["perfgate"]["runtime"]
    while True:  # no answer is retried (three rounds of retries), then reported
        assert check["status"] != "completed"
        try:
            executor.handle_delivery(rt, job)
            break
        except GitHubError:
            continue
    with rt.db.session() as session:
        assert app_store.get_delivery(session, job).attempts == shell.GIVE_UP_AFTER
    assert check["conclusion"] == "failure"
    for text in (check["output"]["summary"], sticky(gh).body):
        assert "could not download the artifact" in text and "SECRET_SIGNATURE" not in text and str(port) not in text
    assert "SECRET_SIGNATURE" not in caplog.text and "could not download the artifact" in caplog.text


@pytest.mark.parametrize("body", (PAYLOADS / "payload_stranger_comments.txt").read_text("utf-8").splitlines())
def test_replies_to_malformed_commands_quote_nothing_live(client, gh, body):
    comment = gh.state.create_comment(P.REPO, 7, body, "maintainer", "User")
    deliver(client, P.issue_comment("created", body, comment_id=comment.id, login="maintainer"))
    (reply,) = [c for c in gh.state.issue_comments(P.REPO, 7) if c.login == "perfgate[bot]"]
    assert "could not understand" in reply.body
    assert inspect(reply.body).problems == []


def test_every_page_has_the_content_security_policy(client, gh):
    for path in ("/", f"/{P.REPO}", "/runs/unknown", "/healthz", "/api/runs/unknown"):
        response = client.get(path)
        assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, path
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_deeply_nested_signed_body_is_a_400(client):
    body = b"[" * 100_000 + b"]" * 100_000
    response = client.post("/webhook", data=body, headers=P.headers("pull_request", body))
    assert response.status_code == 400 and "nested too deep" in response.get_json()["error"]


def test_every_page_template_is_autoescaped(app):
    names = app.jinja_env.list_templates()
    assert any(n.startswith("history/") for n in names) and any(n.startswith("app/") for n in names)
    assert all(app.select_jinja_autoescape(name) for name in names)


def _comment_with(path: tuple[str, ...], value):
    """A builder of a ``/perf run`` comment's payload with the field at ``path`` set to ``value``."""
    def build() -> dict:
        payload = P.issue_comment("created", "/perf run")[1]
        node = payload
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return payload
    return build


@pytest.mark.parametrize("name,payload,status", [
    ("issue_comment", _comment_with(("installation", "id"), 2 ** 70), 202),  # stored without the id
    ("issue_comment", _comment_with(("repository", "full_name"), "o/" + "r" * 300), 202),
    ("issue_comment", lambda: {"action": "created", "installation": {"id": 2 ** 70}}, 400),  # not GitHub's shape
    ("issue_comment", lambda: {"action": "x" * 100}, 400),
    ("e" * 100, lambda: {"action": "created"}, 400),
])
def test_signed_payloads_of_odd_shapes_are_recorded_or_refused_never_503(client, name, payload, status):
    body = P.encode(payload())
    assert client.post("/webhook", data=body, headers=P.headers(name, body)).status_code == status
