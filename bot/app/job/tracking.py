"""Regressions on the default branch, the shell: the actions only they use (the tracked rows, the
tracking issue, the comment on the culprit, the one message), each idempotent so that a retried
job may carry it out again (what a result or a bisect means for them is decided with the
conclusion's facts, ``bot.app.core.facts.Conclusion``, by ``bot.app.core.regressions``):

- :class:`~bot.app.core.actions.OpenRegression`: ``INSERT … ON CONFLICT DO NOTHING`` by key;
- :class:`~bot.app.core.actions.UpsertTrackingIssue`: the issue's number once known, else the App's
  issue with the regression's hidden mark, else a new one (a retry after a lost answer finds it);
- :class:`~bot.app.core.actions.CommentOnCulprit`: not posted when a comment of the App's with its
  mark is there;
- :class:`~bot.app.core.actions.Notify`: claimed in the database (``notified_at``) before it is
  sent, given back only when it surely did not leave (:class:`bot.app.github.outgoing.NotSent`): at
  most once.

``bot.app.job.effects`` carries these out as it does every action (its handlers include
:data:`HANDLERS`).
"""

from __future__ import annotations

import logging

from ...db import utc_now
from ..core import messages, notify
from ..github import outgoing
from ..store import store as app_store
from ..core.actions import (CommentOnCulprit, Notify, OpenRegression, SaveRegression,
                            UpsertTrackingIssue)
from .gather import config_of
from ..github.gateway import InstallationClient
from ..github.github_errors import GitHubError

log = logging.getLogger("perfgate.bot")


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


#: The handlers of the actions this module carries out (``bot.app.job.effects`` merges them).
HANDLERS = {OpenRegression: _open, SaveRegression: _save, UpsertTrackingIssue: _tracking_issue,
            CommentOnCulprit: _comment_on_culprit, Notify: _notify}
