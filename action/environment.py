"""What the Actions environment asks for, as a plan (pure: environment mapping + event payload).

GitHub Actions hands a step its inputs as ``INPUT_<NAME>`` variables (the composite
``action.yml`` passes them explicitly; ``-`` may appear as ``-`` or ``_``), the event payload
as a JSON file at ``GITHUB_EVENT_PATH``, and the run's coordinates as ``GITHUB_*`` variables
(https://docs.github.com/actions/reference/variables-reference). Unset inputs arrive as empty
strings, so empty means "not given".

Which commits to compare:
- explicit ``base-ref`` / ``head-ref`` inputs win (any event);
- ``pull_request`` / ``pull_request_target``: the PR's base and head SHAs from the payload
  (not ``GITHUB_SHA``, which is the test-merge commit);
- ``workflow_dispatch`` (the App): the dispatch inputs ``base-sha`` / ``head-sha``,
  ``pr-number`` and ``run-id`` (``_`` spellings accepted).
Anything else is an :class:`ActionInputError` naming what to set.

Whose settings (thresholds, ``alpha``, ``benchmarks``, ``install``...) — never the pull
request's: for ``workflow_dispatch`` (the App dispatches the default branch's workflow) the
configuration at ``GITHUB_SHA``, the default branch; for ``pull_request`` events the base
revision's (``GITHUB_SHA`` and the checkout are the PR's merge commit there). The ``config``
input names the file inside that commit. Other events (explicit refs): the ``config`` input's
file in the checkout, else compare's default, the base revision.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from runner.config import DEVICES

from .inputs import (ActionInputError, check_no_sandbox, get_input, parse_bool, parse_fraction,
                     parse_limits, parse_names, parse_paths, parse_rounds, parse_seconds)

#: Events whose payload names both commits of a pull request.
PR_EVENTS = ("pull_request", "pull_request_target")
DEFAULT_COMMENT_AUTHOR = "github-actions[bot]"


@dataclass(frozen=True)
class Plan:
    """Everything one run of the action needs, decided before any I/O.

    ``threshold`` is a fraction (0.02 = 2 %), ``max_time`` seconds; None means "compare's
    default / the target's configuration".
    """

    event_name: str
    repository: str                   # owner/name
    workspace: Path                   # the target checkout
    base_ref: str                     # what to compare: a SHA or a ref name
    head_ref: str
    out_dir: Path
    base_label: str | None = None     # branch names for the report (the PR payload's base.ref/head.ref)
    head_label: str | None = None
    pr_number: int | None = None
    pr_url: str | None = None
    is_fork: bool = False             # head lives in another repository
    title: str | None = None
    body: str | None = None
    labels: tuple[str, ...] = ()
    run_id: str | None = None         # the App's id for this run, passed through to results.json
    run_url: str | None = None        # this workflow run's page
    server_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    token: str | None = field(default=None, repr=False)
    fail_on_regression: bool = False
    config: Path | None = None
    benchmarks: str | None = None
    filter: str | None = None
    threshold: float | None = None
    max_time: float | None = None
    min_rounds: int | None = None
    device: str | None = None
    profile: bool | None = None
    summary_path: Path | None = None
    output_path: Path | None = None
    settings_ref: str | None = None   # the commit whose configuration is the gate's (None: see config)
    config_path: str | None = None    # the config input: a file inside settings_ref
    handoff_dir: Path | None = None   # what one phase leaves for the next, never inside the sandbox
    sandbox: str = "bwrap"            # how the PR's code is confined: bwrap or none (runner.sandbox)
    sandbox_paths: tuple[str, ...] = ()  # extra absolute paths the sandbox shows read-only
    sandbox_network: bool = True      # the sandbox shares the runner's network (False: none at all)
    #: the workflow's sandbox limits, (field, value) of runner.sandbox.limits.Limits; the rest
    #: defaults
    sandbox_limits: tuple[tuple[str, float], ...] = ()
    bisect: bool = False              # perfgate bisect base..head (filter: the benchmark) instead of compare
    all_benchmarks: bool = False      # compare --all: every benchmark, no selection (/perf run --all)
    force_run: tuple[str, ...] = ()   # compare --force-run NAME each: the App's selection misses

    @property
    def handoff(self) -> Path:
        """The folder one phase leaves for the next (PR text, the gate's settings, how the
        compare ended): beside the results folder, never inside it, since the results folder is
        written by the sandboxed compare and uploaded as the artifact."""
        return self.handoff_dir or self.out_dir.parent / f"{self.out_dir.name}-action"


def _first(mapping: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = mapping.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def _pr_number(text: str | None, where: str) -> int | None:
    if text is None:
        return None
    if not re.fullmatch(r"#?\d+", text):
        raise ActionInputError(f"{where} must be a pull request number, got {text!r}")
    return int(text.lstrip("#"))


def plan_from_environment(env: Mapping[str, str], event: Mapping[str, Any] | None) -> Plan:
    """Decide the run from the Actions environment and the event payload.

    Args:
        env: the process environment (``GITHUB_*``, ``RUNNER_TEMP``, ``INPUT_*``).
        event: the parsed ``GITHUB_EVENT_PATH`` file, or None when there is none.

    Raises:
        ActionInputError: an unhandled event without explicit refs, missing SHAs, a bad input.
    """
    event_name = env.get("GITHUB_EVENT_NAME", "").strip() or "(unknown)"
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if not repository:
        raise ActionInputError("GITHUB_REPOSITORY is not set: run the action inside GitHub Actions "
                               "(or set it to owner/name)")
    server_url = env.get("GITHUB_SERVER_URL", "").strip() or "https://github.com"
    commits = _commits(env, event or {}, event_name, repository)
    if commits["pr_number"] and not commits.get("pr_url"):
        commits["pr_url"] = f"{server_url}/{repository}/pull/{commits['pr_number']}"
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    path_input = get_input(env, "path")
    if path_input:
        workspace = workspace / path_input
    config = get_input(env, "config")
    settings_ref = _settings_ref(env, event_name, config, commits["base_ref"])
    summary = env.get("GITHUB_STEP_SUMMARY", "").strip()
    output = env.get("GITHUB_OUTPUT", "").strip()
    return Plan(
        event_name=event_name, repository=repository, workspace=workspace,
        out_dir=_out_dir(env, workspace), run_url=_run_url(env, server_url, repository),
        server_url=server_url,
        api_url=env.get("GITHUB_API_URL", "").strip() or "https://api.github.com",
        token=get_input(env, "github-token"),
        config=(workspace / config) if config and settings_ref is None else None,
        summary_path=Path(summary) if summary else None,
        output_path=Path(output) if output else None,
        settings_ref=settings_ref, config_path=config,
        handoff_dir=Path(env["PERFGATE_HANDOFF_DIR"]) if env.get("PERFGATE_HANDOFF_DIR") else None,
        **commits, **_gate_inputs(env),
    )


def _commits(env: Mapping[str, str], event: Mapping[str, Any], event_name: str,
             repository: str) -> dict[str, Any]:
    """Which commits to compare, as Plan fields: ``base_ref``, ``head_ref``, ``pr_number``,
    ``run_id``; from a pull request's payload also its text, labels, branch names, URL, fork.

    Raises:
        ActionInputError: an unhandled event without explicit refs, missing SHAs, a bad number.
    """
    found = {"base_ref": get_input(env, "base-ref"), "head_ref": get_input(env, "head-ref"),
             "pr_number": _pr_number(get_input(env, "pr-number"), "input pr-number"),
             "run_id": get_input(env, "run-id")}
    if event_name in PR_EVENTS:
        found = _from_pull_request(found, event.get("pull_request"), event_name, repository)
    elif event_name == "workflow_dispatch":
        found = _from_dispatch(found, event.get("inputs") or {})
    elif not (found["base_ref"] and found["head_ref"]):
        raise ActionInputError(f"the {event_name} event is not handled: the action reads its "
                               "commits from pull_request and workflow_dispatch events; for other "
                               "events set both base-ref and head-ref")
    if not (found["base_ref"] and found["head_ref"]):
        which = " and ".join(n for n in ("base", "head") if not found[f"{n}_ref"])
        raise ActionInputError(f"missing SHAs: the {event_name} payload has no {which} SHA; "
                               "set base-ref/head-ref")
    return found


def _from_pull_request(found: dict[str, Any], pull: Any, event_name: str,
                       repository: str) -> dict[str, Any]:
    """``found`` completed from a pull_request payload (explicit inputs win).

    Raises:
        ActionInputError: the payload has no pull_request object, or a bad number in it.
    """
    if not isinstance(pull, Mapping):
        raise ActionInputError(f"the {event_name} event payload has no pull_request object "
                               "(is GITHUB_EVENT_PATH the event file?)")
    base, head = pull.get("base") or {}, pull.get("head") or {}
    head_repo, base_repo = head.get("repo") or {}, base.get("repo") or {}
    return {
        **found,
        "base_ref": found["base_ref"] or _first(base, "sha"),
        "head_ref": found["head_ref"] or _first(head, "sha"),
        "base_label": _first(base, "ref"), "head_label": _first(head, "ref"),
        "pr_number": found["pr_number"] or _pr_number(_first(pull, "number"),
                                                      "pull_request.number"),
        "pr_url": pull.get("html_url"), "title": pull.get("title"), "body": pull.get("body"),
        "labels": tuple(str(label.get("name")) for label in pull.get("labels") or []
                        if isinstance(label, Mapping)),
        # A deleted fork has head.repo null: it was a fork all the same.
        "is_fork": (not head_repo) or bool(head_repo.get("fork")) or (
            head_repo.get("full_name") not in (None, base_repo.get("full_name", repository))),
    }


def _from_dispatch(found: dict[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``found`` completed from the workflow_dispatch inputs (explicit action inputs win).

    Raises:
        ActionInputError: no base or head SHA among them, or a bad pr-number.
    """
    found = {
        **found,
        "base_ref": found["base_ref"] or _first(inputs, *_spellings("base")),
        "head_ref": found["head_ref"] or _first(inputs, *_spellings("head")),
        "pr_number": found["pr_number"] or _pr_number(
            _first(inputs, "pr-number", "pr_number", "pr"), "dispatch input pr-number"),
        "run_id": found["run_id"] or _first(inputs, "run-id", "run_id"),
    }
    if not (found["base_ref"] and found["head_ref"]):
        missing = " and ".join(f"{n}-sha" for n in ("base", "head") if not found[f"{n}_ref"])
        raise ActionInputError(f"missing SHAs: the workflow_dispatch event has no {missing} "
                               "input; dispatch the workflow with base-sha and head-sha (or set "
                               "the action's base-ref/head-ref)")
    return found


