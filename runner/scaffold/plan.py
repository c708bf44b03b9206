"""Which files ``perfgate init`` writes, and their text: a pure function of the repository's
facts (:class:`runner.scaffold.facts.RepoFacts`) and the user's choices."""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass
from importlib import resources

from ..config import INTERNALS, KEYS, Config
from ..errors import UserError
from .facts import ModuleClass, RepoFacts

WORKFLOW_PATH = ".github/workflows/perfgate.yml"
CONFIG_PATH = "perfgate.toml"
BENCHMARK_PATH = "benchmarks/bench_example.py"
GITIGNORE_PATH = ".gitignore"

#: Where ``perfgate compare``/``run`` write their results by default (``--out``).
RESULTS_DIR = ".perfgate/"

#: ``--mode`` → the workflow file in runner/scaffold/workflows/ (README: "Two ways to run it").
WORKFLOWS = {"app": "perfgate.yml", "standalone": "perfgate-standalone.yml"}

DEFAULT_RUNS_ON = ("self-hosted", "gpu")

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RUNS_ON_LINE = "    runs-on: ${{ fromJSON(inputs.runs-on || '[\"self-hosted\", \"gpu\"]') }}\n"
#: The standalone workflow names its runners itself.
_PLAIN_RUNS_ON_LINE = "    runs-on: [self-hosted, gpu]\n"


@dataclass(frozen=True)
class PlannedFile:
    """One file ``init`` offers to write: ``path`` relative to the repository root (POSIX),
    its ``text``, and ``why`` (one line for the summary)."""

    path: str
    text: str
    why: str


def workflow_template(mode: str) -> str:
    """The text of the workflow file of ``mode`` (``app`` or ``standalone``), as shipped."""
    return resources.files("runner.scaffold").joinpath("workflows", WORKFLOWS[mode]).read_text("utf-8")


def workflow_text(template: str, runs_on: tuple[str, ...]) -> str:
    """``template`` with its job's ``runs-on`` set to ``runs_on`` (runner labels).

    Raises:
        UserError: a label that is not a plain runner label (letters, digits, ``.``, ``_``, ``-``).
    """
    bad = [label for label in runs_on if not _LABEL.match(label)]
    if bad or not runs_on:
        raise UserError(f"--runs-on: {', '.join(map(repr, bad)) or 'no label'} is not a runner label "
                        "(comma-separated labels of letters, digits, '.', '_', '-', e.g. self-hosted,gpu)")
    if _RUNS_ON_LINE in template:  # the App's: a runner group's labels come as an input, these are the default
        labels = ", ".join(f'"{label}"' for label in runs_on)
        return template.replace(_RUNS_ON_LINE, f"    runs-on: ${{{{ fromJSON(inputs.runs-on || '[{labels}]') }}}}\n")
    if _PLAIN_RUNS_ON_LINE not in template:
        raise ValueError("the workflow template has no `runs-on: [self-hosted, gpu]` line")
    return template.replace(_PLAIN_RUNS_ON_LINE, f"    runs-on: [{', '.join(runs_on)}]\n")


def config_descriptions() -> dict[str, str]:
    """Each :class:`runner.config.Config` field's description, from its docstring's
    ``Attributes:`` section (the one place the keys are documented), joined to one line."""
    doc = inspect.cleandoc(Config.__doc__ or "").split("Attributes:", 1)[-1]
    out: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        match = re.match(r"^    (\w+): (.*)$", line)
        if match:
            current = match.group(1)
            out[current] = match.group(2).strip()
        elif current and line.startswith("        "):
            out[current] += " " + line.strip()
    return out


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def config_text(settings: dict[str, object]) -> str:
    """A ``perfgate.toml``: the keys in ``settings`` set, every other key of
    :class:`runner.config.Config` (but the deprecated :data:`~runner.config.INTERNALS`) commented
    out at its default, each with its description."""
    descriptions = config_descriptions()
    lines = ["# perfgate's settings for this repository (README: \"Configuration\").",
             "# perfgate reads this file from the base branch, never from the pull request.",
             "# Commented keys show their defaults.", ""]
    for key in KEYS:
        if key == "runners" or key in INTERNALS:  # runners: a table, last, as an example
            continue
        for part in textwrap.wrap(descriptions.get(key, ""), 96):
            lines.append(f"# {part}")
        value = settings.get(key, getattr(Config, key))
        prefix = "" if key in settings else "# "
        lines.append(f"{prefix}{key} = {_toml_value(value)}")
        lines.append("")
    for part in textwrap.wrap(descriptions.get("runners", ""), 96):
        lines.append(f"# {part}")
    lines += ["# [runners.h100]", '# labels = ["self-hosted", "h100"]', ""]
    return "\n".join(lines)


