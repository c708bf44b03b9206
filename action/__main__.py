"""``python -m action [prepare|compare|publish|comment]``: the perfgate GitHub Action's entry (imperative shell).

A trust boundary drawn between the steps of one job does not hold (security review 2026-12-01,
N1): the steps share the runner's OS user, its file system and the step command files. So the
job that runs the pull request's code holds no token that can write anything, and the code
itself runs in a sandbox (:mod:`runner.sandbox.bubblewrap`) that later steps cannot be reached from:

- ``prepare`` (the job's read-only token; runs no PR code): plan (environment.py) → both SHAs
  present (git_shas.py, the token handed to ``git fetch`` through its environment only) → the
  credentials ``actions/checkout`` persisted removed from the clone (git_credentials.py) → the
  PR's text for a dispatched run (github_gateway.py) and the gate's settings file of the
  default branch, both written to the hand-off folder (``Plan.handoff``, beside the results
  folder, never inside it).
- ``compare`` (no token): re-executes itself with no credential in its environment, then runs
  ``perfgate compare`` inside bubblewrap (``sandbox: bwrap``, the default;
  :mod:`runner.sandbox.bubblewrap`) within its limits (processes, memory, scratch space, wall time:
  sandboxed.py) with its own results folder, takes the regular files out of it into ``OUT`` (the
  artifact, :func:`runner.sandbox.launder.launder`) and records how it ended in the hand-off folder.
- ``publish`` (no token): results.json + run metadata → step summary and outputs (publish.py)
  and the exit status. It comments nowhere.
- ``comment`` (standalone mode only, in a *separate job* on a GitHub-hosted runner that never
  ran the PR's code, ``needs:`` the GPU job): the downloaded artifact's results.json, validated
  as untrusted input → the sticky PR comment with that job's ``pull-requests: write`` token.
  In App mode the App comments from the artifact itself.

Without a phase, prepare, compare and publish run in this one process (local use and tests):
its environment is then readable by the PR's code, so never give it a token.

Exit status: 0 done; 1 a regression tripped ``fail-on-regression``; 2 bad input, a GitHub
refusal or no usable sandbox (one ``::error::`` line, no traceback); 3 an internal failure
(traceback, then ``::error::``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Mapping

from runner.sandbox import confine, limits
from runner.config import CONFIG_FILES
from runner.errors import EXIT_INTERNAL, EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, UserError
from runner.report.escape import md_text

from . import compare as compare_mod, git_credentials, git_shas, publish, sandboxed
from .environment import ActionInputError, Plan, plan_from_environment
from .inputs import check_no_sandbox, get_input

PHASES = ("prepare", "compare", "publish", "comment")

#: What the compare phase keeps of a step's environment besides the allow-list of
#: :mod:`runner.sandbox.child_env`: the run's coordinates. Inputs are kept unless named like a
#: credential.
COORDINATES = ("GITHUB_REPOSITORY", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_WORKSPACE", "GITHUB_SHA",
               "GITHUB_SERVER_URL", "GITHUB_API_URL", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_ACTIONS",
               "RUNNER_TEMP", "PERFGATE_HANDOFF_DIR")


def say(line: str) -> None:
    print(line, flush=True)


def read_event(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The event payload at ``GITHUB_EVENT_PATH`` (None when the variable is unset).

    Raises:
        ActionInputError: the file is missing or not a JSON object.
    """
    path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise ActionInputError(f"cannot read the event payload GITHUB_EVENT_PATH={path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ActionInputError(f"the event payload {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ActionInputError(f"the event payload {path} is not a JSON object")
    return data


def _pr_text(plan: Plan) -> dict[str, Any] | None:
    """A dispatched run knows the PR by number only: fetch its title, body and labels for the
    intent section (best effort: a failure is a warning). None when there is nothing to fetch."""
    if plan.title or not plan.pr_number or not plan.token:
        return None
    from .github_gateway import pull_request_text

    try:
        title, body, labels = pull_request_text(plan.api_url, plan.token, plan.repository, plan.pr_number)
    except UserError as exc:
        say(publish.annotation("warning", f"no PR text for the intent section: {exc}"))
        return None
    return {"title": title, "body": body, "labels": list(labels)}


def handoff_dir(plan: Plan) -> Path:
    """What one phase leaves for the next (:attr:`Plan.handoff`): outside the results folder."""
    return plan.handoff


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), "utf-8")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def prepare(plan: Plan) -> int:
    """Both commits in the clone, its persisted credentials removed, the PR's text and the
    gate's settings file in ``OUT/action/``. Runs no code of the pull request."""
    auth = git_shas.auth_environment(plan.server_url, plan.token)
    shas = {side: git_shas.ensure_commit(plan.workspace, ref, plan.pr_number, auth)
            for side, ref in (("base", plan.base_ref), ("head", plan.head_ref))}
    settings_sha = git_shas.ensure_commit(plan.workspace, plan.settings_ref, None, auth) if plan.settings_ref else None
    if plan.bisect:
        git_shas.fetch_history(plan.workspace, shas["head"], auth)
    removed = git_credentials.strip(plan.workspace)
    if removed:
        where = sorted({f"{e.key} in {e.file}" for e in removed})
        say(publish.annotation("notice", "perfgate removed the git credentials kept in the checkout so the pull "
                                         f"request's code cannot read them ({'; '.join(where)}); set "
                                         "persist-credentials: false on actions/checkout"))
    handoff = handoff_dir(plan)
    handoff.mkdir(parents=True, exist_ok=True)
    text = _pr_text(plan)
    if text is not None:
        _write_json(handoff / "pr-text.json", text)
    if settings_sha:
        _write_settings(plan.workspace, settings_sha, handoff / "settings", plan.config_path)
    say(f"perfgate: {plan.repository} base {shas['base'][:12]} → head {shas['head'][:12]}"
        + (f" (PR #{plan.pr_number})" if plan.pr_number else "")
        + (f"; settings from {settings_sha[:12]}" if settings_sha else ""))
    return EXIT_OK


