"""GitHub as a signed-in user or for the App's registration (thin shell): the OAuth web flow of
``bot.web.signin`` (:func:`oauth_login_url`, :func:`oauth_user`, :func:`user_can_read`,
:func:`revoke_user_token`) and the manifest's conversion of ``bot.web.setup``
(:func:`convert_manifest`). The App's own calls, as an installation, are
``bot.app.github.gateway``'s.
"""

from __future__ import annotations

from typing import Any

from .github_errors import GitHubError
from .github_errors import wrap as _wrap


def _user_client(api_url: str, token: str | None = None, client_options: dict | None = None) -> Any:
    from github import Auth, Github

    options = {"timeout": 20, "lazy": True, **(client_options or {})}
    return Github(auth=Auth.Token(token) if token else None, base_url=api_url.rstrip("/"), **options)


def oauth_login_url(api_url: str, client_id: str, client_secret: str, redirect_uri: str, state: str) -> str:
    """Where to send the browser to sign in (``<GitHub web host>/login/oauth/authorize``)."""
    app = _user_client(api_url).get_oauth_application(client_id, client_secret)
    return app.get_login_url(redirect_uri=redirect_uri, state=state)


def oauth_user(api_url: str, client_id: str, client_secret: str, code: str,
               client_options: dict | None = None) -> tuple[str, str]:
    """Exchange the code GitHub redirected back with for a user token; ``(login, token)``.

    Raises:
        GitHubError: the code is bad or expired, or GitHub is unreachable.
    """
    def run() -> tuple[str, str]:
        gh = _user_client(api_url, client_options=client_options)
        token = gh.get_oauth_application(client_id, client_secret).get_access_token(code).token
        if not token:
            raise GitHubError(401, "GitHub returned no access token")
        return _user_client(api_url, token, client_options).get_user().login, token
    return _wrap("sign you in", run)


def user_can_read(api_url: str, token: str, repository: str, client_options: dict | None = None) -> bool:
    """May the user of ``token`` read ``owner/name``? (``GET /repos/{owner}/{repo}`` with their
    token: 401/403/404 mean no; a user token of a GitHub App sees only repositories the App is
    installed on.)

    Raises:
        GitHubError: any other failure (GitHub unreachable).
    """
    try:
        repo = _wrap(f"read {repository}", lambda: _user_client(api_url, token, client_options).get_repo(repository))
        permissions = _wrap(f"read {repository}", lambda: repo.permissions)
    except GitHubError as exc:
        if exc.status in (401, 403, 404):
            return False
        raise
    return permissions is None or bool(permissions.pull)


def revoke_user_token(api_url: str, client_id: str, client_secret: str, token: str,
                      client_options: dict | None = None) -> bool:
    """Revoke a user's token at GitHub (``DELETE /applications/{client_id}/token``, HTTP Basic
    with the App's OAuth ``client_id``/``client_secret``): at sign-out, so a copied token dies
    with the session. True when GitHub revoked it, False when it did not know it (404/422:
    expired or revoked already).

    Raises:
        GitHubError: any other failure (GitHub unreachable, 5xx).
    """
    from urllib.parse import quote

    from github import Auth, Github

    def run() -> bool:
        options = {"timeout": 20, "lazy": True, **(client_options or {})}
        gh = Github(auth=Auth.Login(client_id, client_secret), base_url=api_url.rstrip("/"), **options)
        gh.requester.requestJsonAndCheck("DELETE", f"/applications/{quote(client_id, safe='')}/token",
                                         input={"access_token": token})
        return True
    try:
        return _wrap("revoke the sign-in token", run)
    except GitHubError as exc:
        if exc.status in (404, 422):
            return False
        raise


# -- registering the App from its manifest (bot.web.setup) ---------------------------------------
def convert_manifest(api_url: str, code: str, client_options: dict | None = None) -> dict:
    """GitHub's answer to ``POST /app-manifests/{code}/conversions`` (no authentication): the
    new App's ``id``, ``slug``, ``webhook_secret``, ``pem``, ``client_id``, ``client_secret``.

    Raises:
        GitHubError: GitHub refused the code (expired after an hour, used, unknown) or is
            unreachable.
    """
    def run() -> dict:
        _, data = _user_client(api_url, client_options=client_options).requester.requestJsonAndCheck(
            "POST", f"/app-manifests/{code}/conversions")
        return data if isinstance(data, dict) else {}
    return _wrap("register the App", run)
