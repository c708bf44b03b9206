"""Slash commands in PR comments, parsed without I/O.

Only the first line of a comment counts (GITHUB.md, "How slash-command bots behave"); it is
split with :mod:`shlex`, so quoted filters work — except ``accept``, whose reason is free text
taken as written (an apostrophe is not a quote). Grammar::

    /perf run [FILTER] [--rounds N] [--threshold F] [--sha SHA] [--all]   (also rounds=N, ...)
    /perf profile FILTER [--sha SHA]
    /perf accept [REASON ...]
    /perf cancel
    /perf history [BENCH]
    /perf bisect [GOOD [BAD]] [BENCH] [--runner NAME]    (in an issue, or on a commit: BAD is it)
    /perf help                                           (a bare /perf is help too)

``--rounds`` is the number of base/head round pairs before the first look (the compare's
``min_rounds``, 2..10000); ``--threshold`` the practical significance as a fraction of the
base time (0 < F < 1, e.g. 0.02 for 2 %); ``--sha`` the head commit the command approves, as its
full SHA (40 hex digits, 64 in a SHA-256 repository: a shortened SHA names every commit that
shares its digits, and a few digits of a collision take seconds to make); the run is refused
when the PR's head is another commit. A fork PR's ``run``/``profile`` needs ``--sha``
(``bot.app.core.handlers.issue_comment.approval_problem``). ``bisect`` names its commits in full
too: in an issue ``GOOD BAD`` (the first-parent range to search, ``perfgate bisect``), on a commit
``GOOD`` (that commit is ``BAD``), nothing in a regression's tracking issue (its range again);
``--runner`` names a runner group of the configuration (``[runners.NAME]``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from runner.config_values import is_fraction, read_fraction
from runner.report.escape import md_code, plain

PREFIX = "/perf"
#: The lengths of a full commit SHA: SHA-1 (40 hex digits) and SHA-256 object format (64; git's
#: ``extensions.objectFormat``).
SHA_LENGTHS = (40, 64)
NAMES = ("run", "profile", "accept", "cancel", "history", "bisect", "help")
MAX_ROUNDS = 10_000
#: The longest FILTER (characters): what a run stores of it (``app_runs.filter``).
MAX_FILTER = 500

USAGE = """\
**perfgate commands** (first line of a PR comment; write, maintain or admin permission):

| command | what it does |
|---|---|
| `/perf run [FILTER] [--rounds N] [--threshold F] [--sha SHA] [--all]` | benchmark base vs head again (optionally only benchmarks matching FILTER; N round pairs; threshold F as a fraction, e.g. 0.02; only if the head is still SHA, the full 40-digit commit SHA; required on a PR from a fork; `--all`: every benchmark, also those the change cannot affect where `[selection]` is enabled) |
| `/perf profile FILTER [--sha SHA]` | run the matching benchmarks with the profiling pass (`--sha` as for `run`) |
| `/perf accept [REASON]` | acknowledge the regressions of the results shown (that head, those benchmarks); the check passes |
| `/perf cancel` | cancel the running benchmark |
| `/perf history [BENCH]` | the history of one benchmark (or all) on the default branch |
| `/perf bisect GOOD BAD [BENCH] [--runner NAME]` | in an issue: find the commit between two full SHAs of the default branch that slowed BENCH (or the clearest regression); on a commit, `/perf bisect GOOD [BENCH]`; in a regression's tracking issue, `/perf bisect` alone bisects it again and `/perf accept [REASON]` accepts it |
| `/perf help` | this table |
"""


class CommandError(ValueError):
    """A ``/perf`` comment that does not parse; the message says what is wrong (for the reply).

    The message is Markdown: every echoed word of the comment is a code span
    (:func:`echo`, at most :data:`ECHO_LIMIT` characters), so the reply never renders the
    commenter's markup and stays within GitHub's limits."""


@dataclass(frozen=True)
class Command:
    """A parsed command. ``text``: the normalised first line (an edited comment re-runs only
    when it changes). Options not given are None."""

    name: str
    text: str
    filter: str | None = None
    rounds: int | None = None
    threshold: float | None = None
    reason: str | None = None
    benchmark: str | None = None
    sha: str | None = None
    shas: tuple[str, ...] = ()
    runner: str | None = None
    all_benchmarks: bool = False  # /perf run --all: every benchmark, even where [selection] is enabled


#: The most characters of a comment's word echoed in a reply (GitHub caps a comment at 65,536:
#: a maintainer's 100 kB word must not make the reply itself fail).
ECHO_LIMIT = 100


def echo(text: str) -> str:
    """A word of a comment for a reply: a code span (never rendered as Markdown) of at most
    :data:`ECHO_LIMIT` characters (cut with ``…``)."""
    return md_code(plain(text, ECHO_LIMIT))


def first_line(body: str | None) -> str:
    """The first non-empty line of a comment body, stripped ('' for an empty body)."""
    for line in (body or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def is_command(body: str | None) -> bool:
    """Does the comment's first line address perfgate (``/perf`` followed by a space or the end)?"""
    line = first_line(body)
    return line == PREFIX or line.startswith(PREFIX + " ") or line.startswith(PREFIX + "\t")


