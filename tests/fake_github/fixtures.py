"""pytest fixtures of the fake GitHub. Use them from a conftest.py::

    from tests.fake_github.fixtures import github_openapi, fake_github  # noqa: F401
"""

from __future__ import annotations

import pytest

from testkit.fake_github.server import FakeGitHub
from testkit.fake_github.spec import Spec, SpecUnavailable, load_spec


@pytest.fixture(scope="session")
def github_openapi() -> Spec:
    """GitHub's REST description (fetched with ``npm pack`` into tests/.cache on first use)."""
    try:
        return load_spec()
    except SpecUnavailable as exc:
        pytest.skip(f"GitHub's OpenAPI description is unavailable: {exc}")


@pytest.fixture
def fake_github(github_openapi: Spec):
    """A running :class:`FakeGitHub`; the test fails if any request broke the description,
    unless the test emptied ``fake_github.violations`` after checking them."""
    with FakeGitHub(github_openapi) as gh:
        yield gh
        gh.assert_no_violations()
