"""The App's only contact with GitHub: PyGithub authenticated as the App (thin shell).

``GithubIntegration(auth=Auth.AppAuth(app_id, private_key), base_url=GITHUB_API_URL)`` signs the
App's JWT; :meth:`Gateway.installation` gives a client acting with that installation's token
(PyGithub refreshes it; GITHUB.md). Every call here is one or two REST requests; decisions live in
``bot.app.core.handlers``. GitHub errors become :class:`GitHubError` with the HTTP status.

PyGithub's retries and pacing sleeps (:func:`idempotent_retry`: GETs, edits and deletes retried on
5xx, time-outs and rate limits as ``Retry-After`` says; POSTs never, the job's resumable steps retry
those) are fine in the worker, never in the webhook request (the view makes no GitHub call); tests
pass ``client_options`` turning them off.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
from typing import Any, Iterator

from runner.config import CONFIG_FILES
from runner.report.render import is_sticky, written_by

from ..core.facts import PullInfo, pull_from_payload
from .github_errors import (Artifact, ArtifactTooLarge, CheckRunState, Dispatched, GitHubError,
                            idempotent_retry, redact)
from .github_errors import wrap as _wrap


class Gateway:
    """The App's identity (``app_id``, PEM ``private_key``) at ``api_url`` (``GITHUB_API_URL``):
    makes installation clients. ``client_options``: more keywords of ``GithubIntegration`` (tests:
    ``{"retry": None, "seconds_between_requests": 0, "seconds_between_writes": 0}``)."""

    def __init__(self, app_id: str, private_key: str, api_url: str, client_options: dict | None = None):
        from github import Auth, GithubIntegration

        # lazy: objects are built from URLs without a GET until an attribute needs one.
        options = {"timeout": 20, "lazy": True, "retry": idempotent_retry(), **(client_options or {})}
        self.api_url = api_url.rstrip("/")
        #: seconds to wait for each answer (the REST calls and the artifact download)
        self.timeout = options["timeout"]
        self._integration = GithubIntegration(auth=Auth.AppAuth(int(app_id), private_key), base_url=self.api_url,
                                              **options)
        self._options = options
        self._bot_login: str | None = None
        #: each installation's auth, kept: it holds the installation token until shortly before
        #: it expires (PyGithub refreshes it then), so a job does not mint a token per delivery
        self._auths: dict[int, Any] = {}

    @property
    def bot_login(self) -> str | None:
        """``<app slug>[bot]``, the login of the App's comments (one ``GET /app``; None if it fails)."""
        if self._bot_login is None:
            try:
                slug = _wrap("read the App", lambda: self._integration.get_app().slug)
                self._bot_login = f"{slug}[bot]"
            except GitHubError:
                return None
        return self._bot_login

    def installation(self, installation_id: int) -> "InstallationClient":
        """A client acting as installation ``installation_id``, with the installation's token
        (minted on its first request, kept until shortly before it expires)."""
        from github import Github

        auth = self._auths.get(int(installation_id))  # a dict's get and setdefault are atomic
        if auth is None:
            gh = self._integration.get_github_for_installation(int(installation_id))
            self._auths.setdefault(int(installation_id), gh.requester.auth)
        else:
            gh = Github(auth=auth, base_url=self.api_url, **self._options)
        return InstallationClient(gh, self, int(installation_id))

    def installation_token(self, installation_id: int) -> str:
        """The installation's token (for the artifact download, which PyGithub has no call for)."""
        return _wrap("create an installation token", lambda: self.installation(installation_id)._gh.requester.auth.token)


