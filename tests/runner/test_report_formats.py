"""The one extension point for report formats: the registry and its record, and a new format added
as one module and one registry line (tests/runner/toy_format.py), rendered by ``perfgate report``
and written beside results.json with the others."""

from __future__ import annotations

import json

import pytest

from runner import results as results_mod
from runner.cli.main import main
from runner.report import formats, render
from runner.report.render import write_reports
from testkit.documents import full_document

from . import toy_format

#: Untrusted text with a terminal control sequence, a bidirectional override, markup and quotes.
HOSTILE = "bench\x1b[2J\x07\u202e<b>[red]`*\"'"


def _stored(tmp_path):
    doc = full_document()
    path = tmp_path / "results.json"
    results_mod.dump(doc, path)
    return results_mod.load(path), path


def test_every_registered_format_has_a_name_of_its_own_and_the_written_ones_a_file():
    assert formats.names() == ("md", "html", "term")
    written = [(f.name, f.file) for f in formats.written()]
    assert written == [("md", "report.md"), ("html", "report.html")]
    assert formats.get("term").file is None
    with pytest.raises(KeyError, match="no report format 'pdf' .there are: md, html, term"):
        formats.get("pdf")
    with pytest.raises(ValueError, match=r"unknown format 'pdf' \(md, html, term\)"):
        render({}, "pdf")


@pytest.mark.parametrize("fmt", formats.REGISTRY + (toy_format.FORMAT,), ids=lambda f: f.name)
def test_each_formats_escaping_context_shows_the_text_and_nothing_else(fmt):
    """A format's ``escape`` keeps the text readable and leaves no control character of the
    value's own (ESC, BEL, a bidirectional override)."""
    shown = str(fmt.escape(HOSTILE))
    assert "bench" in shown and "red" in shown
    assert not set(shown) & {"\x1b", "\x07", "\u202e"}
    assert fmt.escape(None) in ("", '""')


def test_a_new_format_is_one_module_and_one_registry_line(monkeypatch, tmp_path, capsys):
    doc, path = _stored(tmp_path)
    assert main(["report", str(path), "--format", "toy"]) == 2  # unregistered: --format refuses it
    err = capsys.readouterr().err
    assert "invalid choice" in err and "toy" in err

    monkeypatch.setattr(formats, "REGISTRY", formats.REGISTRY + (toy_format.FORMAT,))
    # perfgate report prints it, or writes it where -o says
    assert main(["report", str(path), "--format", "toy"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed)
    assert summary["head"] == doc["head"]["sha"] and summary["summary"] == doc["summary"]
    assert [(b["name"], b["verdict"]) for b in summary["benchmarks"]] == [
        (b["name"], results_mod.verdict_of(b)) for b in doc["benchmarks"]]
    assert main(["report", str(path), "--format", "toy", "-o", str(tmp_path / "toy.json")]) == 0
    assert (tmp_path / "toy.json").read_text("utf-8") == printed == render(doc, "toy")
    # the reports written beside results.json (perfgate compare, the Action's publish) include it
    out = tmp_path / "out"
    out.mkdir()
    write_reports(doc, out)
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md", "summary.json"]
    assert (out / "summary.json").read_text("utf-8") == printed
    assert (out / "report.md").read_text("utf-8") == render(doc, "md")


def test_a_hostile_name_reaches_the_new_format_through_its_escaping_context(monkeypatch, tmp_path):
    monkeypatch.setattr(formats, "REGISTRY", formats.REGISTRY + (toy_format.FORMAT,))
    doc = full_document()
    doc["benchmarks"][0]["name"] = HOSTILE
    text = render(doc, "toy")
    assert toy_format.escape(HOSTILE) in text and not set(text) & {"\x1b", "\x07", "\u202e"}
    assert json.loads(text)["benchmarks"][0]["name"] == HOSTILE  # the same characters


def test_only_formats_with_a_file_are_written(tmp_path):
    with pytest.raises(ValueError, match="the term format is printed, not written"):
        write_reports(full_document(), tmp_path, ("term",))
