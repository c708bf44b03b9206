"""bot.app.core.ingest (pure): artifact choice, size-limited unzip, validation, check conclusion,
texts; bot.settings: the environment contract."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass

import pytest

from bot.app.core import ingest
from bot.settings import MissingSetting, load_settings
from runner.errors import UserError
from runner.report import COMMENT_LIMIT, MARKER
from testkit.app_fakes import results_zip
from testkit.results_doc import bench, results_doc


@dataclass
class A:
    name: str
    expired: bool = False


def test_pick_artifact():
    assert ingest.pick_artifact([A("logs"), A("perfgate-results-k1"), A("perfgate-results-k2")], "k2").name == \
        "perfgate-results-k2"
    assert ingest.pick_artifact([A("perfgate-results-123-1")], "k9").name == "perfgate-results-123-1"
    assert ingest.pick_artifact([A("perfgate-results-a"), A("perfgate-results-b")], "k9") is None
    assert ingest.pick_artifact([A("perfgate-results-k1", expired=True)], "k1") is None


def test_the_results_artifact_must_exist_and_fit_the_limit():
    @dataclass
    class Sized:
        name: str
        size_in_bytes: int
        expired: bool = False

    assert ingest.results_artifact([Sized("perfgate-results-k1", 100)], "k1", 100).size_in_bytes == 100
    with pytest.raises(ingest.IngestError, match="101 bytes, over the limit of 100"):
        ingest.results_artifact([Sized("perfgate-results-k1", 101)], "k1", 100)
    with pytest.raises(ingest.IngestError, match="produced no `perfgate-results-k1` artifact"):
        ingest.results_artifact([Sized("logs", 1)], "k1", 100)


def test_results_from_zip_prefers_the_shallowest_results_json():
    doc = results_doc()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("traces/results.json", "{}")
        z.writestr("results.json", json.dumps(doc))
    assert ingest.results_from_zip(buffer.getvalue()) == doc
    assert ingest.results_from_zip(results_zip(doc, folder="out/")) == doc


def _zip(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize("data,error,fragment", [
    (b"not a zip", ingest.IngestError, "not a zip"),
    (_zip("report.md", b"# hi"), ingest.IngestError, "no results.json"),
    (_zip("results.json", b"\x00" * 5000), ingest.IngestError, "over the limit"),
    (_zip("results.json", b"[1, 2"), ingest.IngestError, "not JSON"),
    (_zip("results.json", b'{"schema_version": 1}'), ingest.IngestError, "does not match schema_version 1 at"),
])
def test_bad_artifacts(data, error, fragment):
    with pytest.raises(error, match=fragment):
        ingest.results_from_zip(data, limit=4096)


def test_conclusion():
    slow = results_doc([bench("a", "regression", 1.10), bench("b", "unchanged", 1.0)])
    assert ingest.conclusion(slow, 0.05) == "failure"
    assert ingest.conclusion(slow, 0.05, accepted=["a"]) == "success"
    assert ingest.conclusion(slow, 0.05, accepted=["another_benchmark"]) == "failure"  # accepts bind to benchmarks
    assert ingest.conclusion(slow, 0.05, accepted=[None]) == "success"  # an accept for every benchmark
    assert ingest.conclusion(slow, 0.20) == "success"  # within fail_threshold
    undecided = results_doc([bench("a", "inconclusive", 1.01)])
    assert ingest.conclusion(undecided, 0.05) == "neutral"
    # failed on both sides: not the PR's doing, undecided
    broken = bench("a", "failed", 1.0)
    broken["base"]["error"] = broken["head"]["error"] = "RuntimeError: boom"
    assert ingest.conclusion(results_doc([broken]), 0.05) == "neutral"
    # ran on base, fails on head: the PR broke it, which fails the gate like a regression
    broken_by_head = {**bench("a", "failed", 1.0), "change": {"verdict": "failed", "ratio": None}}
    broken_by_head["head"] = {**broken_by_head["head"], "samples": [],
                              "error": "RuntimeError: boom"}
    assert ingest.conclusion(results_doc([broken_by_head]), 0.05) == "failure"
    assert ingest.conclusion(results_doc([broken_by_head]), 0.05, accepted=["a"]) == "neutral"
    assert ingest.conclusion(results_doc([bench("a", "improvement", 0.7)]), 0.05) == "success"


def test_comment_body_fits_githubs_limit_and_keeps_notes():
    many = results_doc([bench(f"bench_{i:04d}_" + "x" * 200, "regression", 1.1) for i in range(600)])
    accepts = [{"user": "maintainer", "reason": "known"}]
    notes = [{"benchmark": "bench_0000", "url": "https://p/b", "within_noise": False}]
    body = ingest.comment_body(many, "https://perfgate.example.org/runs/k", accepts, notes)
    assert len(body) <= COMMENT_LIMIT and body.startswith(MARKER)
    assert body.rstrip().endswith("Regression accepted by @maintainer: known")
    assert "beyond its usual noise" in body
    assert len(ingest.check_summary(many, None)) <= 65_535


def test_one_word_for_inconclusive_in_every_report():
    # issue 47: the gate's sentence said "undecided", the tables and the check run's title
    # "inconclusive"; results.json's value is the word every report shows
    from runner import report
    from runner.report.notes import INCONCLUSIVE_WORD

    params = [{**bench(f"bench_grid[n={n}]", verdict, ratio), "family": "bench_grid",
               "params": {"n": str(n)}}
              for n, verdict, ratio in ((1, "regression", 1.3), (2, "inconclusive", 1.01),
                                        (4, "regression", 1.2))]
    many = [bench(f"bench_{i:02d}", ("inconclusive", "unchanged")[i % 2], 1.0) for i in range(20)]
    doc = results_doc(params + many)
    shown = {fmt: report.render(doc, fmt) for fmt in ("md", "html", "term")}
    shown["check summary"] = ingest.check_summary(doc, None)
    shown["check title"] = ingest.check_title(doc, "failure")
    assert INCONCLUSIVE_WORD == "inconclusive"
    for where, text in shown.items():
        assert "undecided" not in text.lower(), where
        assert "inconclusive" in text, where
    assert "(11 inconclusive; 23 benchmarks)" in shown["md"].splitlines()[1]
    assert "inconclusive at n = 2" in shown["md"]  # the sweep's summary


KEY = "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n"
WEBHOOK_SECRET = "webhook-secret-of-the-settings-tests-0123456789"


def test_settings_from_the_environment(tmp_path):
    key_file = tmp_path / "app.pem"
    key_file.write_text(KEY)
    s = load_settings({"GITHUB_APP_ID": "42", "GITHUB_PRIVATE_KEY_PATH": str(key_file),
                           "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "GITHUB_API_URL": "https://ghe.example.com/api/v3/",
                           "REDIS_URL": "redis://cache:6379/0", "PERFGATE_PUBLIC_URL": "https://perf.example.com/",
                           "PERFGATE_RUN_TIMEOUT": "600", "PERFGATE_GITHUB_TIMEOUT": "5"})
    assert s.github_timeout == 5
    assert (s.app_id, s.private_key, s.api_url) == ("42", KEY, "https://ghe.example.com/api/v3")
    assert (s.queue_url, s.public_url, s.run_timeout, s.workflow) == ("redis://cache:6379/0", "https://perf.example.com",
                                                                      600.0, "perfgate.yml")
    assert WEBHOOK_SECRET not in repr(s) and "PRIVATE" not in repr(s)
    one_line = load_settings({"GITHUB_APP_ID": "42", "GITHUB_PRIVATE_KEY": KEY.replace("\n", "\\n"),
                                  "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET})
    assert one_line.private_key.startswith("-----BEGIN RSA PRIVATE KEY-----\n")


@pytest.mark.parametrize("env,fragment", [
    ({"GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET}, "GITHUB_APP_ID"),
    ({"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET}, "GITHUB_PRIVATE_KEY"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": "hunter2", "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET}, "PEM"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "HUEY_URL": "amqp://x"}, "HUEY_URL"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "PERFGATE_WORKFLOW": "a/b.yml"},
     "PERFGATE_WORKFLOW"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "PERFGATE_RUN_TIMEOUT": "-1"},
     "PERFGATE_RUN_TIMEOUT"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "PERFGATE_GITHUB_TIMEOUT": "0"},
     "PERFGATE_GITHUB_TIMEOUT"),
    ({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": KEY, "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET, "PERFGATE_GITHUB_TIMEOUT": "0.5"},
     "PERFGATE_GITHUB_TIMEOUT must be a whole number"),
])
def test_bad_settings_name_the_variable(env, fragment):
    with pytest.raises(UserError, match=fragment) as info:
        load_settings(env)
    if fragment in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"):
        assert isinstance(info.value, MissingSetting)


# -- one full validation per ingest (security review F13) ------------------------------------------
def _prepare(doc: dict, kind: str = "pr", workflow_url: str | None = "https://github.com/octo/demo/actions/runs/1"):
    return ingest.prepare(results_zip(doc), run_id="k1", head_sha=doc["head"]["sha"], kind=kind,
                          repository="octo/demo", pr_number=7 if kind == "pr" else None,
                          github_url="https://github.com", workflow_url=workflow_url)


@pytest.mark.parametrize("kind", ["pr", "history"])
def test_an_ingest_validates_the_document_once_and_stores_a_valid_one(monkeypatch, tmp_path, kind):
    from bot.db import open_database
    from bot.history import store as history_store
    from runner import results

    doc = results_doc([bench("bench_a", "regression", 1.2), bench("bench_b", "unchanged", 1.0)])
    original, calls = results.validation_problems, []
    monkeypatch.setattr(results, "validation_problems", lambda d: calls.append(d) or original(d))
    prepared = _prepare(doc, kind)
    db = open_database(f"sqlite:///{tmp_path / 'perfgate.db'}")
    try:
        with db.session() as session, session.begin():
            assert history_store.add_result(session, prepared, repository="octo/demo", validated=True).created
    finally:
        db.dispose()
    assert len(calls) == 1 and calls[0].get("run_id") is None  # the artifact's document, as it came
    # what was stored is valid all the same: the App's fields were checked one by one, and a
    # push's history run is built from the validated parts
    monkeypatch.undo()
    assert results.validate(prepared) is prepared
    assert prepared["run_id"] == "k1" and (prepared["base"] is None) is (kind == "history")


def test_the_fields_the_app_sets_are_checked_against_the_schema():
    doc = results_doc()
    assert _prepare(doc)["run_url"] == "https://github.com/octo/demo/actions/runs/1"
    with pytest.raises(ingest.IngestError, match="cannot be shown"):  # run_url: at most 500 characters
        _prepare(doc, workflow_url="https://github.com/octo/demo/actions/runs/" + "1" * 500)


def test_the_store_still_validates_what_no_one_validated(tmp_path):
    from bot.db import open_database
    from bot.history import store as history_store

    db = open_database(f"sqlite:///{tmp_path / 'perfgate.db'}")
    try:
        with db.session() as session, session.begin(), pytest.raises(UserError, match="invalid results.json"):
            history_store.add_result(session, dict(results_doc(), benchmarks="none"), repository="octo/demo")
    finally:
        db.dispose()


def test_the_ingest_cost_script_counts_one_validation(capsys):
    from evaluation import ingest_cost

    assert ingest_cost.main(["--smoke", "--kind", "history"]) == 0
    assert "validations=1 kind=history" in capsys.readouterr().out.splitlines()[-1]
