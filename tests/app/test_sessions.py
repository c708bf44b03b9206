"""Signing in keeps the user's GitHub token on the server (security review N6): the review's
probes (decode the cookie: no token; sign out, then replay the old cookie: refused; the token
revoked at GitHub), the cookie's attributes and lifetime, the refusal of sign-in without an
https address, and properties of the cookie and session handling."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import os
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot import create_app
from bot.web import sessions
from runner.errors import UserError

from .test_read_access import SECRET_REPO, SESSION_SECRET, _label_both, _runs, _sign_in, gh  # noqa: F401

EXAMPLES = int(os.environ.get("PERFGATE_FUZZ_EXAMPLES", "60"))


@pytest.fixture
def oauth_app(app_env, gh):  # noqa: F811
    gh.state.add_oauth_app("Iv1.perfgate", "oauth-client-secret")
    flask_app = create_app({**app_env, "GITHUB_CLIENT_ID": "Iv1.perfgate", "GITHUB_CLIENT_SECRET": "oauth-client-secret",
                            "PERFGATE_SESSION_SECRET": SESSION_SECRET})
    yield flask_app
    flask_app.extensions["perfgate"]["db"].dispose()


def _cookies(response) -> dict[str, SimpleCookie]:
    found = {}
    for header in response.headers.getlist("Set-Cookie"):
        jar = SimpleCookie()
        jar.load(header)
        found.update({name: morsel for name, morsel in jar.items()})
    return found


def _signed_in(oauth_app, gh, login="alice"):  # noqa: F811
    client = oauth_app.test_client()
    gh.state.sign_in(login, {SECRET_REPO})
    done = _sign_in(client, gh, "/")
    assert done.status_code == 302
    (token,) = [t for t, held in gh.state.tokens.items() if held.login == login]
    return client, done, token


def test_the_cookie_holds_a_random_id_and_no_token(oauth_app, gh):  # noqa: F811
    client, done, token = _signed_in(oauth_app, gh)
    cookies = _cookies(done)
    session_cookie = cookies[sessions.COOKIE]
    value = session_cookie.value
    assert sessions.well_formed(value)
    for text in (value, *(m.value for m in cookies.values())):  # decoded without any secret: no token
        assert token not in text
        try:
            decoded = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            continue
        assert token.encode() not in decoded
    assert session_cookie["httponly"] and session_cookie["secure"] and session_cookie["samesite"] == "Lax"
    assert int(session_cookie["max-age"]) == 8 * 3600 and session_cookie["path"] == "/"
    with oauth_app.extensions["perfgate"]["db"].session() as s:
        (row,) = s.query(sessions.WebSession).all()
        assert row.login == "alice" and row.id_hash == sessions.id_hash(value) and value not in row.id_hash
        assert token not in row.token  # encrypted at rest
        assert oauth_app.extensions["perfgate_signin"]["box"].open(row.token) == token
    assert oauth_app.secret_key is None  # Flask's client-side session is not in use


def test_sign_out_revokes_the_token_and_the_old_cookie_is_refused(oauth_app, gh):  # noqa: F811
    client, done, token = _signed_in(oauth_app, gh)
    _label_both(client)
    key = _runs(oauth_app)[SECRET_REPO]
    assert client.get(f"/api/runs/{key}").status_code == 200
    old = _cookies(done)[sessions.COOKIE].value
    assert requests.get(f"{gh.url}/user", headers={"Authorization": f"token {token}"}, timeout=5).status_code == 200

    out = client.get("/logout")
    assert out.status_code == 302
    assert _cookies(out)[sessions.COOKIE].value == ""  # the browser forgets it
    (revocation,) = gh.calls("apps/delete-token")
    assert revocation.method == "DELETE" and revocation.path == "/applications/Iv1.perfgate/token"
    assert revocation.body == {"access_token": token} and gh.state.revoked == [token]
    assert requests.get(f"{gh.url}/user", headers={"Authorization": f"token {token}"}, timeout=5).status_code == 401

    replay = oauth_app.test_client()  # the old cookie, copied before signing out
    replay.set_cookie(sessions.COOKIE, old)
    assert replay.get(f"/api/runs/{key}").status_code == 404
    assert replay.get(f"/runs/{key}").status_code == 302
    assert "Signed in as" not in replay.get("/").get_data(as_text=True)
    with oauth_app.extensions["perfgate"]["db"].session() as s:
        assert sessions.count(s) == 0


def test_a_session_ends_after_its_lifetime(oauth_app, gh):  # noqa: F811
    client, done, _ = _signed_in(oauth_app, gh)
    assert "Signed in as alice" in client.get("/").get_data(as_text=True)
    with oauth_app.extensions["perfgate"]["db"].session() as s, s.begin():
        (row,) = s.query(sessions.WebSession).all()
        row.expires_at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    assert "Signed in as" not in client.get("/").get_data(as_text=True)
    with oauth_app.extensions["perfgate"]["db"].session() as s:
        assert sessions.count(s) == 0  # the expired row is deleted when it is read


def test_the_callback_belongs_to_the_browser_that_started_the_sign_in(oauth_app, gh):  # noqa: F811
    gh.state.sign_in("alice", {SECRET_REPO})
    starter, stranger = oauth_app.test_client(), oauth_app.test_client()
    start = starter.get("/login?next=/")
    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    callback = urlsplit(back.headers["Location"])
    # the right state and code, from a browser without the login cookie: refused, nothing exchanged
    assert stranger.get(f"{callback.path}?{callback.query}").status_code == 400
    assert gh.calls("oauth/access-token") == []
    assert starter.get(f"{callback.path}?{callback.query}").status_code == 302
    assert len(gh.calls("oauth/access-token")) == 1


def test_signing_in_needs_an_https_public_url(app_env):
    oauth = {"GITHUB_CLIENT_ID": "Iv1.x", "GITHUB_CLIENT_SECRET": "y", "PERFGATE_SESSION_SECRET": SESSION_SECRET}
    for public in ("", "http://perfgate.example.org", "http://10.0.0.7:8000", "ftp://x"):
        with pytest.raises(UserError, match="PERFGATE_PUBLIC_URL"):
            create_app({**app_env, **oauth, "PERFGATE_PUBLIC_URL": public})
    local = create_app({**app_env, **oauth, "PERFGATE_PUBLIC_URL": "http://127.0.0.1:8000"})
    try:  # on one's own machine: allowed, and the cookie cannot be Secure over http
        assert local.extensions["perfgate_signin"]["secure"] is False
        start = local.test_client().get("/login")
        assert start.status_code == 302 and "redirect_uri=http%3A%2F%2F127.0.0.1%3A8000%2Flogin%2Fcallback" in \
            start.headers["Location"]
    finally:
        local.extensions["perfgate"]["db"].dispose()


def test_the_login_redirect_never_comes_from_the_host_header(oauth_app):
    start = oauth_app.test_client().get("/login", headers={"Host": "evil.example"})
    assert "evil.example" not in start.headers["Location"]
    assert "perfgate.example.org%2Flogin%2Fcallback" in start.headers["Location"]


# -- properties ---------------------------------------------------------------------------------

def _mutations(value: str):
    return st.one_of(
        st.integers(0, len(value) - 1).flatmap(lambda i: st.sampled_from("Aa0_-Zz9").map(
            lambda c: value[:i] + c + value[i + 1:])),
        st.integers(0, len(value) - 1).map(lambda i: value[:i]),
        st.text(min_size=1, max_size=4).map(lambda t: value + t),
        st.just(value.upper()), st.just(sessions.id_hash(value)))


@pytest.fixture
def live(oauth_app, gh):  # noqa: F811
    """A signed-in browser's cookie value and a private repository's run it may read."""
    client, done, _ = _signed_in(oauth_app, gh)
    _label_both(client)
    return _cookies(done)[sessions.COOKIE].value, _runs(oauth_app)[SECRET_REPO]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_cookie_but_the_live_one_signs_anyone_in(oauth_app, live, data):
    """Whatever a visitor puts in the cookie — random text, a near miss of a live id, its hash —
    they are anonymous, unless it is exactly the live id (the examples share one app: visiting
    changes nothing in it)."""
    value_of_live, key = live
    value = data.draw(st.one_of(st.text(max_size=80), st.text(alphabet="ABCabc019_-", min_size=43, max_size=43),
                                _mutations(value_of_live), st.just(value_of_live)))
    visitor = oauth_app.test_client()
    visitor.set_cookie(sessions.COOKIE, value)
    answer = visitor.get(f"/api/runs/{key}")
    assert answer.status_code == (200 if value == value_of_live else 404)


ops = st.lists(st.tuples(st.sampled_from(["create", "end", "find", "later"]), st.integers(0, 5)), max_size=30)


@settings(max_examples=EXAMPLES, deadline=None)
@given(ops)
def test_a_session_is_found_exactly_while_it_was_made_not_ended_and_not_expired(tmp_path_factory, steps):
    """The store against a model: ids made by ``create`` are found until ``end`` or
    :data:`sessions.LIFETIME` has passed; nothing else is ever found."""
    from bot.db import open_database

    database = open_database(f"sqlite:///{tmp_path_factory.mktemp('s') / 'db.sqlite'}")
    now = dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc)
    issued: list[tuple[str, dt.datetime]] = []
    ended: set[str] = set()
    try:
        for op, index in steps:
            with database.session() as s, s.begin():
                if op == "create":
                    issued.append((sessions.create(s, f"user{index}", None, now), now))
                elif op == "later":
                    now += dt.timedelta(hours=index + 1)
                elif issued:
                    value, made = issued[index % len(issued)]
                    if op == "end":
                        sessions.end(s, value)
                        ended.add(value)
                    else:
                        row = sessions.find(s, value, now)
                        expected = value not in ended and now < made + sessions.LIFETIME
                        assert (row is not None) == expected
                        if not expected:
                            ended.add(value)  # an expired row is gone for good
                assert sessions.find(s, "x" * 43, now) is None
        assert len({v for v, _ in issued}) == len(issued)  # ids never repeat
    finally:
        database.dispose()


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789abcdef", min_size=36, max_size=40).map(lambda t: "ghu_" + t),
                 st.text(min_size=1, max_size=200)), st.binary(min_size=1, max_size=8))
def test_a_sealed_token_opens_only_unaltered_and_with_its_secret(token, noise):
    box = sessions.TokenBox(SESSION_SECRET)
    sealed = box.seal(token)
    assert box.open(sealed) == token
    assert len(token) < 8 or token not in sealed
    assert sessions.TokenBox("another secret of at least 32 chars!!").open(sealed) is None
    altered = sealed[:-4] + base64.urlsafe_b64encode(noise).decode()[:4]
    assert altered == sealed or box.open(altered) is None
    assert box.open(None) is None and box.open("") is None
