"""Every text the App writes on GitHub (sticky comment states, replies, check-run output),
as pure functions. The results comment itself is ``runner.report.render`` (the CLI's report).

Arguments named ``problem`` or ``reason`` are Markdown written by perfgate (untrusted parts
already escaped, e.g. ``bot.app.ingest.IngestError`` messages); every other text argument is
escaped here for its place (:mod:`runner.report.escape`). GitHub logins are GitHub's own
(``[A-Za-z0-9-]``) and are mentioned on purpose. URLs are passed in checked
(``runner.report.escape.safe_link``) or built from the App's settings.
"""

from __future__ import annotations

from runner.report.escape import md_code, md_text
from runner.report import COMMENT_LIMIT, MARKER, cut_markdown

from .commands import USAGE, echo

#: Check-run text fields are limited to 65,535 characters (GITHUB.md).
CHECK_TEXT_LIMIT = 65_535
CHECK_NAME = "perfgate"


def short(sha: str | None) -> str:
    """The first 7 characters of a SHA (GitHub's; a SHA read from a document goes through
    ``runner.report.escape.md_code`` as well)."""
    return (sha if isinstance(sha, str) and sha else "?")[:7]


def _options(filter_: str | None, rounds: int | None, threshold: float | None, profile: bool) -> str:
    parts = []
    if filter_:
        parts.append(f"filter {echo(filter_)}")
    if rounds:
        parts.append(f"{rounds} rounds")
    if threshold:
        parts.append(f"threshold {threshold * 100:g} %")
    if profile:
        parts.append("profiling")
    return f" ({', '.join(parts)})" if parts else ""


def queued(*, base_sha: str | None, head_sha: str, requested_by: str | None, trigger: str,
           details_url: str | None, workflow_url: str | None, filter_: str | None = None,
           rounds: int | None = None, threshold: float | None = None, profile: bool = False) -> str:
    """Sticky comment while a run is queued on the GPU runners."""
    who = f" by @{requested_by}" if requested_by else ""
    lines = [MARKER, "## ⏳ perfgate: queued",
             "",
             f"Benchmarking {md_code(short(base_sha))} (base) against {md_code(short(head_sha))} (head){_options(filter_, rounds, threshold, profile)}, "
             f"requested{who} ({trigger}).",
             ""]
    if workflow_url:
        lines.append(f"- Workflow run: {workflow_url}")
    if details_url:
        lines.append(f"- Run page: {details_url}")
    lines.append("")
    lines.append("This comment is updated with the verdicts when the run reports back.")
    return "\n".join(lines) + "\n"


def cancelled(reason: str) -> str:
    """Sticky comment of a cancelled run; ``reason`` is Markdown (e.g. :func:`superseded_by_command`)."""
    return f"{MARKER}\n## ⏹️ perfgate: cancelled\n\n{reason}\n"


def superseded_by_command(command_text: str, login: str) -> str:
    """Why runs were cancelled by a newer ``/perf run``: the command echoed as a code span."""
    return f"Superseded by {echo(command_text)} from @{login}."


def approve_command(head_sha: str) -> str:
    """The command that approves exactly ``head_sha``, as a code span: the full SHA, which is
    the only form ``--sha`` takes (``bot.app.commands.SHA_LENGTHS``)."""
    return md_code(f"/perf run --sha {head_sha}")


def fork_needs_approval(head_sha: str) -> str:
    """Sticky comment when new commits arrive on a fork PR (fork safety): the full head SHA to
    approve."""
    return (f"{MARKER}\n## ⏸️ perfgate: waiting for approval\n\n"
            f"New commits were pushed (head {md_code(head_sha)}). This PR comes from a fork, so its code runs on "
            "the GPU runners only after a maintainer has reviewed this commit and comments "
            f"{approve_command(head_sha)} (the full SHA: a comment that names no commit, or a shortened one, "
            "is not enough).\n")


