"""``/setup`` belongs to the operator (security review N4): the one-time setup token, the state
bound to the browser and used once, the stranger's callback of the review, refusal once
registered, no ``Host``-derived address, and a fuzz test of the callback's parameters."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import UserError
from tests.fake_github.fixtures import fake_github, github_openapi  # noqa: F401

from .test_manifest import operator, page_state, setup_app  # noqa: F401

EXAMPLES = int(os.environ.get("PERFGATE_FUZZ_EXAMPLES", "60"))


def _files(home) -> list[str]:
    return sorted(p.name for p in home.iterdir()) if home.exists() else []


def test_a_strangers_callback_stores_nothing_and_the_operator_registers_their_app(setup_app):  # noqa: F811
    app, home, github, token = setup_app
    stranger = app.test_client()
    first = stranger.get("/setup")  # the review's probe: an anonymous visitor asks for the page
    assert first.status_code == 403 and "state=" not in first.get_data(as_text=True)
    assert stranger.get("/setup?token=guess").status_code == 403
    admin = operator(app, token)
    state = page_state(admin)
    # the stranger registered an App of their own and calls back with its code — even with the
    # operator's state (seen over a shoulder, in a log): refused, nothing converted or stored
    assert stranger.get(f"/setup/callback?code=strangers1&state={state}").status_code == 403
    assert stranger.get("/setup/callback?code=strangers1&state=").status_code == 403
    assert github.calls("apps/create-from-manifest") == [] and _files(home) == []
    # the token is spent: the stranger cannot be admitted with it either
    late = stranger.get(f"/setup?token={token}")
    assert late.status_code == 403 and "restart" in late.get_data(as_text=True)
    # the operator's own callback goes through, and shows which App (id and owner) was registered
    done = admin.get(f"/setup/callback?code=operator1&state={state}")
    assert done.status_code == 200 and len(github.calls("apps/create-from-manifest")) == 1
    assert github.calls("apps/create-from-manifest")[0].path == "/app-manifests/operator1/conversions"
    html = done.get_data(as_text=True)
    assert re.search(r"\(id \d+,\s+owned by <strong>[^<]+</strong>\)", html)
    assert _files(home) == ["github-app.env", "github-app.pem"]
    # once registered, the pages refuse everyone else and show no path
    for client in (stranger, app.test_client()):
        for path in ("/setup", f"/setup/callback?code=x&state={state}", f"/setup?token={token}"):
            answer = client.get(path)
            assert answer.status_code == 410 and str(home) not in answer.get_data(as_text=True)
    assert len(github.calls("apps/create-from-manifest")) == 1


def test_a_state_is_used_once_and_expires(setup_app):  # noqa: F811
    app, home, github, token = setup_app
    admin = operator(app, token)
    state = page_state(admin)
    assert admin.get(f"/setup/callback?code=bad%20code&state={state}").status_code == 400  # used up
    assert admin.get(f"/setup/callback?code=good1&state={state}").status_code == 403
    old = page_state(admin)
    cfg = app.extensions["perfgate_setup"]
    cfg["states"][old] = (cfg["states"][old][0], 0.0)  # an hour later
    assert admin.get(f"/setup/callback?code=good1&state={old}").status_code == 403
    assert github.calls("apps/create-from-manifest") == [] and _files(home) == []
    states = {page_state(admin) for _ in range(12)}  # each visit makes one, a few are kept
    assert len(states) == 12 and sum(1 for s in states if s in cfg["states"]) <= 8


def test_the_manifest_comes_from_configuration_never_from_the_host_header(setup_app):  # noqa: F811
    app, _, _, token = setup_app
    admin = operator(app, token)
    cookie = admin.get_cookie("perfgate_setup", path="/setup").value
    answer = app.test_client(use_cookies=False).get("/setup", headers={"Host": "evil.example",
                                                                       "Cookie": f"perfgate_setup={cookie}"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "evil.example" not in html and "https://perfgate.example.com/webhook" in html


@pytest.mark.parametrize("public_url", ["", "http://perfgate.example.com", "https://perfgate.example.com/?x=1"])
def test_setup_needs_the_public_https_address(tmp_path, public_url):
    from bot import create_app
    from bot.web.setup import init_setup

    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", "TESTING": "1"})
    with pytest.raises(UserError):
        init_setup(app, home=tmp_path / "home", public_url=public_url, github_url="https://github.com",
                   api_url="https://api.github.com")
    app.extensions["perfgate"]["db"].dispose()


text = st.one_of(st.text(max_size=60), st.text(alphabet="abcXYZ019_-", min_size=1, max_size=100))


@pytest.fixture
def admitted(setup_app):  # noqa: F811
    """The operator's browser and its current state (a list: a used one is replaced)."""
    app, _, _, token = setup_app
    admin = operator(app, token)
    return admin, [page_state(admin)]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code=text, state=st.one_of(text, st.just("LIVE")), cookie=st.sampled_from(["none", "random", "operator"]),
       extra=st.dictionaries(st.sampled_from(["installation_id", "setup_action", "token", "organization"]), text,
                             max_size=2))
def test_no_callback_but_the_operators_own_stores_anything(setup_app, admitted, code, state, cookie,  # noqa: F811
                                                           extra):
    """Fuzzed callbacks — any code and state, the operator's live state from another browser or
    with a malformed code, extra parameters — answer 400/403 (never 5xx), call GitHub never and
    store nothing."""
    from urllib.parse import urlencode

    app, home, github, _ = setup_app
    admin, live = admitted
    client = app.test_client()
    if cookie == "random":
        client.set_cookie("perfgate_setup", state[:43] or "x", path="/setup")
    elif cookie == "operator":
        client = admin
    if state == "LIVE":
        state = live[0]
        if cookie == "operator" and re.fullmatch(r"[A-Za-z0-9_-]{1,100}", code):
            code += " "  # the one valid pairing: only with a malformed code here
    answer = client.get("/setup/callback?" + urlencode({**extra, "code": code, "state": state}))
    assert answer.status_code in (400, 403)
    assert github.calls("apps/create-from-manifest") == [] and _files(home) == []
    if state == live[0] and cookie == "operator":
        live[0] = page_state(admin)  # that one was used up


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(guess=text)
def test_a_guessed_token_admits_nobody_and_spends_nothing(setup_app, guess):  # noqa: F811
    app, _, _, token = setup_app
    answer = app.test_client().get("/setup", query_string={"token": guess})
    assert answer.status_code == (302 if guess == token else 403)
    assert "Set-Cookie" not in answer.headers and app.extensions["perfgate_setup"]["token_used"] is False
