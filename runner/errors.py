"""Errors that are the user's to fix (exit status 2, one line, no traceback), and the exit statuses
of ``perfgate`` and of the Action (DESIGN.md, "Contracts / CLI")."""

#: 0 done; 1 a regression tripped ``--fail-on-regression``; 2 bad input (:class:`UserError`: one
#: line, never a traceback); 3 an internal failure.
EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UserError(Exception):
    """Bad input: usage, configuration, an unknown ref, no benchmarks.

    The CLI prints ``perfgate: error: <message>`` and exits with status 2. The message
    must name what to fix (the key, the file, the ref).
    """


class ConfigError(UserError):
    """A broken ``[tool.perfgate]`` table or ``perfgate.toml``; the message names key and file."""


class GitError(UserError):
    """A ref that does not resolve, or a path that is not a git repository."""


class ResultsError(UserError):
    """A ``results.json`` that is not valid against schema_version 1."""
