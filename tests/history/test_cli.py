"""perfgate history add / show through runner.cli.main (exit codes, output, JSON shape)."""

from __future__ import annotations

import json

import pytest

from runner import results as results_schema
from runner.cli.main import main
from tests.history.factory import compare_doc, run_doc


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PERFGATE_HOME", str(tmp_path / "home"))
    return tmp_path


def _write(tmp_path, name, doc):
    path = tmp_path / name
    results_schema.dump(doc, path)
    return str(path)


def test_add_then_show_json(home, capsys):
    levels = [1e-3] * 10 + [1.1e-3] * 10
    for i, level in enumerate(levels):
        assert main(["history", "add", _write(home, f"r{i}.json", run_doc(i, {"bench_a": level, "bench_b": 2e-3}))]) == 0
    out = capsys.readouterr().out
    assert "stored" in out and "as result #20 of acme/kernels: 2 benchmark points, 2 series updated" in out
    assert "bench_a: latest change point +10" in out

    assert main(["history", "show", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"series"}
    assert [s["benchmark"] for s in doc["series"]] == ["bench_a", "bench_b"]
    a = doc["series"][0]
    assert set(a) == {"benchmark", "measure", "unit", "fingerprint", "points", "change_points"}
    assert len(a["points"]) == 20 and set(a["points"][0]) == {"sha", "time", "value", "ci_low", "ci_high"}
    assert a["points"][0]["time"] == "2026-01-01T00:00:00Z"
    (cp,) = a["change_points"]
    assert set(cp) == {"index", "sha", "before", "after", "ratio"}
    assert cp["index"] == 10 and cp["ratio"] == pytest.approx(1.1, rel=0.02)
    assert doc["series"][1]["change_points"] == []


def test_show_one_benchmark_as_text(home, capsys):
    for i in range(6):
        main(["history", "add", _write(home, f"r{i}.json", run_doc(i, {"bench_a[n=1]": 1e-3, "bench_b": 1e-3}))])
    capsys.readouterr()
    assert main(["history", "show", "--repository", "acme/kernels", "bench_a[n=1]"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bench_a[n=1]  [NVIDIA H200")
    assert "6 points" in out and "no change points" in out and "bench_b" not in out


def test_add_twice_says_already_stored(home, capsys):
    path = _write(home, "r.json", run_doc(0, {"a": 1e-3}))
    assert main(["history", "add", path]) == 0
    assert main(["history", "add", path]) == 0
    assert "already stored" in capsys.readouterr().out


def test_compare_result_with_path_repository_needs_repository_option(home, capsys):
    doc = compare_doc(1, "a", 1e-3, 1.1e-3)
    doc["repository"] = "/home/me/kernels"
    path = _write(home, "c.json", doc)
    assert main(["history", "add", path]) == 2
    assert "pass --repository OWNER/NAME" in capsys.readouterr().err
    assert main(["history", "add", path, "--repository", "me/kernels"]) == 0
    capsys.readouterr()
    assert main(["history", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"series": []}  # a compare head is not a series point


@pytest.mark.parametrize("argv, message", [
    (["history", "show"], "no results stored yet"),
    (["history", "add", "missing.json"], "cannot read"),
    (["history", "show", "--repository", "nope"], "OWNER/NAME"),
])
def test_user_errors_exit_2_with_one_line(home, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_unknown_benchmark_and_several_repositories(home, capsys):
    main(["history", "add", _write(home, "a.json", run_doc(0, {"a": 1e-3}))])
    main(["history", "add", _write(home, "b.json", run_doc(1, {"a": 1e-3})), "--repository", "other/repo"])
    assert main(["history", "show", "a"]) == 2
    assert "several repositories are stored (acme/kernels, other/repo)" in capsys.readouterr().err
    assert main(["history", "show", "--repository", "other/repo", "zzz"]) == 2
    assert "no history for a benchmark 'zzz'" in capsys.readouterr().err


def test_database_url_is_honoured(tmp_path, monkeypatch, capsys):
    url = f"sqlite:///{tmp_path / 'custom.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["history", "add", _write(tmp_path, "a.json", run_doc(0, {"a": 1e-3}))]) == 0
    assert (tmp_path / "custom.db").is_file()


def test_an_app_command_without_its_packages_names_the_bot_extra(monkeypatch, capsys):
    """The App's sub-commands are ``"module:function"`` handlers the engine imports when they run;
    a missing third-party package is a user error naming ``perfgate[bot]`` (the engine's own
    commands name ``perfgate[runner]``), a missing module of perfgate's own is a bug and raises."""
    import importlib

    def missing(name):
        raise ModuleNotFoundError(f"No module named {'flask'!r}", name="flask")

    monkeypatch.setattr(importlib, "import_module", missing)
    assert main(["serve"]) == 2
    assert "needs the Python package 'flask': pip install 'perfgate[bot]'" in capsys.readouterr().err
    assert main(["demo"]) == 2
    assert "pip install 'perfgate[runner]'" in capsys.readouterr().err

    def ours(name):
        raise ModuleNotFoundError("No module named 'bot.gone'", name="bot.gone")

    monkeypatch.setattr(importlib, "import_module", ours)
    assert main(["serve"]) == 3
    assert "No module named 'bot.gone'" in capsys.readouterr().err
