"""``perfgate init``: the files it writes for a target repository are valid and run, and it never
overwrites a file without ``--force``."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from runner.cli.main import main
from runner.config import Config, parse_table
from runner.scaffold.inspect import inspect_repo, module_classes
from runner.scaffold.plan import (BENCHMARK_PATH, CONFIG_PATH, WORKFLOW_PATH, config_descriptions, config_text,
                                  gitignore_text,
                                  plan, workflow_template, workflow_text)

REPO_ROOT = Path(__file__).resolve().parents[2]

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class TinyConvNet(nn.Module):
        def __init__(self, channels: int = 3, width: int = 8):
            super().__init__()
            self.conv = nn.Conv2d(channels, width, 3, padding=1)
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


    class NeedsArguments(nn.Module):
        def __init__(self, dim):
            super().__init__()
    """)


def _library(root: Path) -> Path:
    (root / "src" / "visionlib").mkdir(parents=True)
    (root / "src" / "visionlib" / "__init__.py").write_text("")
    (root / "src" / "visionlib" / "nets.py").write_text(MODEL)
    return root


def test_module_classes_finds_only_those_buildable_without_arguments():
    found = module_classes(MODEL, "visionlib.nets", "src/visionlib/nets.py")
    assert [m.name for m in found] == ["TinyConvNet"]
    assert module_classes("class Broken(:\n", "x", "x.py") == []


