"""evaluation/identical_code.py: a control is run only when its library code is identical (the
syntax tree without docstrings), the committed controls are well-formed, and the whole study runs
on a generated docstring-only commit (its --smoke)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import tomllib
from pathlib import Path

import pytest

from testkit.gitrepo import make_repo

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"
sys.path.insert(0, str(EVALUATION))
spec = importlib.util.spec_from_file_location("identical_code", EVALUATION / "identical_code.py")
identical_code = importlib.util.module_from_spec(spec)
spec.loader.exec_module(identical_code)

LIB = '''
def spin(n):
    """Busy work."""
    # a comment
    return sum(i * i % 7 for i in range(n))
'''


def test_a_docstring_or_comment_is_identical_code_and_a_constant_is_not(tmp_path):
    docs = make_repo(tmp_path / "docs", {"lib/x.py": LIB}, {"lib/x.py": LIB.replace("Busy work.", "Busy: n steps.")
                                                                       .replace("# a comment", "# another")})
    same, why = identical_code.code_identical(docs, "base", "head", "lib")
    assert same and "only docstrings" in why
    code = make_repo(tmp_path / "code", {"lib/x.py": LIB}, {"lib/x.py": LIB.replace("% 7", "% 8")})
    same, why = identical_code.code_identical(code, "base", "head", "lib")
    assert not same and why == "lib/x.py changes code, not only docstrings"
    tests = make_repo(tmp_path / "tests", {"lib/x.py": LIB}, {"tests/test_x.py": "def test(): pass\n",
                                                              "testing/helpers.py": "X = 1\n"})
    assert identical_code.code_identical(tests, "base", "head", "lib") == (True, "2 file(s) changed, none of them in lib/")


def test_the_committed_controls_are_ten_or_more_whole_suites_of_four_to_ten_benchmarks():
    controls = tomllib.loads(identical_code.CONTROLS.read_text())["control"]
    assert len(controls) >= 10 and len({c["id"] for c in controls}) == len(controls)
    for control in controls:
        assert len(control["base"]) == len(control["head"]) == 40 and control["package"]
        suite = identical_code.CONTROLS.parent / control["suite"]
        benches = [n.name for f in suite.glob("bench_*.py") for n in ast.parse(f.read_text()).body
                   if isinstance(n, ast.FunctionDef) and n.name.startswith("bench_")]
        assert 4 <= len(benches) <= 10, (control["id"], benches)


@pytest.mark.slow
def test_the_study_runs_a_whole_suite_on_a_docstring_only_commit(tmp_path):
    raw = tmp_path / "rows.json"
    code = identical_code.main(["--smoke", "--write", str(tmp_path / "R.md"), "--json", str(raw)])
    doc = json.loads(raw.read_text())
    (row,) = doc["rows"]
    assert "only docstrings" in row["identical"]
    assert len(row["benchmarks"]) == 4
    assert doc["summary"]["false"] == [] and code == 0
    assert "false verdict(s)" in (tmp_path / "R.md").read_text()