def _int(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CommandError(f"`--{name}` needs a whole number, got {echo(text)}") from None
    if not 2 <= value <= MAX_ROUNDS:
        raise CommandError(f"`--{name}` must be between 2 and {MAX_ROUNDS}, got {value}")
    return value


def _fraction(name: str, text: str) -> float:
    try:
        value = read_fraction(text)
    except ValueError:
        raise CommandError(f"`--{name}` needs a number, got {echo(text)}") from None
    if not is_fraction(value, zero=False):
        raise CommandError(f"`--{name}` is a fraction of the base time between 0 and 1 (e.g. 0.02 or 2%), "
                           f"got {echo(text)}")
    return value


def _sha(text: str, what: str = "`--sha`") -> str:
    """``--sha``'s value (or ``what`` else), lower case: a full commit SHA (:data:`SHA_LENGTHS`),
    never a prefix."""
    if not re.fullmatch(r"[0-9a-fA-F]+", text):
        raise CommandError(f"{what} needs the full commit SHA (40 hex digits), got {echo(text)}")
    if len(text) not in SHA_LENGTHS:
        raise CommandError(f"{what} needs the full commit SHA, 40 hex digits (64 in a SHA-256 repository), "
                           f"not {len(text)}: a shortened SHA can name another commit with the same first digits")
    return text.lower()


def _filter(text: str) -> str:
    if len(text) > MAX_FILTER:
        raise CommandError(f"the FILTER is {len(text)} characters long; at most {MAX_FILTER}")
    return text


def _options(words: list[str], allowed: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """Split ``words`` into positionals and ``--key value`` / ``--key=value`` / ``key=value``."""
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        key = value = None
        if word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            if not eq:
                if i + 1 >= len(words):
                    raise CommandError(f"{echo('--' + key)} needs a value")
                value = words[i + 1]
                i += 1
        elif "=" in word and word.split("=", 1)[0] in allowed:
            key, value = word.split("=", 1)
        if key is None:
            positional.append(word)
        elif key not in allowed:
            raise CommandError(f"unknown option {echo('--' + key)}"
                               + (f" (options: {', '.join('--' + a for a in allowed)})" if allowed else ""))
        elif key in options:
            raise CommandError(f"{echo('--' + key)} given twice")
        else:
            options[key] = value or ""
        i += 1
    return positional, options


def parse(body: str | None) -> Command | None:
    """The command in a comment body, or None when the comment is not for perfgate.

    Raises:
        CommandError: it starts with ``/perf`` but is not a valid command.
    """
    if not is_command(body):
        return None
    raw = first_line(body).split()
    if len(raw) >= 2 and raw[1].lower() == "accept":
        # The reason is free text ("it's expected"): never split like shell words.
        reason = " ".join(raw[2:])
        return Command("accept", " ".join(["/perf", "accept", *raw[2:]]), reason=reason or None)
    try:
        words = shlex.split(first_line(body))
    except ValueError as exc:
        raise CommandError(f"cannot split the command line ({exc})") from None
    text = " ".join(words)
    if len(words) == 1:
        return Command("help", text)
    name, rest = words[1].lower(), words[2:]
    if name not in NAMES:
        raise CommandError(f"unknown command {echo(words[1])} (commands: {', '.join(NAMES)})")
    if name == "run":
        every = "--all" in rest  # a flag without a value: every benchmark, no selection (runner.selection)
        if rest.count("--all") > 1:
            raise CommandError("`--all` given twice")
        positional, opts = _options([w for w in rest if w != "--all"], ("rounds", "threshold", "sha"))
        if len(positional) > 1:
            raise CommandError("`/perf run` takes at most one FILTER (quote it if it has spaces)")
        return Command("run", text, filter=_filter(positional[0]) if positional else None,
                       rounds=_int("rounds", opts["rounds"]) if "rounds" in opts else None,
                       threshold=_fraction("threshold", opts["threshold"]) if "threshold" in opts else None,
                       sha=_sha(opts["sha"]) if "sha" in opts else None, all_benchmarks=every)
    if name == "profile":
        positional, opts = _options(rest, ("sha",))
        if len(positional) != 1:
            raise CommandError("`/perf profile` needs exactly one FILTER")
        return Command("profile", text, filter=_filter(positional[0]), sha=_sha(opts["sha"]) if "sha" in opts else None)
    if name == "bisect":
        positional, opts = _options(rest, ("runner",))
        shas = []
        while positional and len(shas) < 2 and re.fullmatch(r"[0-9a-fA-F]{7,64}", positional[0]):
            shas.append(_sha(positional.pop(0), "`/perf bisect`"))
        if len(positional) > 1:
            raise CommandError("`/perf bisect` takes the full SHAs GOOD and BAD, at most one benchmark name and "
                               "`--runner NAME`")
        runner = opts.get("runner")
        if runner is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}", runner):
            raise CommandError(f"`--runner` names a runner group of the configuration, got {echo(runner)}")
        return Command("bisect", text, benchmark=_filter(positional[0]) if positional else None, shas=tuple(shas),
                       runner=runner)
    if name == "history":
        if len(rest) > 1:
            raise CommandError("`/perf history` takes at most one benchmark name")
        return Command("history", text, benchmark=rest[0] if rest else None)
    if rest:
        raise CommandError(f"`/perf {name}` takes no arguments")
    return Command(name, text)
