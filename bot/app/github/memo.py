"""GitHub's answers the App may reuse for a while (security review 2026-12-06, P4: any GitHub
user could spend the installation's API budget, 5,000 requests an hour, 2–3 uncached calls per
comment): a sender's collaborator permission per (installation, repository, login) and the
target's configuration files per (installation, repository, branch), each kept :data:`TTL`
seconds in the worker process (every job of that process shares them; a new process asks again).

What that costs: a permission granted or taken away, or a configuration pushed to the default
branch, is seen within :data:`TTL` seconds. A pull request is never kept: an approval binds to
the head GitHub shows now. Only answers are kept, never a failure (a transient error is raised
again next time)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

#: Seconds an answer is reused: a burst of deliveries (a stranger's comments, a fork's pushes)
#: asks GitHub once per window.
TTL = 120.0
#: Answers kept at most; past it the expired ones go, then the oldest.
MAX_KEPT = 10_000


class Memo:
    """Answers by key, each for ``ttl`` seconds of ``clock`` (thread-safe)."""

    def __init__(self, ttl: float = TTL, clock: Callable[[], float] = time.monotonic):
        self.ttl, self._clock = ttl, clock
        self._lock = threading.Lock()
        self._kept: dict[tuple, tuple[float, Any]] = {}

    def get(self, key: tuple, ask: Callable[[], Any]) -> Any:
        """The answer kept for ``key`` if younger than the TTL, else ``ask()``'s, kept.

        Raises:
            Exception: whatever ``ask`` raises (nothing is kept then).
        """
        now = self._clock()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        value = ask()
        with self._lock:
            if len(self._kept) >= MAX_KEPT:
                self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
            if len(self._kept) >= MAX_KEPT:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = (now + self.ttl, value)
        return value

    def forget(self) -> None:
        """Drop every answer kept (the next reads ask GitHub)."""
        with self._lock:
            self._kept.clear()


class RememberingClient:
    """An installation client (``bot.app.github.gateway.InstallationClient``) whose
    ``permission`` and ``config_texts`` answers are kept in ``memo``; every other call goes
    through."""

    def __init__(self, client: Any, memo: Memo):
        self._client, self._memo = client, memo

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def permission(self, repo: str, login: str) -> str:
        key = ("permission", self._client.installation_id, repo, login)
        return self._memo.get(key, lambda: self._client.permission(repo, login))

    def config_texts(self, repo: str, ref: str | None = None) -> dict[str, str | None]:
        key = ("config", self._client.installation_id, repo, ref)
        return dict(self._memo.get(key, lambda: self._client.config_texts(repo, ref)))