_EXAMPLE_INPUT = '''
def _example_input(model, batch, device):
    """An input for ``model`` shaped from its first layer (perfgate init's guess: replace it
    with the shapes your users run)."""
    for layer in model.modules():
        if isinstance(layer, torch.nn.Linear):
            return torch.randn(batch, layer.in_features, device=device)
        if isinstance(layer, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
            spatial = [32] * (layer.weight.dim() - 2)
            return torch.randn(batch, layer.in_channels, *spatial, device=device)
        if isinstance(layer, torch.nn.LayerNorm):
            return torch.randn(batch, *layer.normalized_shape, device=device)
        if isinstance(layer, torch.nn.Embedding):
            return torch.randint(layer.num_embeddings, (batch, 16), device=device)
    raise RuntimeError(f"perfgate init could not guess an input for {type(model).__name__}: "
                       f"write one in _example_input ({__file__})")
'''


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def benchmark_text(module: ModuleClass | None, others: tuple[ModuleClass, ...] = ()) -> str:
    """An example ``bench_*.py``: the forward pass of ``module`` (built with its default
    arguments, input guessed from its first layer) when there is one, else a documented template
    timing a matrix product."""
    if module is None:
        return textwrap.dedent('''\
            """perfgate benchmarks: every ``bench_*`` function sets up its inputs and returns the
            zero-argument callable perfgate times (README: "Benchmarks"). ``device`` is "cuda" or
            "cpu"; ``params`` gives the cases, each a benchmark of its own. Replace this example with
            calls into your library."""

            import torch


            def bench_matmul(device, n=1024, dtype=torch.float32):
                torch.manual_seed(0)
                a = torch.randn(n, n, device=device, dtype=dtype)
                b = torch.randn(n, n, device=device, dtype=dtype)
                return lambda: a @ b


            bench_matmul.params = {"n": [1024], "dtype": [torch.float32, torch.bfloat16]}
            ''')
    also = ""
    if others:
        names = ", ".join(f"{m.import_path}.{m.name}" for m in others[:5])
        also = f"\nOther modules perfgate init found that could be benchmarked the same way: {names}.\n"
    func = f"bench_{_snake(module.name)}_forward"
    return (f'"""perfgate benchmarks: every ``bench_*`` function sets up its inputs and returns the\n'
            f'zero-argument callable perfgate times (README: "Benchmarks").\n\n'
            f'Written by ``perfgate init``: the forward pass of ``{module.name}`` ({module.file}) with\n'
            f'its default arguments, in inference mode, on an input guessed from its first layer.\n'
            f'{also}"""\n\n'
            f"import torch\n\nfrom {module.import_path} import {module.name}\n\n\n"
            f"{_EXAMPLE_INPUT.strip()}\n\n\n"
            f"def {func}(device, batch=32):\n"
            f"    torch.manual_seed(0)\n"
            f"    model = {module.name}().to(device).eval()\n"
            f"    x = _example_input(model, batch, device)\n\n"
            f"    def forward():\n"
            f"        with torch.inference_mode():\n"
            f"            return model(x)\n\n"
            f"    return forward\n\n\n"
            f'{func}.params = {{"batch": [32]}}\n')


_PERFGATE_USES = re.compile(r"^(\s*)(-\s+)?uses: (perfgate/perfgate(?:/comment)?)@v1\b[^\n]*$",
                            re.M)
_SHA = re.compile(r"^[0-9a-f]{40}$")

#: The repository and tag of perfgate's own actions (``perfgate/perfgate``, ``.../comment``).
ACTION_REMOTE = "https://github.com/perfgate/perfgate"
ACTION_TAG = "v1"


def tag_commit(ls_remote: str, tag: str = ACTION_TAG) -> str | None:
    """The commit ``tag`` names in the output of ``git ls-remote REMOTE refs/tags/TAG
    'refs/tags/TAG^{}'``: an annotated tag's peeled line (the commit, not the tag object), else
    the lightweight tag's own; None when neither is there as a full SHA."""
    refs = {}
    for line in ls_remote.splitlines():
        sha, _, ref = line.partition("\t")
        refs[ref.strip()] = sha.strip()
    commit = refs.get(f"refs/tags/{tag}^{{}}") or refs.get(f"refs/tags/{tag}")
    return commit if commit and _SHA.match(commit) else None


def pin_command(tag: str = ACTION_TAG) -> str:
    """The command that prints the commit to pin perfgate's actions to by hand."""
    return f"git ls-remote {ACTION_REMOTE} refs/tags/{tag} 'refs/tags/{tag}^{{}}'"


