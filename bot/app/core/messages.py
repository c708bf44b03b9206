"""Every text the App writes on GitHub (sticky comment states, replies, check-run output),
as pure functions. The results comment itself is ``runner.report.render`` (the CLI's report).

Arguments named ``problem`` or ``reason`` are Markdown written by perfgate (untrusted parts
already escaped, e.g. ``bot.app.core.ingest.IngestError`` messages); every other text argument is
escaped here for its place (:mod:`runner.report.escape`). GitHub logins are GitHub's own
(``[A-Za-z0-9-]``) and are mentioned on purpose. URLs are passed in checked
(``runner.report.escape.safe_link``) or built from the App's settings.
"""

from __future__ import annotations

from runner.report.escape import md_code, md_text, plain
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


#: The titles of a check run cancelled (``bot.app.core.conclude.cancel``) and of one whose workflow
#: started (``bot.app.core.conclude.in_progress``).
CANCELLED_TITLE, IN_PROGRESS_TITLE = "Cancelled", "Benchmarking on a GPU runner"


def in_progress(workflow_url: str | None) -> str:
    """The check run's summary once the workflow run started (``workflow_url``: a checked link)."""
    return f"The workflow run started: {workflow_url or 'see the Actions tab'}."


def closed_late(headline: str) -> str:
    """The summary of a check run the App found open after its run had ended (``headline``:
    plain text of how it ended)."""
    return f"This check run was left open; its run had ended: {headline}"


def cancelled(reason: str) -> str:
    """Sticky comment of a cancelled run; ``reason`` is Markdown (e.g. :func:`superseded_by_command`)."""
    return f"{MARKER}\n## ⏹️ perfgate: cancelled\n\n{reason}\n"


# -- why runs were cancelled (Markdown: a check run's summary, :func:`cancelled`'s ``reason``)
#: A pull request closed.
PULL_CLOSED = "The pull request was closed."
#: A check run's (or suite's) "Re-run".
SUPERSEDED_BY_RERUN = "Superseded by a re-run."


def superseded_by_push(head_sha: str) -> str:
    """A new head, whose run replaces the active ones."""
    return f"Superseded by a new run at `{short(head_sha)}`."


def fork_pushed(head_sha: str) -> str:
    """A fork's new head, which waits for a maintainer's approval (:func:`fork_needs_approval`)."""
    return f"New commits were pushed to the fork (head `{short(head_sha)}`)."


def label_removed(label: str, login: str | None) -> str:
    """The trigger ``label`` (the target's configuration) was removed by ``login``."""
    return f"The `{label}` label was removed by @{login}."


def cancelled_by(login: str) -> str:
    """``/perf cancel`` by ``login``."""
    return f"Cancelled by @{login} (`/perf cancel`)."


def superseded_by_command(command_text: str, login: str) -> str:
    """Why runs were cancelled by a newer ``/perf run``: the command echoed as a code span."""
    return f"Superseded by {echo(command_text)} from @{login}."


def approve_command(head_sha: str) -> str:
    """The command that approves exactly ``head_sha``, as a code span: the full SHA, which is
    the only form ``--sha`` takes (``bot.app.core.commands.SHA_LENGTHS``)."""
    return md_code(f"/perf run --sha {head_sha}")


def fork_needs_approval(head_sha: str, labeled: bool = False) -> str:
    """Sticky comment when a fork PR is labeled or new commits arrive on it (fork safety): the
    full head SHA to approve."""
    what = ("The label is noted (head" if labeled else "New commits were pushed (head")
    return (f"{MARKER}\n## ⏸️ perfgate: waiting for approval\n\n"
            f"{what} {md_code(head_sha)}). This PR comes from a fork, so its code runs on "
            "the GPU runners only after a maintainer has reviewed this commit and comments "
            f"{approve_command(head_sha)} (the full SHA: a label, a comment that names no "
            "commit, or a shortened one, is not enough — a label approves whatever the head "
            "is when it lands, and a fork can push just before it).\n")


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


def no_report(hours: float) -> str:
    """Why a run that never reported back within ``hours`` has no results (a ``problem``)."""
    return f"it did not report back within {hours:g} h"


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


#: ``/perf run`` or ``/perf profile`` on a closed pull request.
NOTHING_TO_BENCHMARK = "This pull request is closed; there is nothing to benchmark."

# -- why a command about the default branch cannot be taken
# (``bot.app.core.handlers.bisect_command``)
#: ``/perf bisect`` without the range to search (and not in a tracking issue).
BISECT_NEEDS_RANGE = (
    "`/perf bisect` needs the range to search: `/perf bisect GOOD BAD [BENCH]` with the full SHAs "
    "of a fast commit and a later slow one on the default branch (on a commit: "
    "`/perf bisect GOOD [BENCH]`; in a regression's tracking issue, `/perf bisect` alone)")
