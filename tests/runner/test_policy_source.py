"""The gate's settings are the maintainers' (security review F7): a head commit that makes the
code 4× slower and sets ``alpha = 1e-300`` in its own perfgate.toml is still a regression,
measured with the base revision's settings, and the report says the PR changed them."""

from __future__ import annotations

import pytest

from runner import config as config_mod
from runner import policy_source
from runner import results as results_mod
from runner.cli.main import main
from runner.report import render
from runner.report.view import policy_note
from testkit.gitrepo import make_repo

CONFIG = """
        device = "cpu"
        min_rounds = 12
        max_rounds = 24
        pair_rounds = 4
        min_sample_time = 0.002
        max_time = 20
        profile = false
"""

BASE = {
    "perfgate.toml": CONFIG,
    "work.py": """
        def work(n):
            return sum(i * i for i in range(n))
    """,
    "benchmarks/bench_work.py": """
        import work

        def bench_sum(device):
            return lambda: work.work(3000)
    """,
}

HEAD = {
    # four times the work ...
    "work.py": """
        def work(n):
            total = 0
            for _ in range(4):
                total = sum(i * i for i in range(n))
            return total
    """,
    # ... and a verdict the PR chose for itself, plus a set-up command of its own
    "perfgate.toml": CONFIG + """
        alpha = 1e-300
        threshold = 0.9
        install = "echo owned > installed-by-head.txt"
""",
}


@pytest.mark.slow
def test_head_cannot_choose_its_own_verdict(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", BASE, HEAD)
    out = tmp_path / "out"
    code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out), "--quiet"])
    assert code == 0
    # the base's deprecated internals: honoured, each said once on stderr, recorded, in the report
    err = capsys.readouterr().err
    for key in ("max_rounds", "pair_rounds"):
        assert err.count(f"perfgate: warning: `{key}` in ") == 1
    assert "perfgate.toml is an internal of the statistics" in err and "still honours" in err
    doc = results_mod.load(out / "results.json")
    bench = doc["benchmarks"][0]
    assert bench["change"]["verdict"] == "regression" and bench["change"]["ratio"] > 2
    settings = doc["settings"]
    assert settings["alpha"] == 0.05 and settings["threshold"] == 0.02
    assert settings["config_source"] == "base"
    assert settings["config_changed_by_head"] == ["alpha", "install", "threshold"]
    assert settings["config_deprecated"] == ["pair_rounds", "max_rounds"]
    assert (settings["max_rounds"], settings["pair_rounds"]) == (24, 4)
    assert not (out / "install-head.log").exists()  # the head's install command never ran
    report = (out / "report.md").read_text()
    assert "This pull request changes perfgate's settings (alpha, install, threshold)" in report
    assert "the base revision" in render(doc, "html")
    assert ("perfgate's settings set pair_rounds, max_rounds: internals, deprecated as keys"
            in report)


def test_a_config_file_wins_over_both_revisions(tmp_path):
    (tmp_path / "policy.toml").write_text('alpha = 0.01\n')
    assert config_mod.load_file(tmp_path / "policy.toml").alpha == 0.01
    note = policy_note({"config_source": "file", "config_changed_by_head": ["alpha"]})
    assert note and "the --config file" in note


def test_head_changes_lists_added_removed_and_changed_keys(tmp_path):
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    (base / "perfgate.toml").write_text('alpha = 0.05\nbenchmarks = "benchmarks"\n')
    (head / "pyproject.toml").write_text('[tool.perfgate]\nalpha = 0.05\nthreshold = 0.5\n')
    assert policy_source.head_changes(base, head) == ["benchmarks", "threshold"]
    (head / "perfgate.toml").write_text("alpha = [")
    assert policy_source.head_changes(base, head) == ["*"]
    assert policy_source.head_changes(base, base) == []


def test_the_note_names_only_known_keys():
    # key names come from the PR's file: unknown ones are counted, never echoed
    note = policy_note({"config_changed_by_head": ["alpha", "@octo/team ![x](https://e.example/p.png)"]})
    assert note.startswith("This pull request changes perfgate's settings (alpha and 1 other key(s))")
    assert "@" not in note and "![" not in note
    assert policy_note({"config_changed_by_head": []}) is None and policy_note({}) is None
    assert "(its configuration)" in policy_note({"config_changed_by_head": ["*"]})


def test_the_note_names_the_deprecated_internals_the_settings_used():
    note = policy_note({"config_deprecated": ["cuda_alloc_conf", "process_noise", "<b>x</b>"]})
    assert note == ("perfgate's settings set process_noise, cuda_alloc_conf: internals, deprecated "
                    "as keys; their values were used, the next release ignores them.")
    both = policy_note({"config_changed_by_head": ["alpha"], "config_deprecated": ["max_rounds"]})
    assert both.startswith("This pull request changes perfgate's settings (alpha)")
    assert both.endswith("perfgate's settings set max_rounds: internals, deprecated as keys; "
                         "their values were used, the next release ignores them.")
    assert policy_note({"config_deprecated": "max_rounds"}) is None
    assert policy_note({"config_deprecated": []}) is None