def test_init_writes_a_workflow_a_config_and_a_benchmark_that_runs(tmp_path, capsys, monkeypatch):
    root = _library(tmp_path)
    assert main(["init", str(root), "--runs-on", "self-hosted,linux,h100"]) == 0
    out = capsys.readouterr().out
    assert f"wrote    {WORKFLOW_PATH}" in out and "TinyConvNet" in out and "next:" in out

    workflow = (root / WORKFLOW_PATH).read_text()
    assert "runs-on: ${{ fromJSON(inputs.runs-on || '[\"self-hosted\", \"linux\", \"h100\"]') }}" in workflow
    assert '"gpu"' not in workflow
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(root / WORKFLOW_PATH)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    table = tomllib.loads((root / CONFIG_PATH).read_text())
    assert parse_table(table, CONFIG_PATH) == Config()  # every key commented out at its default

    # The example benchmark imports the library the way a worker does (src/ on sys.path) and
    # its callable runs the real forward pass.
    monkeypatch.syspath_prepend(str(root / "src"))
    spec = importlib.util.spec_from_file_location("bench_example", root / BENCHMARK_PATH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.bench_tiny_conv_net_forward.params == {"batch": [32]}
    assert tuple(bench.bench_tiny_conv_net_forward("cpu", batch=4)().shape) == (4, 10)


def test_init_keeps_existing_files_unless_forced(tmp_path, capsys):
    root = _library(tmp_path)
    (root / "perfgate.toml").write_text("threshold = 0.05\n")
    assert main(["init", str(root)]) == 0
    out = capsys.readouterr().out
    assert "kept     perfgate.toml (exists; --force overwrites it)" in out
    assert (root / "perfgate.toml").read_text() == "threshold = 0.05\n"
    assert main(["init", str(root), "--force"]) == 0
    assert (root / "perfgate.toml").read_text().startswith("# perfgate's settings")


def test_existing_suites_and_configs_are_pointed_at_not_replaced(tmp_path):
    (tmp_path / "asv.conf.json").write_text('// asv allows comments\n{"version": 1, "benchmark_dir": "asv_bench"}\n')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    files = {f.path: f for f in plan(inspect_repo(tmp_path, ()))}
    assert BENCHMARK_PATH not in files
    assert tomllib.loads(files[CONFIG_PATH].text) == {"suite": "asv"}
    assert "asv_bench/" in files[CONFIG_PATH].why

    (tmp_path / "asv.conf.json").unlink()
    (tmp_path / "pyproject.toml").write_text("[tool.perfgate]\nthreshold = 0.03\n")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_ops.py").write_text("def bench_x(device):\n    return lambda: None\n")
    assert [f.path for f in plan(inspect_repo(tmp_path, ()))] == [WORKFLOW_PATH]


def test_without_a_module_the_example_is_the_documented_template(tmp_path):
    files = {f.path: f for f in plan(inspect_repo(tmp_path, ()))}
    assert "def bench_matmul(device" in files[BENCHMARK_PATH].text
    assert "no torch.nn.Module" in files[BENCHMARK_PATH].why


def test_every_config_key_is_described_once():
    descriptions = config_descriptions()
    assert set(descriptions) == {f for f in Config.__dataclass_fields__}
    assert all(len(text) > 10 for text in descriptions.values())
    assert "threshold = 0.03" in config_text({"threshold": 0.03}).splitlines()


def test_the_written_config_leaves_out_the_deprecated_internals():
    from runner.config import INTERNALS, KEYS

    keys = {match.group(1) for line in config_text({}).splitlines()
            if (match := re.fullmatch(r"#? ?(\w+) = .*", line)) and match.group(1) != "labels"}
    assert keys == set(KEYS) - set(INTERNALS) - {"runners"}


def test_the_shipped_workflows_are_the_examples_readme_links():
    for mode, name in (("app", "perfgate.yml"), ("standalone", "perfgate-standalone.yml")):
        assert workflow_template(mode) == (REPO_ROOT / "examples" / "workflows" / name).read_text()


@pytest.mark.parametrize("labels", ["", "gpu,", "a b", "x]", "${{ secrets.T }}"])
def test_bad_runner_labels_are_one_line_errors(tmp_path, capsys, labels):
    assert main(["init", str(tmp_path), "--runs-on", labels]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfgate: error: --runs-on") and "Traceback" not in err
    assert not (tmp_path / WORKFLOW_PATH).exists()


def test_a_missing_directory_is_a_one_line_error(tmp_path, capsys):
    assert main(["init", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_workflow_text_refuses_a_template_without_the_runs_on_line():
    with pytest.raises(ValueError):
        workflow_text("jobs: {}\n", ("gpu",))


@pytest.mark.parametrize("existing, expected", [
    (None, "# perfgate's results (perfgate compare / run --out)\n.perfgate/\n"),
    ("build/", "build/\n# perfgate's results (perfgate compare / run --out)\n.perfgate/\n"),
    ("/.perfgate\n", None),
    (".perfgate/\n*.pyc\n", None),
])
def test_the_results_folder_is_ignored_once(existing, expected):
    assert gitignore_text(existing) == expected


def test_init_outside_a_git_repository_warns(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "is not a git repository" in out and (tmp_path / ".gitignore").read_text().endswith(".perfgate/\n")
    (tmp_path / ".git").mkdir()
    assert main(["init", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not a git repository" not in out and "wrote    .gitignore" not in out


@pytest.mark.parametrize("name", ["test_speed.py", "speed_test.py"])  # pytest's two defaults
def test_pytest_benchmark_tests_are_run_as_they_are(tmp_path, name):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / name).write_text("def test_sort(benchmark):\n"
                                           "    benchmark(sorted, [3, 1, 2])\n")
    (tmp_path / "tests" / "test_plain.py").write_text("def test_ok():\n    assert True\n")
    files = {f.path: f for f in plan(inspect_repo(tmp_path, ()))}
    assert BENCHMARK_PATH not in files
    table = tomllib.loads(files[CONFIG_PATH].text)
    assert table == {"suite": "pytest-benchmark", "benchmarks": "tests"}
    assert parse_table(table, CONFIG_PATH).suite == "pytest-benchmark"


def test_init_pins_perfgates_own_actions_when_it_knows_its_commit(tmp_path):
    from runner.scaffold.plan import pin_perfgate

    commit = "0123456789abcdef0123456789abcdef01234567"
    for mode in ("app", "standalone"):
        text = pin_perfgate(workflow_template(mode), commit)
        assert "@v1\n" not in text and f"perfgate/perfgate@{commit}  # v1" in text
        if mode == "standalone":
            assert f"perfgate/perfgate/comment@{commit}  # v1" in text
    unpinned = pin_perfgate("      - uses: perfgate/perfgate/comment@v1\n", None)
    assert unpinned.startswith("      # NOT PINNED: perfgate/perfgate/comment@v1 is a tag")
    assert unpinned.endswith("      - uses: perfgate/perfgate/comment@v1\n")
    with pytest.raises(ValueError):
        pin_perfgate("uses: perfgate/perfgate@v1\n", "b1c2d3e")
    files = {f.path: f for f in plan(inspect_repo(tmp_path, ()), mode="standalone", perfgate_commit=commit)}
    assert f"perfgate/perfgate@{commit}" in files[WORKFLOW_PATH].text


@pytest.fixture(autouse=True)
def _no_network_for_the_pin(monkeypatch, tmp_path_factory):
    """perfgate init asks GitHub for v1's commit (git ls-remote): here a repository that is not
    there."""
    from runner.cli import init as init_cli

    missing = tmp_path_factory.mktemp("none") / "missing.git"
    monkeypatch.setattr(init_cli, "ACTION_REMOTE", str(missing))


def test_tag_commit_reads_git_ls_remote():
    from runner.scaffold.plan import tag_commit

    tag, peeled = "1" * 40, "2" * 40
    assert tag_commit(f"{tag}\trefs/tags/v1\n{peeled}\trefs/tags/v1^{{}}\n") == peeled  # annotated
    assert tag_commit(f"{tag}\trefs/tags/v1\n") == tag  # lightweight
    assert tag_commit(f"{tag}\trefs/tags/v10\n") is None
    assert tag_commit("") is None and tag_commit("abc\trefs/tags/v1\n") is None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
                          cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


@pytest.mark.parametrize("mode", ["app", "standalone"])
def test_init_pins_perfgates_actions_to_the_commit_of_v1_when_not_installed_from_git(
        tmp_path, capsys, monkeypatch, mode):
    """Security review N11: perfgate/perfgate@v1 and perfgate/perfgate/comment@v1 stayed tags
    unless perfgate was installed from git; the comment job runs that tag with pull-requests:
    write. Now init asks the actions' repository (git ls-remote) for v1's commit and pins it;
    where it cannot, the tag is kept under a comment and a warning names the command."""
    import yaml

    from runner.cli import init as init_cli

    monkeypatch.setattr(init_cli, "installed_commit", lambda: None)
    upstream = tmp_path / "perfgate-actions"
    upstream.mkdir()
    _git(upstream, "init", "-q")
    _git(upstream, "commit", "-q", "--allow-empty", "-m", "v1")
    _git(upstream, "tag", "-a", "v1", "-m", "release v1")  # annotated: the pin is the commit
    commit = _git(upstream, "rev-parse", "HEAD")
    _git(upstream, "commit", "-q", "--allow-empty", "-m", "later")
    _git(upstream, "tag", "v10")
    monkeypatch.setattr(init_cli, "ACTION_REMOTE", str(upstream))
    root = _library(tmp_path / "target")
    assert main(["init", str(root), "--mode", mode]) == 0
    out = capsys.readouterr().out
    text = (root / WORKFLOW_PATH).read_text()
    uses = [line.split("uses:")[1].strip() for line in text.splitlines()
            if "uses: perfgate/" in line]
    assert uses and all(u.endswith(f"@{commit}  # v1") for u in uses), uses
    assert len(uses) == (2 if mode == "standalone" else 1)
    assert f"pinned   perfgate/perfgate and perfgate/perfgate/comment to {commit}" in out
    assert "NOT PINNED" not in text

    # offline: the tag stays, said loudly in the file and on the terminal; the file still parses
    monkeypatch.setattr(init_cli, "ACTION_REMOTE", str(tmp_path / "missing.git"))
    assert main(["init", str(root), "--mode", mode, "--force"]) == 0
    out = capsys.readouterr().out
    text = (root / WORKFLOW_PATH).read_text()
    assert "warning: perfgate/perfgate@v1 is NOT pinned" in out and "git ls-remote" in out
    assert text.count("# NOT PINNED:") == len(uses) and "refs/tags/v1^{}" in text
    steps = [s for job in yaml.safe_load(text)["jobs"].values() for s in job["steps"]]
    assert [s["uses"] for s in steps if str(s.get("uses", "")).startswith("perfgate/")] == [
        u.replace(f"{commit}  # v1", "v1") for u in uses]


def test_init_reads_the_commit_pip_recorded(monkeypatch):
    import importlib.metadata

    from runner.cli import init as init_cli

    class Dist:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            return self.text if name == "direct_url.json" else None

    commit = "89abcdef0123456789abcdef0123456789abcdef"
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Dist(
        '{"url": "https://github.com/perfgate/perfgate", "vcs_info": {"vcs": "git", "commit_id": "%s"}}' % commit))
    assert init_cli.installed_commit() == commit
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Dist('{"dir_info": {"editable": true}}'))
    assert init_cli.installed_commit() is None


def _config_of(root: Path) -> dict:
    files = {f.path: f for f in plan(inspect_repo(root, ()))}
    assert BENCHMARK_PATH not in files
    table = tomllib.loads(files[CONFIG_PATH].text)
    parse_table(table, CONFIG_PATH)  # a config perfgate accepts
    return table


def test_scripts_that_time_themselves_are_run_as_they_are(tmp_path):
    liger = tmp_path / "liger" / "benchmark" / "scripts"
    liger.mkdir(parents=True)
    (liger / "benchmark_rms_norm.py").write_text("import triton\nms = triton.testing.do_bench(lambda: None)\n")
    (liger / "utils.py").write_text("QUANTILES = [0.5, 0.2, 0.8]\n")
    assert _config_of(tmp_path / "liger") == {"suite": "triton", "benchmarks": "benchmark/scripts"}
    te = tmp_path / "te" / "benchmarks" / "linear"
    te.mkdir(parents=True)
    (te / "benchmark_linear.py").write_text("import torch.utils.benchmark as benchmark\n"
                                            "benchmark.Timer(stmt='pass').blocked_autorange(min_run_time=10)\n")
    assert _config_of(tmp_path / "te") == {"suite": "torch-timer", "benchmarks": "benchmarks"}


def test_a_google_benchmark_program_or_an_action_benchmark_step_becomes_the_command(tmp_path):
    cpp = tmp_path / "cpp"
    (cpp / "bench").mkdir(parents=True)
    (cpp / "CMakeLists.txt").write_text("add_subdirectory(bench)\n")
    (cpp / "bench" / "CMakeLists.txt").write_text("add_executable(kernels_bench kernels_bench.cpp)\n"
                                                 "target_link_libraries(kernels_bench benchmark::benchmark)\n")
    (cpp / "bench" / "kernels_bench.cpp").write_text("#include <benchmark/benchmark.h>\nBENCHMARK_MAIN();\n")
    table = _config_of(cpp)
    assert table["suite"] == "command" and table["command"] == "./build/kernels_bench --benchmark_format=json"
    assert table["command_format"] == "googlebenchmark" and "--target kernels_bench" in table["install"]
    gab = tmp_path / "gab"
    (gab / ".github" / "workflows").mkdir(parents=True)
    (gab / ".github" / "workflows" / "bench.yml").write_text(textwrap.dedent("""
        jobs:
          bench:
            steps:
              - run: python scripts/throughput.py --out results/tput.json
              - uses: benchmark-action/github-action-benchmark@v1
                with:
                  tool: 'customBiggerIsBetter'
                  output-file-path: results/tput.json
    """))
    assert _config_of(gab) == {"suite": "command", "command_format": "customBiggerIsBetter",
                               "command": "python scripts/throughput.py --out results/tput.json && cat results/tput.json"}
