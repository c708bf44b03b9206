"""``python -m action``: the perfgate GitHub Action's entry (imperative shell).

plan (environment.py) → both SHAs present (git_shas.py) → ``perfgate compare``
(compare.py) → results.json + run metadata → step summary and outputs (publish.py) → the
sticky PR comment (github_gateway.py).

Exit status: 0 done; 1 a regression tripped ``fail-on-regression``; 2 bad input or a GitHub
refusal (one ``::error::`` line, no traceback); 3 an internal failure (traceback, then
``::error::``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Mapping

from runner.errors import UserError
from runner.escape import md_text

from . import compare as compare_mod
from . import git_shas, publish
from .environment import ActionInputError, Plan, plan_from_environment

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


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


def _with_pr_text(plan: Plan) -> Plan:
    """A dispatched run knows the PR by number only: fetch its title, body and labels for the
    intent section (best effort: a failure is a warning)."""
    if plan.title or not plan.pr_number or not plan.token:
        return plan
    from dataclasses import replace

    from .github_gateway import pull_request_text

    try:
        title, body, labels = pull_request_text(plan.api_url, plan.token, plan.repository, plan.pr_number)
    except UserError as exc:
        say(publish.annotation("warning", f"no PR text for the intent section: {exc}"))
        return plan
    return replace(plan, title=title, body=body, labels=tuple(labels))


def _rewrite_reports(results: dict, out_dir: Path) -> None:
    from runner.report import render

    (out_dir / "report.md").write_text(render(results, "md"), "utf-8")
    (out_dir / "report.html").write_text(render(results, "html"), "utf-8")


def run(env: Mapping[str, str]) -> int:
    """One action run; returns the exit status. Raises UserError for bad input."""
    plan = plan_from_environment(env, read_event(env))
    plan = _with_pr_text(plan)
    base_sha = git_shas.ensure_commit(plan.workspace, plan.base_ref, plan.pr_number)
    head_sha = git_shas.ensure_commit(plan.workspace, plan.head_ref, plan.pr_number)
    say(f"perfgate: {plan.repository} base {base_sha[:12]} → head {head_sha[:12]}"
        + (f" (PR #{plan.pr_number})" if plan.pr_number else ""))

    plan.out_dir.mkdir(parents=True, exist_ok=True)
    say("::group::perfgate compare")
    try:
        outcome = compare_mod.run_compare(compare_mod.compare_argv(plan, base_sha, head_sha), plan.out_dir)
    finally:
        say("::endgroup::")
    if outcome.status == compare_mod.EXIT_USAGE:
        raise ActionInputError(outcome.last_error_line.removeprefix("perfgate: error: "))
    if outcome.status not in (compare_mod.EXIT_OK, compare_mod.EXIT_REGRESSION) or not outcome.results_path.is_file():
        message = f"perfgate compare failed (exit status {outcome.status}): {outcome.last_error_line}"
        publish.write_summary(plan.summary_path, f"## perfgate\n\n{md_text(message)} (see the job log)\n")
        say(publish.annotation("error", message))
        return EXIT_INTERNAL

    from runner import results as results_mod
    from runner.report import render

    results = publish.with_run_metadata(
        results_mod.load(outcome.results_path), run_id=plan.run_id, run_url=plan.run_url,
        pr_number=plan.pr_number, pr_url=plan.pr_url, base_label=plan.base_label, head_label=plan.head_label)
    results_mod.dump(results, outcome.results_path)
    _rewrite_reports(results, plan.out_dir)

    def render_md(max_chars: int) -> str:
        return render(results, "md", max_chars=max_chars, details_url=plan.run_url)

    wants_comment = plan.comment and plan.pr_number is not None
    notes = publish.fork_note(plan.pr_number) if wants_comment and plan.read_only_token else ""
    publish.write_summary(plan.summary_path, publish.fit_summary(render_md, plan.run_url, notes))
    outputs = publish.step_outputs(results, outcome.results_path, plan.out_dir)
    publish.write_outputs(plan.output_path, outputs)
    say(f"perfgate: verdict {outputs['verdict']}, {outputs['regressions']} regression(s), "
        f"{outputs['improvements']} improvement(s); results in {outcome.results_path}")

    if wants_comment:
        _comment(plan, publish.fit_comment(render_md, plan.run_url))
    elif plan.comment and plan.pr_number is None:
        say("perfgate: not a pull request run, so no PR comment (the report is in the job summary)")

    if outcome.status == compare_mod.EXIT_REGRESSION:
        say(publish.annotation("error", f"perfgate: {outcome.last_error_line.removeprefix('perfgate: ')}",
                               title="performance regression"))
        return EXIT_REGRESSION
    return EXIT_OK


def _comment(plan: Plan, body: str) -> None:
    from .github_gateway import GitHubDenied, upsert_sticky_comment

    assert plan.pr_number is not None
    if plan.read_only_token:
        say(publish.annotation("notice", f"PR #{plan.pr_number} is from a fork: the token is read-only, so the "
                                         "report is in the job summary instead of a PR comment"))
        return
    if not plan.token:
        say(publish.annotation("warning", "no github-token input: the report is in the job summary only"))
        return
    try:
        result = upsert_sticky_comment(plan.api_url, plan.token, plan.repository, plan.pr_number, body,
                                       plan.comment_author)
    except GitHubDenied:
        if plan.is_fork:  # a dispatched fork run with a read-only token: report, do not fail
            publish.write_summary(plan.summary_path, publish.fork_note(plan.pr_number))
            say(publish.annotation("notice", f"PR #{plan.pr_number} is from a fork and the token may not "
                                             "comment: the report is in the job summary"))
            return
        raise
    say(f"perfgate: {'created' if result.created else 'updated'} the PR comment {result.url}")


def main(env: Mapping[str, str] | None = None) -> int:
    """Entry point; ``env`` defaults to the process environment."""
    env = os.environ if env is None else env
    try:
        return run(env)
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
