"""The fake GitHub served on loopback: ``with FakeGitHub() as gh: Github(base_url=gh.url)``.

werkzeug's ``make_server`` on ``127.0.0.1`` port 0 (a free port), in a daemon thread, threaded
so a client may keep several connections. ``gh.requests`` records every request,
``gh.violations`` every way a request broke GitHub's OpenAPI description (a test that does not
expect them should end with ``gh.assert_no_violations()``; the pytest fixture does so).
"""

from __future__ import annotations

import threading
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from .app import Faults, Handler, Recorded, create_app
from .spec import Spec, load_spec
from .state import GitHubState


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: tests read ``FakeGitHub.requests`` instead."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class FakeGitHub:
    """A running fake GitHub API. Scene setting goes through ``state`` (see ``state.py``);
    ``faults``: answer a fraction of the calls with errors, time-outs and rate limits
    (``app.Faults``; off by default)."""

    def __init__(self, spec: Spec | None = None, *, handlers: dict[str, Handler] | None = None,
                 faults: Faults | None = None):
        self.spec = spec or load_spec()
        self.state = GitHubState()
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self._url = ""
        app = create_app(self.spec, self.state, records=self.requests, violations=self.violations,
                         base_url=lambda: self._url, handlers=handlers, faults=faults)
        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
        self._url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL for PyGithub's ``base_url`` and the Actions ``GITHUB_API_URL``."""
        return self._url

    def start(self) -> "FakeGitHub":
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-github", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeGitHub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def calls(self, operation_id: str) -> list[Recorded]:
        """The recorded requests of one operation (e.g. ``"issues/create-comment"``)."""
        return [r for r in self.requests if r.operation_id == operation_id]

    def assert_no_violations(self) -> None:
        if self.violations:
            raise AssertionError("requests broke GitHub's OpenAPI description:\n  " + "\n  ".join(self.violations))