def pin_perfgate(text: str, commit: str | None) -> str:
    """``text`` with its ``uses: perfgate/perfgate[/comment]@v1`` pinned to ``commit`` (a full
    40-digit SHA), written as Dependabot and pinact write a pin: ``@<sha>  # v1`` (the tag in the
    comment is what Dependabot updates the pin from), so that a moved tag cannot change what runs
    on the GPU runners or in the job that may comment (security review N11).

    With no ``commit`` (perfgate could not find one: not installed from git, no network) each
    such line keeps the tag under a comment that says it is not pinned and how to pin it.

    Raises:
        ValueError: ``commit`` is not a full lower-case SHA-1.
    """
    if commit is not None and not _SHA.match(commit):
        raise ValueError(f"not a full commit SHA: {commit!r}")

    def pinned(match: re.Match) -> str:
        indent, dash, action = match.group(1), match.group(2) or "", match.group(3)
        if commit is not None:
            return f"{indent}{dash}uses: {action}@{commit}  # {ACTION_TAG}"
        return (f"{indent}# NOT PINNED: {action}@{ACTION_TAG} is a tag, which can be moved to "
                "other code.\n"
                f"{indent}# Pin it to the commit you reviewed: {pin_command()}\n"
                f"{indent}# then write uses: {action}@<that sha>  # {ACTION_TAG}\n"
                f"{indent}{dash}uses: {action}@{ACTION_TAG}")

    return _PERFGATE_USES.sub(pinned, text)


def plan(facts: RepoFacts, *, mode: str = "app", runs_on: tuple[str, ...] = DEFAULT_RUNS_ON,
         workflow_template_text: str | None = None, perfgate_commit: str | None = None) -> list[PlannedFile]:
    """The files ``init`` writes for a repository with ``facts``.

    An existing benchmark suite is run as it is instead of adding an example: an asv suite
    (``suite = "asv"``), benchmark scripts that time themselves (``suite = "triton"`` or
    ``"torch-timer"`` and their folder as ``benchmarks``), a Google Benchmark or nvbench program or a
    github-action-benchmark step (``suite = "command"`` with its ``command``, ``command_format`` and
    the ``install`` that builds it), pytest-benchmark tests (``suite = "pytest-benchmark"`` and their
    folder as ``benchmarks``); with ``bench_*`` files nothing is added. ``perfgate_commit`` (the commit
    the running perfgate was installed from, when known) pins the workflow's perfgate actions.

    Raises:
        UserError: an unknown ``mode`` or a bad runner label.
    """
    if mode not in WORKFLOWS:
        raise UserError(f"--mode must be one of {', '.join(WORKFLOWS)}, not {mode!r}")
    template = workflow_template_text if workflow_template_text is not None else workflow_template(mode)
    files = [PlannedFile(WORKFLOW_PATH, pin_perfgate(workflow_text(template, runs_on), perfgate_commit),
                         f"the {mode} workflow on runners labelled [{', '.join(runs_on)}], least privilege")]
    settings: dict[str, object] = {}
    pytest_dir = facts.pytest_benchmark_files[0].rsplit("/", 1)[0] if facts.pytest_benchmark_files else ""
    script_kind, script_dir = facts.script_suite
    if facts.asv_benchmark_dir:
        settings["suite"] = "asv"  # asv.conf.json's benchmark_dir is read from the file (runner.pipeline.suites)
        suite_note = f"runs the asv suite in {facts.asv_benchmark_dir}/ as it is"
    elif script_kind and not facts.has_bench_files:
        settings.update(suite=script_kind, benchmarks=script_dir)
        suite_note = f"runs the {script_kind} scripts in {script_dir}/ as they are"
    elif facts.command_suite and not facts.has_bench_files:
        settings.update(suite="command", **{k: v for k, v in facts.command_suite.items() if k != "why" and v})
        suite_note = facts.command_suite["why"]
    elif pytest_dir and not facts.has_bench_files:
        settings.update(suite="pytest-benchmark", benchmarks=pytest_dir)
        suite_note = f"runs the pytest-benchmark tests in {pytest_dir}/ as they are"
    else:
        suite_note = "defaults, each key explained"
    if not facts.pyproject_config:  # perfgate.toml would override the [tool.perfgate] table silently
        files.append(PlannedFile(CONFIG_PATH, config_text(settings), suite_note))
    if not facts.has_bench_files and "suite" not in settings:
        module = facts.modules[0] if facts.modules else None
        why = (f"times {module.name}'s forward pass ({module.file})" if module
               else "a template: no torch.nn.Module buildable without arguments was found")
        files.append(PlannedFile(BENCHMARK_PATH, benchmark_text(module, facts.modules[1:]), why))
    return files


def gitignore_text(existing: str | None) -> str | None:
    """``.gitignore``'s text with perfgate's results folder ignored, or None when it already is
    (a line ``.perfgate``, ``.perfgate/``, ``/.perfgate`` or ``/.perfgate/``)."""
    lines = (existing or "").splitlines()
    if any(line.strip().strip("/") == RESULTS_DIR.strip("/") for line in lines):
        return None
    prefix = existing or ""
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    return prefix + "# perfgate's results (perfgate compare / run --out)\n" + RESULTS_DIR + "\n"
