"""Fixtures of the Action's tests: the fake GitHub (shared with the App's tests) and a
generated target repository."""

# PyGithub attaches a StreamHandler to sys.stderr when first imported; imported inside a test
# under capsys, that stream is closed afterwards and later log records print "Logging error"
# tracebacks. Importing it here binds the handler to the session's stream instead.
import github  # noqa: F401

from tests.fake_github.fixtures import fake_github, github_openapi  # noqa: F401