#: ``/perf accept`` in an issue that tracks no regression.
NOT_A_TRACKING_ISSUE = ("This issue tracks no perfgate regression, so there is nothing to accept "
                        "here.")


def bisect_outside_history(shas) -> str:
    """``/perf bisect`` names commits outside the default branch's history (``shas``: full SHAs)."""
    named = ", ".join(f"`{sha}`" for sha in shas)
    verb = "is" if len(shas) == 1 else "are"
    return (f"Not started: {named} {verb} not in the history of the default branch (GitHub's "
            "compare says so). `/perf bisect` builds and runs every commit "
            "between GOOD and BAD, so both must be commits the repository merged (a pull request's "
            "commits, a fork's included, are not: `/perf run` measures a pull request)")


def not_a_runner_group(runner: str, groups) -> str:
    """``--runner`` names no runner group of the configuration (``groups``: their names)."""
    names = ", ".join(f"`{n}`" for n in groups) or "none"
    return f"`--runner {runner}` is not a runner group of the configuration (groups: {names})"


def closed_already(reason: str | None) -> str:
    """``/perf accept`` of a regression that is closed (``reason``: plain words, escaped here)."""
    return f"This regression is closed already ({md_text(reason or 'closed')})."


def accepted_note(user: str, reason: str | None) -> str:
    why = f": {md_text(reason)}" if reason else ""
    return f"\n\n> ✅ Regression accepted by @{user}{why}\n"


def config_note(problem: str | None) -> str:
    """Why the target's perfgate config on its default branch did not decide this run (``problem``
    from ``bot.app.core.facts.settled_config``: unreadable or broken), so that the defaults that did
    are no surprise; empty when the config was read as written."""
    if not problem:
        return ""
    return (f"\n\n> ⚠️ {md_text(problem)}. The thresholds, label and runner groups above are perfgate's "
            "defaults; fix the config on the default branch to use your own.\n")


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


# -- regressions on the default branch (bot.app.core.regressions)
# ----------------------------------------
#: GitHub caps an issue's title at 256 characters.
ISSUE_TITLE_LIMIT = 256


def regression_mark(key: str) -> str:
    """The hidden mark that finds a regression's tracking issue again (its key is 20 hex digits)."""
    return f"<!-- perfgate-regression {key} -->"


def culprit_mark(key: str, bisect_key: str) -> str:
    """The hidden mark of the comment on a culprit's PR (one per regression and bisect)."""
    return f"<!-- perfgate-culprit {key}/{bisect_key} -->"


def _pct(ratio: float | None) -> str:
    from runner.report.units import fmt_change

    return fmt_change(ratio)


def regression_title(benchmark: str, ratio: float | None, environment: str | None, runner: str | None) -> str:
    """The tracking issue's title (plain text: GitHub shows titles as they are)."""
    where = runner or environment or "the default branch"
    return plain(f"Performance regression: {benchmark or 'a benchmark'} {_pct(ratio)} on {where}", ISSUE_TITLE_LIMIT)


def regression_body(r, *, history_url: str | None, state: str, commit_url: str) -> str:
    """The tracking issue's body for regression ``r`` (:class:`bot.app.core.facts.RegressionInfo` or
    the same fields): what moved, where and when, the bisect's state (``state``: Markdown written
    by perfgate), and what a maintainer can do. ``commit_url``: ``https://github.com/OWNER/REPO/commit``."""
    bench = md_code(r.benchmark) if r.benchmark else "the clearest regression"
    lines = [regression_mark(r.key), f"## perfgate: {bench} {md_text(_pct(r.ratio))} on the default branch", ""]
    where = f" on runner group {md_code(r.runner)}" if r.runner else ""
    env = f" ({md_text(r.environment)})" if r.environment else ""
    source = ("a change point of its history" if r.trigger == "changepoint"
              else f"`/perf bisect` from @{r.requested_by}" if r.requested_by else "`/perf bisect`")
    lines.append(f"Found by {source}{where}{env}, between {md_code(r.good_sha)} (good) and {md_code(r.bad_sha)} "
                 f"(bad): [compare]({commit_url.rsplit('/', 1)[0]}/compare/{r.good_sha}...{r.bad_sha}).")
    if r.also:
        lines.append(f"The same commits also moved {', '.join(md_code(b) for b in r.also[:20])}"
                     + (f" and {len(r.also) - 20} more" if len(r.also) > 20 else "") + ".")
    if history_url:
        lines.append(f"History: {history_url}")
    lines += ["", f"**Bisect:** {state}", ""]
    if r.closed:
        lines.append(f"**Closed:** {md_text(r.closed_reason or 'closed')}")
    else:
        lines.append("Comment `/perf bisect` here to bisect it again, or `/perf accept [REASON]` to accept the "
                     "regression and close this issue (write permission). perfgate closes it when the benchmark "
                     "recovers.")
    return "\n".join(lines) + "\n"


