"""A fake GitHub REST API on loopback that holds every request to GitHub's OpenAPI description.

Shared by the Action's and the App's tests and by evaluation/bot_load.py.

    from tests.fake_github.fixtures import fake_github, github_openapi  # in a conftest.py

    def test_x(fake_github):
        fake_github.state.add_pull("octo/demo", 7, head_sha=..., base_sha=...)
        fake_github.state.add_token("ghs_w")                     # else any token is accepted
        fake_github.state.add_token("ghs_r", read_only=True)     # writes answered 403
        fake_github.state.set_permission("octo/demo", "alice", "maintain")
        gh = Github(auth=Auth.Token("ghs_w"), base_url=fake_github.url)   # PyGithub
        ...
        fake_github.calls("issues/create-comment")   # recorded requests of one operation id
        fake_github.state.comments / check_runs / dispatches / reactions / workflow_runs

- ``spec.py``: fetches ``@octokit/openapi`` with ``npm pack`` into ``tests/.cache`` (prefetch:
  ``python -m testkit.fake_github``), matches method + path to an operation, validates path and
  query parameters and the JSON body; ``conform`` completes responses to the schema.
- ``state.py``: what the fake remembers. ``app.py``: the Flask app and the stateful handlers
  (by operation id); operations without a handler answer the documented example.
  ``FakeGitHub(handlers={"actions/list-workflow-run-artifacts": fn})`` adds or overrides one:
  ``fn(ctx) -> (status, json[, headers])`` with ``ctx.state``, ``ctx.params``, ``ctx.body``,
  ``ctx.example()``; its answer is completed to and checked against the response schema.
- App auth: a JWT (``Bearer a.b.c``) is accepted for ``apps/*`` operations only;
  ``apps/create-installation-access-token`` mints a token (registered when tokens are).
- Faults: ``FakeGitHub(faults=Faults(0.2, seed=1, hang=3))`` answers about a fifth of the
  valid calls with 502/503, a time-out (held ``hang`` seconds, then carried out) or a secondary
  rate limit (403, ``Retry-After: 1``); ``Recorded.fault`` says which.
- Violations (undocumented operation → 404, bad parameter/body → 422) are recorded in
  ``fake_github.violations``; the ``fake_github`` fixture fails the test at teardown if any
  are left (clear them after asserting on purpose).
"""

from .app import Faults
from .server import FakeGitHub
from .spec import SpecUnavailable, load_spec, openapi_path
from .state import GitHubState, Token

__all__ = ["FakeGitHub", "Faults", "GitHubState", "SpecUnavailable", "Token", "load_spec",
           "openapi_path"]