def dispatch_failed(workflow: str, error: str) -> str:
    """Sticky comment when the dispatch failed; ``error`` is plain text (``GitHubError``'s fixed message)."""
    return (f"{MARKER}\n## ❌ perfgate: could not start the benchmark\n\n"
            f"Dispatching the workflow {md_code(workflow)} failed: {md_text(error)}\n\n"
            f"Check that `.github/workflows/{workflow}` exists on the default branch with a `workflow_dispatch` "
            "trigger and that the App may run workflows (`actions: write`).\n")


def workflow_failed(conclusion: str | None, workflow_url: str | None, problem: str) -> str:
    """Sticky comment (and check-run summary) of a run without results; ``problem`` is Markdown."""
    link = f" ([workflow run]({workflow_url}))" if workflow_url else ""
    return (f"{MARKER}\n## ❌ perfgate: no results\n\n"
            f"The benchmark workflow ended {md_code(conclusion or 'unknown')}{link} and {problem}\n")


def timed_out(hours: float, workflow_url: str | None) -> str:
    link = f" ([workflow run]({workflow_url}))" if workflow_url else ""
    return (f"{MARKER}\n## ⌛ perfgate: timed out\n\n"
            f"The benchmark run did not report back within {hours:g} h{link}. Comment `/perf run` to try again.\n")


def refusal(login: str, permission: str | None) -> str:
    """The one polite answer to a user who may not command perfgate."""
    level = f" (your permission here is `{permission}`)" if permission and permission != "none" else ""
    return (f"@{login} thanks for the interest! perfgate runs benchmarks on the project's GPU machines, so it only "
            f"takes commands from people with write, maintain or admin permission on this repository{level}. "
            "A maintainer can start a run with `/perf run`.")


def label_refusal(login: str, label: str) -> str:
    return (f"@{login} added the {md_code(label)} label, but only people with write, maintain or admin permission can start "
            "a benchmark run. A maintainer can add the label again or comment `/perf run`.")


def head_moved(head_sha: str, why: str) -> str:
    """The answer to a ``/perf run`` that does not bind to the PR's current head (fork safety);
    ``why`` is Markdown written by perfgate. The head is given in full."""
    return (f"Not started: {why}. The head is now {md_code(head_sha)}; review it and comment "
            f"{approve_command(head_sha)} to benchmark exactly that commit.")


def nothing_to_accept(head_sha: str | None) -> str:
    """``/perf accept`` when the results reported before the comment show no regression."""
    if head_sha is None:
        return "There are no perfgate results on this PR yet, so there is nothing to accept."
    return f"The results for head `{short(head_sha)}` show no regression, so there is nothing to accept."


def command_error(error: str) -> str:
    """The reply to a malformed command; ``error`` is a ``CommandError`` message (Markdown)."""
    return f"Sorry, I could not understand that command: {error}\n\n{USAGE}"


def help_text() -> str:
    return USAGE


def nothing_to_cancel() -> str:
    return "There is no perfgate run in progress on this PR."


def accepted_note(user: str, reason: str | None) -> str:
    why = f": {md_text(reason)}" if reason else ""
    return f"\n\n> ✅ Regression accepted by @{user}{why}\n"


def history_notes(notes) -> str:
    """Per regressed benchmark: its history page and whether the change is within the
    benchmark's historical noise (``notes`` from ``history_store.regression_history_notes``)."""
    if not notes:
        return ""
    lines = ["", "", "**History of the regressed benchmarks**", ""]
    for n in notes[:20]:
        within = n.get("within_noise")
        verdict = ("within its usual noise" if within else "beyond its usual noise") if within is not None \
            else "not enough history to compare"
        lines.append(f"- [{md_code(n['benchmark'])}]({n['url']}): {verdict}")
    return "\n".join(lines) + "\n"


def with_note(report_md: str, note: str, limit: int = COMMENT_LIMIT) -> str:
    """``report_md`` (already within ``limit``) plus ``note``, cutting the report if needed."""
    if not note:
        return report_md
    room = limit - len(note)
    return (report_md if len(report_md) <= room else cut_markdown(report_md, max(0, room - 2)) + "…\n") + note