def bisect_state(status: str, *, culprit: dict | None, suspects: list[dict] | None, commit_url: str,
                 pr: int | None, problem: str | None = None, more_than_one_step: bool = False,
                 compares: int | None = None, seconds: float | None = None, details_url: str | None = None) -> str:
    """One paragraph: where the bisect stands (``status``: ``queued``, ``found``, ``ambiguous``,
    ``no-regression``, ``stopped``, ``failed``). Culprit and suspects come from the bisect's
    validated document; ``problem`` is Markdown written by perfgate."""
    cost = f" ({compares} compares, {seconds:.0f} s)" if compares is not None and seconds is not None else ""
    link = f" [Report]({details_url})." if details_url else ""
    if status == "queued":
        return "dispatched to a runner of the same kind; this issue is updated when it reports back."
    if status == "found" and culprit:
        by = f" (pull request #{pr})" if pr else ""
        step = f", {md_text(_pct(culprit.get('step_ratio')))} on its own" if culprit.get("step_ratio") else ""
        also = " The range holds more than one step: see the report." if more_than_one_step else ""
        return (f"the regression came with [{md_code(str(culprit.get('sha'))[:12])}]({commit_url}/{culprit.get('sha')})"
                f"{by}: {md_text(culprit.get('subject') or '')}{step}{cost}.{also}{link}")
    if status == "ambiguous":
        names = ", ".join(f"[{md_code(str(s.get('sha'))[:12])}]({commit_url}/{s.get('sha')})" for s in (suspects or [])[:10])
        return f"the regression came with one of {names}; the others could not be measured{cost}.{link}"
    if status == "no-regression":
        return f"the bisect's first compare found no regression between good and bad on its runner{cost}.{link}"
    if status == "stopped":
        return f"the bisect stopped at its compare limit before it ended{cost}.{link}"
    return f"the bisect did not report a result: {problem or 'unknown'}"


def culprit_comment(r, *, culprit: dict, issue_url: str | None, history_url: str | None, details_url: str | None,
                    mark: str) -> str:
    """The comment on the culprit's pull request."""
    step = f" ({md_text(_pct(culprit.get('step_ratio')))} on its own)" if culprit.get("step_ratio") else ""
    lines = [f"### perfgate: this pull request slowed {md_code(r.benchmark) if r.benchmark else 'a benchmark'} "
             f"{md_text(_pct(culprit.get('ratio')))}{step}", "",
             f"A bisect of the default branch ({md_code(r.good_sha[:12])}..{md_code(r.bad_sha[:12])}"
             + (f", runner group {md_code(r.runner)}" if r.runner else "")
             + f") found that its commit {md_code(str(culprit.get('sha')))} brought the regression."]
    for label, url in (("Tracking issue", issue_url), ("Report", details_url), ("History", history_url)):
        if url:
            lines.append(f"- {label}: {url}")
    lines += ["", mark]
    return "\n".join(lines) + "\n"


def slack_text(value) -> str:
    """Untrusted text for a Slack-compatible message: one line, ``&``, ``<`` and ``>`` escaped
    as Slack's message formatting asks (no link, mention or command can be made of it)."""
    return plain(value, 300).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def regression_message(r, *, status: str, culprit: dict | None, pr: int | None, issue_url: str | None) -> str:
    """The one webhook message of a regression (Slack ``mrkdwn``)."""
    head = (f"perfgate: regression on the default branch of {slack_text(r.repository)}: "
            f"{slack_text(r.benchmark or 'a benchmark')} {slack_text(_pct(r.ratio))}"
            + (f" on {slack_text(r.runner)}" if r.runner else ""))
    if status == "found" and culprit:
        what = f"culprit {slack_text(str(culprit.get('sha'))[:12])}" + (f" (#{pr})" if pr else "") \
            + f": {slack_text(culprit.get('subject') or '')}"
    elif status == "ambiguous":
        what = "culprit among commits that could not all be measured"
    else:
        what = {"no-regression": "its bisect found no regression on its runner",
                "stopped": "its bisect stopped before it ended"}.get(status, "its bisect did not report a result")
    link = f" <{issue_url}|tracking issue>" if issue_url else ""
    return f"{head}. {what}.{link}"