def _spellings(end: str) -> tuple[str, ...]:
    """The dispatch input names for ``end`` (base or head), in the order they are read."""
    return (f"{end}-sha", f"{end}_sha", f"{end}-ref", f"{end}_ref", end)


def _run_url(env: Mapping[str, str], server_url: str, repository: str) -> str | None:
    """This workflow run's page (its attempt's, after a re-run), or None outside a run."""
    if not env.get("GITHUB_RUN_ID"):
        return None
    run_url = f"{server_url}/{repository}/actions/runs/{env['GITHUB_RUN_ID']}"
    attempt = env.get("GITHUB_RUN_ATTEMPT", "1")
    return run_url + f"/attempts/{attempt}" if attempt not in ("", "1") else run_url


def _out_dir(env: Mapping[str, str], workspace: Path) -> Path:
    """Where results go: ``PERFGATE_OUT_DIR``, else ``$RUNNER_TEMP/perfgate``, else the checkout's
    ``.perfgate/action``."""
    if env.get("PERFGATE_OUT_DIR"):
        return Path(env["PERFGATE_OUT_DIR"])
    if env.get("RUNNER_TEMP"):
        return Path(env["RUNNER_TEMP"]) / "perfgate"
    return workspace / ".perfgate" / "action"


def _settings_ref(env: Mapping[str, str], event_name: str, config: str | None,
                  base: str) -> str | None:
    """The commit whose configuration is the gate's (the module docstring says which), or None."""
    if event_name == "workflow_dispatch":
        return env.get("GITHUB_SHA", "").strip() or None
    if event_name in PR_EVENTS and config:
        return base
    return None