def _write_settings(repo: Path, sha: str, folder: Path, path: str | None = None) -> Path:
    """The perfgate configuration of commit ``sha`` copied to ``folder``: the file ``path`` (the
    ``config`` input), else the first of :data:`runner.config.CONFIG_FILES` it has, else an empty
    ``perfgate.toml`` (the defaults).

    Raises:
        ActionInputError: ``path`` is given but that commit has no such file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in [path] if path else CONFIG_FILES:
        content = git_shas.file_at(repo, sha, name)
        if content is not None:
            target = folder / ("pyproject.toml" if Path(name).name == "pyproject.toml" else "perfgate.toml")
            target.write_bytes(content)
            return target
    if path:
        raise ActionInputError(f"input config names {path}, which commit {sha[:12]} (whose settings apply) does not have")
    (folder / "perfgate.toml").write_bytes(b"")
    return folder / "perfgate.toml"


def _settings_file(plan: Plan) -> Path | None:
    folder = handoff_dir(plan) / "settings"
    found = [folder / n for n in CONFIG_FILES if (folder / n).is_file()]
    return found[0] if found else None


def compare(plan: Plan) -> int:
    """Run ``perfgate compare`` (the PR's code) — in the sandbox unless ``sandbox: none`` — and
    record how it ended in the hand-off folder's ``compare.json``.

    Raises:
        ActionInputError: ``sandbox: bwrap`` but bubblewrap cannot run here (the message says
            how to install it, or that ``sandbox: none`` is the workflow's explicit choice).
    """
    from dataclasses import replace

    base_sha = git_shas.ensure_commit(plan.workspace, plan.base_ref, plan.pr_number)
    head_sha = git_shas.ensure_commit(plan.workspace, plan.head_ref, plan.pr_number)
    text = _read_json(handoff_dir(plan) / "pr-text.json")
    if isinstance(text, dict) and not plan.title:
        plan = replace(plan, title=str(text.get("title") or ""), body=str(text.get("body") or ""),
                       labels=tuple(str(label) for label in text.get("labels") or []))
    if plan.config is None and plan.settings_ref:
        plan = replace(plan, config=_settings_file(plan))
    if plan.sandbox == "none":
        say(publish.annotation("warning", "perfgate: sandbox: none — the pull request's code runs as the runner's "
                                          "user and can reach the later steps of this job; use it only on an "
                                          "ephemeral runner that runs nothing after perfgate"))
        plan.out_dir.mkdir(parents=True, exist_ok=True)
        say("::group::perfgate compare")
        bounds = limits.chosen(plan.sandbox_limits, confine.memory_total())
        try:  # no sandbox, so no limit but the deadline (security review P8)
            outcome = compare_mod.run_compare(compare_mod.compare_argv(plan, base_sha, head_sha),
                                              plan.out_dir, timeout=bounds.wall)
        finally:
            say("::endgroup::")
        # status 0: without a sandbox, no error it printed is a limit's, only the deadline is
        hits = limits.Hits(deadline_passed=outcome.stopped == "deadline",
                           stderr_tail=outcome.stderr_tail,
                           progress=confine.read_progress(plan.out_dir))
        reached = limits.limit_hit(bounds, hits, sandboxed.step_name(plan))
        outcome = sandboxed.with_limit(outcome, reached, say)
    else:
        outcome = sandboxed.compare_in_sandbox(plan, base_sha, head_sha, say)
    _write_json(handoff_dir(plan) / "compare.json", {"status": outcome.status, "stderr_tail": list(outcome.stderr_tail)})
    return EXIT_OK


def publish_results(plan: Plan) -> int:
    """Step summary and outputs from the compare's results; the exit status the compare's
    outcome calls for. Holds no token and comments nowhere (the ``comment`` phase does, in a
    job of its own)."""
    recorded = _read_json(handoff_dir(plan) / "compare.json")
    if not isinstance(recorded, dict) or not isinstance(recorded.get("status"), int):
        raise ActionInputError("the compare step left no outcome: run the prepare and compare phases first")
    outcome = compare_mod.CompareOutcome(recorded["status"], tuple(map(str, recorded.get("stderr_tail") or [])),
                                         plan.out_dir / "results.json")
    if outcome.status == EXIT_USAGE:
        raise ActionInputError(outcome.last_error_line.removeprefix("perfgate: error: "))
    if outcome.status not in (EXIT_OK, EXIT_REGRESSION) or not outcome.results_path.is_file():
        message = f"perfgate compare failed (exit status {outcome.status}): {outcome.last_error_line}"
        publish.write_summary(plan.summary_path, f"## perfgate\n\n{md_text(message)} (see the job log)\n")
        say(publish.annotation("error", message))
        return EXIT_INTERNAL

    from runner import results as results_mod
    from runner.report import render
    from runner.report.render import write_reports

    # validated here once (the sandbox ran the PR's code); what this step sets is checked field by field
    results = results_mod.check_fields(publish.with_run_metadata(
        results_mod.load(outcome.results_path), run_id=plan.run_id, run_url=plan.run_url,
        pr_number=plan.pr_number, pr_url=plan.pr_url, base_label=plan.base_label, head_label=plan.head_label),
        publish.RUN_FIELDS)
    results_mod.dump(results, outcome.results_path, validated=True)
    write_reports(results, plan.out_dir)

    def render_md(max_chars: int) -> str:
        return render(results, "md", max_chars=max_chars, details_url=plan.run_url)

    publish.write_summary(plan.summary_path, publish.fit_summary(render_md, plan.run_url))
    outputs = publish.step_outputs(results, outcome.results_path, plan.out_dir)
    publish.write_outputs(plan.output_path, outputs)
    say(f"perfgate: verdict {outputs['verdict']}, {outputs['regressions']} regression(s), "
        f"{outputs['improvements']} improvement(s); results in {outcome.results_path}")

    if outcome.status == EXIT_REGRESSION:
        say(publish.annotation("error", f"perfgate: {outcome.last_error_line.removeprefix('perfgate: ')}",
                               title="performance regression"))
        return EXIT_REGRESSION
    return EXIT_OK


def comment_results(env: Mapping[str, str]) -> int:
    """The ``comment`` phase: the sticky PR comment from a downloaded artifact (standalone mode).

    Runs in its own job, which never ran the pull request's code; the artifact's results.json
    is the PR's output all the same, so it is validated (``runner.results.load``) and rendered
    with every text escaped for Markdown.

    Raises:
        ActionInputError: no results folder or results.json, no pull request number, no token.
    """
    from runner import results as results_mod
    from runner.report import render

    from .environment import comment_plan

    plan = comment_plan(env)
    path = plan.results_dir / "results.json"
    if not path.is_file() or path.is_symlink():
        raise ActionInputError(f"no results.json in {plan.results_dir}: download the GPU job's artifact there "
                               "(actions/download-artifact with its artifact output)")
    results = results_mod.load(path)

    def render_md(max_chars: int) -> str:
        return render(results, "md", max_chars=max_chars, details_url=plan.run_url)

    body = publish.fit_comment(render_md, plan.run_url)
    from .github_gateway import upsert_sticky_comment

    result = upsert_sticky_comment(plan.api_url, plan.token, plan.repository, plan.pr_number, body,
                                   plan.comment_author)
    say(f"perfgate: {'created' if result.created else 'updated'} the PR comment {result.url}")
    return EXIT_OK


def run(env: Mapping[str, str], phase: str | None = None) -> int:
    """One phase of the action run (all three in order when ``phase`` is None); returns the
    exit status. Raises UserError for bad input."""
    if phase == "comment":
        return comment_results(env)
    plan = plan_from_environment(env, read_event(env))
    if phase in (None, "prepare"):
        prepare(plan)
    if phase in (None, "compare"):
        compare(plan)
    if phase in (None, "publish"):
        return publish_results(plan)
    return EXIT_OK


def compare_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The compare phase's own environment (pure):
    :func:`runner.sandbox.child_env.child_environment`,
    the run's :data:`COORDINATES` and the ``INPUT_*`` variables not named like a credential.
    No token, no step command file (``GITHUB_ENV``, ``GITHUB_OUTPUT``, ...)."""
    from runner.sandbox.child_env import NEVER, child_environment

    own = child_environment(env, isolate_git=False)
    own.update({k: env[k] for k in COORDINATES if k in env})
    own.update({k: v for k, v in env.items() if k.startswith("INPUT_") and not NEVER.search(k.removeprefix("INPUT_"))})
    return own


def _reexec_without_credentials(argv: list[str]) -> None:
    """Replace this process by itself with :func:`compare_environment`, so that nothing the
    PR's code can read (``/proc/<pid>/environ`` of its ancestors included) holds a credential.
    Returns only when the environment is already clean."""
    clean = compare_environment(os.environ)
    if clean == dict(os.environ):
        return
    sys.stdout.flush()
    isolated = ["-I"] if sys.flags.isolated else []
    os.execve(sys.executable, [sys.executable, *isolated, "-m", "action", *argv], clean)


def main(env: Mapping[str, str] | None = None, argv: list[str] | None = None) -> int:
    """Entry point; ``env`` defaults to the process environment, ``argv`` to the command line
    (one of :data:`PHASES`, or nothing for all three)."""
    if argv is None:
        argv = sys.argv[1:] if env is None else []
    phase = argv[0] if argv else None
    if phase is not None and (phase not in PHASES or len(argv) > 1):
        say(publish.annotation("error", f"perfgate: usage: python -m action [{'|'.join(PHASES)}]"))
        return EXIT_USAGE
    try:
        if env is None:
            if phase == "compare":
                # the clean environment no longer shows an OIDC request: judge sandbox: none first
                if (get_input(os.environ, "sandbox") or "bwrap") == "none":
                    check_no_sandbox(os.environ)
                _reexec_without_credentials(argv)
            env = os.environ
        return run(env, phase)
    except UserError as exc:
        say(publish.annotation("error", f"perfgate: {exc}"))
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - last line of defence: traceback for the bug report, then one line
        traceback.print_exc()
        say(publish.annotation("error", f"perfgate action: internal error ({type(exc).__name__}: {exc}); "
                                        "please report it with the log above"))
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
