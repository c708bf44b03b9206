"""The fake's own tests use its fixtures."""

from tests.fake_github.fixtures import fake_github, github_openapi  # noqa: F401