def _gate_inputs(env: Mapping[str, str]) -> dict[str, Any]:
    """The inputs that tune the run (device, sandbox, thresholds, selection), as Plan fields.

    Raises:
        ActionInputError: an input out of its range, named.
    """
    device = get_input(env, "device")
    if device is not None and device not in DEVICES:
        raise ActionInputError(f"input device must be one of {', '.join(DEVICES)}, got {device!r}")
    sandbox = get_input(env, "sandbox") or "bwrap"
    if sandbox not in ("bwrap", "none"):
        raise ActionInputError(f"input sandbox must be bwrap or none, got {sandbox!r}")
    if sandbox == "none":
        check_no_sandbox(env)
    profile_text = get_input(env, "profile")
    return dict(
        device=device, sandbox=sandbox,
        fail_on_regression=parse_bool(get_input(env, "fail-on-regression"), "fail-on-regression",
                                      False),
        benchmarks=get_input(env, "benchmarks"), filter=get_input(env, "filter"),
        threshold=parse_fraction(get_input(env, "threshold"), "threshold"),
        max_time=parse_seconds(get_input(env, "max-time"), "max-time"),
        min_rounds=parse_rounds(get_input(env, "min-rounds"), "min-rounds"),
        profile=None if profile_text is None else parse_bool(profile_text, "profile", True),
        sandbox_network=parse_bool(get_input(env, "sandbox-network"), "sandbox-network", True),
        sandbox_paths=parse_paths(get_input(env, "sandbox-paths"), "sandbox-paths", env),
        sandbox_limits=parse_limits(env),
        bisect=parse_bool(get_input(env, "bisect"), "bisect", False),
        all_benchmarks=parse_bool(get_input(env, "all-benchmarks"), "all-benchmarks", False),
        force_run=parse_names(get_input(env, "force-run"), "force-run"),
    )


