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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from runner.config import DEVICES

from .inputs import (ActionInputError, get_input, parse_bool, parse_fraction, parse_names, parse_paths, parse_rounds,
                     parse_seconds)

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
    event = event or {}
    event_name = env.get("GITHUB_EVENT_NAME", "").strip() or "(unknown)"
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if not repository:
        raise ActionInputError("GITHUB_REPOSITORY is not set: run the action inside GitHub Actions "
                               "(or set it to owner/name)")
    server_url = env.get("GITHUB_SERVER_URL", "").strip() or "https://github.com"
    api_url = env.get("GITHUB_API_URL", "").strip() or "https://api.github.com"

    base = get_input(env, "base-ref")
    head = get_input(env, "head-ref")
    pr_number = _pr_number(get_input(env, "pr-number"), "input pr-number")
    run_id = get_input(env, "run-id")
    title = body = pr_url = base_label = head_label = None
    labels: tuple[str, ...] = ()
    is_fork = False

    pull = event.get("pull_request") if event_name in PR_EVENTS else None
    if event_name in PR_EVENTS:
        if not isinstance(pull, Mapping):
            raise ActionInputError(f"the {event_name} event payload has no pull_request object "
                                   "(is GITHUB_EVENT_PATH the event file?)")
        base = base or _first(pull.get("base") or {}, "sha")
        head = head or _first(pull.get("head") or {}, "sha")
        base_label = _first(pull.get("base") or {}, "ref")
        head_label = _first(pull.get("head") or {}, "ref")
        pr_number = pr_number or _pr_number(_first(pull, "number"), "pull_request.number")
        pr_url = pull.get("html_url")
        title, body = pull.get("title"), pull.get("body")
        labels = tuple(str(label.get("name")) for label in pull.get("labels") or [] if isinstance(label, Mapping))
        head_repo = ((pull.get("head") or {}).get("repo") or {})
        base_repo = ((pull.get("base") or {}).get("repo") or {})
        # A deleted fork has head.repo null: it was a fork all the same.
        is_fork = (not head_repo) or bool(head_repo.get("fork")) or (
            head_repo.get("full_name") not in (None, base_repo.get("full_name", repository)))
    elif event_name == "workflow_dispatch":
        inputs = event.get("inputs") or {}
        base = base or _first(inputs, "base-sha", "base_sha", "base-ref", "base_ref", "base")
        head = head or _first(inputs, "head-sha", "head_sha", "head-ref", "head_ref", "head")
        pr_number = pr_number or _pr_number(_first(inputs, "pr-number", "pr_number", "pr"), "dispatch input pr-number")
        run_id = run_id or _first(inputs, "run-id", "run_id")
        if not (base and head):
            missing = " and ".join(n for n, v in (("base-sha", base), ("head-sha", head)) if not v)
            raise ActionInputError(f"missing SHAs: the workflow_dispatch event has no {missing} input; dispatch "
                                   "the workflow with base-sha and head-sha (or set the action's base-ref/head-ref)")
    elif not (base and head):
        raise ActionInputError(f"the {event_name} event is not handled: the action reads its commits from "
                               "pull_request and workflow_dispatch events; for other events set both base-ref "
                               "and head-ref")
    if not (base and head):
        which = " and ".join(n for n, v in (("base", base), ("head", head)) if not v)
        raise ActionInputError(f"missing SHAs: the {event_name} payload has no {which} SHA; set base-ref/head-ref")
    if pr_number and not pr_url:
        pr_url = f"{server_url}/{repository}/pull/{pr_number}"

    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    path_input = get_input(env, "path")
    if path_input:
        workspace = workspace / path_input
    run_url = None
    if env.get("GITHUB_RUN_ID"):
        run_url = f"{server_url}/{repository}/actions/runs/{env['GITHUB_RUN_ID']}"
        attempt = env.get("GITHUB_RUN_ATTEMPT", "1")
        if attempt not in ("", "1"):
            run_url += f"/attempts/{attempt}"
    out_dir = Path(env["PERFGATE_OUT_DIR"]) if env.get("PERFGATE_OUT_DIR") else (
        Path(env["RUNNER_TEMP"]) / "perfgate" if env.get("RUNNER_TEMP") else workspace / ".perfgate" / "action")
    config = get_input(env, "config")
    settings_ref = None
    if event_name == "workflow_dispatch":
        settings_ref = env.get("GITHUB_SHA", "").strip() or None
    elif event_name in PR_EVENTS and config:
        settings_ref = base
    device = get_input(env, "device")
    if device is not None and device not in DEVICES:
        raise ActionInputError(f"input device must be one of {', '.join(DEVICES)}, got {device!r}")
    profile_text = get_input(env, "profile")
    summary = env.get("GITHUB_STEP_SUMMARY", "").strip()
    output = env.get("GITHUB_OUTPUT", "").strip()
    sandbox = get_input(env, "sandbox") or "bwrap"
    if sandbox not in ("bwrap", "none"):
        raise ActionInputError(f"input sandbox must be bwrap or none, got {sandbox!r}")

    return Plan(
        event_name=event_name, repository=repository, workspace=workspace, base_ref=base, head_ref=head,
        out_dir=out_dir, base_label=base_label, head_label=head_label, pr_number=pr_number, pr_url=pr_url,
        is_fork=is_fork, title=title, body=body, labels=labels, run_id=run_id, run_url=run_url,
        server_url=server_url, api_url=api_url,
        token=get_input(env, "github-token"),
        fail_on_regression=parse_bool(get_input(env, "fail-on-regression"), "fail-on-regression", False),
        config=(workspace / config) if config and settings_ref is None else None,
        benchmarks=get_input(env, "benchmarks"), filter=get_input(env, "filter"),
        threshold=parse_fraction(get_input(env, "threshold"), "threshold"),
        max_time=parse_seconds(get_input(env, "max-time"), "max-time"),
        min_rounds=parse_rounds(get_input(env, "min-rounds"), "min-rounds"),
        device=device,
        profile=None if profile_text is None else parse_bool(profile_text, "profile", True),
        summary_path=Path(summary) if summary else None,
        output_path=Path(output) if output else None,
        settings_ref=settings_ref, config_path=config,
        handoff_dir=Path(env["PERFGATE_HANDOFF_DIR"]) if env.get("PERFGATE_HANDOFF_DIR") else None,
        sandbox=sandbox, sandbox_network=parse_bool(get_input(env, "sandbox-network"), "sandbox-network", True),
        sandbox_paths=parse_paths(get_input(env, "sandbox-paths"), "sandbox-paths", env),
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
    summary = env.get("GITHUB_STEP_SUMMARY", "").strip()
    return CommentPlan(results_dir=workspace / results, repository=repository, pr_number=pr_number, token=token,
                       api_url=env.get("GITHUB_API_URL", "").strip() or "https://api.github.com",
                       comment_author=get_input(env, "comment-author") or DEFAULT_COMMENT_AUTHOR,
                       run_url=run_url, summary_path=Path(summary) if summary else None)
