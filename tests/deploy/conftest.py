"""Fixtures of the deployment tests: GitHub's REST description for the fake GitHub."""

from tests.fake_github.fixtures import github_openapi  # noqa: F401