class InstallationClient:
    """REST calls as one installation. Repositories are ``owner/name``."""

    def __init__(self, gh: Any, gateway: Gateway, installation_id: int):
        self._gh = gh
        self._gateway = gateway
        self.installation_id = installation_id

    def _repo(self, full_name: str) -> Any:
        return self._gh.get_repo(full_name)

    # -- reading --------------------------------------------------------------------------------
    def default_branch(self, repo: str) -> str:
        return _wrap(f"read {repo}", lambda: self._gh.get_repo(repo).default_branch)

    def permission(self, repo: str, login: str) -> str:
        """``admin | write | read | none`` (GitHub folds maintain into write, triage into read);
        403/404 (not a collaborator, or the App may not ask) read as ``none`` — a rate limit's
        403 is raised (``GitHubError.transient``), never read as a refusal."""
        try:
            return _wrap(f"read {login}'s permission", lambda: self._repo(repo).get_collaborator_permission(login))
        except GitHubError as exc:
            if exc.status in (403, 404) and not exc.transient:
                return "none"
            raise

    def pull(self, repo: str, number: int) -> PullInfo:
        # raw_data inside _wrap: the client is lazy, so reading it is the GET that may fail
        data = _wrap(f"read pull request #{number}", lambda: self._repo(repo).get_pull(number).raw_data)
        return pull_from_payload(data)

    def place_of(self, repo: str, branch: str, sha: str) -> str | None:
        """GitHub's compare status of ``branch...sha``: ``identical``/``behind`` (in the branch's
        history), ``ahead``/``diverged`` (outside it); None: the repository has no such commit."""
        try:
            return _wrap(f"compare {sha[:12]} with {branch}",
                         lambda: self._repo(repo).compare(branch, sha).status)
        except GitHubError as exc:
            if exc.status in (404, 422) and not exc.transient:
                return None
            raise

    def config_texts(self, repo: str, ref: str | None = None) -> dict[str, str | None]:
        """The texts of the target's configuration files at ``ref`` (default branch when None),
        ``{name: text or None}`` for ``runner.config.CONFIG_FILES``, fetched in that order up to
        the first that exists (``runner.config.from_texts`` reads them)."""
        texts: dict[str, str | None] = {}
        for name in CONFIG_FILES:
            texts[name] = self._file(repo, name, ref)
            if texts[name] is not None:
                break
        return texts

    def _file(self, repo: str, path: str, ref: str | None) -> str | None:
        kwargs = {"ref": ref} if ref else {}
        try:
            content = _wrap(f"read {path}", lambda: self._repo(repo).get_contents(path, **kwargs))
        except GitHubError as exc:
            if exc.status in (403, 404) and not exc.transient:  # a rate limit is no missing file
                return None
            raise
        if isinstance(content, list) or getattr(content, "type", "file") != "file":
            return None
        raw = getattr(content, "content", None)
        if not raw:
            return None
        return base64.b64decode(raw).decode("utf-8", "replace")

    # -- check runs ---------------------------------------------------------------------------
    def create_check_run(self, repo: str, *, name: str, head_sha: str, external_id: str, details_url: str | None,
                         status: str, title: str, summary: str, actions: list[dict] | None = None) -> int:
        kwargs: dict[str, Any] = {"external_id": external_id, "status": status,
                                  "output": {"title": title, "summary": summary}}
        if details_url:
            kwargs["details_url"] = details_url
        if actions:
            kwargs["actions"] = actions
        run = _wrap("create the check run", lambda: self._repo(repo).create_check_run(name, head_sha, **kwargs))
        return int(run.id)

    def find_check_run(self, repo: str, *, name: str, head_sha: str, external_id: str) -> int | None:
        """The id of the check run ``name`` on ``head_sha`` created with ``external_id``, or None
        (a resumed run's check run created before the job stopped)."""
        def run() -> int | None:
            for check in self._repo(repo).get_commit(head_sha).get_check_runs(check_name=name):
                if check.external_id == external_id:
                    return int(check.id)
            return None
        return _wrap("look for the check run", run)

    def check_runs(self, repo: str, *, name: str, head_sha: str) -> list[CheckRunState]:
        """Every check run ``name`` on ``head_sha`` (the sweep's look for one left open)."""
        def run() -> list[CheckRunState]:
            return [CheckRunState(int(c.id), c.external_id, c.status)
                    for c in self._repo(repo).get_commit(head_sha).get_check_runs(check_name=name)]
        return _wrap("list the check runs", run)

    def update_check_run(self, repo: str, check_run_id: int, *, status: str | None = None,
                         conclusion: str | None = None, title: str | None = None, summary: str | None = None,
                         text: str | None = None, details_url: str | None = None,
                         actions: list[dict] | None = None) -> None:
        def edit() -> None:
            run = self._repo(repo).get_check_run(int(check_run_id))
            kwargs: dict[str, Any] = {}
            if status:
                kwargs["status"] = status
            if conclusion:
                kwargs["conclusion"] = conclusion
            if details_url:
                kwargs["details_url"] = details_url
            if actions:
                kwargs["actions"] = actions
            if title is not None and summary is not None:
                output = {"title": title, "summary": summary}
                if text:
                    output["text"] = text
                kwargs["output"] = output
            run.edit(**kwargs)
        _wrap("update the check run", edit)

    # -- comments and reactions ---------------------------------------------------------------
    def upsert_sticky(self, repo: str, number: int, body: str, comment_id: int | None = None) -> int:
        """Edit comment ``comment_id`` (or the oldest comment of this App starting with the
        ``<!-- perfgate -->`` marker); create it when there is none. Returns its id."""
        def run() -> int:
            issue = self._repo(repo).get_issue(number)
            if comment_id:
                try:
                    comment = issue.get_comment(int(comment_id))
                    comment.edit(body)
                    return int(comment.id)
                except Exception as exc:  # noqa: BLE001 - deleted by someone: fall back to searching
                    if getattr(exc, "status", None) != 404:
                        raise
            for comment in self._ours(issue):
                comment.edit(body)
                return int(comment.id)
            return int(issue.create_comment(body).id)
        return _wrap(f"write the perfgate comment on #{number}", run)

    def _ours(self, issue: Any, mark: str | None = None) -> Iterator[Any]:
        """This App's sticky comments on ``issue`` (:func:`runner.report.render.is_sticky`), or with
        ``mark`` its comments whose body contains it."""
        login = self._gateway.bot_login
        for comment in issue.get_comments():
            user, body = comment.user, comment.body
            who = ((None, login) if user is None
                   else (user.login, login, user.type if login is None else None))
            if ((mark in (body or "") and written_by(*who)) if mark is not None
                    else is_sticky(body, *who)):
                yield comment

    def stickies(self, repo: str, number: int) -> list[int]:
        """The ids of this App's comments on #``number`` that start with the marker, oldest first
        (more than one: a create GitHub carried out after the retry's look-up)."""
        return _wrap(f"list the perfgate comments on #{number}",
                     lambda: [int(c.id) for c in self._ours(self._repo(repo).get_issue(number))])

    def delete_comment(self, repo: str, number: int, comment_id: int) -> None:
        """Delete comment ``comment_id`` of #``number`` (one already gone is not an error)."""
        def run() -> None:
            try:
                self._repo(repo).get_issue(number).get_comment(int(comment_id)).delete()
            except Exception as exc:  # noqa: BLE001 - deleted already
                if getattr(exc, "status", None) != 404:
                    raise
        _wrap(f"delete a duplicate comment on #{number}", run)

    def reply(self, repo: str, number: int, body: str) -> int:
        return _wrap(f"comment on #{number}", lambda: int(self._repo(repo).get_issue(number).create_comment(body).id))

    def find_reply(self, repo: str, number: int, mark: str) -> int | None:
        """The id of this App's comment on #``number`` whose body contains ``mark``, or None: how
        a resumed job learns that its reply was posted before it stopped."""
        def run() -> int | None:
            found = next(self._ours(self._repo(repo).get_issue(number), mark), None)
            return int(found.id) if found is not None else None
        return _wrap(f"look for a reply on #{number}", run)

    def react(self, repo: str, number: int, comment_id: int, content: str) -> None:
        _wrap("add a reaction",
              lambda: self._repo(repo).get_issue(number).get_comment(int(comment_id)).create_reaction(content))

    # -- issues and the pull requests of a commit (regressions on the default branch) ---------
    def create_issue(self, repo: str, title: str, body: str) -> int:
        """Open an issue; its number."""
        return _wrap("open an issue", lambda: int(self._repo(repo).create_issue(title, body=body).number))

    def edit_issue(self, repo: str, number: int, *, title: str, body: str, close: str | None = None) -> None:
        """Edit issue ``number``'s title and body; ``close`` (``completed``/``not_planned``) closes it."""
        def run() -> None:
            kwargs: dict[str, Any] = {"title": title, "body": body}
            if close:
                kwargs.update(state="closed", state_reason=close)
            self._repo(repo).get_issue(int(number)).edit(**kwargs)
        _wrap(f"edit issue #{number}", run)

    def find_issue(self, repo: str, mark: str, limit: int = 1000) -> int | None:
        """The number of the newest issue this App opened whose body contains ``mark``, among its
        ``limit`` newest (open or closed), or None: how a job learns that an issue it opened
        before it stopped is there."""
        def run() -> int | None:
            login = self._gateway.bot_login
            kwargs: dict[str, Any] = {"state": "all", "sort": "created", "direction": "desc"}
            if login:
                kwargs["creator"] = login
            for i, issue in enumerate(self._repo(repo).get_issues(**kwargs)):
                if i >= limit:
                    break
                if issue.pull_request is None and mark in (issue.body or ""):
                    return int(issue.number)
            return None
        return _wrap("look for an issue", run)

    def pulls_of_commit(self, repo: str, sha: str) -> list[int]:
        """The numbers of the merged pull requests that brought commit ``sha`` (GitHub's list of a
        commit's pull requests, merged ones only)."""
        def run() -> list[int]:
            return [int(p.number) for p in self._repo(repo).get_commit(sha).get_pulls() if p.merged_at is not None]
        return _wrap(f"read the pull requests of {sha[:12]}", run)

    # -- workflows ----------------------------------------------------------------------------
    def dispatch_workflow(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> Dispatched:
        """``workflow_dispatch`` of ``workflow`` on branch ``ref`` with ``inputs`` (≤ 25), asking
        for the new run's id (``return_run_details``). GitHub Enterprise Server releases that do
        not know that key answer 422 "is not a permitted key": the dispatch is sent again without
        it, and the run is matched later by its name (``run-name: perfgate <run-id>``)."""
        from github import GithubException

        def run() -> Dispatched:
            wf = self._repo(repo).get_workflow(workflow)
            try:
                result = wf.create_dispatch(ref, inputs, throw=True, return_run_details=True)
            except GithubException as exc:
                if exc.status != 422 or "return_run_details" not in str(getattr(exc, "data", "") or exc):
                    raise
                result = wf.create_dispatch(ref, inputs, throw=True)
            if result is True or result is None:  # 204: a server that gives no run details
                return Dispatched(None, None)
            return Dispatched(int(result.id), result.html_url)
        return _wrap(f"dispatch {workflow}", run)

    def find_dispatched(self, repo: str, workflow: str, title: str, since, limit: int = 500) -> Dispatched | None:
        """The newest ``workflow_dispatch`` run of ``workflow`` named ``title`` (its
        ``display_title``: the workflow's ``run-name``, ``perfgate <run-id>``) among the newest
        ``limit`` created since ``since`` (aware datetime; a minute of clock skew allowed), or
        None: how a resumed run learns that its dispatch went through before the job stopped."""
        created = (since - _dt.timedelta(minutes=1)).astimezone(_dt.timezone.utc).strftime(">=%Y-%m-%dT%H:%M:%SZ")

        def run() -> Dispatched | None:
            runs = self._repo(repo).get_workflow(workflow).get_runs(event="workflow_dispatch", created=created)
            for i, found in enumerate(runs):
                if i >= limit:
                    break
                if getattr(found, "display_title", None) == title:
                    return Dispatched(int(found.id), found.html_url)
            return None
        return _wrap(f"look for the run of {workflow}", run)

    def cancel_workflow_run(self, repo: str, run_id: int) -> None:
        """Cancel a workflow run; 409 (already finished) is not an error."""
        try:
            _wrap("cancel the workflow run", lambda: self._repo(repo).get_workflow_run(int(run_id)).cancel())
        except GitHubError as exc:
            if exc.status not in (404, 409):
                raise

    def artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        def run() -> list[Artifact]:
            from github.Artifact import Artifact as Listed
            from github.PaginatedList import PaginatedList

            repository = self._repo(repo)  # lazy: no GET of the repository, nor of the workflow run
            url = f"{repository.url}/actions/runs/{int(run_id)}/artifacts"
            listed = PaginatedList(Listed, repository.requester, url, None, list_item="artifacts")
            return [Artifact(int(a.id), a.name, int(a.size_in_bytes or 0), a.archive_download_url, bool(a.expired))
                    for a in listed]
        return _wrap("list the run's artifacts", run)

    def download(self, url: str, limit: int) -> bytes:
        """GET an artifact's ``archive_download_url`` with the installation token; GitHub
        answers 302 to a short-lived storage URL, fetched without the token. At most ``limit``
        bytes are read.

        Raises:
            ArtifactTooLarge: the archive exceeds ``limit`` bytes.
            GitHubError: any other failure.
        """
        import requests

        token = self._gateway.installation_token(self.installation_id)
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                   "X-GitHub-Api-Version": "2022-11-28"}
        try:
            timeout = self._gateway.timeout
            first = requests.get(url, headers=headers, allow_redirects=False, timeout=timeout, stream=True)
            if first.status_code in (301, 302, 303, 307, 308) and first.headers.get("Location"):
                first.close()
                response = requests.get(first.headers["Location"], timeout=timeout, stream=True)
            else:
                response = first
            with response:
                if response.status_code != 200:
                    limited = response.status_code in (403, 429) and (
                        response.headers.get("Retry-After") or "rate limit" in response.text[:2000].lower())
                    raise GitHubError(response.status_code,
                                      f"downloading the artifact answered HTTP {response.status_code}",
                                      f"downloading the artifact answered HTTP {response.status_code}"
                                      + (" (secondary rate limit)" if limited else ""))
                declared = int(response.headers.get("Content-Length") or 0)
                if declared > limit:
                    raise ArtifactTooLarge(413, f"the artifact is {declared} bytes, over the limit of {limit}")
                buffer = io.BytesIO()
                for chunk in response.iter_content(65536):
                    buffer.write(chunk)
                    if buffer.tell() > limit:
                        raise ArtifactTooLarge(413, f"the artifact is over the limit of {limit} bytes")
                return buffer.getvalue()
        except requests.RequestException as exc:
            raise GitHubError(0, "could not download the artifact (the connection failed)",
                              redact(f"could not download the artifact: {type(exc).__name__}: {exc}")) from None