@dataclass(frozen=True)
class CommentPlan:
    """The ``comment`` phase (standalone mode, a job of its own): where the downloaded artifact
    is, which pull request, and the token that may comment."""

    results_dir: Path
    repository: str
    pr_number: int
    token: str = field(repr=False)
    api_url: str = "https://api.github.com"
    comment_author: str = DEFAULT_COMMENT_AUTHOR
    run_url: str | None = None
    summary_path: Path | None = None


def comment_plan(env: Mapping[str, str]) -> CommentPlan:
    """Decide the ``comment`` phase from its step's environment (inputs ``results``,
    ``pr-number``, ``github-token``, ``comment-author``; ``GITHUB_*`` coordinates).

    Raises:
        ActionInputError: a missing input, named with what to set.
    """
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if not repository:
        raise ActionInputError("GITHUB_REPOSITORY is not set: run the comment action inside GitHub Actions")
    results = get_input(env, "results")
    if not results:
        raise ActionInputError("input results is empty: name the folder actions/download-artifact wrote the GPU "
                               "job's artifact to")
    pr_number = _pr_number(get_input(env, "pr-number"), "input pr-number")
    if pr_number is None:
        raise ActionInputError("input pr-number is empty: the comment action needs the pull request's number")
    token = get_input(env, "github-token")
    if not token:
        raise ActionInputError("input github-token is empty: the comment job needs `permissions: pull-requests: "
                               "write` and its token")
    server_url = env.get("GITHUB_SERVER_URL", "").strip() or "https://github.com"
    run_url = None
    if env.get("GITHUB_RUN_ID"):
        run_url = f"{server_url}/{repository}/actions/runs/{env['GITHUB_RUN_ID']}"
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    if os.path.realpath(workspace / results) == os.path.realpath(workspace):
        # the artifact's files, which the pull request's code chose, would sit where a Python run
        # in the workspace imports from (security review 2026-12-06, P1: its venv package ran)
        raise ActionInputError("input results is the workspace itself: download the artifact "
                               "into a folder of its own (actions/download-artifact with path: "
                               "perfgate-results), never where this job's own steps run")
    summary = env.get("GITHUB_STEP_SUMMARY", "").strip()
    return CommentPlan(results_dir=workspace / results, repository=repository, pr_number=pr_number, token=token,
                       api_url=env.get("GITHUB_API_URL", "").strip() or "https://api.github.com",
                       comment_author=get_input(env, "comment-author") or DEFAULT_COMMENT_AUTHOR,
                       run_url=run_url, summary_path=Path(summary) if summary else None)
