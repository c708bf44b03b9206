"""``perfgate compare`` inside bubblewrap, within the sandbox's limits (shell).

The sandbox (:mod:`runner.sandbox.bubblewrap`) keeps the pull request's code from the runner; its
limits (:mod:`runner.sandbox.limits` decides them, :mod:`runner.sandbox.confine` applies them) keep
it from taking the machine: processes, memory, scratch space and wall time (security review
2026-12-06, "No resource limits" and P8). A limit reached ends the step with one line that names the
limit, its value, the input that sets it, the step and the benchmark, side and phase the compare was
at (its progress record, :func:`runner.sandbox.confine.read_progress`) (exit status 2: the pull
request's doing), and the runner goes on: every process of the sandbox is killed, its cgroups and
folder removed.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Callable, Sequence

from runner.sandbox import confine, limits as limits_mod, bubblewrap as sandbox, seccomp
from runner.errors import EXIT_USAGE
from runner.sandbox.launder import launder

from . import compare as compare_mod
from .environment import ActionInputError, Plan
from .publish import annotation


def run_confined(spec: sandbox.SandboxSpec, argv: Sequence[str], limits: limits_mod.Limits,
                 out_dir: Path, step: str, env: dict[str, str] | None = None,
                 say: Callable[[str], None] = print) -> compare_mod.CompareOutcome:
    """Run ``argv`` in the sandbox ``spec`` (its scratch a tmpfs of ``limits.disk`` where
    bubblewrap can size one) within ``limits``; a limit the code reached makes the outcome
    status 2 with the sentence that names it (:func:`runner.sandbox.limits.limit_hit`) as its last
    line."""
    from dataclasses import replace

    bwrap = shutil.which("bwrap") or "bwrap"
    with confine.Confinement(limits, confine.offers(spec.drop_to, bwrap),
                             lambda: confine.read_progress(out_dir)) as confinement:
        spec = replace(spec, scratch_size=confinement.plan.tmpfs_size)
        say(f"perfgate: sandbox limits: {limits.pids} processes, "
            f"{limits_mod.size_words(limits.memory)} of memory, "
            f"{limits_mod.size_words(limits.disk)} of /tmp and HOME, "
            f"{limits_mod.time_words(limits.wall)} (" + "; ".join(
                f"{what}: {how}" for what, how in confinement.plan.how) + ")")

        def preexec() -> None:
            sandbox.new_session_keyring()
            confinement.attach()

        outcome = compare_mod.run_compare(
            sandbox.bwrap_argv(spec, list(argv), bwrap=bwrap), out_dir,
            timeout=limits.wall, preexec=preexec, on_stop=confinement.kill,
            watch=confinement.watch,
            env=sandbox.sandbox_environment(compare_mod.compare_env() if env is None else env))
        hits = replace(confinement.hits(outcome.stopped == "deadline", outcome.stderr_tail),
                       status=outcome.status)
    return with_limit(outcome, limits_mod.limit_hit(limits, hits, step), say)


def with_limit(outcome: compare_mod.CompareOutcome, message: str | None,
               say: Callable[[str], None]) -> compare_mod.CompareOutcome:
    """``outcome`` ended by the limit ``message`` names: status 2 and that line last; a
    compare that finished all the same keeps its status and the line is a warning."""
    if message is None:
        return outcome
    if outcome.status in (0, 1) and outcome.stopped is None:
        say(annotation("warning", f"perfgate: {message}"))
        return outcome
    tail = (*outcome.stderr_tail, f"perfgate: error: {message}")[-20:]
    return compare_mod.CompareOutcome(EXIT_USAGE, tail, outcome.results_path, outcome.stopped)


def step_name(plan: Plan) -> str:
    return "perfgate bisect" if plan.bisect else "perfgate compare"


def compare_in_sandbox(plan: Plan, base_sha: str, head_sha: str,
                       say: Callable[[str], None] = print) -> compare_mod.CompareOutcome:
    """``perfgate compare`` inside bubblewrap with a results folder of its own, within the
    workflow's limits; its regular files are then copied into ``plan.out_dir`` and the
    sandbox's folder is removed (a failure to remove it is a warning: the runner empties
    ``RUNNER_TEMP`` after the job).

    Raises:
        ActionInputError: bubblewrap cannot run here, or the results folder is not empty.
    """
    try:
        sandbox.probe()
    except sandbox.SandboxUnavailable as exc:
        raise ActionInputError(
            f"{exc}. The pull request's code runs only in a sandbox: install bubblewrap on the "
            "runner (Debian/Ubuntu: apt-get install bubblewrap) with unprivileged user namespaces "
            "allowed (README, 'The runner needs bubblewrap'); in a Kubernetes pod the seccomp "
            "profile and unmasked /proc of deploy/kubernetes/runners/values.yaml") from None
    if plan.out_dir.exists() and any(plan.out_dir.iterdir()):
        raise ActionInputError(f"the results folder {plan.out_dir} is not empty: perfgate writes "
                               "a fresh one")
    owner = sandbox.drop_to_for()
    name = f"{plan.out_dir.name}-sandbox-{uuid.uuid4().hex[:12]}"
    jail = sandbox.make_scratch(plan.out_dir.parent / name, owner)
    inner_out = sandbox.make_writable(jail / "out", owner)
    read_only = [*sandbox.interpreter_paths(), *sandbox.perfgate_source_paths(),
                 str(plan.workspace), *sandbox.resolved_etc_links(), *plan.sandbox_paths]
    if plan.config is not None:
        read_only.append(str(plan.config.parent))
    spec = sandbox.SandboxSpec(read_only=tuple(dict.fromkeys(read_only)),
                               writable=(str(inner_out),), scratch=str(jail), chdir="/",
                               devices=sandbox.gpu_devices(), network=plan.sandbox_network,
                               drop_to=owner, seccomp=seccomp.write_userns_filter(jail))
    argv = compare_mod.compare_argv(plan, base_sha, head_sha, out_dir=inner_out)
    limits = limits_mod.chosen(plan.sandbox_limits, confine.memory_total())
    say("::group::perfgate compare (in the sandbox)")
    try:
        outcome = run_confined(spec, argv, limits, inner_out, step_name(plan), say=say)
    finally:
        say("::endgroup::")
    copied = launder(inner_out, plan.out_dir)
    if copied.skipped:
        say(annotation("warning", f"perfgate left {len(copied.skipped)} file(s) the compare wrote "
                                  f"out of the results: {'; '.join(copied.skipped[:5])}"))
    left = sandbox.remove_tree(jail)
    if left:
        say(annotation("warning", f"perfgate: {left}"))
    return compare_mod.CompareOutcome(outcome.status, outcome.stderr_tail,
                                      plan.out_dir / "results.json", outcome.stopped)
