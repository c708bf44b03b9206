"""bot.app.core.access's decisions, without Flask."""

from __future__ import annotations

import pytest

from bot.app.core.access import may_read, safe_next, visibility


@pytest.mark.parametrize("mode, private, user, expected", [
    ("public", False, None, True),
    ("public", True, None, False),
    ("public", None, None, False),  # never reported by GitHub: treated as private
    ("public", True, True, True),
    ("public", True, False, False),
    ("public", None, True, True),
    ("all", True, None, True),
])
def test_may_read(mode, private, user, expected):
    assert may_read(mode, private, user) is expected


def test_visibility_from_webhook_payloads():
    assert visibility({"repository": {"full_name": "o/a", "private": True}}) == {"o/a": True}
    installation = {"repositories": [{"full_name": "o/b", "private": False}, {"full_name": "o/c"}],
                    "repositories_added": [{"full_name": "o/d", "private": True}], "repository": None}
    assert visibility(installation) == {"o/b": False, "o/d": True}
    assert visibility({"repository": {"full_name": "o/e", "private": "yes"}}) == {}


@pytest.mark.parametrize("target, expected", [
    ("/runs/abc", "/runs/abc"), ("/acme/kernels?x=1", "/acme/kernels?x=1"), (None, "/"), ("", "/"),
    ("https://evil.example/", "/"), ("//evil.example/x", "/"), ("/\\evil.example", "/"), ("runs", "/"),
])
def test_safe_next_stays_on_the_site(target, expected):
    assert safe_next(target) == expected
