"""Regressions on the default branch, the shell: the culprit's pull request a bisect's conclusion
needs (the series a result touched, the tracked regressions and a bisect's regression come
with the conclusion's facts, ``bot.app.facts.Conclusion``), and the actions only they use (the tracked rows, the tracking issue, the comment on the culprit, the one
message), each idempotent so that a retried job may carry it out again:

- :class:`~bot.app.actions.OpenRegression`: ``INSERT … ON CONFLICT DO NOTHING`` by key;
- :class:`~bot.app.actions.UpsertTrackingIssue`: the issue's number once known, else the App's
  issue with the regression's hidden mark, else a new one (a retry after a lost answer finds it);
- :class:`~bot.app.actions.CommentOnCulprit`: not posted when a comment of the App's with its
  mark is there;
- :class:`~bot.app.actions.Notify`: claimed in the database (``notified_at``) before it is sent,
  given back only when it surely did not leave (:class:`bot.app.outgoing.NotSent`): at most once.

``bot.app.effects`` carries these out as it does every action (its handlers include
:data:`HANDLERS`); ``bot.app.runs`` carries out what :func:`conclude_bisect` returns where a
bisect ends.
"""

from __future__ import annotations

import logging

from ..db import utc_now
from ..history import reads as history_reads
from . import messages, notify, outgoing, regressions
from . import store as app_store
from .actions import Action, CommentOnCulprit, Notify, OpenRegression, SaveRegression, UpsertTrackingIssue
from .facts import RegressionInfo, RunInfo
from .gather import config_of
from .gateway import InstallationClient
from .github_errors import GitHubError

log = logging.getLogger("perfgate.bot")

# -- facts and decisions ------------------------------------------------------------------------------
def culprit_pr(rt, client: InstallationClient, repository: str, culprit: dict) -> int | None:
    """The pull request that merged ``culprit`` (``bot.app.regressions.found_culprit``): as the App
    recorded it (``RecordMerge``), else as GitHub lists the commit's merged pull requests, else as
    the commit's subject names it (``bot.app.regressions.named_pr``).

    Raises:
        GitHubError: GitHub did not answer (transient).
    """
    with rt.db.session() as session:
        number = history_reads.pull_request_of_commit(session, repository, culprit["sha"])
    if number is not None:
        return number
    try:
        merged = client.pulls_of_commit(repository, culprit["sha"])
    except GitHubError as exc:
        if exc.transient:
            raise
        merged = []
    return merged[0] if merged else regressions.named_pr(culprit)


def conclude_bisect(rt, client: InstallationClient, run: RunInfo, doc: dict,
                    regression: RegressionInfo | None) -> list[Action]:
    """A bisect's results are stored (:func:`bot.app.regressions.bisect_concluded`; ``regression``:
    the one it bisects, ``bot.app.facts.Conclusion.regression``), with its culprit's pull request."""
    culprit = regressions.found_culprit(doc)
    pr = culprit_pr(rt, client, run.repository, culprit) if culprit is not None else None
    return list(regressions.bisect_concluded(
        regression, run, doc, culprit_pr=pr, details_url=rt.details_url(run.key), public_url=rt.settings.public_url,
        github_url=rt.settings.github_url))


# -- actions ------------------------------------------------------------------------------------------
def _open(rt, client, a: OpenRegression) -> None:
    with rt.db.session() as session, session.begin():
        app_store.insert_regression(session, a.spec)


def _save(rt, client, a: SaveRegression) -> None:
    with rt.db.session() as session, session.begin():
        app_store.update_regression(session, a.key, **a.changes)


def _tracking_issue(rt, client: InstallationClient, a: UpsertTrackingIssue) -> None:
    with rt.db.session() as session:
        row = app_store.get_regression(session, a.key)
        number = row.issue_number if row is not None else None
    if number is None:
        number = client.find_issue(a.repository, messages.regression_mark(a.key))
        created = number is None
        if created:
            number = client.create_issue(a.repository, a.title, a.body)
        with rt.db.session() as session, session.begin():
            app_store.update_regression(session, a.key, issue_number=number)
        if created and not a.close:
            return
    client.edit_issue(a.repository, number, title=a.title, body=a.body, close=a.close)


def _comment_on_culprit(rt, client: InstallationClient, a: CommentOnCulprit) -> None:
    mark = messages.culprit_mark(a.key, a.bisect_key)
    try:
        if client.find_reply(a.repository, a.pr_number, mark) is not None:
            return
        client.reply(a.repository, a.pr_number, a.body)
    except GitHubError as exc:
        if exc.transient:
            raise
        # the number the history or the commit named is not a pull request here: the issue has it
        log.warning("%s#%s: no comment on the culprit's pull request: %s", a.repository, a.pr_number, exc.detail)


def _notify(rt, client: InstallationClient, a: Notify) -> None:
    """Send the regression's one message, if the default branch configures a webhook."""

    url = config_of(client, a.repository).regression_webhook
    if not url:
        return
    with rt.db.session() as session, session.begin():
        if not app_store.claim_notification(session, a.key, utc_now()):
            return  # sent (or being sent) by another job: never twice
    try:
        outgoing.post(url, notify.payload(a.text), allow=rt.settings.webhook_allow,
                      timeout=rt.settings.webhook_timeout, ca_certs=rt.settings.ca_bundle)
    except outgoing.NotSent as exc:
        with rt.db.session() as session, session.begin():
            app_store.release_notification(session, a.key)
        raise GitHubError(0, "the regression webhook could not be reached", str(exc)) from None
    except (outgoing.MaybeSent, notify.NotifyRefused) as exc:
        log.warning("%s: the message of regression %s: %s (not sent again)", a.repository, a.key, exc)


#: The handlers of the actions this module carries out (``bot.app.effects`` merges them).
HANDLERS = {OpenRegression: _open, SaveRegression: _save, UpsertTrackingIssue: _tracking_issue,
            CommentOnCulprit: _comment_on_culprit, Notify: _notify}
